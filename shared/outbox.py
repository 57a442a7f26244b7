"""The outbox item's layout (D4, D7): written by loans-api in the command's transaction, read by
the relay from the stream and by the sweeper (found through the journey-changes index), marked NOTIFIED
once published. One module, one secret: how an event is stored (its key: shared/keys.py)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shared.dynamo import error_code, from_item, to_item
from shared.events import LoanEvent
from shared.keys import (
    CHANGES_PARTITION_ATTRIBUTE,
    CHANGES_SHARDS_KEY,
    EVENT_PREFIX,
    changes_partition,
    changes_shard,
    event_sk,
    journey_pk,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PENDING = "PENDING"
NOTIFIED = "NOTIFIED"


def outbox_item(event: LoanEvent, changes_shards: int = 1) -> dict[str, Any]:
    """The outbox item for `event`, PENDING: in the journey-changes index by its type and its shard among
    `changes_shards` (loans-api's setting; from its eventId, shared/keys.py changes_shard), and its eventId."""
    values = event.model_dump(mode="json")
    return to_item(
        {
            "pk": journey_pk(event.journeyId),
            "sk": event_sk(event.seq),
            **values,
            CHANGES_PARTITION_ATTRIBUTE: changes_partition(event.type, changes_shard(event.eventId, changes_shards)),
            "status": PENDING,
        }
    )


def notified_item(committed: dict[str, Any], published_at: datetime) -> dict[str, Any]:
    """The outbox item `committed` (DynamoDB-typed, as loans-api committed it) marked NOTIFIED at
    `published_at`: every other attribute as committed (the relay's mark puts it back whole, D6). No
    expiry: the event is also the journey's history, kept as long as the journey (D1)."""
    return {**committed, "status": {"S": NOTIFIED}, "publishedAt": {"S": published_at.isoformat()}}


def is_outbox_item(item: dict[str, Any]) -> bool:
    """True for a DynamoDB-typed item (or keys) of an outbox event."""
    sort_key = item.get("sk", {})
    return isinstance(sort_key, dict) and str(sort_key.get("S", "")).startswith(EVENT_PREFIX)


def event_from_item(item: dict[str, Any]) -> LoanEvent:
    """The event stored in a DynamoDB-typed outbox item (stream NewImage or table item)."""
    values = from_item(item)
    return LoanEvent.model_validate({name: values[name] for name in LoanEvent.model_fields})


def record_changes_shards(client: DynamoDBClient, table_name: str, shards: int) -> None:
    """Record `shards` as the journey-changes index's shard count in use (shared/keys.py CHANGES_SHARDS_KEY),
    unless a larger count is recorded: it is never lowered. loans-api calls it before its first write under
    a count above 1, the sweeper on every run, so the readers (which walk the recorded count) know of every
    shard written to, even under a count a rolled-back or superseded deploy no longer configures."""
    try:
        client.put_item(
            TableName=table_name,
            Item=to_item({**CHANGES_SHARDS_KEY, "shards": shards}),
            ConditionExpression="attribute_not_exists(pk) OR #shards < :shards",
            ExpressionAttributeNames={"#shards": "shards"},
            ExpressionAttributeValues=to_item({":shards": shards}),
        )
    except ClientError as error:
        if error_code(error) != "ConditionalCheckFailedException":  # a larger count is recorded: it stays
            raise
