"""`saga local` as a user starts and stops it: a busy port is one line naming the port and the flag that
changes it, Ctrl-C stops it cleanly and prints no metrics, and no process outlives it however it dies
(Ctrl-C, kill -9; SIGTERM in tests/e2e/test_local_runtime.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import urllib3
from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.constants import MAX_METRICS

from saga.local.containers import ContainerPool
from tests.support import PROCESS_PATIENCE
from tests.system import free_port, read_log, start_local, stop_local, wait_for

# A bound on waiting for a condition, never the verdict: each test waits for what it asserts and fails
# only if that has not happened by then (a hang guard: a process a busy machine is slow to end or start).
PATIENCE_SECONDS = PROCESS_PATIENCE

PROCESS_TABLE = Path("/proc/self/stat").exists()
linux_only = pytest.mark.skipif(not PROCESS_TABLE, reason="reads the process table in /proc")


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # the field after the (command name)


def _alive(pid: int) -> bool:
    """Running (a zombie has ended: only its exit status is left for its parent to read)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def descendants(root: int) -> set[int]:
    """Every process below `root` in the process tree."""
    parents = {int(p.name): _parent_of(int(p.name)) for p in Path("/proc").iterdir() if p.name.isdigit()}
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


@linux_only
def test_no_process_outlives_saga_local_killed_with_sigkill(tmp_path):
    # Given a running `saga local`, with its AWS endpoint and its function containers
    log = str(tmp_path / "local.log")
    state = tmp_path / "local.json"
    process, _ = start_local(free_port(), free_port(), free_port(), extra=("--state-file", str(state)), log_path=log)
    try:
        children = descendants(process.pid)
        assert len(children) >= 5, f"expected the endpoint and the containers, found {children}"
        # When it is killed with SIGKILL (it runs no cleanup at all)
        process.kill()
        process.wait()
    finally:
        process.log_file.close()  # type: ignore[attr-defined]

    # Then every process it started ends by itself
    def survivors() -> list[int]:
        return [pid for pid in children if _alive(pid)]

    wait_for(lambda: not survivors(), timeout=PATIENCE_SECONDS, interval=0.2)
    assert survivors() == [], f"still running {PATIENCE_SECONDS} s after the kill\n{read_log(log)[-2000:]}"
    # And a command that finds its state file left behind names it (the pid in it is dead), not only the
    # default ports it then tried (nothing listens there: the free ports below stand for them)
    assert state.exists(), "saga local's state file is gone after a kill -9: nothing could have removed it"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "AWS_ENDPOINT_URL"))}
    nowhere = ["--endpoint-url", f"http://127.0.0.1:{free_port()}", "--api-url", f"http://127.0.0.1:{free_port()}"]
    answered = subprocess.run(
        [sys.executable, "-m", "saga.cli", "status", *nowhere],
        capture_output=True,
        text=True,
        timeout=PATIENCE_SECONDS,
        check=False,
        env={**env, "SAGA_STATE_FILE": str(state)},
    )
    assert answered.returncode == 2, answered.stdout + answered.stderr
    assert f"{state} is stale" in answered.stderr, answered.stderr


_gauges = Metrics(namespace="LoanSagaTests", service="gauges")


@_gauges.log_metrics
def gauge_entry(event: dict, context: object) -> dict:
    """A Lambda entry that reports a gauge on every invocation, as the sweeper does (0 when all is well)."""
    _gauges.add_metric(name="PendingOutboxCount", unit=MetricUnit.Count, value=0)
    return {}


def test_a_container_with_metrics_off_never_prints_them_however_long_it_runs(capfd):
    # Given a function container with metrics off, as `saga local` runs every function
    environment = {"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_METRICS_NAMESPACE": "LoanSagaTests"}
    pool = ContainerPool("gauges", f"{__name__}.gauge_entry", environment, max_containers=1, function_timeout=30.0)
    try:
        # When it is invoked more often than Powertools keeps values of one metric (100: ~8 min of sweeps)
        for _ in range(MAX_METRICS + 1):
            pool({}, None)
    finally:
        pool.stop()
    # Then no metrics document reached its output (a line of 100 zeros, on stdout, where Ctrl-C left it)
    out, err = capfd.readouterr()
    assert "CloudWatchMetrics" not in out + err, (out + err)[:500]


def test_ctrl_c_stops_saga_local_cleanly_prints_no_metrics_and_leaves_no_process(tmp_path):
    # Given a running `saga local` that served a journey, with its AWS endpoint and its function containers
    log = str(tmp_path / "local.log")
    api_port = free_port()
    state = tmp_path / "local.json"
    process, _ = start_local(api_port, free_port(), free_port(), extra=("--state-file", str(state)), log_path=log)
    recorded = json.loads(state.read_text())
    assert recorded["pollers"] == {"relay": True, "consumer": True, "sweeper": True}, recorded
    notes = Path(recorded["consumerFailureNotes"])
    notes.write_text('{"messageId": "m-1", "cause": "as the consumer notes one"}\n')  # as a failure leaves it
    urllib3.request("POST", f"http://127.0.0.1:{api_port}/journeys", json={"customerId": "c"},
                    headers={"Idempotency-Key": "ctrl-c"})  # fmt: skip
    children = descendants(process.pid) if PROCESS_TABLE else set()  # (where /proc tells)
    assert len(children) >= 5 or not PROCESS_TABLE, f"expected the endpoint and the containers, found {children}"
    # When it gets Ctrl-C
    assert stop_local(process, signal.SIGINT) == 0, read_log(log)[-3000:]
    # Then it says it stopped, and printed no metrics document (Powertools' EMF)
    output = read_log(log)
    assert output.rstrip().endswith("stopped"), output[-3000:]
    assert "CloudWatchMetrics" not in output, output[-3000:]
    # And it removed its state file and its consumer's failure notes
    assert not state.exists(), state.read_text()
    assert not notes.exists(), f"{notes} outlived saga local"

    # And every process it started has ended (multiprocessing's resource tracker right after its parent)
    def survivors() -> list[int]:
        return [pid for pid in children if _alive(pid)]

    wait_for(lambda: not survivors(), timeout=PATIENCE_SECONDS, interval=0.1)
    assert survivors() == [], f"still running {PATIENCE_SECONDS} s after the stop\n{output[-2000:]}"


def _saga_local(*flags: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERTOOLS_")}
    return subprocess.run(
        [sys.executable, "-m", "saga.cli", "local", *flags],
        capture_output=True,
        text=True,
        timeout=PATIENCE_SECONDS,
        check=False,
        env=env,
    )


@pytest.mark.parametrize(
    ("flag", "part"),
    [("--aws-port", "the AWS endpoint"), ("--port", "the orchestrator API"), ("--loans-port", "loans-api")],
)
def test_a_busy_port_is_one_line_naming_the_port_and_the_flag_that_changes_it(tmp_path, flag, part):
    # Given a port another program listens on (as LocalStack does on 4566, a dev server on 3000)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        ports = {"--port": free_port(), "--loans-port": free_port(), "--aws-port": free_port(), flag: port}
        flags = [str(value) for pair in ports.items() for value in pair]
        # When `saga local` is started on it
        done = _saga_local(*flags, "--state-file", str(tmp_path / "local.json"))
    # Then it exits 1 with one line on stderr that names the port, the part and the flag, and no traceback
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"port {port} ({part}" in lines[0], lines[0]
    assert f"{flag} N" in lines[0], lines[0]
    assert "Traceback" not in done.stderr + done.stdout
