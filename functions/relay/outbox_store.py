"""The relay's and the sweeper's view of the outbox items in the loans table."""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from botocore.exceptions import ClientError

from shared import outbox
from shared.dynamo import error_code, to_item
from shared.events import LoanEvent
from shared.tables import PENDING_INDEX, PENDING_SHARD_ATTRIBUTE


@dataclass(frozen=True)
class PendingEvent:
    event: LoanEvent
    attempts: int


class OutboxStore(Protocol):
    def mark_notified(self, event: LoanEvent, published_at: datetime, expires_at: int) -> bool: ...

    def oldest_pending(self, limit: int) -> list[PendingEvent]: ...

    def count_pending(self) -> int: ...


class DynamoOutboxStore:
    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def mark_notified(self, event: LoanEvent, published_at: datetime, expires_at: int) -> bool:
        """PENDING -> NOTIFIED, leaving the sparse index. False when someone else marked it first."""
        try:
            self._client.update_item(
                TableName=self._table,
                Key=to_item({"pk": outbox.journey_pk(event.journeyId), "sk": outbox.event_sk(event.seq)}),
                UpdateExpression="SET #status = :notified, publishedAt = :now, expiresAt = :expires "
                "ADD attempts :one REMOVE #shard",
                ConditionExpression="#status = :pending",
                ExpressionAttributeNames={"#status": "status", "#shard": PENDING_SHARD_ATTRIBUTE},
                ExpressionAttributeValues=to_item(
                    {
                        ":notified": outbox.NOTIFIED,
                        ":pending": outbox.PENDING,
                        ":now": published_at.isoformat(),
                        ":expires": expires_at,
                        ":one": 1,
                    }
                ),
            )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def oldest_pending(self, limit: int) -> list[PendingEvent]:
        """Up to `limit` PENDING events, oldest first across all shards (eventIds are UUIDv7)."""
        per_shard = [self._query_shard(shard, limit) for shard in outbox.all_pending_shards()]
        merged = heapq.merge(*per_shard, key=lambda pending: pending.event.eventId)
        return list(merged)[:limit]

    def count_pending(self) -> int:
        total = 0
        for shard in outbox.all_pending_shards():
            kwargs: dict[str, Any] = self._shard_query(shard) | {"Select": "COUNT"}
            while True:
                page = self._client.query(**kwargs)
                total += int(page.get("Count", 0))
                if "LastEvaluatedKey" not in page:
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return total

    def _shard_query(self, shard: str) -> dict[str, Any]:
        return {
            "TableName": self._table,
            "IndexName": PENDING_INDEX,
            "KeyConditionExpression": "#shard = :shard",
            "ExpressionAttributeNames": {"#shard": PENDING_SHARD_ATTRIBUTE},
            "ExpressionAttributeValues": to_item({":shard": shard}),
        }

    def _query_shard(self, shard: str, limit: int) -> list[PendingEvent]:
        page = self._client.query(**self._shard_query(shard), ScanIndexForward=True, Limit=limit)
        return [
            PendingEvent(outbox.event_from_item(item), int(item.get("attempts", {}).get("N", "0")))
            for item in page.get("Items", [])
            if item.get("status", {}).get("S") == outbox.PENDING  # the index is eventually consistent
        ]
