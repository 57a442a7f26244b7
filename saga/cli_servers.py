"""The long-running `saga` commands: `local` (the whole system on this machine), `proxy` (the fault
proxy) and `mcp` (the MCP server): their flags, and how each runs until it is stopped. saga/cli.py
parses the command line and runs the short ones."""

from __future__ import annotations

import argparse
import dataclasses
import faulthandler
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
}


def _seconds(text: str) -> float:
    """A wait in seconds: a finite number, 0 or more (`nan` would never end a wait)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more)")
    return value


def positive_seconds(text: str) -> float:
    """A span in seconds that holds something: a finite number above 0."""
    value = _seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def _whole(text: str, lowest: int, highest: float, what: str) -> int:
    """A whole number from `lowest` to `highest`; anything else is `text` refused as not `what`."""
    try:
        value = int(text)
    except ValueError:
        value = lowest - 1
    if not lowest <= value <= highest:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def count(text: str) -> int:
    """How many at most: a whole number, 1 or more (0 would do nothing and say it did)."""
    return _whole(text, 1, math.inf, "a whole number of 1 or more")


def port(text: str) -> int:
    """A TCP port: 0 (any free one) to 65535."""
    return _whole(text, 0, 65535, "a TCP port (0 to 65535)")


seconds = _seconds


def use_fake_aws_credentials() -> None:
    """The local AWS endpoint takes any credentials: these, unless the environment has its own."""
    for name, value in FAKE_AWS.items():
        os.environ.setdefault(name, value)


def default_region() -> str:
    """The region the environment names, else us-east-1."""
    return os.environ.get("AWS_REGION", os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))


# Each part of `saga local` that listens: what to call it, and the flag that moves it.
_PORT_FLAGS = {
    "orchestrator": ("the orchestrator API", "--port"),
    "loans-api": ("loans-api", "--loans-port"),
    "aws": ("the AWS endpoint", "--aws-port"),
}


def add_local(commands: Any) -> None:
    """`saga local` and its flags."""
    local = commands.add_parser("local", help="run the whole system on this machine (Ctrl-C stops it)")
    local.add_argument("--host", default="127.0.0.1", help="interface to bind (loopback by default)")
    local.add_argument("--port", type=port, default=3000, help="orchestrator API port")
    local.add_argument("--loans-port", type=port, default=3001, help="loans-api port")
    local.add_argument("--aws-port", type=port, default=4566, help="local AWS endpoint (moto) port")
    local.add_argument(
        "--dashboard-port", type=port, default=3002, help="the dashboard's web page (any free port if it is taken)"
    )
    local.add_argument(
        "--loans-api-url",
        default=None,
        help="where the orchestrator reaches loans-api (default: the local loans-api; "
        "point it at a fault proxy to cut road 1)",
    )
    local.add_argument(
        "--sweep-threshold",
        type=_seconds,
        default=60.0,
        help="republish outbox events pending longer than this (seconds)",
    )
    local.add_argument("--log-level", default="WARNING", help="functions' log level (DEBUG, INFO, WARNING)")
    local.add_argument(
        "--disable",
        action="append",
        default=[],
        choices=["relay", "consumer", "sweeper"],
        help="leave a poller off (repeatable): without the consumer, road 2 stops at the queue",
    )
    local.add_argument(
        "--aws-faults",
        action="append",
        default=[],
        metavar="SERVICE:OPERATION:KIND[@RATE],...",
        help="AWS errors the local endpoint answers (repeatable), e.g. "
        "dynamodb:TransactWriteItems:TransactionConflict@0.02,sns:PublishBatch:Throttled@0.05 (OPERATION may be *; "
        "kinds: see saga/local/aws_faults.py); changed at run time through the endpoint's /_saga/faults",
    )
    local.add_argument("--aws-faults-seed", type=int, default=None, help="seed of the AWS faults' random draws")
    local.add_argument(
        "--state-file", default=None, help="where to record the URLs (default: .saga/local.json, or $SAGA_STATE_FILE)"
    )


# Long enough for `saga local` started at the same moment (an agent runtime launching both); an MCP
# client's initialize waits for it.
MCP_WAIT_SECONDS = 20.0


def add_mcp(commands: Any) -> None:
    """`saga mcp` and its flags."""
    mcp = commands.add_parser(
        "mcp",
        help="an MCP server whose tools are the orchestrator API's operations (stdio; --http PORT for HTTP)",
        description="Serve the orchestrator API to agent runtimes over the Model Context Protocol: one tool per "
        "operation of its OpenAPI document, journeys as resources journey://{journeyId}. Without --api-url or "
        "--stack it fronts the running `saga local`.",
    )
    mcp.add_argument("--api-url", default=None, help="orchestrator URL (default: saga local's, else :3000)")
    mcp.add_argument(
        "--stack", default=None, help="a deployed stack's name: its orchestrator URL, requests signed with SigV4"
    )
    mcp.add_argument("--region", default=default_region())
    mcp.add_argument(
        "--http", type=port, default=None, metavar="PORT", help="streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio"
    )
    mcp.add_argument(
        "--wait",
        type=_seconds,
        default=MCP_WAIT_SECONDS,
        metavar="SECONDS",
        help=f"how long to wait for an orchestrator that is not up yet (default {MCP_WAIT_SECONDS:g})",
    )


def add_proxy(commands: Any) -> None:
    """`saga proxy` and its flags."""
    proxy = commands.add_parser("proxy", help="a fault-injecting TCP proxy with Toxiproxy's control API")
    proxy.add_argument("--host", default="127.0.0.1")
    proxy.add_argument("--control-port", type=port, default=8474, help="Toxiproxy-compatible HTTP API port")


def run_local(args: argparse.Namespace) -> int:
    """`saga local`: the whole system until SIGINT or SIGTERM; where it listens goes to the state file."""
    use_fake_aws_credentials()
    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "saga-local")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", args.log_level.upper())
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")

    from aws_lambda_powertools import Logger

    from saga import local_state
    from saga.local.aws_faults import FaultRule
    from saga.local.runtime import LocalRuntime, RuntimeConfig

    Logger(service="saga-local", level=args.log_level.upper())  # the parent of every function's logger
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID` prints every thread's stack: why is it stuck?
    stop = threading.Event()

    def on_signal(signum: int, _: Any) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    started = time.monotonic()
    if same := _same_ports({"--port": args.port, "--loans-port": args.loans_port, "--aws-port": args.aws_port}):
        print(f"saga local: could not start: {same}", file=sys.stderr)
        return 1
    try:
        faults = tuple(FaultRule.parse(spec) for flag in args.aws_faults for spec in flag.split(",") if spec.strip())
    except ValueError as error:
        print(f"saga local: --aws-faults: {error}", file=sys.stderr)
        return 2
    config = RuntimeConfig(
        host=args.host,
        port=args.port,
        loans_port=args.loans_port,
        aws_port=args.aws_port,
        dashboard_port=args.dashboard_port,
        loans_api_url=args.loans_api_url,
        sweep_threshold_seconds=args.sweep_threshold,
        disabled=frozenset(args.disable),
        aws_faults=faults,
        aws_fault_seed=args.aws_faults_seed,
    )
    state_file = Path(args.state_file) if args.state_file else local_state.path()
    # Next to the state file, this run's own (as the AWS endpoint is), removed with it: why each failed message
    # failed.
    notes = state_file.with_name(f"{state_file.stem}-consumer-failures-{os.getpid()}.jsonl").absolute()
    notes.parent.mkdir(parents=True, exist_ok=True)
    config = dataclasses.replace(config, consumer_failure_notes=notes)
    runtime = LocalRuntime(config)
    try:
        runtime.start()
        urls = runtime.urls
        local_state.write(urls, state_file, runtime.pollers_on, notes)
        _announce(urls, args.loans_api_url, len(faults), runtime.pollers_on)
        print(f"where it listens: {state_file} (the other saga commands read it)")
        print(f"ready in {time.monotonic() - started:.1f}s; Ctrl-C stops", flush=True)
        _wait_for(stop)
    except OSError as error:
        print(f"saga local: {_why_not_started(error)}", file=sys.stderr)
        return 1
    finally:
        local_state.remove(state_file)
        runtime.stop()
        from functions.consumer.failure_notes import remove_notes

        remove_notes(notes)
    print("stopped", flush=True)
    return 0


def _announce(urls: dict[str, str], loans_api_url: str | None, faults: int, pollers: dict[str, bool]) -> None:
    """What `saga local` says once ready: where each part listens, and which pollers run and which are off."""
    print(f"orchestrator API  {urls['orchestrator']}   (try: curl {urls['orchestrator']}/openapi.json)")
    print(f"loans-api         {urls['loans-api']}")
    print(f"AWS endpoint      {urls['aws']}   (moto: tables, stream, topic, queue, DLQ)")
    print(f"dashboard         {urls['dashboard']}   (the deployed dashboard's widgets, read again every few s)")
    if loans_api_url:
        print(f"orchestrator -> loans-api via {loans_api_url}")
    if faults:
        print(f"AWS faults        {faults} rule(s); {urls['aws']}/_saga/faults lists what was injected")
    running = [name for name, on in pollers.items() if on]
    off = [name for name, on in pollers.items() if not on]
    print(f"polling: {', '.join(running) or 'nothing'}; off: {', '.join(off) or 'nothing'}")


def _same_ports(ports: dict[str, int]) -> str | None:
    """Two flags naming one port (0: any free port, never the same): saga local's parts cannot share it."""
    by_port: dict[int, list[str]] = {}
    for flag, port in ports.items():
        if port:
            by_port.setdefault(port, []).append(flag)
    shared = [(port, flags) for port, flags in by_port.items() if len(flags) > 1]
    return (
        "; ".join(f"{' and '.join(flags)} both name port {port}: give each its own" for port, flags in shared) or None
    )


def _why_not_started(error: OSError) -> str:
    """One line: a busy port named with the flag that moves it, else the error."""
    from saga.local.runtime import PortInUse

    if not isinstance(error, PortInUse):
        return f"cannot start: {error}"
    part, flag = _PORT_FLAGS[error.part]
    busy = f"port {error.port} ({part}) is in use on {error.host}"
    return f"{busy}: stop what listens there, or choose another with {flag} N"


def run_proxy(args: argparse.Namespace) -> int:
    """`saga proxy`: the fault proxy's control API until SIGINT or SIGTERM."""
    from saga.faultproxy.server import FaultProxyServer

    server = FaultProxyServer(args.host, args.control_port).start()
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"fault proxy control API on {server.control_url}; ready", flush=True)
    _wait_for(stop)
    server.stop()
    return 0


def run_mcp(args: argparse.Namespace) -> int:
    """`saga mcp`: stdout belongs to the protocol (stdio), so everything else goes to stderr."""
    import anyio
    from botocore.exceptions import BotoCoreError, ClientError

    from saga import local_state, mcp_server
    from saga.ops.target import LOCAL_API_URL, Unreachable, stack_target
    from saga.orchestrator_api import UnreadableDocument

    quiet_function_logs()
    mcp_server.log_to_stderr()
    try:
        if args.stack:
            api_url, signed = stack_target(args.stack, args.region).api_url, True
        else:
            api_url, signed = args.api_url or local_state.read().get("orchestrator") or LOCAL_API_URL, False
        tools = mcp_server.build(api_url, args.region, signed, args.wait)
    except (UnreadableDocument, BotoCoreError, ClientError, Unreachable) as error:  # a bug keeps its trace
        print(f"saga mcp: cannot read the orchestrator's API: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    server = mcp_server.create_server(tools)
    names = ", ".join(op.operation_id for op in tools.operations)
    where = f"http://127.0.0.1:{args.http}/mcp" if args.http else "stdio"
    print(f"saga mcp: {api_url}{' (SigV4)' if signed else ''}: tools {names}; serving on {where}", file=sys.stderr)
    if args.http:
        mcp_server.serve_http(server, args.http)
    else:
        anyio.run(mcp_server.serve_stdio, server)
    return 0


def _wait_for(stop: threading.Event) -> None:
    """Wait in short slices: a signal the kernel delivers to another thread only runs its Python
    handler when the main thread wakes up, and a main thread blocked for good would never stop."""
    while not stop.wait(0.2):
        pass


def quiet_function_logs() -> None:
    """The functions' code the CLI runs (the audit's applier) logs as it does in Lambda; here only its
    errors matter, and on stderr: stdout is the command's answer."""
    import logging

    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "saga-cli")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    from aws_lambda_powertools import Logger

    to_stderr = logging.StreamHandler(sys.stderr)
    to_stderr.setLevel(logging.ERROR)
    Logger(service=os.environ["POWERTOOLS_SERVICE_NAME"], level="ERROR", logger_handler=to_stderr)


RUNNERS = {"local": run_local, "proxy": run_proxy, "mcp": run_mcp}
