"""The tests' `saga` commands (tests/saga_command.py) behave as `python -m saga.cli` does: forked from a
server that imported only libraries, each imports this repository's modules under its own environment."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests import saga_command
from tools.ports import free_port


def test_the_server_the_commands_fork_from_holds_none_of_this_repositorys_modules():
    assert saga_command.preloaded_repository_modules() == []


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("no-such-command",),
        ("status", "--json", "--endpoint-url", "http://127.0.0.1:{port}", "--api-url", "http://127.0.0.1:{port}"),
        ("audit", "--endpoint-url", "http://127.0.0.1:{port}", "--api-url", "http://127.0.0.1:{port}"),
    ],
)
@pytest.mark.parametrize("environment", ["the tests'", "a user's shell (no POWERTOOLS_ settings)"])
def test_a_forked_command_answers_what_a_new_interpreter_does(args, environment):
    port = free_port()
    argv = [arg.format(port=port) for arg in args]
    env = dict(os.environ)
    if environment != "the tests'":
        env = {name: value for name, value in env.items() if not name.startswith("POWERTOOLS_")}
    forked = saga_command.run(argv, env)
    fresh = subprocess.run(
        [sys.executable, "-m", "saga.cli", *argv], capture_output=True, text=True, env=env, check=False
    )
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
