"""Adversarial review of the operator tools, the docs' transcript check and `make run` (issue 27): what a
demanding new user or operator would meet. Each test names the promise it holds the code to."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from functions.orchestrator.retry import RetryPolicy
from functions.relay.outbox_store import DynamoOutboxStore
from saga import cli
from saga.docs.blocks import normalized
from saga.ops import road2
from saga.verify import checks
from shared import event_ids, outbox
from shared.events import LoanEvent, LoanSnapshot
from shared.tables import PENDING_SHARD_ATTRIBUTE

ROOT = Path(__file__).resolve().parents[2]


def test_make_run_passes_its_args_to_saga_local_as_the_readme_says():
    # Given the README's `make run ARGS="--port 3100"` (issue 27: "`make run ARGS="--port 3100"` works")
    assert 'make run ARGS="--port 3100"' in (ROOT / "README.md").read_text()
    # When make prints what `run` would execute (nothing runs; -W: install counts as done)
    done = subprocess.run(
        ["make", "-n", "-o", "install", "-o", ".venv/.installed", "run", "ARGS=--port 3100"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    # Then the recipe starts saga local with that flag (today: `$(BIN)/saga local`, ARGS dropped)
    [start] = [line for line in done.stdout.splitlines() if "saga local" in line]
    assert start.rstrip().endswith("saga local --port 3100"), done.stdout + done.stderr


def test_the_transcript_check_tells_a_utc_time_from_one_in_another_zone():
    # Given the tour's record as committed (UTC, `Z`), and a run whose API answered in another zone
    committed = '"createdAt": "2026-12-01T12:47:43.930735Z",'
    other_zone = '"createdAt": "2026-12-01T13:47:43.930735+01:00",'
    other_format = '"createdAt": "2026-12-01T12:47:43",'
    # Then the check sees the difference: a time's value may differ between runs, its wire format may not
    # (docs/API.md's records are UTC with `Z`; a client parsing them would break on the change)
    assert normalized({"b": committed}) != normalized({"b": other_zone})
    assert normalized({"b": committed}) != normalized({"b": other_format})


# --- the outbox's oldest PENDING event through an eventually consistent index ------------------------


class _LaggingIndexDynamo:
    """A DynamoDB client whose pending index still lists an event the relay marked NOTIFIED a moment ago
    (a GSI is eventually consistent: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/
    GSI.html#GSI.Reading), while the base table (read strongly consistent) already says NOTIFIED."""

    def __init__(self, index: dict[str, list[dict[str, Any]]], table: dict[tuple[str, str], dict[str, Any]]):
        self.index, self.table = index, table

    def query(self, **kwargs: Any) -> dict[str, Any]:
        shard = kwargs["ExpressionAttributeValues"][":shard"]["S"]
        entries = sorted(self.index.get(shard, []), key=lambda k: k["eventId"]["S"])
        if kwargs.get("Select") == "COUNT":
            return {"Count": len(entries)}
        return {"Items": entries[: kwargs.get("Limit", len(entries))]}

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:  # noqa: N803 - boto3's name
        [(table, request)] = RequestItems.items()
        keys = [(k["pk"]["S"], k["sk"]["S"]) for k in request["Keys"]]
        found = [self.table[key] for key in keys if key in self.table]
        return {"Responses": {table: found}}


def _event(age: timedelta) -> LoanEvent:
    at = datetime.now(UTC) - age
    journey = str(uuid.uuid4())
    return LoanEvent(
        eventId=event_ids.lower_bound(at),  # a UUIDv7-sortable id of that millisecond
        journeyId=journey,
        seq=1,
        type="JourneyCancelled",
        occurredAt=at,
        snapshot=LoanSnapshot(journeyId=journey, state="cancelled"),
    )


def test_the_oldest_pending_event_is_found_while_the_index_still_lists_one_just_published():
    # Given two PENDING events: the older one the relay marked NOTIFIED a moment ago (the index still
    # lists it), the other waiting for 10 minutes (the relay and the sweeper are not publishing it)
    just_published, stuck = _event(timedelta(minutes=11)), _event(timedelta(minutes=10))
    index: dict[str, list[dict[str, Any]]] = {}
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for event, status in ((just_published, "NOTIFIED"), (stuck, outbox.PENDING)):
        item = outbox.outbox_item(event)
        item["status"] = {"S": status}
        table[(item["pk"]["S"], item["sk"]["S"])] = item
        index.setdefault(item[PENDING_SHARD_ATTRIBUTE]["S"], []).append(
            {k: item[k] for k in ("pk", "sk", "eventId", PENDING_SHARD_ATTRIBUTE)}
        )
    store = DynamoOutboxStore(_LaggingIndexDynamo(index, table), "loans")  # type: ignore[arg-type]
    # When `saga status` (and `saga relay-failures clear`) ask for the oldest PENDING event, as they do
    oldest = store.oldest_pending(1).oldest_occurred_at()
    # Then it is the stuck one, 10 minutes old: not None, which status reports as an outbox age of 0 s
    # (its --check passes) and relay-failures clear takes for "nothing PENDING" (it deletes every record)
    assert oldest == stuck.occurredAt
    assert not road2.relay_failure_resolved(
        '{"DDBStreamBatchInfo": {"approximateArrivalOfLastRecord": "'
        + (stuck.occurredAt + timedelta(seconds=1)).isoformat()
        + '"}}',
        oldest,
    )


def test_the_readmes_retry_count_is_the_orchestrators():
    # Given the README's diagram, which labels the orchestrator -> loans-api edge with its retries
    [claimed] = re.findall(r"retries: (\d+)", (ROOT / "README.md").read_text())
    # Then it is the policy's number of retries (attempts after the first: docs/OPERATIONS.md's "the
    # four retries"), not its number of attempts
    assert int(claimed) == RetryPolicy().attempts - 1


def test_a_wrong_command_line_with_json_still_prints_one_json_document():
    # Given a script that runs `saga status --json` with a bad value (exit 2: "also a command line that is
    # wrong"), and `saga audit --rebuild --json` already answers its usage error as a problem document
    done = subprocess.run(
        [sys.executable, "-m", "saga.cli", "status", "--check", "--max-queue-age", "five", "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    # Then it exits 2 and stdout is the problem document `saga --help` promises for every --json command
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout)["status"] == 400, done.stdout


def test_a_bug_in_saga_verify_exits_70_not_1_which_says_a_check_failed(monkeypatch, capsys):
    # Given `saga verify` with a bug where it reads the stack (saga --help: "70 a bug in saga itself",
    # "verify: ... 1 a check failed"): here an AttributeError of saga's own
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise AttributeError("'NoneType' object has no attribute 'outputs'")

    monkeypatch.setattr(checks.Deployment, "read", broken)
    # When it runs
    try:
        code = cli.main(["verify", "--stack", "LoanSaga", "--json"])
    except AttributeError:
        code = 1  # what the shell sees of an uncaught exception: Python exits 1
    # Then it exits 70 with its traceback: a CI step gating on `saga verify` must not read a bug as
    # "the stack failed a check" (1) and page the stack's owner
    assert code == cli.EXIT_BUG


def test_a_bug_inside_a_verify_check_is_not_told_as_a_failed_check():
    # Given a verify check with a bug of saga's own (a KeyError on its own dict, not on an AWS answer)
    def buggy(deployment: Any) -> str:
        return str({"consumer": "Enabled"}["consumerMapping"])

    check = checks.Check("consumer mapping", buggy, "enable the mapping")
    # When the checks run, Then the bug propagates (saga exits 70 with its traceback), instead of a FAIL
    # "could not read it: KeyError" whose next step sends the operator to change a healthy stack
    with pytest.raises(KeyError):
        checks.run_all(None, [check], lambda outcome: None)  # type: ignore[arg-type]
