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
from pathlib import Path
from typing import Any

EXIT_CODES = """exit codes (every command; --json prints exactly one JSON document on stdout):
  0  all is well: status --check passed, journey show / audit: the records agree with loans-api
  1  something needs an operator: status --check failed (DLQ, outbox age, relay failures, unreadable
     outbox items), journey show: the record disagrees, audit: journeys out of sync
  2  the system could not be read (unreachable, or an answer it should not give)
  3  journey show: neither the orchestrator nor loans-api knows the journey

Without URLs, commands use the ones a running `saga local` recorded in .saga/local.json (or
$SAGA_STATE_FILE), else the default local ports."""

_FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="saga",
        description=__doc__,
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)

    _add_local(commands)

    def target_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--endpoint-url", default=None, help="AWS endpoint (default: $AWS_ENDPOINT_URL, else the local runtime's)"
        )
        sub.add_argument("--stack", default=None, help="a deployed stack's name: find everything via its outputs")
        sub.add_argument("--region", default=_default_region())
        sub.add_argument("--api-url", default=None, help="orchestrator URL (default: saga local's, else :3000)")
        sub.add_argument("--loans-api-url", default=None, help="loans-api URL (default: saga local's, else :3001)")
        sub.add_argument("--json", action="store_true", help="exactly one JSON document on stdout")

    status = commands.add_parser("status", help="outbox and queue figures")
    target_options(status)
    status.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when the DLQ holds messages, the oldest pending outbox event is older than "
        "--max-outbox-age, relay failures are queued or outbox items are unreadable; says which and what next",
    )
    status.add_argument("--max-outbox-age", type=float, default=300.0, help="seconds (default 300, as the alarm)")

    dlq = commands.add_parser("dlq", help="inspect or redrive the events DLQ")
    dlq_commands = dlq.add_subparsers(dest="dlq_command", required=True)
    dlq_list = dlq_commands.add_parser("list", help="what is in the DLQ, and why where known")
    target_options(dlq_list)
    redrive = dlq_commands.add_parser("redrive", help="move DLQ messages back to the events queue")
    target_options(redrive)
    redrive.add_argument("--dry-run", action="store_true", help="list what would move, move nothing")
    redrive.add_argument("--max", type=int, default=100, help="move at most this many")

    journey = commands.add_parser("journey", help="journey tools")
    journey_commands = journey.add_subparsers(dest="journey_command", required=True)
    show = journey_commands.add_parser(
        "show", help="Control Record next to loans-api's truth, and the journey's events in order"
    )
    target_options(show)
    show.add_argument("journey_id")

    audit = commands.add_parser(
        "audit", help="list every journey whose Control Record disagrees with loans-api past a grace period"
    )
    target_options(audit)
    audit.add_argument("--grace", type=float, default=60.0, help="seconds a disagreement may last (default 60)")
    audit.add_argument(
        "--since", type=float, default=None, help="only journeys changed in the last SECONDS (default: all)"
    )
    audit.add_argument("--journey", action="append", default=[], help="only this journey (repeatable)")
    audit.add_argument(
        "--repair",
        action="store_true",
        help="apply loans-api's newest event to each record that is mechanically behind, through the "
        "applier both roads use (never writes to loans-api)",
    )

    demo = commands.add_parser("demo", help="a scripted agent walks one journey through its links")
    target_options(demo)

    _add_mcp(commands)
    _openapi_parser(commands, target_options)

    proxy = commands.add_parser("proxy", help="a fault-injecting TCP proxy with Toxiproxy's control API")
    proxy.add_argument("--host", default="127.0.0.1")
    proxy.add_argument("--control-port", type=int, default=8474, help="Toxiproxy-compatible HTTP API port")
    return parser


def _default_region() -> str:
    return os.environ.get("AWS_REGION", os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))


def _add_local(commands: Any) -> None:
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


def _add_mcp(commands: Any) -> None:
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
    mcp.add_argument("--region", default=_default_region())
    mcp.add_argument(
        "--http", type=int, default=None, metavar="PORT", help="streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio"
    )


def _openapi_parser(commands: Any, target_options: Any) -> None:
    spec = commands.add_parser(
        "openapi",
        help="print an API's OpenAPI document: as served (3.1), or exported for Amazon Bedrock Agents (3.0.0)",
    )
    spec.add_argument("--format", choices=["openapi", "bedrock"], default="openapi", dest="spec_format")
    spec.add_argument("--api", choices=["orchestrator", "loans-api"], default="orchestrator")
    spec.add_argument("--out", help="write the document to this file instead of stdout")
    target_options(spec)


def _target(args: argparse.Namespace) -> Any:
    from saga import local_state, ops

    if args.stack:
        return ops.stack_target(args.stack, args.region)
    recorded = local_state.read()
    endpoint = args.endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or recorded.get("aws") or ops.LOCAL_AWS_ENDPOINT
    api_url = args.api_url or recorded.get("orchestrator") or ops.LOCAL_API_URL
    loans_api_url = args.loans_api_url or recorded.get("loans-api") or ops.LOCAL_LOANS_API_URL
    for name, value in _FAKE_AWS.items():
        os.environ.setdefault(name, value)
    return ops.local_target(endpoint, args.region, api_url.rstrip("/"), loans_api_url.rstrip("/"))


def _run_mcp(args: argparse.Namespace) -> int:
    """`saga mcp`: stdout belongs to the protocol (stdio), so everything else goes to stderr."""
    import anyio
    from botocore.exceptions import BotoCoreError, ClientError

    from saga import local_state, mcp_server, ops

    _quiet_function_logs()
    mcp_server.log_to_stderr()
    try:
        if args.stack:
            api_url, signed = ops.stack_target(args.stack, args.region).api_url, True
        else:
            api_url, signed = args.api_url or local_state.read().get("orchestrator") or ops.LOCAL_API_URL, False
        tools = mcp_server.build(api_url, args.region, signed)
    except (mcp_server.UnreadableDocument, BotoCoreError, ClientError, KeyError) as error:
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


def _run_local(args: argparse.Namespace) -> int:
    for name, value in _FAKE_AWS.items():
        os.environ.setdefault(name, value)
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
        loans_api_url=args.loans_api_url,
        sweep_threshold_seconds=args.sweep_threshold,
        disabled=frozenset(args.disable),
        aws_faults=faults,
        aws_fault_seed=args.aws_faults_seed,
    )
    runtime = LocalRuntime(config)
    state_file = Path(args.state_file) if args.state_file else local_state.path()
    try:
        runtime.start()
        urls = runtime.urls
        local_state.write(urls, state_file)
        print(f"orchestrator API  {urls['orchestrator']}   (try: curl {urls['orchestrator']}/openapi.json)")
        print(f"loans-api         {urls['loans-api']}")
        print(f"AWS endpoint      {urls['aws']}   (moto: tables, stream, topic, queue, DLQ)")
        if args.loans_api_url:
            print(f"orchestrator -> loans-api via {args.loans_api_url}")
        if faults:
            print(f"AWS faults        {len(faults)} rule(s); {urls['aws']}/_saga/faults lists what was injected")
        running = [name for name in ("relay", "consumer", "sweeper") if name not in args.disable]
        print(f"polling: {', '.join(running) or 'nothing'}; off: {', '.join(args.disable) or 'nothing'}")
        print(f"where it listens: {state_file} (the other saga commands read it)")
        print(f"ready in {time.monotonic() - started:.1f}s; Ctrl-C stops", flush=True)
        _wait_for(stop)
    except OSError as error:
        print(f"saga local: cannot start: {error}", file=sys.stderr)
        return 1
    finally:
        local_state.remove(state_file)
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
    """One JSON document on stdout for scripts, or the text for humans."""
    print(json.dumps(value, indent=2, default=str) if as_json else human)


def _problem(command: str, title: str, detail: str) -> dict[str, Any]:
    """An RFC 9457 problem document for a failure to read the system."""
    return {"type": "about:blank", "title": title, "status": 503, "detail": detail, "command": f"saga {command}"}


def _status(args: argparse.Namespace, target: Any) -> int:
    from saga import ops

    report = ops.status(target)
    if args.check:
        report["problems"] = ops.status_problems(report, args.max_outbox_age)
    _emit(report, args.json, ops.status_table(report))
    return 1 if report.get("problems") else 0


def _dlq(args: argparse.Namespace, target: Any) -> int:
    from saga import ops

    if args.dlq_command == "list":
        entries = ops.dlq_list(target)
        lines = [
            f"{e['messageId']}  receives={e['receiveCount']}  {e['type'] or '-'}"
            f"  journey={e['journeyId'] or '-'}  event={e['eventId'] or '-'}  why: {e['reason']}"
            for e in entries
        ]
        _emit(entries, args.json, "\n".join(lines) or "the DLQ is empty")
        return 0
    moved = ops.dlq_redrive(target, args.dry_run, args.max)
    verb = "would move" if args.dry_run else "moved"
    lines = [f"{verb} {len(moved)} message(s) to the events queue"]
    lines += [f"  {entry['messageId']}  {entry['body']}" for entry in moved]
    _emit({"dryRun": args.dry_run, "moved": moved}, args.json, "\n".join(lines))
    return 0


def _journey(args: argparse.Namespace, target: Any) -> int:
    from saga import ops

    result = ops.journey_show(target, args.journey_id)
    _emit(result, args.json, ops.journey_text(result))
    if not result["found"]:
        return 3
    return 0 if result["agree"] else 1


def _audit(args: argparse.Namespace, target: Any) -> int:
    from saga import ops

    report = ops.audit(target, args.grace, args.repair, args.journey, args.since)
    _emit(report, args.json, ops.audit_text(report))
    return 0 if report["agree"] and not report["unreadable"] else 1


def _demo(args: argparse.Namespace, target: Any) -> int:
    from saga import ops

    narrate = (lambda line: print(line, file=sys.stderr)) if args.json else print  # stdout stays one document
    record = ops.demo(target, narrate)
    if args.json:
        _emit(record, True, "")
    return 0


def _openapi(args: argparse.Namespace, target: Any) -> int:
    from saga import ops

    text = json.dumps(ops.openapi_document(target, args.api, args.spec_format), indent=2) + "\n"
    if args.out:
        with open(args.out, "w") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    return 0


_OPERATIONS = {
    "status": _status,
    "dlq": _dlq,
    "journey": _journey,
    "audit": _audit,
    "demo": _demo,
    "openapi": _openapi,
}


def _quiet_function_logs() -> None:
    """The functions' code the CLI runs (the audit's applier) logs as it does in Lambda; here only its
    errors matter, and on stderr: stdout is the command's answer."""
    import logging

    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "saga-cli")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    from aws_lambda_powertools import Logger

    to_stderr = logging.StreamHandler(sys.stderr)
    to_stderr.setLevel(logging.ERROR)
    Logger(service=os.environ["POWERTOOLS_SERVICE_NAME"], level="ERROR", logger_handler=to_stderr)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "local":
        return _run_local(args)
    if args.command == "proxy":
        return _run_proxy(args)
    if args.command == "mcp":
        return _run_mcp(args)
    _quiet_function_logs()
    from botocore.exceptions import BotoCoreError, ClientError
    from urllib3.exceptions import HTTPError

    from saga.ops import Unreachable

    try:
        return _OPERATIONS[args.command](args, _target(args))
    except (BotoCoreError, ClientError, HTTPError, KeyError, Unreachable) as error:
        detail = f"{type(error).__name__}: {error}"
        print(f"saga {args.command}: cannot reach the system: {detail}", file=sys.stderr)
        if getattr(args, "json", False):
            _emit(_problem(args.command, "cannot reach the system", detail), True, "")
        return 2


if __name__ == "__main__":
    sys.exit(main())
