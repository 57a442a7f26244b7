"""DynamoDB Streams batch -> relay. Acts only on INSERTs of outbox items (the event source
mapping filters the same way; this check keeps the relay's own NOTIFIED updates from looping
wherever the filter is absent, e.g. moto). Reports partial batch failures, never raises for one record.

A record names a key, nothing more: the relay reads the batch's items from the loans table by key, strongly
consistent (one BatchGetItem for a batch of 100), and publishes and marks what it read, never the record's
image (D6). So whoever may invoke the relay can only have real committed events published and marked early;
a key with no item (never committed, or archived) is logged and neither published nor marked.
An item it cannot read is skipped and counted, not retried: no retry makes it readable, and a
retried record holds up its whole shard. It stays PENDING, so the sweeper keeps counting it.

The partial batch response is written here, not by Powertools' BatchProcessor: the relay decides every
record's fate for the whole batch at once (one read, one publish, a BatchWriteItem per 25 marks), so a
per-record handler had nothing left to do but look its verdict up, and the batch utility's import (asyncio
for its async sibling, its parser's types) was the largest part of the relay's init beyond the floor
(BENCHMARKS.md section 5).
Lambda's contract for a stream is `{"batchItemFailures": [{"itemIdentifier": <SequenceNumber>}]}`: it
retries from the lowest one reported (bisecting the batch when the mapping says so): a record whose item
was left unread, or whose event was not published or not marked."""

from __future__ import annotations

from typing import Any

from functions.relay.outbox_store import Key, StoredEvent, UnreadableItem, read_outbox_item
from functions.relay.service import OutboxRelay
from shared import outbox


def _outbox_key(raw: dict[str, Any]) -> Key | None:
    """The key of an outbox INSERT record (its `dynamodb.Keys`: a string pk, a string sk of an event);
    None for any other record."""
    change = raw.get("dynamodb")
    keys = change.get("Keys") if isinstance(change, dict) else None
    if raw.get("eventName") != "INSERT" or not isinstance(keys, dict) or not outbox.is_outbox_item(keys):
        return None
    pk, sk = keys.get("pk"), keys["sk"]
    if not isinstance(pk, dict) or not isinstance(pk.get("S"), str) or not pk["S"] or not isinstance(sk["S"], str):
        return None
    return pk["S"], sk["S"]


class StreamRelay:
    def __init__(self, relay: OutboxRelay) -> None:
        self._relay = relay

    def handle(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        records = [raw for raw in event.get("Records", []) if isinstance(raw, dict)]
        keyed = {_sequence(raw): _outbox_key(raw) for raw in records}
        wanted = list(dict.fromkeys(key for key in keyed.values() if key is not None))  # in order, once each
        found, unread = self._relay.read(wanted)
        reads = {key: read_outbox_item(found[key]) for key in wanted if key in found}
        stored = [value for value in reads.values() if isinstance(value, StoredEvent)]
        unreadable = [value for value in reads.values() if isinstance(value, UnreadableItem)]
        if unreadable:
            self._relay.count_unreadable(unreadable)
        failed = self._relay.publish([one.event for one in stored])
        # The published ones' marks: a mark that failed fails its record, as a publish does.
        unmarked = self._relay.mark_all([one for one in stored if one.event.eventId not in failed])
        # Not an outbox insert, no item, or unreadable (counted above): nothing to retry. Unread, or failed:
        # the stream retries from it.
        not_done = failed.keys() | unmarked.keys()
        again = unread | {
            key for key, read in reads.items() if isinstance(read, StoredEvent) and read.event.eventId in not_done
        }
        retried = [sequence for sequence, key in keyed.items() if key in again]
        return {"batchItemFailures": [{"itemIdentifier": sequence} for sequence in retried]}


def _sequence(raw: dict[str, Any]) -> str:
    return str((raw.get("dynamodb") or {}).get("SequenceNumber", ""))
