"""The relay's view of the outbox items in the loans table: reading a batch of them by key, strongly
consistent (the stream's relay publishes and marks only what the table holds, never what its invocation
says: D6), reading one as an event (an item that cannot be read is reported next to the readable ones, never
in their way) and marking a batch of them NOTIFIED. The sweeper finds the items it reads in the changes
index (functions/relay/sweeper.py).

The mark is not a conditional update per item but BatchWriteItem puts, 25 a call, each writing back the
item as loans-api committed it with `status` NOTIFIED and `publishedAt` (docs/ARCHITECTURE.md, D6). It
is safe because an event item never changes after its transaction commits but for this mark: loans-api
puts it once (`attribute_not_exists`), nothing deletes it, and the relay and the sweeper are the only
writers after, both writing NOTIFIED over the item as they read it from the table (never an image an
invocation carries). So a put can only repeat a mark (a later one rewrites `publishedAt`), never undo
another write. DynamoDB has no conditional batch write, and a
call costs a fraction of the CPU of one UpdateItem per event, for the same write unit per item."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from shared import event_ids, outbox
from shared.backoff import Backoff
from shared.batch_read import ROUNDS, batch_read
from shared.events import LoanEvent, why_unreadable

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import WriteRequestUnionTypeDef

# BatchWriteItem's limit of requests per call.
BATCH_WRITE_LIMIT = 25

# An item's key: its partition and sort keys (strings in the loans table).
Key = tuple[str, str]


@dataclass(frozen=True)
class StoredEvent:
    """A readable outbox item: its event, and the item itself (DynamoDB-typed) as read from the table,
    which is what its mark writes back."""

    event: LoanEvent
    item: dict[str, Any]


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
    def read(self, keys: Sequence[Key]) -> tuple[dict[Key, dict[str, Any]], dict[Key, str]]:
        """The items at `keys` that exist, strongly consistent, and {key: why} for each key left unread."""
        ...

    def mark_notified(self, stored: Sequence[StoredEvent], published_at: datetime) -> dict[str, str]:
        """Mark `stored` NOTIFIED at `published_at`; {eventId: why} for each one left unmarked."""
        ...


def read_outbox_item(item: dict[str, Any]) -> StoredEvent | UnreadableItem:
    """The event in a DynamoDB-typed outbox item, or why it cannot be read."""
    try:
        return StoredEvent(outbox.event_from_item(item), item)
    except Exception as error:  # any shape at all may be stored: no item may stop the caller
        event_id = str(item.get("eventId", {}).get("S", ""))
        return UnreadableItem(
            pk=str(item.get("pk", {}).get("S", "")),
            sk=str(item.get("sk", {}).get("S", "")),
            reason=_reason(error),
            occurred_at=event_ids.time_of(event_id),
        )


class DynamoOutboxStore:
    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        rounds: Backoff = ROUNDS,
        sleep: Callable[[float], None] = time.sleep,
        unit_random: Callable[[], float] = random.random,
    ) -> None:
        self._client = client
        self._table = table_name
        self._rounds = rounds
        self._sleep = sleep
        self._random = unit_random

    def read(self, keys: Sequence[Key]) -> tuple[dict[Key, dict[str, Any]], dict[Key, str]]:
        """shared/batch_read.py's bounded rounds of BatchGetItem (100 keys a call), strongly consistent. The
        keys DynamoDB still leaves unprocessed after the last round, and every key when a call fails, are
        returned unread, with why."""
        typed = [{"pk": {"S": pk}, "sk": {"S": sk}} for pk, sk in keys]
        try:
            items, left = batch_read(
                self._client, self._table, typed, rounds=self._rounds, sleep=self._sleep, unit_random=self._random
            )
        except (ClientError, BotoCoreError) as error:
            return {}, dict.fromkeys(keys, f"{type(error).__name__}: {error}")
        why = f"left unprocessed by DynamoDB after {self._rounds.attempts} BatchGetItem calls"
        return {_key(item): item for item in items}, {_key(key): why for key in left}

    def mark_notified(self, stored: Sequence[StoredEvent], published_at: datetime) -> dict[str, str]:
        """Each item as read put back NOTIFIED, 25 a call. The items DynamoDB leaves unprocessed
        are put again after a pause that doubles (shared/batch_read.py's rounds); those still unprocessed
        after the last round, and a call's items when it fails, are returned (still PENDING, unless marked
        meanwhile: the caller has them retried)."""
        by_key: dict[tuple[str, str], list[StoredEvent]] = {}
        for one in stored:  # one put per item: BatchWriteItem refuses a key twice in a call
            by_key.setdefault(_key(one.item), []).append(one)
        puts = [outbox.notified_item(marks[0].item, published_at) for marks in by_key.values()]
        failed: dict[tuple[str, str], str] = {}
        for start in range(0, len(puts), BATCH_WRITE_LIMIT):
            chunk = puts[start : start + BATCH_WRITE_LIMIT]
            try:
                left = self._put(chunk)
            except (ClientError, BotoCoreError) as error:
                failed.update({_key(item): f"{type(error).__name__}: {error}" for item in chunk})
                continue
            why = f"left unprocessed by DynamoDB after {self._rounds.attempts} BatchWriteItem calls"
            failed.update({_key(item): why for item in left})
        return {one.event.eventId: why for key, why in failed.items() for one in by_key[key]}

    def _put(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Put `items` (at most 25) in bounded rounds; the items still unprocessed after the last."""
        requests: list[WriteRequestUnionTypeDef] = [{"PutRequest": {"Item": item}} for item in items]
        for round_number in range(self._rounds.attempts):
            if round_number:
                self._sleep(self._rounds.delay(round_number, self._random()))
            response = self._client.batch_write_item(RequestItems={self._table: requests})
            requests = list((response.get("UnprocessedItems") or {}).get(self._table, []))
            if not requests:
                return []
        return [dict(request["PutRequest"]["Item"]) for request in requests if "PutRequest" in request]


def _key(item: dict[str, Any]) -> Key:
    return str(item["pk"]["S"]), str(item["sk"]["S"])


def _reason(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return why_unreadable(error)
    return f"not a loan event ({type(error).__name__}: {error})"
