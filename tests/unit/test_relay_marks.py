"""The relay marks a batch NOTIFIED with BatchWriteItem puts, 25 a call, each putting back the item as
committed with `status` NOTIFIED and `publishedAt` and nothing else changed (functions/relay/outbox_store.py,
D6). What DynamoDB leaves unprocessed is put again after a growing pause, a bounded number of rounds; what
is still unprocessed, and a failed call's items, are reported as failed marks, for their events alone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from botocore.exceptions import ClientError

from functions.relay.outbox_store import BATCH_WRITE_LIMIT, DynamoOutboxStore, StoredEvent, read_outbox_item
from shared import outbox
from shared.backoff import Backoff
from shared.events import LoanEvent, LoanSnapshot

NOW = datetime(2026, 1, 1, tzinfo=UTC)
TABLE = "loans"
ROUNDS = Backoff(attempts=3, base_delay=0.05, max_jitter=0.05)


def stored(count: int) -> list[StoredEvent]:
    found = []
    for n in range(count):
        event = LoanEvent(eventId=f"e-{n}", journeyId=f"j-{n}", seq=1, type="JourneyCancelled", occurredAt=NOW,
                          snapshot=LoanSnapshot(journeyId=f"j-{n}", state="cancelled"))  # fmt: skip
        read = read_outbox_item(outbox.outbox_item(event))
        assert isinstance(read, StoredEvent), read
        found.append(read)
    return found


class BatchWrites:
    """A DynamoDB client's BatchWriteItem: keeps the items put, leaves the items of `held` unprocessed for
    their first `hold_rounds` calls, and fails a call holding an item of `refuse`."""

    def __init__(self, held: frozenset[str] = frozenset(), hold_rounds: int = 0, refuse: frozenset[str] = frozenset()):
        self.held, self.hold_rounds, self.refuse = held, hold_rounds, refuse
        self.calls: list[list[str]] = []  # the eventIds of each call
        self.seen: dict[str, int] = {}
        self.items: dict[str, dict[str, Any]] = {}

    def batch_write_item(self, RequestItems: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:  # noqa: N803
        requests = RequestItems[TABLE]
        ids = [r["PutRequest"]["Item"]["eventId"]["S"] for r in requests]
        self.calls.append(ids)
        assert len(requests) <= BATCH_WRITE_LIMIT, f"{len(requests)} requests in one call"
        if self.refuse & set(ids):
            raise ClientError({"Error": {"Code": "ValidationException", "Message": "refused"}}, "BatchWriteItem")
        unprocessed = []
        for request, event_id in zip(requests, ids, strict=True):
            self.seen[event_id] = self.seen.get(event_id, 0) + 1
            if event_id in self.held and self.seen[event_id] <= self.hold_rounds:
                unprocessed.append(request)
            else:
                self.items[event_id] = request["PutRequest"]["Item"]
        return {"UnprocessedItems": {TABLE: unprocessed} if unprocessed else {}}


def store(client: BatchWrites, sleeps: list[float]) -> DynamoOutboxStore:
    return DynamoOutboxStore(cast(Any, client), TABLE, ROUNDS, sleep=sleeps.append, unit_random=lambda: 0.0)


def test_a_batch_is_put_back_25_a_call_each_item_as_committed_but_its_status_and_publication_time():
    # Given 60 published events, read as committed
    batch = stored(60)
    client, sleeps = BatchWrites(), list[float]()
    # When the relay marks them
    failed = store(client, sleeps).mark_notified(batch, NOW)
    # Then three calls put them all (25, 25, 10), without a pause
    assert failed == {}, failed
    assert [len(ids) for ids in client.calls] == [25, 25, 10], client.calls
    assert sleeps == [], sleeps
    # And each put is the committed item with status NOTIFIED and publishedAt, nothing else changed
    for one in batch:
        put = client.items[one.event.eventId]
        assert put == {**one.item, "status": {"S": "NOTIFIED"}, "publishedAt": {"S": NOW.isoformat()}}, put


def test_what_dynamodb_leaves_unprocessed_is_put_again_after_growing_pauses_and_then_marked():
    # Given a BatchWriteItem that leaves two of the items unprocessed twice, then takes them
    batch = stored(5)
    client, sleeps = BatchWrites(held=frozenset({"e-1", "e-3"}), hold_rounds=2), list[float]()
    # When the relay marks the batch
    failed = store(client, sleeps).mark_notified(batch, NOW)
    # Then each round put only what was left, after the schedule's pauses, and every item is marked
    assert failed == {}, failed
    assert client.calls == [[f"e-{n}" for n in range(5)], ["e-1", "e-3"], ["e-1", "e-3"]], client.calls
    assert sleeps == ROUNDS.delays(), sleeps
    assert sorted(client.items) == [f"e-{n}" for n in range(5)], sorted(client.items)


def test_what_is_still_unprocessed_after_the_last_round_is_reported_for_its_events_alone():
    # Given a BatchWriteItem that leaves one item unprocessed on every call
    batch = stored(4)
    client, sleeps = BatchWrites(held=frozenset({"e-2"}), hold_rounds=99), list[float]()
    # When the relay marks the batch
    failed = store(client, sleeps).mark_notified(batch, NOW)
    # Then that item's event alone is a failed mark, saying why; the others are marked
    assert failed == {"e-2": "left unprocessed by DynamoDB after 3 BatchWriteItem calls"}, failed
    assert sorted(client.items) == ["e-0", "e-1", "e-3"], sorted(client.items)
    assert len(client.calls) == ROUNDS.attempts, client.calls


def test_a_failed_call_fails_the_marks_of_its_own_items_and_no_others():
    # Given 30 events, the call of the first 25 refused
    batch = stored(30)
    client = BatchWrites(refuse=frozenset({"e-7"}))
    # When the relay marks them
    failed = store(client, []).mark_notified(batch, NOW)
    # Then the first call's 25 are failed marks, with the error; the last 5 are marked
    assert sorted(failed) == sorted(f"e-{n}" for n in range(25)), sorted(failed)
    assert failed["e-0"] == "ClientError: An error occurred (ValidationException) when calling the BatchWriteItem "\
        "operation: refused", failed["e-0"]  # fmt: skip
    assert sorted(client.items) == sorted(f"e-{n}" for n in range(25, 30)), sorted(client.items)


def test_one_item_twice_in_a_batch_is_put_once_and_both_are_answered():
    # Given a batch naming one item twice (BatchWriteItem refuses a key twice in one call)
    [one] = stored(1)
    client = BatchWrites(held=frozenset({"e-0"}), hold_rounds=99)
    # When the relay marks it
    failed = store(client, []).mark_notified([one, one], NOW)
    # Then each call put it once, and its failure is reported
    assert all(ids == ["e-0"] for ids in client.calls), client.calls
    assert list(failed) == ["e-0"], failed


class BatchGets:
    """A DynamoDB client's BatchGetItem over `items`: leaves the keys of `held` unprocessed on every call."""

    def __init__(self, items: list[dict[str, Any]], held: frozenset[str] = frozenset()) -> None:
        self.items = {(i["pk"]["S"], i["sk"]["S"]): i for i in items}
        self.held = held
        self.calls: list[int] = []

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:  # noqa: N803
        wanted = RequestItems[TABLE]
        assert wanted["ConsistentRead"] is True, wanted
        keys = [(k["pk"]["S"], k["sk"]["S"]) for k in wanted["Keys"]]
        self.calls.append(len(keys))
        left = [k for k in wanted["Keys"] if k["pk"]["S"] in self.held]
        found = [self.items[key] for key in keys if key in self.items and key[0] not in self.held]
        return {"Responses": {TABLE: found}, "UnprocessedKeys": {TABLE: {**wanted, "Keys": left}} if left else {}}


def test_a_read_answers_the_items_there_strongly_consistent_and_the_keys_left_unprocessed_with_why():
    # Given three committed items, one of them left unprocessed by every BatchGetItem, and a key with no item
    batch = stored(3)
    keys = [(one.item["pk"]["S"], one.item["sk"]["S"]) for one in batch]
    client = BatchGets([one.item for one in batch], held=frozenset({keys[1][0]}))
    sleeps: list[float] = []
    store = DynamoOutboxStore(cast(Any, client), TABLE, ROUNDS, sleep=sleeps.append, unit_random=lambda: 0.0)
    # When the relay's store reads them
    found, unread = store.read([*keys, ("JOURNEY#none", "EVENT#00000001")])
    # Then the two read are answered as the table holds them, the held one is unread (after every round), the
    # key with no item is neither
    assert found == {keys[0]: batch[0].item, keys[2]: batch[2].item}, found
    assert unread == {keys[1]: "left unprocessed by DynamoDB after 3 BatchGetItem calls"}, unread
    assert client.calls == [4, 1, 1], client.calls
