"""The audit's ports (functions/auditor/service.py) on DynamoDB: loans-api's ledgers and events, the
changes index, and the audit's own bookkeeping. It never writes to the loans table."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from datetime import datetime
from itertools import islice
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from functions.auditor.audit import Truth
from functions.auditor.service import AuditState, AuditStateConflict, Change, EventFacts, Ledgers
from shared import event_ids, outbox
from shared.batch_read import batch_get
from shared.dynamo import error_code, from_item, to_item
from shared.events import KNOWN_EVENT_TYPES, LoanEvent
from shared.keys import CHANGES_SHARDS_KEY, JOURNEY_PREFIX, LEDGER_SK, changes_partitions, event_sk, journey_pk
from shared.tables import CHANGES_INDEX, CHANGES_PARTITION_ATTRIBUTE, CHANGES_SORT_ATTRIBUTE

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

AUDIT_STATE_KEY = {"pk": "AUDIT", "sk": "STATE"}
# The scheduled audit's lease (shared/lease.py), next to its state item.
AUDIT_LEASE_KEY = {"pk": "AUDIT", "sk": "LEASE"}


class DynamoTruthReader:
    """loans-api's truth straight from its table: the ledger (its newest event) and the event items."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def ledgers(self, journey_ids: list[str]) -> Ledgers:
        found = Ledgers()
        keys = [to_item({"pk": journey_pk(j), "sk": LEDGER_SK}) for j in dict.fromkeys(journey_ids)]
        for item in batch_get(self._client, self._table, keys):
            values = from_item(item)
            journey_id = str(values.get("journeyId") or values["pk"].removeprefix(JOURNEY_PREFIX))
            try:
                last = LoanEvent.model_validate(values["lastEvent"])  # the ledger keeps its newest event whole
                found.truths[journey_id] = Truth(journey_id=journey_id, last_event=last)
            except (KeyError, TypeError, ValueError):  # pydantic's ValidationError is a ValueError
                found.unreadable.append(journey_id)
        return found

    def event(self, journey_id: str, seq: int) -> EventFacts | None:
        key = to_item({"pk": journey_pk(journey_id), "sk": event_sk(seq)})
        item = self._client.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item")
        if item is None:
            return None  # gone: deleted by an operator archiving old history, or expired under the old layout
        values = from_item(item)
        try:
            event: LoanEvent | None = outbox.event_from_item(item)
        except (KeyError, ValueError):
            event = None
        occurred = event.occurredAt if event else _time(values.get("occurredAt"))
        return EventFacts(event, values.get("status"), occurred)


# Index entries a partition's Query asks for at a time: the merge reads a partition's next page only when
# it needs it, so a run that stops at its limit has read about that many entries, plus at most a page
# of each partition, however many shards there are.
CHANGES_PAGE_SIZE = 200


class DynamoChangeFinder:
    """Which journeys changed when: the keys-only changes index (a partition per event type and shard,
    sorted by UUIDv7 eventId), or, for an audit of everything, a scan of the ledgers.

    It walks every event type's shards 0 .. n-1, n the larger of `shards` (the count loans-api is
    configured with) and the count the sweeper recorded as in use (shared/keys.py CHANGES_SHARDS_KEY):
    entries written under a count since lowered are still read. One position serves every partition (the
    audit's `after`): the partitions are merged by eventId, so a cursor per partition would stand at the
    same id in each."""

    def __init__(self, client: DynamoDBClient, table_name: str, shards: int = 1) -> None:
        self._client = client
        self._table = table_name
        self._shards = shards

    def changed_between(self, after: str, end: datetime, limit: int) -> list[Change]:
        """The events with an id above `after` (an eventId, or `event_ids.lower_bound` of a time) and
        minted before `end`, oldest first, at most `limit`."""
        before = event_ids.lower_bound(end)
        partitions = changes_partitions(KNOWN_EVENT_TYPES, max(self._shards, self._recorded_shards()))
        per_partition = [self._changes(partition, after, before, limit) for partition in partitions]
        return list(islice(heapq.merge(*per_partition), limit))

    def _recorded_shards(self) -> int:
        item = self._client.get_item(TableName=self._table, Key=to_item(CHANGES_SHARDS_KEY), ConsistentRead=True)
        return int(from_item(item.get("Item") or {}).get("shards", 0))

    def _changes(self, partition: str, after: str, before: str, limit: int) -> Iterator[Change]:
        """One partition's changes, oldest first, read a page at a time as the merge asks for them."""
        pages = self._client.get_paginator("query").paginate(
            TableName=self._table,
            IndexName=CHANGES_INDEX,
            KeyConditionExpression="#partition = :partition AND #id > :after",
            ExpressionAttributeNames={"#partition": CHANGES_PARTITION_ATTRIBUTE, "#id": CHANGES_SORT_ATTRIBUTE},
            ExpressionAttributeValues=to_item({":partition": partition, ":after": after}),
            PaginationConfig={"MaxItems": limit, "PageSize": min(limit, CHANGES_PAGE_SIZE)},
        )
        for page in pages:  # lazy: a page is read when the merge reaches it
            for item in page.get("Items", []):
                event_id = item[CHANGES_SORT_ATTRIBUTE]["S"]
                if event_id >= before:
                    return
                yield Change(event_id, item["pk"]["S"].removeprefix(JOURNEY_PREFIX))

    def all_journeys(self) -> Iterator[str]:
        pages = self._client.get_paginator("scan").paginate(
            TableName=self._table,
            FilterExpression="sk = :ledger",
            ProjectionExpression="pk",
            ExpressionAttributeValues=to_item({":ledger": LEDGER_SK}),
        )
        for page in pages:
            for item in page.get("Items", []):
                yield item["pk"]["S"].removeprefix(JOURNEY_PREFIX)


class DynamoAuditState:
    """One small item in the journeys table (pk AUDIT, sk STATE): the scheduled audit's memory."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def get(self) -> AuditState:
        item = self._client.get_item(TableName=self._table, Key=to_item(AUDIT_STATE_KEY), ConsistentRead=True)
        values = from_item(item.get("Item") or {})
        return AuditState(
            _time(values.get("checkedUntil")),
            tuple(values.get("suspects") or ()),
            values.get("resumeAfter"),
            int(values.get("version") or 0),
        )

    def put(self, state: AuditState, read: AuditState) -> None:
        """Save `state` over `read` (the state this run started from), as its next version; raises
        AuditStateConflict when another run saved one since, so two runs never overwrite each other."""
        values = {
            **AUDIT_STATE_KEY,
            "suspects": list(state.suspects),
            "resumeAfter": state.resume_after,
            "version": read.version + 1,
        }
        if state.checked_until is not None:
            values["checkedUntil"] = state.checked_until.isoformat()
        try:
            # (a state item saved before versions were kept has none: version 0)
            self._client.put_item(
                TableName=self._table,
                Item=to_item(values),
                ConditionExpression="attribute_not_exists(version) OR version = :read",
                ExpressionAttributeValues=to_item({":read": read.version}),
            )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                raise AuditStateConflict(f"the audit state moved past version {read.version}") from error
            raise


def _time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value)) if value else None
    except ValueError:
        return None
