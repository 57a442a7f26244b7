"""What the chaos tests ask of a running system (tests/system.py): a journey, its record, a drained road 2."""

from __future__ import annotations

import json
import uuid
from typing import Any

from tests.system import System


def journey(system: System) -> str:
    status, record = system.api("POST", "/journeys", {"customerId": "chaos"}, Idempotency_Key=str(uuid.uuid4()))
    assert status == 201
    return str(record["journeyId"])


def record_of(system: System, journey_id: str) -> Any:
    return system.api("GET", f"/journeys/{journey_id}")[1]


def drained(system: System, timeout: float = 15.0) -> dict[str, Any]:
    """Wait until every event is NOTIFIED and the events queue is empty; returns `saga status`."""

    def check() -> Any:
        code, out = system.saga("status", "--json")
        assert code == 0, out
        report = json.loads(out)
        events = report["queues"]["events"]
        empty = report["outbox"]["pending"] == 0 and events["visible"] == 0 and events["inFlight"] == 0
        return report if empty else None

    report = system.wait_for(check, timeout=timeout, interval=0.5)
    assert report, "road 2 did not drain"
    return dict(report)
