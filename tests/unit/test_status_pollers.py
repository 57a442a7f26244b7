"""`saga status` says which of the local runtime's pollers are off, and `--check` fails at once when their work
waits (events in the queue, the consumer off): nothing will do it, however long the check waits. The state file
`saga local` writes says which pollers run (saga/local_state.py `pollers`), for `saga status` and any other tool."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from saga import local_state
from saga.ops.road2 import status_problems, status_table

THRESHOLDS = (900.0, 300.0)


def report(events_waiting: int = 0, pending: int = 0, **pollers: bool) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "outbox": {"pending": pending, "oldestPendingAgeSeconds": 1.0, "unreadable": 0},
        "queues": {
            "events": {"visible": events_waiting, "inFlight": 0, "oldestMessageAgeSeconds": 2.0},
            "eventsDlq": {"visible": 0, "inFlight": 0},
            "relayFailures": {"visible": 0, "open": 0, "resolved": 0},
        },
    }
    if pollers:
        figures["pollers"] = {"relay": True, "consumer": True, "sweeper": True, **pollers}
    return figures


def checks(figures: dict[str, Any]) -> list[str]:
    return [problem["check"] for problem in status_problems(figures, *THRESHOLDS)]


def test_events_waiting_with_the_consumer_off_fail_at_once_far_below_the_age_threshold():
    # Given a message 2 s old in the events queue (the threshold is 300 s) and the local consumer off
    # When the operator checks, Then it fails now, on the consumer being off
    assert checks(report(events_waiting=1, consumer=False)) == ["consumer-off"]


@pytest.mark.parametrize(
    ("figures", "expected"),
    [
        (report(events_waiting=1, consumer=True), []),  # on: the 300 s threshold decides
        (report(events_waiting=1), []),  # a deployed stack, or an endpoint no state file describes
        (report(events_waiting=0, consumer=False), []),  # off, but nothing waits for it
        (report(pending=3, relay=False), []),  # the sweeper still publishes what the relay leaves
        (report(pending=3, relay=False, sweeper=False), ["relay-off"]),
    ],
    ids=["consumer-on", "pollers-unknown", "nothing-waiting", "sweeper-covers", "relay-and-sweeper-off"],
)
def test_a_poller_off_fails_the_check_only_while_its_work_waits(figures, expected):
    assert checks(figures) == expected


def test_the_table_says_which_pollers_run_and_which_are_off():
    table = status_table(report(consumer=False))
    assert re.search(r"^local pollers running / off +relay, sweeper / consumer$", table, re.MULTILINE), table


def test_the_state_file_records_which_pollers_run(tmp_path):
    # Given a runtime that runs the relay and the sweeper, its consumer off
    state = tmp_path / "local.json"
    local_state.write({"aws": "http://127.0.0.1:4566"}, state, {"relay": True, "consumer": False, "sweeper": True})
    # When another tool reads the file, Then it learns which run
    recorded = local_state.read(state)
    assert recorded["pid"] == os.getpid()
    assert local_state.pollers(recorded) == {"relay": True, "consumer": False, "sweeper": True}
    # And a file without them (an older saga local) says nothing of them
    local_state.write({"aws": "http://127.0.0.1:4566"}, state)
    assert local_state.pollers(local_state.read(state)) is None
