"""DynamoDB Streams batch -> relay. Acts only on INSERTs of outbox items (the event source
mapping filters the same way; this check keeps the relay's own NOTIFIED updates from looping
wherever the filter is absent, e.g. moto). Reports partial batch failures, never raises for one record.
An item it cannot read is skipped and counted, not retried: no retry makes it readable, and a
retried record holds up its whole shard. It stays PENDING, so the sweeper keeps counting it."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from functions.relay.outbox_store import UnreadableItem, read_outbox_item
from functions.relay.service import OutboxRelay
from shared import outbox
from shared.events import LoanEvent


class PublishFailed(Exception):
    """The record's event was not published; the stream retries from this record."""


def _outbox_insert(raw: dict[str, Any]) -> LoanEvent | UnreadableItem | None:
    """The event of an outbox INSERT record; None for any other record; why, if unreadable."""
    change = raw.get("dynamodb") or {}
    keys = change.get("Keys") or {}
    if raw.get("eventName") != "INSERT" or not outbox.is_outbox_item(keys):
        return None
    return read_outbox_item({**(change.get("NewImage") or {}), **keys})


class StreamRelay:
    def __init__(self, relay: OutboxRelay) -> None:
        self._relay = relay

    def handle(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        parsed = {_sequence(raw): _outbox_insert(raw) for raw in event.get("Records", [])}
        events = [value for value in parsed.values() if isinstance(value, LoanEvent)]
        unreadable = [value for value in parsed.values() if isinstance(value, UnreadableItem)]
        if unreadable:
            self._relay.count_unreadable(unreadable)
        failed = self._relay.publish(events)
        # The batch's marks at once (bounded): a mark that failed fails its record, as a publish does.
        unmarked = self._relay.mark_all([event for event in events if event.eventId not in failed])

        def record_handler(record: DynamoDBRecord) -> None:
            value = parsed.get(_sequence(record.raw_event))
            if not isinstance(value, LoanEvent):
                return  # not an outbox insert, or unreadable (counted above)
            if value.eventId in failed:
                raise PublishFailed(f"event {value.eventId}: {failed[value.eventId]}")
            if value.eventId in unmarked:
                raise unmarked[value.eventId]

        processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
        return dict(process_partial_response(event, record_handler, processor, context))


def _sequence(raw: dict[str, Any]) -> str:
    return str((raw.get("dynamodb") or {}).get("SequenceNumber", ""))
