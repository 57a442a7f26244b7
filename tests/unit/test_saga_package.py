"""The `saga` package holds what a user runs: nothing in it imports the tests or the tools (tools/: the docs
build, the in-process transport, free ports), and its HTTP servers leave the framing of requests to
werkzeug (saga/threaded_http.py): no module reads a request's bytes itself."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAGA = sorted((ROOT / "saga").rglob("*.py"))


def _imported(path: Path) -> set[str]:
    """Every module `path` imports, at its top or inside a function."""
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_saga_package_imports_nothing_from_the_tests_or_the_tools():
    found = {
        str(path.relative_to(ROOT)): sorted(n for n in _imported(path) if n.split(".")[0] in ("tests", "tools"))
        for path in SAGA
    }
    assert not {path: names for path, names in found.items() if names}, "saga/ must not need tests/ or tools/"


# What framing a request by hand looks like: http.server's handler and server, reading the request's bytes
# from its socket file, a Content-Length made a number to read that many bytes.
HAND_FRAMING = re.compile(
    r"http\.server|BaseHTTPRequestHandler|ThreadingHTTPServer|\brfile\b|int\([^)]*content.length", re.I
)


def test_no_module_in_saga_frames_http_requests_by_hand():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in SAGA
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if HAND_FRAMING.search(line)
    ]
    assert not found, "werkzeug frames requests (saga/threaded_http.py):\n" + "\n".join(found)


def test_the_guard_sees_hand_framing_where_there_is_some():
    # The pattern above would catch what saga/local/http_server.py did before werkzeug served it.
    before = [
        "from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer",
        'length = int(self.headers.get("Content-Length") or 0)',
        "body += request.rfile.read(size)",
    ]
    assert all(HAND_FRAMING.search(line) for line in before)
