"""Code and docs cite the repository's own files: every path they name (`shared/topology.py`,
`tests/infra/test_topology.py`, ...) is a file of the repository, so a rename or a deletion that leaves a
reference behind fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("bench", "docs", "functions", "infra", "requirements", "saga", "shared", "tests")
CITED = re.compile(rf"(?<![\w./-])(?:{'|'.join(FOLDERS)})/[A-Za-z0-9_/.-]*[A-Za-z0-9_]\.(?:py|md|json|txt)\b")


def sources() -> list[Path]:
    found = [ROOT / name for name in ("README.md", "BENCHMARKS.md", "app.py")]
    for folder in FOLDERS:
        found += [p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md")]
    return [p for p in found if p.is_file()]


def test_the_guard_finds_a_cited_path():
    # Given a sentence that cites two files, When it is read, Then both are found (so no citation is missed)
    assert CITED.findall("see shared/topology.py and tests/infra/test_topology.py.") == [
        "shared/topology.py",
        "tests/infra/test_topology.py",
    ]


def test_every_file_a_source_or_doc_cites_exists():
    # Given every source and document of the repository, When the paths they cite are looked up,
    # Then each is a file of the repository
    missing = [
        f"{source.relative_to(ROOT)}: {cited}"
        for source in sources()
        for cited in CITED.findall(source.read_text(encoding="utf-8"))
        if not (ROOT / cited).is_file()
    ]
    assert missing == []
