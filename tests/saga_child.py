"""The child of tests/saga_command.py: `python -m saga.cli ARGS` in a process forked from a server that has
imported the libraries the commands use. Only the standard library is imported here, before the command's
environment replaces the server's: this repository's modules read it when imported (a Powertools logger
takes its name from POWERTOOLS_SERVICE_NAME), so they are imported afresh by each command, as in a new
interpreter."""

from __future__ import annotations

import io
import os
import sys

REPOSITORY_PACKAGES = ("saga", "shared", "functions", "infra", "bench", "tools")


def command(args: list[str], environment: dict[str, str], stdout: str, stderr: str, cli: str) -> None:
    """`python -m saga.cli ARGS` with this environment, its output in these files."""
    os.environ.clear()
    os.environ.update(environment)
    for fd, path in ((1, stdout), (2, stderr)):
        file = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(file, fd)
        os.close(file)
    encoding = environment.get("PYTHONIOENCODING", "").split(":")[0] or "utf-8"
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=encoding, write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding=encoding, write_through=True)
    sys.argv = [cli, *args]
    from saga.cli import main

    sys.exit(main(args))


def repository_modules(stdout: str) -> None:
    """Write which of this repository's modules the child has before any command runs (none, or the
    server's preloading read an environment that is not the command's)."""
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in REPOSITORY_PACKAGES)
    with open(stdout, "w") as file:
        file.write("\n".join(loaded))
