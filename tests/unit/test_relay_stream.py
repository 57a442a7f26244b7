"""The stream relay's answer to Lambda: `batchItemFailures` holds the sequence number of every outbox record
whose event was not published or not marked, in the batch's order, and nothing else (not the journey's
other items, not an unreadable item, which is counted and left PENDING: no retry makes it readable)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Metrics

from functions.relay.outbox_store import StoredEvent
from functions.relay.service import OutboxRelay
from functions.relay.stream import StreamRelay
from shared import outbox
from shared.dynamo import to_item
from shared.events import LoanEvent, LoanSnapshot

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def event(n: int) -> LoanEvent:
    return LoanEvent(eventId=f"e-{n}", journeyId="j-1", seq=n, type="JourneyCancelled", occurredAt=NOW,
                     snapshot=LoanSnapshot(journeyId="j-1", state="cancelled"))  # fmt: skip


def record(sequence: str, item: dict[str, Any], name: str = "INSERT") -> dict[str, Any]:
    keys = {"pk": item["pk"], "sk": item["sk"]}
    return {"eventName": name, "dynamodb": {"SequenceNumber": sequence, "Keys": keys, "NewImage": item}}


class Publisher:
    def __init__(self, refuse: frozenset[str]) -> None:
        self.refuse = refuse
        self.published: list[str] = []

    def publish(self, events: Sequence[LoanEvent]) -> dict[str, str]:
        self.published += [e.eventId for e in events if e.eventId not in self.refuse]
        return {e.eventId: "Throttled" for e in events if e.eventId in self.refuse}


class Store:
    def __init__(self, refuse: frozenset[str]) -> None:
        self.refuse = refuse
        self.marked: list[str] = []

    def mark_notified(self, stored: Sequence[StoredEvent], published_at: datetime) -> dict[str, str]:
        self.marked += [one.event.eventId for one in stored if one.event.eventId not in self.refuse]
        return {one.event.eventId: "throttled" for one in stored if one.event.eventId in self.refuse}


def test_the_batch_fails_exactly_the_records_whose_event_was_not_published_or_not_marked_in_order():
    # Given a batch: an event whose publish fails, the journey's own item, an event whose mark fails, an
    # unreadable outbox item, a MODIFY of an outbox item (the relay's own mark) and an event that goes through
    publisher, store = Publisher(frozenset({"e-2"})), Store(frozenset({"e-4"}))
    relay = StreamRelay(OutboxRelay(publisher, store, Metrics(namespace="Test"), clock=lambda: NOW))
    unreadable = {**outbox.outbox_item(event(5)), "seq": to_item({"seq": "five"})["seq"]}
    batch = [
        record("102", outbox.outbox_item(event(2))),
        record("103", to_item({"pk": "JOURNEY#j-1", "sk": "LOAN", "state": "cancelled"})),
        record("104", outbox.outbox_item(event(4))),
        record("105", unreadable),
        record("106", outbox.outbox_item(event(1)), name="MODIFY"),
        record("107", outbox.outbox_item(event(7))),
    ]
    # When the relay handles it
    answer = relay.handle({"Records": batch}, None)
    # Then the two records Lambda must retry from are reported, in order, and nothing else
    assert answer == {"batchItemFailures": [{"itemIdentifier": "102"}, {"itemIdentifier": "104"}]}, answer
    # And what was published was marked, the failed publish was not
    assert publisher.published == ["e-4", "e-7"], publisher.published
    assert sorted(store.marked) == ["e-7"], store.marked


def test_a_batch_without_failures_answers_an_empty_list():
    relay = StreamRelay(OutboxRelay(Publisher(frozenset()), Store(frozenset()), Metrics(namespace="T"), lambda: NOW))
    answer = relay.handle({"Records": [record("1", outbox.outbox_item(event(1)))]}, None)
    assert answer == {"batchItemFailures": []}, answer
