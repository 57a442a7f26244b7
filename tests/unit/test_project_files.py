"""What a user looks for first: the licence pyproject.toml names, `saga --version` (the MCP server's
version, one source), shell completion, `saga openapi` with nothing running, and `make run` announcing
the packages it really installs."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from functions.orchestrator import api
from saga import cli, mcp_server
from saga.ops.documents import served_document
from saga.version import PACKAGE, version
from tests.fakes import InProcessOrchestrator

ROOT = Path(__file__).resolve().parents[2]


def test_the_licence_is_the_one_pyproject_names():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    text = (ROOT / "LICENSE").read_text()
    assert declared == "MIT", declared
    assert text.startswith("MIT License\n"), text[:80]
    assert "Copyright (c) 2026 the loan-saga authors" in text, text[:200]


def test_the_changelog_starts_at_the_version_pyproject_declares():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    headings = re.findall(r"^## \[?([^\]\s]+)", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert headings[:1] == ["Unreleased"], headings
    assert declared in headings, f"pyproject's {declared} is not among the CHANGELOG's versions {headings}"


def test_saga_version_is_the_installed_package_and_what_the_mcp_server_reports(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"saga {importlib.metadata.version(PACKAGE)}\n"
    server = mcp_server.create_server(None)  # type: ignore[arg-type]  # the version is read when it is made
    assert server.version == version()


def test_the_page_the_cli_offers_is_the_apis():
    assert (cli.PAGE, cli.MAX_PAGE) == (api.PAGE, api.MAX_PAGE)


def test_saga_openapi_prints_what_the_running_api_serves_with_nothing_running(capsys, monkeypatch, tmp_path):
    # Given no system anywhere (a state file that names nothing)
    monkeypatch.setenv("SAGA_STATE_FILE", str(tmp_path / "none.json"))
    # When saga openapi prints each document
    for arguments in ([], ["--api", "loans-api"], ["--format", "bedrock"]):
        assert cli.main(["openapi", *arguments]) == 0, arguments
        printed = json.loads(capsys.readouterr().out)
        assert printed["paths"], arguments
    # Then the orchestrator's is exactly the one its app serves
    assert cli.main(["openapi"]) == 0
    served = json.loads(InProcessOrchestrator().wire.request("GET", "http://o.invalid/openapi.json").data)
    assert json.loads(capsys.readouterr().out) == served
    assert served_document("loans-api")["info"]["title"] != served["info"]["title"]


def test_bash_completion_completes_commands_subcommands_and_their_options():
    script = subprocess.run([sys.executable, "-m", "saga.cli", "completion", "bash"], capture_output=True,
                            text=True, check=True, cwd=ROOT).stdout  # fmt: skip

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        probe = f'{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _saga_complete; echo "${{COMPREPLY[@]}}"'
        return subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.split()

    assert complete("saga", "jo") == ["journey"]
    assert complete("saga", "journey", "") == ["show", "list", "--help"]
    assert complete("saga", "journey", "list", "--cu") == ["--customer", "--cursor"]
    assert complete("saga", "journey", "show", "0194-abc", "--js") == ["--json"]
    assert "--version" in complete("saga", "--")


def test_make_run_announces_the_packages_this_machine_installs_from_the_run_lock():
    # Given the run lock (universal: it also pins packages only other platforms install)
    lock = ROOT / "requirements" / "run.txt"
    pinned = re.findall(r"^([A-Za-z0-9][^=\s;]*)==", lock.read_text(), re.MULTILINE)
    # When the Makefile's count runs, Then it is the lock's packages this venv (a superset, same versions) holds
    counted = subprocess.run([sys.executable, str(ROOT / "requirements" / "count.py"), str(lock)],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    installed = {_normal(d.metadata["Name"]) for d in importlib.metadata.distributions()}
    held = [name for name in pinned if _normal(name) in installed]
    assert int(counted) == len(held) < len(pinned), f"counted {counted}, installed {len(held)} of {len(pinned)}"
    assert "requirements/count.py $(1)" in (ROOT / "Makefile").read_text()


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
