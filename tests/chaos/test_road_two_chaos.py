"""Chaos on road 2, over real HTTP against `saga local`: the relay dies between publishing and marking, the
consumer dies halfway through a batch (an in-process runtime whose functions are wrapped, tests/crashes.py),
and a poison message goes to the DLQ, is shown by the ops CLI and is redriven once its cause is fixed.
Numbered as in docs/RELIABILITY.md's chaos table."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from functions.loans_api.domain import new_id
from saga.local.runtime import LocalRuntime, RuntimeConfig
from saga.ops.journeys import compare
from shared import aws, tables
from shared.control_record import new_control_record
from shared.control_store import control_item
from shared.events import LoanEvent
from tests.chaos.journeys import journey, record_of
from tests.crashes import ConsumerDiesMidBatch, RelayDiesAfterPublish
from tests.support import PATIENT_AWS
from tests.system import System
from tools.ports import free_port

SIMULATE = {"amount": 10000, "termMonths": 36}


# -- 5, 6: the relay and the consumer die at the worst moment ---------------------------------


class Armed:
    """A strike the test arms: the first time asked after `arm()`, and never otherwise."""

    def __init__(self) -> None:
        self._armed = False
        self._lock = threading.Lock()

    def arm(self) -> None:
        with self._lock:
            self._armed = True

    def __call__(self) -> bool:
        with self._lock:
            armed, self._armed = self._armed, False
        return armed


@dataclass
class Hooked:
    system: System
    relay: RelayDiesAfterPublish
    consumer: ConsumerDiesMidBatch
    relay_dies: Armed
    consumer_dies: Armed


# One runtime for 5 and 6 (a start and a stop cost ~10 s each on a loaded machine): each test arms the one
# crash it is about, so neither sees the other's; the same worker runs both (--dist loadgroup).
ONE_RUNTIME = pytest.mark.xdist_group("tests/chaos/test_road_two_chaos.py::hooked")


@pytest.fixture(scope="module")
def hooked() -> Iterator[Hooked]:
    """An in-process `saga local` whose relay and consumer die when a test arms them."""
    holders: dict[str, Any] = {}
    relay_dies, consumer_dies = Armed(), Armed()

    def wrap_publisher(inner: Any) -> Any:
        holders["relay"] = RelayDiesAfterPublish(inner, relay_dies)
        return holders["relay"]

    def wrap_consumer(inner: Any) -> Any:
        holders["consumer"] = ConsumerDiesMidBatch(inner, consumer_dies)
        return holders["consumer"]

    config = RuntimeConfig(port=free_port(), loans_port=free_port(), aws_port=free_port(),
                           relay_publisher_wrapper=wrap_publisher, consumer_wrapper=wrap_consumer)  # fmt: skip
    runtime = LocalRuntime(config).start()
    try:
        system = System(config.port, config.loans_port, config.aws_port, 0, None)  # type: ignore[arg-type]
        yield Hooked(system, holders["relay"], holders["consumer"], relay_dies, consumer_dies)
    finally:
        runtime.stop()


def commit_directly(system: System, jid: str) -> list[dict[str, Any]]:
    """loans-api commits a simulation and its acceptance; the orchestrator never hears of them."""
    status, simulation, _ = system.call("POST", f"{system.loans_url}/simulations",
                                        {"journeyId": jid, "amount": 5000, "termMonths": 12},
                                        {"Idempotency-Key": f"{jid}-1"})  # fmt: skip
    assert status == 201, simulation
    _, acceptance, _ = system.call("POST", f"{system.loans_url}/acceptances",
                                   {"journeyId": jid, "simulationId": simulation["simulationId"]},
                                   {"Idempotency-Key": f"{jid}-2"})  # fmt: skip
    return [simulation, acceptance]


@ONE_RUNTIME
def test_5_the_relay_killed_between_publish_and_mark_republishes_and_the_consumer_dedups(hooked):
    system, relay, consumer = hooked.system, hooked.relay, hooked.consumer
    jid = journey(system)
    crashes = relay.crashes
    hooked.relay_dies.arm()  # the relay dies once, after publishing this simulation's event
    status, record = system.api("POST", f"/journeys/{jid}/simulate", SIMULATE)
    assert (status, record["version"]) == (200, 1)

    def notified() -> bool:
        return {e["status"] for e in system.truth(jid)["events"]} == {"NOTIFIED"}

    assert system.wait_for(notified), "the outbox item never became NOTIFIED"
    assert relay.crashes == crashes + 1
    event_id = system.truth(jid)["events"][0]["eventId"]
    assert system.wait_for(lambda: consumer.deliveries[event_id] >= 2), "not republished"
    assert record_of(system, jid)["version"] == 1, "the second delivery must be a no-op"


@ONE_RUNTIME
def test_6_the_consumer_killed_mid_batch_gets_its_batch_again_and_converges(hooked):
    system, consumer = hooked.system, hooked.consumer
    jid = journey(system)
    crashes = consumer.crashes
    hooked.consumer_dies.arm()  # the consumer dies once, halfway through the batch of this journey's events
    replies = commit_directly(system, jid)  # road 1 never ran: only road 2 can apply these

    def converged() -> Any:
        record = record_of(system, jid)
        return record if compare(record, system.truth(jid))["agree"] else None

    record = system.wait_for(converged)
    assert record, "the record never reached the truth"
    assert consumer.crashes == crashes + 1
    assert record["lastAppliedEventId"] == replies[-1]["eventId"]
    assert record["version"] <= len(replies)  # each event applied at most once (the newest may skip older)


# -- 7: poison, DLQ, status, redrive ----------------------------------------------------------


def test_7_a_poison_message_reaches_the_dlq_is_shown_and_is_redriven_once_fixed(system, clean_proxy):
    # Given an event loans-api committed (a cancel sent straight to it) for a journey the orchestrator never
    # created: road 2 delivers it, and the consumer has no Control Record to apply it to
    ghost = f"ghost-{new_id()}"
    status, reply, _ = system.call("POST", f"{system.loans_url}/journeys/{ghost}/cancel", None,
                                   {"Idempotency-Key": f"cancel-{ghost}"})  # fmt: skip
    assert status == 200, reply
    event = LoanEvent.model_validate(reply["event"])

    def listed() -> Any:
        code, out = system.saga("dlq", "list", "--json")
        return next((e for e in json.loads(out) if e["eventId"] == event.eventId), None) if code == 0 else None

    entry = system.wait_for(listed, interval=0.5)
    assert entry, "the poison message never reached the DLQ"
    assert entry["receiveCount"] >= 3
    assert entry["reason"] == "unknown journey"
    code, out = system.saga("status", "--json")
    assert json.loads(out)["queues"]["eventsDlq"]["visible"] >= 1
    # Fix the cause (the journey's Control Record exists now), then redrive
    dynamodb = aws.client("dynamodb", "us-east-1", system.aws_url, PATIENT_AWS)
    dynamodb.put_item(TableName=tables.JOURNEYS_TABLE.local_name,
                      Item=control_item(new_control_record(ghost, "ghost", datetime.now(UTC))))  # fmt: skip
    code, out = system.saga("dlq", "redrive")
    assert code == 0, out
    applied = system.wait_for(lambda: record_of(system, ghost)["lastAppliedEventId"] == event.eventId)
    assert applied, "the redriven event was not applied"
    assert record_of(system, ghost)["currentState"] == "cancelled"
    assert not system.wait_for(listed, timeout=3, interval=0.5)
