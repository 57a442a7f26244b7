"""What the chaos tests ask of a running system (tests/system.py): a journey, its record, a drained road 2."""

from __future__ import annotations

import json
import uuid
from typing import Any

from tests.system import System, wait_draining


def journey(system: System) -> str:
    status, record = system.api("POST", "/journeys", {"customerId": "chaos"}, Idempotency_Key=str(uuid.uuid4()))
    assert status == 201, record
    return str(record["journeyId"])


def record_of(system: System, journey_id: str) -> Any:
    return system.api("GET", f"/journeys/{journey_id}")[1]


def drained(system: System) -> dict[str, Any]:
    """Wait until every event is NOTIFIED and the events queue is empty (failing once that stopped
    getting closer for a while, tests/system.py's wait_draining); returns `saga status`."""

    def status() -> dict[str, Any]:
        code, out = system.saga("status", "--json")
        assert code == 0, out
        return dict(json.loads(out))

    def left(report: dict[str, Any]) -> int:
        events = report["queues"]["events"]
        return int(report["outbox"]["pending"] + events["visible"] + events["inFlight"])

    return wait_draining(status, left)
