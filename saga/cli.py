"""The `saga` command: run the system locally and operate it (locally or deployed)."""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import sys
import threading
import time
from typing import Any

_FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="saga", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    local = commands.add_parser("local", help="run the whole system on this machine (Ctrl-C stops it)")
    local.add_argument("--host", default="127.0.0.1", help="interface to bind (loopback by default)")
    local.add_argument("--port", type=int, default=3000, help="orchestrator API port")
    local.add_argument("--loans-port", type=int, default=3001, help="loans-api port")
    local.add_argument("--aws-port", type=int, default=4566, help="local AWS endpoint (moto) port")
    local.add_argument(
        "--loans-api-url",
        default=None,
        help="where the orchestrator reaches loans-api (default: the local loans-api; "
        "point it at a fault proxy to cut road 1)",
    )
    local.add_argument(
        "--sweep-threshold", type=float, default=60.0, help="republish outbox events pending longer than this (seconds)"
    )
    local.add_argument("--log-level", default="WARNING", help="functions' log level (DEBUG, INFO, WARNING)")

    def target_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--endpoint-url", default=None, help="AWS endpoint (default: $AWS_ENDPOINT_URL, else the local runtime's)"
        )
        sub.add_argument("--stack", default=None, help="a deployed stack's name: find everything via its outputs")
        sub.add_argument(
            "--region", default=os.environ.get("AWS_REGION", os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
        )
        sub.add_argument("--api-url", default="http://127.0.0.1:3000", help="orchestrator URL (local)")
        sub.add_argument("--loans-api-url", default="http://127.0.0.1:3001", help="loans-api URL (local)")

    status = commands.add_parser("status", help="outbox and queue figures")
    target_options(status)
    status.add_argument("--json", action="store_true", help="machine-readable output")

    dlq = commands.add_parser("dlq", help="inspect or redrive the events DLQ")
    dlq_commands = dlq.add_subparsers(dest="dlq_command", required=True)
    dlq_list = dlq_commands.add_parser("list", help="what is in the DLQ, and why where known")
    target_options(dlq_list)
    dlq_list.add_argument("--json", action="store_true")
    redrive = dlq_commands.add_parser("redrive", help="move DLQ messages back to the events queue")
    target_options(redrive)
    redrive.add_argument("--dry-run", action="store_true", help="list what would move, move nothing")
    redrive.add_argument("--max", type=int, default=100, help="move at most this many")

    journey = commands.add_parser("journey", help="journey tools")
    journey_commands = journey.add_subparsers(dest="journey_command", required=True)
    show = journey_commands.add_parser("show", help="Control Record next to loans-api's truth")
    target_options(show)
    show.add_argument("journey_id")

    demo = commands.add_parser("demo", help="a scripted agent walks one journey through its links")
    target_options(demo)

    proxy = commands.add_parser("proxy", help="a fault-injecting TCP proxy with Toxiproxy's control API")
    proxy.add_argument("--host", default="127.0.0.1")
    proxy.add_argument("--control-port", type=int, default=8474, help="Toxiproxy-compatible HTTP API port")
    return parser


def _target(args: argparse.Namespace) -> Any:
    from saga import ops

    if args.stack:
        return ops.stack_target(args.stack, args.region)
    endpoint = args.endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or ops.LOCAL_AWS_ENDPOINT
    for name, value in _FAKE_AWS.items():
        os.environ.setdefault(name, value)
    return ops.local_target(endpoint, args.region, args.api_url.rstrip("/"), args.loans_api_url.rstrip("/"))


def _wait_for(stop: threading.Event) -> None:
    """Wait in short slices: a signal the kernel delivers to another thread only runs its Python
    handler when the main thread wakes up, and a main thread blocked for good would never stop."""
    while not stop.wait(0.2):
        pass


def _run_local(args: argparse.Namespace) -> int:
    for name, value in _FAKE_AWS.items():
        os.environ.setdefault(name, value)
    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "saga-local")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", args.log_level.upper())
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")

    from aws_lambda_powertools import Logger

    from saga.local.runtime import LocalRuntime, RuntimeConfig

    Logger(service="saga-local", level=args.log_level.upper())  # the parent of every function's logger
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID` prints every thread's stack: why is it stuck?
    stop = threading.Event()

    def on_signal(signum: int, _: Any) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    started = time.monotonic()
    config = RuntimeConfig(
        host=args.host,
        port=args.port,
        loans_port=args.loans_port,
        aws_port=args.aws_port,
        loans_api_url=args.loans_api_url,
        sweep_threshold_seconds=args.sweep_threshold,
    )
    runtime = LocalRuntime(config)
    try:
        runtime.start()
        urls = runtime.urls
        print(f"orchestrator API  {urls['orchestrator']}   (try: curl {urls['orchestrator']}/openapi.json)")
        print(f"loans-api         {urls['loans-api']}")
        print(f"AWS endpoint      {urls['aws']}   (moto: tables, stream, topic, queue, DLQ)")
        if args.loans_api_url:
            print(f"orchestrator -> loans-api via {args.loans_api_url}")
        print("relay, consumer and sweeper are polling; `saga status` shows the outbox and queues")
        print(f"ready in {time.monotonic() - started:.1f}s; Ctrl-C stops", flush=True)
        _wait_for(stop)
    except OSError as error:
        print(f"saga local: cannot start: {error}", file=sys.stderr)
        return 1
    finally:
        runtime.stop()
    print("stopped", flush=True)
    return 0


def _run_proxy(args: argparse.Namespace) -> int:
    from saga.faultproxy import FaultProxyServer

    server = FaultProxyServer(args.host, args.control_port).start()
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"fault proxy control API on {server.control_url}; ready", flush=True)
    _wait_for(stop)
    server.stop()
    return 0


def _emit(value: Any, as_json: bool, human: str) -> None:
    print(json.dumps(value, indent=2, default=str) if as_json else human)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "local":
        return _run_local(args)
    if args.command == "proxy":
        return _run_proxy(args)
    from botocore.exceptions import BotoCoreError, ClientError
    from urllib3.exceptions import HTTPError

    from saga import ops

    try:
        target = _target(args)
        if args.command == "status":
            report = ops.status(target)
            _emit(report, args.json, ops.status_table(report))
        elif args.command == "dlq" and args.dlq_command == "list":
            entries = ops.dlq_list(target)
            lines = [
                f"{e['messageId']}  receives={e['receiveCount']}  {e['type'] or '-'}"
                f"  journey={e['journeyId'] or '-'}  event={e['eventId'] or '-'}  why: {e['reason']}"
                for e in entries
            ]
            _emit(entries, args.json, "\n".join(lines) or "the DLQ is empty")
        elif args.command == "dlq":
            moved = ops.dlq_redrive(target, args.dry_run, args.max)
            verb = "would move" if args.dry_run else "moved"
            print(f"{verb} {len(moved)} message(s) to the events queue")
            for entry in moved:
                print(f"  {entry['messageId']}  {entry['body']}")
        elif args.command == "journey":
            result = ops.journey_show(target, args.journey_id)
            print(json.dumps(result, indent=2))
            print("agree: yes" if result["agree"] else "agree: NO\n  " + "\n  ".join(result["differences"]))
        elif args.command == "demo":
            ops.demo(target, print)
    except (BotoCoreError, ClientError, HTTPError, KeyError) as error:
        print(f"saga {args.command}: cannot reach the system: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
