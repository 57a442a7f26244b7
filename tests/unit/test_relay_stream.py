"""The stream relay's answer to Lambda: `batchItemFailures` holds the sequence number of every outbox record
whose item was left unread, or whose event was not published or not marked, in the batch's order, and
nothing else (not the journey's other items, not an unreadable item, which is counted and left PENDING: no
retry makes it readable, not a key with no item). What it publishes and marks is what the table holds at the
record's key, never the record's image (D6)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Metrics

from functions.relay.outbox_store import Key, StoredEvent
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
        self.events: list[LoanEvent] = []

    def publish(self, events: Sequence[LoanEvent]) -> dict[str, str]:
        self.events += [e for e in events if e.eventId not in self.refuse]
        self.published += [e.eventId for e in events if e.eventId not in self.refuse]
        return {e.eventId: "Throttled" for e in events if e.eventId in self.refuse}


class Store:
    """The loans table's outbox items (`items`); a read leaves the keys of `unread` unread, a mark refuses
    the events of `refuse`."""

    def __init__(
        self, refuse: frozenset[str], items: Sequence[dict[str, Any]] = (), unread: frozenset[Key] = frozenset()
    ):
        self.refuse, self.unread = refuse, unread
        self.items = {(item["pk"]["S"], item["sk"]["S"]): item for item in items}
        self.marked: list[str] = []
        self.marked_items: list[dict[str, Any]] = []
        self.reads: list[list[Key]] = []

    def read(self, keys: Sequence[Key]) -> tuple[dict[Key, dict[str, Any]], dict[Key, str]]:
        self.reads.append(list(keys))
        found = {key: self.items[key] for key in keys if key in self.items and key not in self.unread}
        return found, {key: "throttled" for key in keys if key in self.unread}

    def mark_notified(self, stored: Sequence[StoredEvent], published_at: datetime) -> dict[str, str]:
        self.marked_items += [one.item for one in stored if one.event.eventId not in self.refuse]
        self.marked += [one.event.eventId for one in stored if one.event.eventId not in self.refuse]
        return {one.event.eventId: "throttled" for one in stored if one.event.eventId in self.refuse}


def test_the_batch_fails_exactly_the_records_whose_event_was_not_published_or_not_marked_in_order():
    # Given a batch: an event whose publish fails, the journey's own item, an event whose mark fails, an
    # unreadable outbox item, a MODIFY of an outbox item (the relay's own mark) and an event that goes through
    unreadable = {**outbox.outbox_item(event(5)), "seq": to_item({"seq": "five"})["seq"]}
    items = [outbox.outbox_item(event(n)) for n in (2, 4, 1, 7)] + [unreadable]
    publisher, store = Publisher(frozenset({"e-2"})), Store(frozenset({"e-4"}), items)
    relay = StreamRelay(OutboxRelay(publisher, store, Metrics(namespace="Test"), clock=lambda: NOW))
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
    # And the items were read once, the outbox inserts' keys alone, in the batch's order
    assert store.reads == [[key_of(event(n)) for n in (2, 4, 5, 7)]], store.reads


def key_of(one: LoanEvent) -> Key:
    item = outbox.outbox_item(one)
    return item["pk"]["S"], item["sk"]["S"]


def test_a_record_whose_item_was_left_unread_is_retried_and_one_with_no_item_is_neither_published_nor_retried():
    # Given a batch: an event whose item the read leaves unread, a key with no item, an event that goes through
    items = [outbox.outbox_item(event(n)) for n in (1, 3)]
    publisher, store = Publisher(frozenset()), Store(frozenset(), items, unread=frozenset({key_of(event(1))}))
    relay = StreamRelay(OutboxRelay(publisher, store, Metrics(namespace="Test"), clock=lambda: NOW))
    batch = [record(str(n), outbox.outbox_item(event(n))) for n in (1, 2, 3)]
    # When the relay handles it
    answer = relay.handle({"Records": batch}, None)
    # Then the unread one is retried; the one with no item is not (nothing was committed there)
    assert answer == {"batchItemFailures": [{"itemIdentifier": "1"}]}, answer
    # And only the event read was published and marked
    assert (publisher.published, store.marked) == (["e-3"], ["e-3"]), (publisher.published, store.marked)


def test_what_is_published_and_marked_is_the_item_the_table_holds_never_the_records_image():
    # Given a committed event, and an INSERT record of its key whose image says another thing
    committed = outbox.outbox_item(event(1))
    forged = {**committed, "type": {"S": "LoanDisbursed"}, "seq": {"N": "9"}}
    publisher, store = Publisher(frozenset()), Store(frozenset(), [committed])
    relay = StreamRelay(OutboxRelay(publisher, store, Metrics(namespace="Test"), clock=lambda: NOW))
    # When the relay handles it
    answer = relay.handle({"Records": [record("1", forged)]}, None)
    # Then the committed event was published, and the committed item is what its mark puts back
    assert answer == {"batchItemFailures": []}, answer
    assert publisher.events == [event(1)], publisher.events
    assert store.marked_items == [committed], store.marked_items


def test_a_record_whose_keys_are_not_an_event_items_strings_is_not_read():
    store = Store(frozenset())
    relay = StreamRelay(OutboxRelay(Publisher(frozenset()), store, Metrics(namespace="T"), lambda: NOW))
    odd = [{"pk": {"N": "1"}, "sk": {"S": "EVENT#1"}}, {"pk": {"S": "J"}, "sk": {"S": 7}}, {"sk": {"S": "EVENT#1"}}]
    batch = [
        {"eventName": "INSERT", "dynamodb": {"SequenceNumber": str(n), "Keys": keys}} for n, keys in enumerate(odd)
    ]
    answer = relay.handle({"Records": batch}, None)
    assert answer == {"batchItemFailures": []}, answer
    assert store.reads == [[]], store.reads


def test_a_batch_without_failures_answers_an_empty_list():
    item = outbox.outbox_item(event(1))
    relay = StreamRelay(
        OutboxRelay(Publisher(frozenset()), Store(frozenset(), [item]), Metrics(namespace="T"), lambda: NOW)
    )
    answer = relay.handle({"Records": [record("1", outbox.outbox_item(event(1)))]}, None)
    assert answer == {"batchItemFailures": []}, answer
