"""DynamoDB Streams batch -> relay. Acts only on INSERTs of outbox items (the event source
mapping filters the same way; this check keeps the relay's own NOTIFIED updates from looping
wherever the filter is absent, e.g. moto). Reports partial batch failures, never raises for one record.
An item it cannot read is skipped and counted, not retried: no retry makes it readable, and a
retried record holds up its whole shard. It stays PENDING, so the sweeper keeps counting it.

The partial batch response is written here, not by Powertools' BatchProcessor: the relay decides every
record's fate for the whole batch at once (one publish, a BatchWriteItem per 25 marks), so a per-record
handler had nothing left to do but look its verdict up, and the batch utility's import (asyncio for its
async sibling, its parser's types) was the largest part of the relay's init beyond the floor
(BENCHMARKS.md section 5).
Lambda's contract for a stream is `{"batchItemFailures": [{"itemIdentifier": <SequenceNumber>}]}`: it
retries from the lowest one reported (bisecting the batch when the mapping says so)."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from functions.relay.outbox_store import StoredEvent, UnreadableItem, read_outbox_item
from functions.relay.service import OutboxRelay
from shared import outbox


def _outbox_insert(raw: dict[str, Any]) -> StoredEvent | UnreadableItem | None:
    """The event of an outbox INSERT record, with its item as committed (the stream's NewImage: the table
    streams new images, infra/data.py, which its mark writes back); None for any other record; why, if
    unreadable."""
    change = raw.get("dynamodb") or {}
    keys = change.get("Keys") or {}
    if raw.get("eventName") != "INSERT" or not outbox.is_outbox_item(keys):
        return None
    image = {**(change.get("NewImage") or {}), **keys}
    return read_outbox_item({name: _client_typed(value) for name, value in image.items()})


def _client_typed(value: Any) -> Any:
    """A stream image's attribute value as the DynamoDB client takes it. Lambda delivers the record as JSON,
    binaries as base64 text, which the client would encode again, so the mark (which puts the image back)
    would store the text in place of the bytes; numbers stay the exact text they are. An item of any shape
    may be in the stream: what is not a typed value is left as it is (and read as unreadable)."""
    if not isinstance(value, dict) or len(value) != 1:
        return value
    [(kind, inner)] = value.items()
    typed = value
    try:
        if kind == "B" and isinstance(inner, str):
            typed = {"B": base64.b64decode(inner, validate=True)}
        elif kind == "BS" and isinstance(inner, list):
            typed = {"BS": [base64.b64decode(one, validate=True) if isinstance(one, str) else one for one in inner]}
        elif kind == "M" and isinstance(inner, dict):
            typed = {"M": {name: _client_typed(one) for name, one in inner.items()}}
        elif kind == "L" and isinstance(inner, list):
            typed = {"L": [_client_typed(one) for one in inner]}
    except binascii.Error:  # not base64: not what Lambda sends; left as it is
        return value
    return typed


class StreamRelay:
    def __init__(self, relay: OutboxRelay) -> None:
        self._relay = relay

    def handle(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        parsed = {_sequence(raw): _outbox_insert(raw) for raw in event.get("Records", [])}
        stored = [value for value in parsed.values() if isinstance(value, StoredEvent)]
        unreadable = [value for value in parsed.values() if isinstance(value, UnreadableItem)]
        if unreadable:
            self._relay.count_unreadable(unreadable)
        failed = self._relay.publish([one.event for one in stored])
        # The published ones' marks: a mark that failed fails its record, as a publish does.
        unmarked = self._relay.mark_all([one for one in stored if one.event.eventId not in failed])
        # Not an outbox insert, or unreadable (counted above): nothing to retry. Failed: the stream retries from it.
        retried = [
            sequence
            for sequence, value in parsed.items()
            if isinstance(value, StoredEvent) and (value.event.eventId in failed or value.event.eventId in unmarked)
        ]
        return {"batchItemFailures": [{"itemIdentifier": sequence} for sequence in retried]}


def _sequence(raw: dict[str, Any]) -> str:
    return str((raw.get("dynamodb") or {}).get("SequenceNumber", ""))
