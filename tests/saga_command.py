"""`saga ARGS` as the tests run it: a process of its own per command, as a user's shell runs it, forked from
one that has imported the commands' modules already (multiprocessing's forkserver, preloaded).

A new interpreter spent ~0.7 s of CPU importing botocore, pydantic and the commands' modules before each
command ran, about two thirds of a command's cost, and the suite runs over a hundred commands. A child forked
from the preloaded server has them imported: it still gets its own environment, arguments, standard output
and error (files, read back as text) and exit code, as `python -m saga.cli` does, and a command that hangs
is killed once PROCESS_PATIENCE has passed. Commands that must be a new interpreter (an installed entry point,
a process signalled while it runs, `saga local`) are still run with subprocess.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

from tests.support import PROCESS_PATIENCE

# What the commands import (saga/cli.py imports each command's module when it runs): imported once, by the
# server the children are forked from.
PRELOAD = [
    "saga.cli",
    "saga.local_state",
    "saga.ops.demo",
    "saga.ops.documents",
    "saga.ops.journeys",
    "saga.ops.road2",
    "saga.ops.target",
    "saga.verify.checks",
    "saga.verify.journey",
    "functions.consumer.failure_notes",
]

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(PRELOAD)
_starting = threading.Lock()  # multiprocessing starts its forkserver lazily, and not thread-safely
CLI = str(Path(__file__).resolve().parents[1] / "saga" / "cli.py")


def _command(args: list[str], environment: dict[str, str], stdout: str, stderr: str) -> None:
    """The child: `python -m saga.cli ARGS` with this environment, its output in these files."""
    os.environ.clear()
    os.environ.update(environment)
    for fd, path in ((1, stdout), (2, stderr)):
        file = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(file, fd)
        os.close(file)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", write_through=True)
    sys.argv = [CLI, *args]
    from saga.cli import main

    sys.exit(main(args))


def run(
    args: list[str] | tuple[str, ...], environment: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`saga ARGS` in a process of its own, with `environment` (default: this process's), waited for at most
    PROCESS_PATIENCE: its exit code, standard output and error, as subprocess.run(..., text=True) gives them."""
    with tempfile.TemporaryDirectory(prefix="saga-command-") as folder:
        stdout, stderr = f"{folder}/stdout", f"{folder}/stderr"
        child = _context.Process(
            target=_command, args=(list(args), dict(os.environ if environment is None else environment), stdout, stderr)
        )
        with _starting:
            child.start()
        child.join(PROCESS_PATIENCE)
        if child.exitcode is None:
            child.kill()
            child.join()
            raise subprocess.TimeoutExpired(["saga", *args], PROCESS_PATIENCE, _read(stdout), _read(stderr))
        return subprocess.CompletedProcess(["saga", *args], child.exitcode, _read(stdout), _read(stderr))


def _read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8") if os.path.exists(path) else ""
