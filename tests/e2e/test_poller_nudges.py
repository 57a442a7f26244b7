"""saga local's pollers are woken by what brings them work (saga/local/runtime.py): the relay by each request
loans-api served, the consumer by what the relay published. Shown over real HTTP against an in-process runtime
whose idle pollers would otherwise wait an hour: only the nudges can carry an event down road 2 (the sweeper,
which would also wake the consumer, is left off). A condition waited on, not a timing: a missing nudge leaves
the event where it is for an hour, far past the wait."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from saga.local.runtime import LocalRuntime, RuntimeConfig
from saga.ops.journeys import compare
from tests.chaos.journeys import journey, record_of
from tests.system import System
from tools.ports import free_port

AN_HOUR = 3600.0


@pytest.fixture(scope="module")
def sleepy() -> Iterator[System]:
    """An in-process `saga local` whose idle relay and consumer wait an hour, and no sweeper."""
    config = RuntimeConfig(port=free_port(), loans_port=free_port(), aws_port=free_port(),
                           poll_idle_seconds=AN_HOUR, poll_max_idle_seconds=AN_HOUR,
                           disabled=frozenset({"sweeper"}))  # fmt: skip
    runtime = LocalRuntime(config).start()
    try:
        yield System(config.port, config.loans_port, config.aws_port, 0, None)  # type: ignore[arg-type]
    finally:
        runtime.stop()


def test_an_event_loans_api_committed_reaches_the_record_by_road_2_woken_by_nudges_alone(sleepy):
    # Given a journey whose record road 1 will never update: loans-api commits its simulation directly
    jid = journey(sleepy)
    status, simulation, _ = sleepy.call("POST", f"{sleepy.loans_url}/simulations",
                                        {"journeyId": jid, "amount": 5000, "termMonths": 12},
                                        {"Idempotency-Key": f"{jid}-1"})  # fmt: skip
    assert status == 201, simulation

    # When only the orchestrator is asked (loans-api's own reads would nudge the relay again)
    def applied() -> Any:
        record = record_of(sleepy, jid)
        return record if record.get("lastAppliedEventId") == simulation["eventId"] else None

    # Then the relay, nudged by that request, published it, and the consumer, nudged by the relay, applied it
    record = sleepy.wait_for(applied)
    assert record, f"road 2 never applied {simulation['eventId']}: a poller was not woken"
    assert compare(record, sleepy.truth(jid))["agree"]
