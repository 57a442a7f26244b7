"""The relay's view of the outbox items in the loans table: reading one (an item that cannot be read
is reported next to the readable ones, never in their way) and marking it NOTIFIED. The sweeper finds
the items it reads in the changes index (functions/relay/sweeper.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError
from pydantic import ValidationError

from shared import event_ids, outbox
from shared.dynamo import error_code, to_item
from shared.events import LoanEvent, why_unreadable
from shared.keys import event_sk, journey_pk

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class UnreadableItem:
    """A PENDING outbox item that is not an event this relay can read. It stays PENDING (nothing is
    lost): it is counted on every sweep until a reader that understands it publishes it."""

    pk: str
    sk: str
    reason: str
    # From the UUIDv7 eventId (the changes index's sort key, so always there) when it is one.
    occurred_at: datetime | None


class OutboxStore(Protocol):
    def mark_notified(self, event: LoanEvent, published_at: datetime) -> bool: ...


def read_outbox_item(item: dict[str, Any]) -> LoanEvent | UnreadableItem:
    """The event in a DynamoDB-typed outbox item, or why it cannot be read."""
    try:
        return outbox.event_from_item(item)
    except Exception as error:  # any shape at all may be stored: no item may stop the caller
        event_id = str(item.get("eventId", {}).get("S", ""))
        return UnreadableItem(
            pk=str(item.get("pk", {}).get("S", "")),
            sk=str(item.get("sk", {}).get("S", "")),
            reason=_reason(error),
            occurred_at=event_ids.time_of(event_id),
        )


class DynamoOutboxStore:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def mark_notified(self, event: LoanEvent, published_at: datetime) -> bool:
        """PENDING -> NOTIFIED. False when someone else marked it first."""
        try:
            self._client.update_item(
                TableName=self._table,
                Key=to_item({"pk": journey_pk(event.journeyId), "sk": event_sk(event.seq)}),
                # No expiry: the event is also the journey's history, kept as long as the journey (D1).
                UpdateExpression="SET #status = :notified, publishedAt = :now ADD attempts :one",
                ConditionExpression="#status = :pending",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=to_item(
                    {
                        ":notified": outbox.NOTIFIED,
                        ":pending": outbox.PENDING,
                        ":now": published_at.isoformat(),
                        ":one": 1,
                    }
                ),
            )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True


def _reason(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return why_unreadable(error)
    return f"not a loan event ({type(error).__name__}: {error})"
