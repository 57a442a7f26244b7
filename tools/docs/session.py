"""A real run for the docs: `saga local` in a subprocess on free ports (as `make run` starts it), and a
shell whose commands are the ones a reader types, on the default ports (`make run`'s): the shell sees the
real ports, its output is mapped back to the default ones."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import urllib3

from tools.ports import free_port

# What `make run` listens on (saga/cli_servers.py's defaults), as the docs show it.
DEFAULT_PORTS = {"orchestrator": 3000, "loans-api": 3001, "aws": 4566, "dashboard": 3002}
# Hang guards, not budgets: each wait ends as soon as what it waits for happens, and at a load average of 20
# on 2 cores `saga local` takes minutes to start (tests/system.py STARTUP_PATIENCE: the same 300 s) and a
# `saga` command, a new interpreter, a minute (tests/support.py PROCESS_PATIENCE).
READY_SECONDS = 300.0
COMMAND_SECONDS = 600.0
_SENTINEL = "__saga_docs_done__"


@dataclass(frozen=True)
class Runtime:
    """A running `saga local`: its URLs by name, and the state file the `saga` commands find it by."""

    urls: dict[str, str]
    state_file: Path

    def to_default(self, text: str) -> str:
        """`text` as it reads on `make run`'s ports."""
        for name, url in self.urls.items():
            text = text.replace(url, f"http://127.0.0.1:{DEFAULT_PORTS[name]}")
        return text

    def to_real(self, text: str) -> str:
        """A command written for `make run`'s ports, for this runtime's."""
        for name, url in self.urls.items():
            text = text.replace(f"http://127.0.0.1:{DEFAULT_PORTS[name]}", url)
        return text


@contextlib.contextmanager
def local_runtime() -> Iterator[Runtime]:
    """`saga local` until the block ends (stopped with SIGINT, as Ctrl-C stops it)."""
    folder = Path(tempfile.mkdtemp(prefix="saga-docs-"))
    ports = {name: free_port() for name in DEFAULT_PORTS}
    state_file, log_path = folder / "local.json", folder / "local.log"
    command = [
        sys.executable, "-m", "saga.cli", "local", "--port", str(ports["orchestrator"]),
        "--loans-port", str(ports["loans-api"]), "--aws-port", str(ports["aws"]),
        "--dashboard-port", str(ports["dashboard"]), "--state-file", str(state_file),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "AWS_ENDPOINT_URL"))}
    with log_path.open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)  # noqa: S603 - our own interpreter
        try:
            urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
            _wait_until_healthy(process, urls["orchestrator"], log_path)
            yield Runtime(urls, state_file)
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_healthy(process: subprocess.Popen[bytes], api_url: str, log_path: Path) -> None:
    http = urllib3.PoolManager(timeout=urllib3.Timeout(connect=1, read=5), retries=False)
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"saga local exited early:\n{log_path.read_text()[-3000:]}")
        with contextlib.suppress(urllib3.exceptions.HTTPError):
            if http.request("GET", f"{api_url}/health").status == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"saga local was not healthy within {READY_SECONDS:g} s:\n{log_path.read_text()[-3000:]}")


class Shell:
    """One bash, as a reader's terminal: variables set by one command are there for the next. `saga`
    and `python` are this checkout's (as after `source .venv/bin/activate`), and the `saga` commands
    find the runtime through its state file. stderr is merged into stdout, as a terminal shows both."""

    def __init__(self, runtime: Runtime, cwd: Path) -> None:
        self._runtime = runtime
        bin_dir = str(Path(sys.executable).parent)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "AWS_"))}  # a reader's
        env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", SAGA_STATE_FILE=str(runtime.state_file))
        self._bash = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],  # noqa: S607 - the reader's bash, from PATH
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=cwd,
            env=env,
        )
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._bash.stdout is not None
        for line in self._bash.stdout:
            self._lines.put(line)
        self._lines.put("")

    def run(self, command: str) -> str:
        """Run `command` (as written for `make run`'s ports); what it printed, on those ports."""
        assert self._bash.stdin is not None
        self._bash.stdin.write(f"{self._runtime.to_real(command)}\necho; echo {_SENTINEL}\n")
        self._bash.stdin.flush()
        lines: list[str] = []
        deadline = time.monotonic() + COMMAND_SECONDS
        while True:
            try:
                line = self._lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                said = "".join(lines)
                raise RuntimeError(f"{command!r} had not ended after {COMMAND_SECONDS:g} s: {said!r}") from None
            if not line:
                raise RuntimeError(f"the shell ended during {command!r}: {''.join(lines)}")
            if line.rstrip("\n") == _SENTINEL:
                break
            lines.append(line)
        output = "".join(lines)[:-1]  # the newline `echo` added, so output without one still ends a line
        return self._runtime.to_default(output)

    def close(self) -> None:
        assert self._bash.stdin is not None
        self._bash.stdin.close()
        self._bash.wait(timeout=10)


def wait_for(what: str, condition: Callable[[], bool], timeout: float = COMMAND_SECONDS) -> None:
    """Wait until `condition` holds (a state of the system the next command's output depends on)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"waited {timeout:g} s for {what}")
        time.sleep(0.1)
