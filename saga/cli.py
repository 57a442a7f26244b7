"""The `saga` command: run the system locally and operate it (locally or deployed)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

from saga import cli_servers as servers
from saga.verify import command as verify_command
from shared import topology

# listJourneys' page (functions/orchestrator/api.py PAGE, MAX_PAGE; tests/unit/test_cli_exit_codes.py holds
# them equal), spelled here: importing the API would cost every command its import.
PAGE, MAX_PAGE = 5, 10
# sysexits.h's EX_SOFTWARE: an internal error, whatever the command.
EXIT_BUG = 70

EXIT_CODES = f"""exit codes (every command that reports takes --json: exactly one JSON document on stdout):
  0  all is well: status --check passed, journey show / audit: the records agree with loans-api
  1  something needs an operator: status --check failed (DLQ, outbox age, events queue age, relay
     failures not yet republished, unreadable outbox items), journey show: the record disagrees,
     audit: journeys out of sync
  2  the system could not be read: nothing answered ("cannot reach the system": start it, or check
     the URLs / --stack), or something answered as the system would not (the problem says what);
     also a command line that is wrong
  3  a journey named (journey show ID, audit --journey ID) is known to neither the orchestrator nor
     loans-api
  {EXIT_BUG} a bug in saga itself (its traceback is on stderr)
  verify: 0 every check holds, 1 a check failed (each FAIL line says what to do), 2 the stack is unreadable
  local: 0 stopped (Ctrl-C, SIGTERM), 1 could not start (a busy port: one line naming it and the flag
     that moves it), 2 a wrong --aws-faults

Without URLs, commands use the ones a running `saga local` recorded in .saga/local.json (or
$SAGA_STATE_FILE), else the default local ports."""


def _parser(json_wanted: bool = False) -> argparse.ArgumentParser:
    class Parser(argparse.ArgumentParser):
        """argparse's parser (and its subcommands'), whose usage error is also one problem document on stdout
        when the command line asks for --json (a script reads stdout whatever the error)."""

        def error(self, message: str) -> NoReturn:
            if json_wanted:
                _emit({**_problem("", "usage", message), "status": 400, "command": self.prog}, True, "")
            super().error(message)

    parser = Parser(
        prog="saga",
        description=__doc__,
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from saga.version import version

    parser.add_argument("--version", action="version", version=f"saga {version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    servers.add_local(commands)

    def target_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--endpoint-url", default=None, help="AWS endpoint (default: $AWS_ENDPOINT_URL, else the local runtime's)"
        )
        sub.add_argument("--stack", default=None, help="a deployed stack's name: find everything via its outputs")
        sub.add_argument("--region", default=servers.default_region())
        sub.add_argument("--api-url", default=None, help="orchestrator URL (default: saga local's, else :3000)")
        sub.add_argument("--loans-api-url", default=None, help="loans-api URL (default: saga local's, else :3001)")
        sub.add_argument("--json", action="store_true", help="exactly one JSON document on stdout")

    status = commands.add_parser("status", help="outbox and queue figures")
    target_options(status)
    status.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when the DLQ holds messages, the oldest pending outbox event is older than "
        "--max-outbox-age, a message has waited in the events queue longer than --max-queue-age (a stuck "
        "consumer), a relay failure's events are still PENDING, or outbox items are unreadable; says which "
        "and what clears it",
    )
    for flag, alarm, said in (
        ("--max-outbox-age", topology.OUTBOX_AGE_ALARM_SECONDS, "seconds (default {:.0f}, as the alarm)"),
        ("--max-queue-age", topology.EVENTS_QUEUE_AGE_ALARM_SECONDS,
         "seconds a message may wait in the events queue (default {:.0f}, as EventsQueueTooOld)"),
    ):  # fmt: skip
        status.add_argument(flag, type=servers.seconds, default=float(alarm), help=said.format(float(alarm)))

    failures = commands.add_parser("relay-failures", help="the stream batches that exhausted the relay's retries")
    failures_commands = failures.add_subparsers(dest="failures_command", required=True)
    clear = failures_commands.add_parser(
        "clear", help="remove the records whose events have all been published since (keeps the others)"
    )
    target_options(clear)

    dlq = commands.add_parser("dlq", help="inspect or redrive the events DLQ")
    dlq_commands = dlq.add_subparsers(dest="dlq_command", required=True)
    dlq_list = dlq_commands.add_parser("list", help="what is in the DLQ, and why where known")
    target_options(dlq_list)
    redrive = dlq_commands.add_parser("redrive", help="move DLQ messages back to the events queue")
    target_options(redrive)
    redrive.add_argument("--dry-run", action="store_true", help="list what would move, move nothing")
    redrive.add_argument("--max", type=servers.count, default=100, help="move at most this many")

    _journey_parser(commands, target_options)

    audit = commands.add_parser(
        "audit", help="list every journey whose Control Record disagrees with loans-api past a grace period"
    )
    target_options(audit)
    audit.add_argument(
        "--grace", type=servers.seconds, default=60.0, help="seconds a disagreement may last (default 60)"
    )
    audit.add_argument(
        "--since",
        type=servers.positive_seconds,
        default=None,
        help="only journeys changed in the last SECONDS (default: all)",
    )
    audit.add_argument("--journey", action="append", default=[], help="only this journey (repeatable)")
    audit.add_argument(
        "--repair",
        action="store_true",
        help="apply loans-api's newest event to each record that is mechanically behind, through the "
        "applier both roads use (never writes to loans-api)",
    )
    audit.add_argument(
        "--rebuild",
        action="store_true",
        help="with --repair: re-project every other record out of sync (ahead of loans-api, diverged) from "
        "loans-api's ledger, and say what changed (compare-and-swap on version, trail entry 'rebuild')",
    )

    demo = commands.add_parser("demo", help="a scripted agent walks one journey through its links")
    target_options(demo)

    servers.add_mcp(commands)
    verify_command.add_verify(commands, servers.default_region())
    _openapi_parser(commands, target_options)

    servers.add_proxy(commands)
    completion = commands.add_parser(
        "completion", help='print a shell completion script: eval "$(saga completion bash)" (CONTRIBUTING.md)'
    )
    completion.add_argument("shell", choices=["bash"])
    return parser


def _journey_parser(commands: Any, target_options: Any) -> None:
    journey = commands.add_parser("journey", help="journey tools")
    journey_commands = journey.add_subparsers(dest="journey_command", required=True)
    show = journey_commands.add_parser(
        "show", help="Control Record next to loans-api's truth, and the journey's events in order"
    )
    target_options(show)
    show.add_argument("journey_id")
    listing = journey_commands.add_parser(
        "list", help="a customer's journeys, newest first (those this caller created: the API's listJourneys)"
    )
    target_options(listing)
    listing.add_argument("--customer", required=True, help="the customerId the journeys were created for")
    listing.add_argument("--limit", type=int, default=PAGE, help=f"journeys per page, 1..{MAX_PAGE} (default {PAGE})")
    listing.add_argument("--cursor", default=None, help="the page after the one that printed this cursor")
    listing.add_argument(
        "--caller",
        default=None,
        help="locally: the caller whose journeys to list (an ARN, as X-Saga-Caller; default: the local agent's); "
        "on a stack, whoever signs is the caller",
    )


def _openapi_parser(commands: Any, target_options: Any) -> None:
    spec = commands.add_parser(
        "openapi",
        help="print an API's OpenAPI document: as served (3.1), or exported for Amazon Bedrock Agents (3.0.0); "
        "made from this checkout's code with nothing running, or read from the system --stack, --api-url or "
        "--loans-api-url names",
    )
    spec.add_argument("--format", choices=["openapi", "bedrock"], default="openapi", dest="spec_format")
    spec.add_argument("--api", choices=["orchestrator", "loans-api"], default="orchestrator")
    spec.add_argument("--out", help="write the document to this file instead of stdout")
    target_options(spec)


def _target(args: argparse.Namespace) -> Any:
    from saga import local_state
    from saga.ops import target

    if args.stack:
        return target.stack_target(args.stack, args.region)
    recorded = local_state.read()
    endpoint = (
        args.endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or recorded.get("aws") or target.LOCAL_AWS_ENDPOINT
    )
    api_url = args.api_url or recorded.get("orchestrator") or target.LOCAL_API_URL
    loans_api_url = args.loans_api_url or recorded.get("loans-api") or target.LOCAL_LOANS_API_URL
    servers.use_fake_aws_credentials()
    return target.local_target(endpoint, args.region, api_url.rstrip("/"), loans_api_url.rstrip("/"))


def _local_runtime(args: argparse.Namespace) -> dict[str, Any] | None:
    """What the running `saga local` recorded (saga/local_state.py), when the command reads that runtime (its
    state file's AWS endpoint); None for a deployed stack or another endpoint (nothing is recorded of it here)."""
    from saga import local_state

    recorded = local_state.read()
    if args.stack or not recorded:
        return None
    endpoint = args.endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or recorded.get("aws")
    return recorded if endpoint == recorded.get("aws") else None


def _local_pollers(args: argparse.Namespace) -> dict[str, bool] | None:
    """Which pollers the running `saga local` runs, when the command reads that runtime."""
    from saga import local_state

    recorded = _local_runtime(args)
    return None if recorded is None else local_state.pollers(recorded)


def _consumer_failures(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """What the consumer recorded of each failed message (by message id), and where its log is."""
    from functions.consumer.failure_notes import read_notes
    from saga import local_state

    if args.stack:
        return {}, f"the consumer function's CloudWatch log group (stack {args.stack}): search it for the messageId"
    recorded = _local_runtime(args)
    if recorded is None:
        return {}, "the log of the consumer that received it (wherever that runtime logs): search it for the messageId"
    notes = local_state.failure_notes(recorded)
    log = f"the output of `saga local` (pid {recorded.get('pid')}): search it for the messageId"
    return ({} if notes is None else dict(read_notes(notes))), log


def _emit(value: Any, as_json: bool, human: str) -> None:
    """One JSON document on stdout for scripts, or the text for humans."""
    print(json.dumps(value, indent=2, default=str) if as_json else human)


def _problem(command: str, title: str, detail: str) -> dict[str, Any]:
    """An RFC 9457 problem document for a failure to read the system."""
    return {"type": "about:blank", "title": title, "status": 503, "detail": detail, "command": f"saga {command}"}


def _status(args: argparse.Namespace, target: Any) -> int:
    from saga.ops import road2

    report = road2.status(target)
    if (pollers := _local_pollers(args)) is not None:
        report["pollers"] = pollers
    if args.check:
        report["problems"] = road2.status_problems(report, args.max_outbox_age, args.max_queue_age)
    _emit(report, args.json, road2.status_table(report))
    return 1 if report.get("problems") else 0


def _dlq(args: argparse.Namespace, target: Any) -> int:
    from saga.ops import road2

    if args.dlq_command == "list":
        depth = road2.depth(target, target.events_dlq_url)  # before the listing's own receives
        causes, log = _consumer_failures(args)
        entries = road2.dlq_list(target, causes=causes, log=log)
        _emit(entries, args.json, _dlq_text(entries, depth))
        return 0
    moved = road2.dlq_redrive(target, args.dry_run, args.max)
    verb = "would move" if args.dry_run else "moved"
    lines = [f"{verb} {len(moved)} message(s) to the events queue"]
    lines += [f"  {entry['messageId']}  {entry['body']}" for entry in moved]
    _emit({"dryRun": args.dry_run, "moved": moved}, args.json, "\n".join(lines))
    return 0


def _dlq_text(entries: list[dict[str, Any]], depth: dict[str, int]) -> str:
    """`saga dlq list` for a human: how many the queue holds (its own count: a listing reads at most 100, and
    not what another reader holds), then each message listed."""
    # Counted before the listing received anything: what was in flight then is another reader's.
    held = depth["inFlight"]
    total = max(depth["visible"] + held, len(entries))
    if not total:
        return "the DLQ is empty"
    lines = [
        (
            f"{total} message(s) in the DLQ"
            if len(entries) == total
            else f"{len(entries)} listed of about {total} in the DLQ"
        )
        + (
            f" ({held} in flight: received by another reader a moment ago; list again once it times out)"
            if held
            else ""
        )
        + ("; receives= counts this listing's own receive of each (+1)" if entries else "")
    ]
    lines += [
        f"{e['messageId']}  receives={e['receiveCount']}  {e['type'] or '-'}"
        f"  journey={e['journeyId'] or '-'}  event={e['eventId'] or '-'}  why: {e['reason']}"
        for e in entries
    ]
    return "\n".join(lines)


def _relay_failures(args: argparse.Namespace, target: Any) -> int:
    from saga.ops import road2

    result = road2.relay_failures_clear(target)
    human = f"cleared {result['cleared']} relay failure record(s) whose events were all published since"
    if result["kept"]:
        human += f"; kept {result['kept']} whose events (or later ones) are still PENDING"
    _emit(result, args.json, human)
    return 0


def _usage(args: argparse.Namespace, why: str) -> int:
    """Exit 2 for a command line that is wrong: one line on stderr, and with --json a problem document."""
    print(f"saga {args.command}: {why}", file=sys.stderr)
    if getattr(args, "json", False):
        _emit({**_problem(args.command, "usage", why), "status": 400}, True, "")
    return 2


def _journey(args: argparse.Namespace, target: Any) -> int:
    from saga.ops import journeys
    from shared.loan_terms import ID_PATTERN

    if args.journey_command == "list":
        if not 1 <= args.limit <= MAX_PAGE:
            return _usage(args, f"--limit {args.limit}: a page holds 1..{MAX_PAGE} journeys")
        page = journeys.journey_list(target, args.customer, args.limit, args.cursor, args.caller)
        _emit(page, args.json, journeys.journey_list_text(args.customer, page))
        return 0

    if not re.fullmatch(ID_PATTERN, args.journey_id):  # the APIs' own pattern: no journey has such an id
        return _usage(args, f"{args.journey_id!r} is not a journey id (letters, digits and dashes, 1..64)")
    result = journeys.journey_show(target, args.journey_id)
    _emit(result, args.json, journeys.journey_text(result))
    if not result["found"]:
        return 3
    return 0 if result["agree"] else 1


def _audit(args: argparse.Namespace, target: Any) -> int:
    from saga.ops import journeys

    if args.rebuild and not args.repair:
        return _usage(args, "--rebuild needs --repair (a rebuild is a repair the applier would not make)")
    report = journeys.audit(target, args.grace, args.repair, args.journey, args.since, rebuild=args.rebuild)
    _emit(report, args.json, journeys.audit_text(report))
    if report["unknown"]:
        return 3
    return 0 if report["agree"] and not report["unreadable"] else 1


def _demo(args: argparse.Namespace, target: Any) -> int:
    from saga.ops import demo

    narrate = (lambda line: print(line, file=sys.stderr)) if args.json else print  # stdout stays one document
    record = demo.demo(target, narrate)
    if args.json:
        _emit(record, True, "")
    return 0


def _openapi(args: argparse.Namespace) -> int:
    """The document from this checkout's code, nothing running; from a running system when one is named."""
    if args.stack or args.api_url or args.loans_api_url:
        from saga.ops import demo

        document = demo.openapi_document(_target(args), args.api, args.spec_format)
    else:
        from saga.ops.documents import served_document

        document = served_document(args.api, args.spec_format)
    text = json.dumps(document, indent=2) + "\n"
    if args.out:
        with open(args.out, "w") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    return 0


_OPERATIONS = {
    "status": _status,
    "dlq": _dlq,
    "relay-failures": _relay_failures,
    "journey": _journey,
    "audit": _audit,
    "demo": _demo,
}


def _where_to_start(args: argparse.Namespace) -> str:
    """What to check or start when the system cannot be reached."""
    if getattr(args, "stack", None):
        return f"check the stack's name (--stack {args.stack}), --region and your AWS credentials"
    from saga import local_state

    start = (
        "is it running? start it with `make run` (or `saga local`) in this folder, or point "
        "--endpoint-url/--api-url/--loans-api-url (or --stack) at a running system"
    )
    left_behind = local_state.stale()
    return start if left_behind is None else f"{left_behind}; the default local ports were tried instead. {start}"


def _cannot_read(args: argparse.Namespace, title: str, detail: str) -> int:
    """Exit 2: one line on stderr, and with --json the problem document on stdout."""
    print(f"saga {args.command}: {title}: {detail}", file=sys.stderr)
    if getattr(args, "json", False):
        _emit(_problem(args.command, title, detail), True, "")
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser("--json" in argv)
    args = parser.parse_args(argv)
    if args.command == "completion":
        from saga.completion import bash_script

        sys.stdout.write(bash_script(parser))
        return 0
    if args.command in servers.RUNNERS:
        return servers.RUNNERS[args.command](args)
    servers.quiet_function_logs()
    if args.command == "verify":
        return _guarded(args, lambda: verify_command.run_verify(args))
    if args.command == "openapi":
        return _guarded(args, lambda: _openapi(args))
    return _guarded(args, lambda: _OPERATIONS[args.command](args, _target(args)))


def _guarded(args: argparse.Namespace, run: Callable[[], int]) -> int:
    """A command, with every way it can fail to read the system told apart from a bug in it."""
    from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as AwsConnectionError
    from urllib3.exceptions import HTTPError

    from saga.ops.target import Unreachable

    try:
        return run()
    except (AwsConnectionError, HTTPClientError, HTTPError) as error:  # nothing answered: only this is unreachable
        return _cannot_read(
            args, "cannot reach the system", f"{type(error).__name__}: {error}; {_where_to_start(args)}"
        )
    except (ClientError, Unreachable) as error:  # something answered, not as the system would
        return _cannot_read(args, "the system did not answer as it should", f"{type(error).__name__}: {error}")
    except BotoCoreError as error:  # no credentials, no region, a profile that does not exist: asked nothing
        return _cannot_read(args, "cannot ask the system", f"{type(error).__name__}: {error}")
    except Exception:
        # A bug in saga itself: its trace, and an exit code no script takes for a verdict on the system.
        traceback.print_exc()
        print(
            f"saga {args.command}: this is a bug in saga (exit {EXIT_BUG}), not a state of the system", file=sys.stderr
        )
        return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())
