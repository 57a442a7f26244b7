"""`saga ARGS` as the tests run it: a process of its own per command, as a user's shell runs it, forked from
one that has imported the libraries the commands use (multiprocessing's forkserver, preloaded).

A new interpreter spent ~0.7 s of CPU on imports before each command ran, about two thirds of a command's
cost, and the suite runs over a hundred commands. A child forked from the preloaded server has botocore,
urllib3, pydantic and Powertools imported; it gets its own environment, arguments, standard output and
error (files, read back as text) and exit code, as `python -m saga.cli` does, and imports this repository's
modules itself, under its own environment (tests/saga_child.py says why). A command that hangs is killed
once PROCESS_PATIENCE has passed; if the server cannot fork a child, the command runs in a new interpreter.
Commands that must be a new interpreter (an installed entry point, a process signalled while it runs, `saga
local`) are still run with subprocess.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from tests import saga_child
from tests.support import PROCESS_PATIENCE

# The libraries the commands import, none of which reads the environment when imported. Never a module of
# this repository (tests/integration/test_saga_command.py checks the server holds none).
PRELOAD = [
    "aws_lambda_powertools.logging",
    "botocore.client",
    "botocore.config",
    "botocore.exceptions",
    "botocore.session",
    "pydantic",
    "pydantic_settings",
    "urllib3",
]

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(PRELOAD)
_starting = threading.Lock()  # multiprocessing starts its forkserver lazily, and not thread-safely
CLI = str(Path(__file__).resolve().parents[1] / "saga" / "cli.py")


def run(
    args: list[str] | tuple[str, ...], environment: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`saga ARGS` in a process of its own, with `environment` (default: this process's), waited for at most
    PROCESS_PATIENCE: its exit code, standard output and error, as subprocess.run(..., text=True) gives them."""
    given = dict(os.environ if environment is None else environment)
    with tempfile.TemporaryDirectory(prefix="saga-command-") as folder:
        stdout, stderr = f"{folder}/stdout", f"{folder}/stderr"
        code = _forked(saga_child.command, (list(args), given, stdout, stderr, CLI))
        if code is None:  # the server could not fork it: a new interpreter
            return subprocess.run(
                [sys.executable, "-m", "saga.cli", *args],
                capture_output=True,
                text=True,
                env=given,
                timeout=PROCESS_PATIENCE,
                check=False,
            )
        if not isinstance(code, int):  # "hung"
            raise subprocess.TimeoutExpired(["saga", *args], PROCESS_PATIENCE, _read(stdout), _read(stderr))
        return subprocess.CompletedProcess(["saga", *args], code, _read(stdout), _read(stderr))


def preloaded_repository_modules() -> list[str]:
    """This repository's modules a child of the server has before it runs anything (should be none)."""
    with tempfile.TemporaryDirectory(prefix="saga-command-") as folder:
        code = _forked(saga_child.repository_modules, (f"{folder}/stdout",))
        assert code == 0, code
        return [name for name in _read(f"{folder}/stdout").splitlines() if name]


def _forked(target: Callable[..., object], args: tuple[object, ...]) -> int | str | None:
    """The exit code of `target(*args)` in a child of the server; "hung" after PROCESS_PATIENCE; None when
    the server could not fork one (it died: a preloaded module that raised on import, say)."""
    child = _context.Process(target=target, args=args)
    try:
        with _starting:
            child.start()
    except (EOFError, OSError):
        return None
    child.join(PROCESS_PATIENCE)
    if child.exitcode is None:
        child.kill()
        child.join()
        return "hung"
    return child.exitcode


def _read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8") if os.path.exists(path) else ""
