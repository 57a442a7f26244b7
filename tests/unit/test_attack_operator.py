"""Adversarial review of the operator tools, the docs' transcript check and `make run` (issue 27): what a
demanding new user or operator would meet. Each test names the promise it holds the code to."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from functions.orchestrator.retry import RetryPolicy
from functions.relay.sweeper import Cursor, Entry, pending_now
from saga import cli
from saga.ops import road2
from saga.verify import checks
from shared import event_ids, outbox
from shared.events import LoanEvent, LoanSnapshot
from shared.keys import changes_partition
from tests.support import PROCESS_PATIENCE
from tools.docs.blocks import normalized

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
        timeout=PROCESS_PATIENCE,
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


# --- the outbox's oldest PENDING event, as the sweeper sees it (functions/relay/sweeper.py pending_now) ----


class _IndexAndTable:
    """A SweepStore over a journey-changes index and a base table: the index lists every event (keys only),
    the table says which are still PENDING (read strongly consistent, as pending_now reads it)."""

    def __init__(self, cursor: Cursor, index: list[Entry], table: dict[tuple[str, str], dict[str, Any]]):
        self.cursor, self.index, self.table = cursor, index, table

    def recorded_shards(self) -> int:
        return 1

    def record_shards(self, shards: int) -> None:
        raise AssertionError("status changes nothing")

    def cursors(self, partitions: Sequence[str]) -> dict[str, Cursor]:
        return {p: self.cursor if p == self.cursor.partition else Cursor(p) for p in partitions}

    def save(self, cursor: Cursor) -> bool:
        raise AssertionError("status changes nothing")

    def changes(self, partition: str, above: str, below: str, limit: int) -> tuple[list[Entry], bool]:
        found = sorted(e for e in self.index if partition == self.cursor.partition and above < e.event_id < below)
        return found[:limit], len(found) > limit

    def read(self, entries: Sequence[Entry], consistent: bool) -> tuple[dict[Entry, dict[str, Any]], list[Entry]]:
        assert consistent
        return {e: self.table[(e.pk, e.sk)] for e in entries if (e.pk, e.sk) in self.table}, []


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


def test_the_oldest_pending_event_is_found_while_newer_ones_were_just_published():
    # Given an event PENDING for 10 minutes (the relay and the sweeper are not publishing it), which the
    # sweeper's cursor has not passed, and two newer events the relay published a moment ago (NOTIFIED)
    stuck = _event(timedelta(minutes=10))
    published = [_event(timedelta(minutes=9)), _event(timedelta(seconds=1))]
    index, table = [], {}
    for event, status in ((stuck, outbox.PENDING), *((event, "NOTIFIED") for event in published)):
        item = outbox.outbox_item(event)
        item["status"] = {"S": status}
        table[(item["pk"]["S"], item["sk"]["S"])] = item
        index.append(Entry(event.eventId, item["pk"]["S"], item["sk"]["S"]))
    after = event_ids.lower_bound(stuck.occurredAt - timedelta(seconds=1))
    cursor = Cursor(changes_partition("JourneyCancelled", 0), after=after)
    # When `saga status` (and `saga relay-failures clear`) ask what is PENDING now, as they do
    found = pending_now(_IndexAndTable(cursor, index, table), datetime.now(UTC), 60.0)
    # Then the oldest is the stuck one, 10 minutes old: not None, which status reports as an outbox age of
    # 0 s (its --check passes) and relay-failures clear takes for "nothing PENDING" (it deletes every record)
    assert (found.pending, found.oldest) == (1, stuck.occurredAt)
    assert not road2.relay_failure_resolved(
        '{"DDBStreamBatchInfo": {"approximateArrivalOfLastRecord": "'
        + (stuck.occurredAt + timedelta(seconds=1)).isoformat()
        + '"}}',
        found.oldest,
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
        timeout=PROCESS_PATIENCE,
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
