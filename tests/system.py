"""The whole system as a user runs it: `saga local` in a subprocess on free ports, with the fault
proxy between the orchestrator and loans-api. Shared by the e2e and chaos suites."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import urllib3

from saga.faultproxy.server import FaultProxyServer
from saga.links import naming
from tests import saga_command
from tests.faultproxy_client import ToxiproxyClient
from tools import ports

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

T = TypeVar("T")
free_port = ports.free_port  # the tests' own servers' ports, as the runtimes': tools/ports.py
LOANS_PROXY = "loans-api"
# How long a wait for what the system does in a second or two may last before it fails: a hang guard, since
# a wait ends as soon as its condition holds, and a loaded machine (2 cores, shared) is slow, not wrong (what
# takes a second idle can take a minute at a load average of 20, tests/support.py). No test expects such a
# wait to run out (one that asserts something does not happen names its own, shorter, window).
PATIENCE = 300.0
# How long `saga local` may take to become healthy (it fails at once if the process exits).
STARTUP_PATIENCE = 300.0
# A wait on something that moves by steps (a drain, agents' retries) fails once no step was made for this
# long: never on a count of tries, which depends on the machine's load.
STALL_SECONDS = 120.0


def wait_for(predicate: Callable[[], Any], timeout: float = PATIENCE, interval: float = 0.1) -> Any:
    """`predicate()`'s first truthy value, polled every `interval` s; its last value after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


@dataclass
class System:
    api_port: int
    loans_port: int
    aws_port: int
    proxy_port: int
    toxiproxy: ToxiproxyClient
    process: subprocess.Popen[str] | None = None
    log_path: str = ""
    ready_seconds: float = 0.0
    _http: urllib3.PoolManager = field(
        default_factory=lambda: urllib3.PoolManager(timeout=urllib3.Timeout(connect=2, read=60), retries=False)
    )

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def loans_url(self) -> str:
        return f"http://127.0.0.1:{self.loans_port}"

    @property
    def aws_url(self) -> str:
        return f"http://127.0.0.1:{self.aws_port}"

    def call(
        self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any, dict[str, str]]:
        data = None if body is None else json.dumps(body).encode()
        response = self._http.request(
            method, url, body=data, headers={"Content-Type": "application/json", **(headers or {})}
        )
        payload = json.loads(response.data) if response.data else None
        return response.status, payload, dict(response.headers)

    def api(self, method: str, path: str, body: Any = None, **headers: str) -> tuple[int, Any]:
        status, payload, _ = self.call(
            method, self.api_url + path, body, {k.replace("_", "-"): v for k, v in headers.items()}
        )
        return status, payload

    def command(self, journey_id: str, name: str, body: Any = None, **headers: str) -> tuple[int, Any]:
        """The agent's command `name` on the journey; accept and disburse without a `body` name what the
        record holds now (read first, as an agent that follows the journey's links would)."""
        if body is None and name in ("accept", "disburse"):
            body = naming(self.api("GET", f"/journeys/{journey_id}")[1], name)
        return self.api("POST", f"/journeys/{journey_id}/{name}", body, **headers)

    def truth(self, journey_id: str) -> Any:
        status, payload, _ = self.call("GET", f"{self.loans_url}/journeys/{journey_id}")
        return payload if status == 200 else None

    def saga(self, *args: str) -> tuple[int, str]:
        """Run the ops CLI against this system."""
        urls = ("--endpoint-url", self.aws_url, "--api-url", self.api_url, "--loans-api-url", self.loans_url)
        done = saga_command.run([*args, *urls])
        return done.returncode, done.stdout + done.stderr

    def wait_for(self, predicate: Any, timeout: float = PATIENCE, interval: float = 0.1) -> Any:
        return wait_for(predicate, timeout, interval)


def start_local(
    api_port: int,
    loans_port: int,
    aws_port: int,
    loans_api_url: str | None = None,
    extra: tuple[str, ...] = (),
    log_path: str | None = None,
) -> tuple[subprocess.Popen[str], float]:
    """Start `saga local`; its output goes to a file (a pipe nobody reads would fill and block it), and
    its state file (where it listens) beside that, not in the checkout's .saga/ (a developer's own `make
    run`, and other test processes, keep theirs)."""
    if "--state-file" not in extra:
        extra = (*extra, "--state-file", os.path.join(tempfile.mkdtemp(prefix="saga-local-"), "local.json"))
    command = [
        sys.executable,
        "-m",
        "saga.cli",
        "local",
        "--port",
        str(api_port),
        "--loans-port",
        str(loans_port),
        "--aws-port",
        str(aws_port),
        *extra,
    ]
    if loans_api_url:
        command += ["--loans-api-url", loans_api_url]
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERTOOLS_")}
    started = time.monotonic()
    log = open(log_path or os.devnull, "w")  # noqa: SIM115 - closed when the process is stopped
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True, env=env)
    process.log_file = log  # type: ignore[attr-defined]
    http = urllib3.PoolManager(timeout=urllib3.Timeout(connect=1, read=5), retries=False)
    deadline = started + STARTUP_PATIENCE
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"saga local exited early: {read_log(log_path)}")
        try:
            if http.request("GET", f"http://127.0.0.1:{api_port}/health").status == 200:
                return process, time.monotonic() - started
        except urllib3.exceptions.HTTPError:
            pass
        time.sleep(0.2)
    stop_local(process)
    raise RuntimeError(f"saga local did not become healthy within {STARTUP_PATIENCE:.0f} s")


def read_log(log_path: str | None) -> str:
    if not log_path or not os.path.exists(log_path):
        return ""
    with open(log_path) as log:
        return log.read()


# How long a stop may take before it is called hung: a hang guard, not a speed check (a stop takes ~2 s
# here, 5 on a loaded machine; every part of it winds down in parallel, saga/local/runtime.py).
STOP_PATIENCE = 120.0


def stop_local(process: subprocess.Popen[str], sig: int = signal.SIGINT, timeout: float = STOP_PATIENCE) -> int:
    process.send_signal(sig)
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGUSR1)  # the stacks go to its log, for the failure message
        time.sleep(1)
        process.kill()
        process.wait()
        return -9
    finally:
        process.log_file.close()  # type: ignore[attr-defined]


class Progress:
    """When anything last moved, for retry loops that go on while it moves and give up once nothing did
    for `stall_seconds`: never after a count of tries, since how many it takes depends on the load."""

    def __init__(self, stall_seconds: float = STALL_SECONDS) -> None:
        self.stall_seconds = stall_seconds
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def moved(self) -> None:
        with self._lock:
            self._last = time.monotonic()

    def stalled(self) -> bool:
        with self._lock:
            return time.monotonic() - self._last > self.stall_seconds


def wait_draining(read: Callable[[], T], remaining: Callable[[T], int], stall_seconds: float = STALL_SECONDS,
                  interval: float = 0.5) -> T:  # fmt: skip
    """`read()` until `remaining` of what it read is 0 (what is left to do: events pending, messages
    queued); fails once that did not go down for `stall_seconds`, however long draining takes."""
    least, moved = None, time.monotonic()
    while True:
        value = read()
        left = remaining(value)
        if left == 0:
            return value
        if least is None or left < least:
            least, moved = left, time.monotonic()
        elif time.monotonic() - moved > stall_seconds:
            raise AssertionError(f"not draining: {left} left, none done for {stall_seconds:.0f} s: {value}")
        time.sleep(interval)


def queued(sqs: SQSClient, url: str) -> int:
    """The messages in a queue, visible or in flight: a cheap look before a `saga` command that reads it (each
    costs a second of a new interpreter's start), for a wait that would otherwise run the command per look."""
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attributes.get("ApproximateNumberOfMessages", "0")) + int(
        attributes.get("ApproximateNumberOfMessagesNotVisible", "0")
    )


def start_system() -> tuple[System, FaultProxyServer | None]:
    """The runtime, with loans-api reached through a proxy: ours, or a real Toxiproxy when
    TOXIPROXY_URL names one."""
    api_port, loans_port, aws_port = free_port(), free_port(), free_port()
    own: FaultProxyServer | None = None
    control = os.environ.get("TOXIPROXY_URL")
    if control is None:
        own = FaultProxyServer("127.0.0.1", free_port()).start()
        control = own.control_url
    toxiproxy = ToxiproxyClient(control)
    proxy_port = free_port()
    toxiproxy.create_proxy(LOANS_PROXY, upstream=f"127.0.0.1:{loans_port}", listen=f"127.0.0.1:{proxy_port}")
    system = System(api_port, loans_port, aws_port, proxy_port, toxiproxy)
    system.log_path = tempfile.mkstemp(prefix="saga-local-", suffix=".log")[1]
    system.process, system.ready_seconds = start_local(
        api_port, loans_port, aws_port, loans_api_url=f"http://127.0.0.1:{proxy_port}", log_path=system.log_path
    )
    return system, own


@contextlib.contextmanager
def running_system() -> Iterator[System]:
    """A fresh system for the duration of the block; asserts it stops cleanly on SIGINT."""
    system, own_proxy = start_system()
    try:
        yield system
    finally:
        assert system.process is not None
        exit_code = stop_local(system.process)
        system.toxiproxy.delete_proxy(LOANS_PROXY)
        if own_proxy is not None:
            own_proxy.stop()
    output = read_log(system.log_path)
    assert exit_code == 0, f"saga local did not stop cleanly on SIGINT (exit {exit_code}):\n{output[-3000:]}"
