"""`saga verify --stack NAME`: its flags, the checks in the order they run, and the report (one line
per check; FAIL lines say what to do). Exit 0 only when every check holds, 1 when one fails, 2 when
the stack cannot be read at all."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from saga.cli_servers import seconds


def add_verify(commands: Any, default_region: str) -> None:
    """`saga verify` and its flags."""
    verify = commands.add_parser(
        "verify",
        help="prove a deployed stack end to end: account, functions, a signed journey on both roads, "
        "refusals, queues, metrics, the alarm path, log retention",
        description="Run right after `cdk deploy`, and at any time: each check says ok or FAIL with what to do. "
        "Its journeys are labelled (customerId saga-verify-<time>) and left disbursed; it sets one alarm to "
        "ALARM and back (the alarm topic is told twice).",
    )
    verify.add_argument("--stack", required=True, help="the deployed stack's name")
    verify.add_argument("--region", default=default_region)
    verify.add_argument("--wait", type=seconds, default=60.0, help="seconds to wait for road 2 and the alarm topic")
    verify.add_argument("--json", action="store_true", help="exactly one JSON document on stdout")


def run_verify(args: argparse.Namespace) -> int:
    # Imported here, not with the flags: every other `saga` command would load botocore and the checks.
    from botocore.exceptions import BotoCoreError, ClientError

    from saga.verify import checks, configuration, journey, signals

    every_check = [*configuration.CHECKS, *journey.CHECKS, *signals.CHECKS, configuration.LOG_RETENTION]

    try:
        deployment = checks.Deployment.read(args.stack, args.region, args.wait)
    except (BotoCoreError, ClientError) as error:
        detail = f"{type(error).__name__}: {error}"
        print(f"saga verify: cannot read stack {args.stack}: {detail}", file=sys.stderr)
        if args.json:
            print(json.dumps({"type": "about:blank", "title": "cannot read the stack", "status": 503,
                              "detail": detail, "command": "saga verify"}))  # fmt: skip
        return 2
    say = (lambda _: None) if args.json else (lambda outcome: print(checks.line(outcome), flush=True))
    outcomes = checks.run_all(deployment, every_check, say)
    failed = [o.check for o in outcomes if not o.ok]
    if args.json:
        print(json.dumps({"stack": args.stack, "ok": not failed, "checks": [o.to_json() for o in outcomes]}, indent=2))
    else:
        print(f"\n{args.stack}: " + (f"{len(failed)} check(s) failed: {', '.join(failed)}" if failed else
                                     f"all {len(outcomes)} checks hold"))  # fmt: skip
    return 1 if failed else 0
