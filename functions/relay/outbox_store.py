"""The relay's and the sweeper's view of the outbox items in the loans table. Reading is per item:
an item that cannot be read is reported next to the readable ones, never in their way."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError
from pydantic import ValidationError

from shared import event_ids, outbox
from shared.dynamo import error_code, to_item
from shared.events import LoanEvent, why_unreadable
from shared.tables import PENDING_INDEX, PENDING_SHARD_ATTRIBUTE, PENDING_SHARDS, PENDING_SORT_ATTRIBUTE

if TYPE_CHECKING:
    from collections.abc import Mapping

    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import KeysAndAttributesUnionTypeDef, QueryInputTypeDef

# Pages read per shard per call, bounded.
_MAX_PAGES_PER_SHARD = 10
_BATCH_GET_LIMIT = 100  # DynamoDB's keys per BatchGetItem
_MAX_BATCH_GET_ROUNDS = 5  # rounds of UnprocessedKeys (throttling) before the rest waits for the next sweep


@dataclass(frozen=True)
class PendingEvent:
    event: LoanEvent

    @property
    def occurred_at(self) -> datetime:
        return self.event.occurredAt


@dataclass(frozen=True)
class UnreadableItem:
    """A PENDING outbox item that is not an event this relay can read. It stays PENDING (nothing is
    lost): it is counted on every sweep until a reader that understands it publishes it."""

    pk: str
    sk: str
    reason: str
    # From the UUIDv7 eventId (the index's sort key, so always there) when it is one.
    occurred_at: datetime | None


@dataclass(frozen=True)
class PendingPage:
    """The oldest PENDING items: the readable events (oldest first) and the unreadable items met."""

    events: list[PendingEvent] = field(default_factory=list)
    unreadable: list[UnreadableItem] = field(default_factory=list)

    def oldest_occurred_at(self) -> datetime | None:
        times = [p.occurred_at for p in self.events] + [u.occurred_at for u in self.unreadable if u.occurred_at]
        return min(times, default=None)


class OutboxStore(Protocol):
    def mark_notified(self, event: LoanEvent, published_at: datetime, expires_at: int) -> bool: ...

    def oldest_pending(self, limit: int) -> PendingPage: ...

    def count_pending(self) -> int: ...


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
    def __init__(self, client: DynamoDBClient, table_name: str, pending_shards: int = PENDING_SHARDS) -> None:
        self._client = client
        self._table = table_name
        self._shards = outbox.all_pending_shards(pending_shards)

    def mark_notified(self, event: LoanEvent, published_at: datetime, expires_at: int) -> bool:
        """PENDING -> NOTIFIED, leaving the sparse index. False when someone else marked it first."""
        try:
            self._client.update_item(
                TableName=self._table,
                Key=to_item({"pk": outbox.journey_pk(event.journeyId), "sk": outbox.event_sk(event.seq)}),
                # No expiry: the event is also the journey's history, kept as long as the journey (D1).
                UpdateExpression="SET #status = :notified, publishedAt = :now ADD attempts :one REMOVE #shard",
                ConditionExpression="#status = :pending",
                ExpressionAttributeNames={"#status": "status", "#shard": PENDING_SHARD_ATTRIBUTE},
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

    def oldest_pending(self, limit: int) -> PendingPage:
        """Up to `limit` PENDING items, oldest first across all shards (eventIds are UUIDv7): the
        readable events, and every unreadable item met on the way. The index projects keys only (its
        writes are billed by the projected size, twice per event), so the items are then read whole,
        strongly consistent, in one BatchGetItem per 100: which also drops what was marked NOTIFIED
        since the (eventually consistent) index was read."""
        keys = heapq.merge(*(self._query_shard(shard, limit) for shard in self._shards),
                           key=lambda key: str(key.get(PENDING_SORT_ATTRIBUTE, {}).get("S", "")))  # fmt: skip
        found = PendingPage()
        for item in self._read_whole(list(keys)[:limit]):
            if item.get("status", {}).get("S") != outbox.PENDING:
                continue
            read = read_outbox_item(item)
            if isinstance(read, UnreadableItem):
                found.unreadable.append(read)
            else:
                found.events.append(PendingEvent(read))
        found.events.sort(key=lambda pending: pending.event.eventId)
        return found

    def count_pending(self) -> int:
        total = 0
        for shard in self._shards:
            kwargs: QueryInputTypeDef = {**self._shard_query(shard), "Select": "COUNT"}
            while True:
                page = self._client.query(**kwargs)
                total += int(page.get("Count", 0))
                if "LastEvaluatedKey" not in page:
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return total

    def _shard_query(self, shard: str) -> QueryInputTypeDef:
        return {
            "TableName": self._table,
            "IndexName": PENDING_INDEX,
            "KeyConditionExpression": "#shard = :shard",
            "ExpressionAttributeNames": {"#shard": PENDING_SHARD_ATTRIBUTE},
            "ExpressionAttributeValues": to_item({":shard": shard}),
        }

    def _query_shard(self, shard: str, limit: int) -> list[dict[str, Any]]:
        """The keys of the shard's `limit` oldest index entries (the index holds keys only)."""
        found: list[dict[str, Any]] = []
        kwargs: QueryInputTypeDef = {**self._shard_query(shard), "ScanIndexForward": True, "Limit": limit}
        for _ in range(_MAX_PAGES_PER_SHARD):
            page = self._client.query(**kwargs)
            found += page.get("Items", [])
            if len(found) >= limit or "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return found[:limit]

    def _read_whole(self, keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The table items of index entries (an item deleted since the index was read is left out)."""
        items: list[dict[str, Any]] = []
        for start in range(0, len(keys), _BATCH_GET_LIMIT):
            request: Mapping[str, KeysAndAttributesUnionTypeDef] = {
                self._table: {
                    "Keys": [{"pk": key["pk"], "sk": key["sk"]} for key in keys[start : start + _BATCH_GET_LIMIT]],
                    "ConsistentRead": True,
                }
            }
            for _ in range(_MAX_BATCH_GET_ROUNDS):
                page = self._client.batch_get_item(RequestItems=request)
                items += page.get("Responses", {}).get(self._table, [])
                request = page.get("UnprocessedKeys") or {}
                if not request:
                    break
        return items


def _reason(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return why_unreadable(error)
    return f"not a loan event ({type(error).__name__}: {error})"
