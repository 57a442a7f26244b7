"""docs/ARCHITECTURE.md's two maps stay true: the "Where things live" table names, for each behaviour, the
file that holds it and the symbols in it (each is imported here, so a move that leaves the table behind
fails), and the reading path at the top lists files that exist, short enough to read in a sitting."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
READING_PATH_MOST_LINES = 1600
# The behaviours issue 37 asks to find one file from a name: each must have its row.
BEHAVIOURS = (
    "what a replay answers, loans-api's side",
    "what a replay answers, the orchestrator's side",
    "where a 409 gets its `availableActions`",
    "the deadline budget",
    "the one-disbursement condition",
    "the 100-quote cap",
    "the consumer's stale check",
    "the consumer's ledger confirmation",
    "the retry schedule",
    "the accept and disburse keys",
    "the NOTIFIED mark",
    "the sweeper's scan",
    "the DLQ alarm",
    "the price formula",
)
_CODE = re.compile(r"`([^`]+)`")
_SYMBOL = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def behaviour_rows() -> dict[str, str]:
    """The rows of the behaviour table ("Where each behaviour ... lives"): behaviour -> its file cell."""
    table = ARCHITECTURE[ARCHITECTURE.index("Where each behaviour a newcomer asks about lives") :]
    rows = re.findall(r"^\| (.+?) \| (.+?) \|$", table, re.MULTILINE)
    return {behaviour: cell for behaviour, cell in rows if behaviour not in ("behaviour", "---")}


def named_symbols(cell: str) -> list[tuple[str, str]]:
    """(file, symbol) for each symbol a cell names: a backticked name belongs to the file named before it."""
    found, module = [], None
    for code in _CODE.findall(cell):
        if code.endswith(".py"):
            module = code
        elif _SYMBOL.fullmatch(code) and module is not None:
            found.append((module, code))
    return found


def test_a_cell_s_symbols_belong_to_the_file_named_before_them():
    # Given a cell naming two files, each with a symbol, and an expression that is no symbol
    cell = "`a/b.py` (`One.two`, `x(y)`); then `c/d.py` (`THREE`)"
    # When its symbols are read, Then each belongs to its own file and the expression is left out
    assert named_symbols(cell) == [("a/b.py", "One.two"), ("c/d.py", "THREE")]


def test_each_behaviour_of_issue_37_has_its_row_and_one_file():
    rows = behaviour_rows()
    missing = [wanted for wanted in BEHAVIOURS if not any(row.startswith(wanted) for row in rows)]
    assert not missing, f"behaviours without a row in ARCHITECTURE's table: {missing}"
    without_file = [row for row, cell in rows.items() if not named_symbols(cell)]
    assert not without_file, f"rows that name no file and symbol: {without_file}"


@pytest.mark.parametrize(
    ("path", "symbol"), sorted({pair for cell in behaviour_rows().values() for pair in named_symbols(cell)})
)
def test_each_symbol_the_table_names_is_in_the_file_it_names(path, symbol):
    # Given a (file, symbol) the table names, When the file is imported, Then it holds the symbol
    assert (ROOT / path).is_file(), f"{path} is named in ARCHITECTURE's table but is no file"
    found: object = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    for part in symbol.split("."):
        assert hasattr(found, part), f"{path} has no {symbol} (ARCHITECTURE's table says it holds it)"
        found = getattr(found, part)


def reading_path() -> list[str]:
    """The files the reading path lists, in order."""
    section = ARCHITECTURE[ARCHITECTURE.index("## Reading path") :]
    section = section[: section.index("\n## ", 1)]
    return re.findall(r"^\d+\. `([^`]+)`", section, re.MULTILINE)


def test_the_reading_path_opens_the_architecture_and_lists_files_that_exist_in_under_1600_lines():
    # Given the reading path, right after the opening paragraph
    assert ARCHITECTURE.index("## Reading path") < ARCHITECTURE.index("## The problem"), "the reading path comes first"
    files = reading_path()
    # Then it lists the saga's files, each there, and all of them together read in under 1,600 lines
    assert len(files) >= 5, f"the reading path lists {files}"
    absent = [name for name in files if not (ROOT / name).is_file()]
    assert not absent, f"the reading path lists files that do not exist: {absent}"
    lines = {name: len((ROOT / name).read_text().splitlines()) for name in files}
    assert sum(lines.values()) < READING_PATH_MOST_LINES, f"the reading path is {sum(lines.values())} lines: {lines}"
