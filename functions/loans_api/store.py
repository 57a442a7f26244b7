"""loans-api's storage: the port and its DynamoDB adapter. The item layout of the loans table lives
here (the outbox item's in `shared.outbox`). Every command is ONE TransactWriteItems (D1)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from functions.loans_api.domain import Change, EntityWrite, Ledger
from functions.loans_api.models import JourneyTruth
from shared import outbox
from shared.dynamo import cancellation_reasons, error_code, from_item, to_item
from shared.events import LoanEvent
from shared.idempotency import Receipt, receipt_key

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import PutTypeDef, QueryInputTypeDef, TransactWriteItemTypeDef

# What `GET /journeys/{id}` lists of each kind of history: the newest this many (older ones are counted
# as omitted, never read).
HISTORY_PAGE = 50
# Positions of the fixed items in every command's transaction; domain writes follow.
_RECEIPT, _LEDGER = 0, 1


class CommitStatus(StrEnum):
    COMMITTED = "committed"
    REPLAY = "replay"  # the key's receipt already exists: answer with it
    CONFLICT = "conflict"  # the ledger moved since it was read: read again and retry
    VIOLATED = "violated"  # a domain condition failed: the command is no longer legal


@dataclass(frozen=True)
class CommitOutcome:
    status: CommitStatus
    receipt: Receipt | None = None


class LoanStore(Protocol):
    def read_ledger(self, journey_id: str) -> Ledger: ...

    def get_receipt(self, key: str) -> Receipt | None: ...

    def commit(self, change: Change, receipt: Receipt, expires_at: int) -> CommitOutcome: ...

    def read_journey(self, journey_id: str) -> JourneyTruth | None: ...


class DynamoLoanStore:
    """LoanStore on one DynamoDB table (single-table design, see docs/ARCHITECTURE.md, Data model)."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    # -- reads -------------------------------------------------------------------------------

    def read_ledger(self, journey_id: str) -> Ledger:
        item = self._get(outbox.journey_pk(journey_id), outbox.LEDGER_SK)
        return Ledger(journey_id, None if item is None else _ledger_event(item))

    def get_receipt(self, key: str) -> Receipt | None:
        item = self._get(**receipt_key(key))
        return None if item is None else Receipt.from_values(item)

    def read_journey(self, journey_id: str) -> JourneyTruth | None:
        """The ledger, the disbursement and the newest `HISTORY_PAGE` simulations, acceptances and events:
        five bounded reads, whatever the journey's history (a journey has at most 100 quotes, and the read
        costs the same at 1 or 100)."""
        pk = outbox.journey_pk(journey_id)
        ledger = self._get(pk, outbox.LEDGER_SK)
        if ledger is None:
            return None
        older: list[str] = []

        def newest(name: str, prefix: str) -> list[dict[str, Any]]:
            items = self._query_newest(pk, prefix, HISTORY_PAGE + 1)
            if len(items) > HISTORY_PAGE:
                older.append(name)
            return [_public(item) for item in reversed(items[:HISTORY_PAGE])]

        simulations = newest("simulations", "SIMULATION#")
        acceptances = newest("acceptances", "ACCEPTANCE#")
        events = [
            {"eventId": i["eventId"], "seq": i["seq"], "type": i["type"], "status": i["status"]}
            for i in newest("events", outbox.EVENT_PREFIX)
        ]
        disbursement = self._get(pk, "DISBURSEMENT")
        return JourneyTruth.of(
            _ledger_event(ledger),
            simulations=simulations,
            acceptances=acceptances,
            disbursement=None if disbursement is None else _public(disbursement),
            events=events,
            older_omitted=older,
        )

    def _get(self, pk: str, sk: str) -> dict[str, Any] | None:
        response = self._client.get_item(TableName=self._table, Key=to_item({"pk": pk, "sk": sk}), ConsistentRead=True)
        item = response.get("Item")
        return None if item is None else from_item(item)

    def _query_newest(self, pk: str, prefix: str, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` items of the partition whose sort key starts with `prefix`, newest first (ids
        and sequence numbers sort by time). One page: DynamoDB stops at `limit` items."""
        kwargs: QueryInputTypeDef = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": to_item({":pk": pk, ":prefix": prefix}),
            "ScanIndexForward": False,
            "Limit": limit,
            "ConsistentRead": True,
        }
        return [from_item(item) for item in self._client.query(**kwargs).get("Items", [])]

    # -- the one transaction ------------------------------------------------------------------

    def commit(self, change: Change, receipt: Receipt, expires_at: int) -> CommitOutcome:
        items: list[TransactWriteItemTypeDef] = [
            self._put_receipt(change, receipt, expires_at),
            self._put_ledger(change),
            {
                "Put": {
                    "TableName": self._table,
                    "Item": outbox.outbox_item(change.event),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
        ]
        for write in change.writes:
            items.append(self._entity_op(change, write))
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as error:
            return self._decode(error)
        return CommitOutcome(CommitStatus.COMMITTED)

    def _decode(self, error: ClientError) -> CommitOutcome:
        if error_code(error) != "TransactionCanceledException":
            raise error
        reasons = cancellation_reasons(error)
        codes = [str(reason.get("Code") or "None") for reason in reasons]
        if codes and codes[_RECEIPT] == "ConditionalCheckFailed":
            old = reasons[_RECEIPT].get("Item")
            return CommitOutcome(CommitStatus.REPLAY, Receipt.from_values(from_item(old)) if old else None)
        if "TransactionConflict" in codes or (len(codes) > _LEDGER and codes[_LEDGER] == "ConditionalCheckFailed"):
            return CommitOutcome(CommitStatus.CONFLICT)
        if "ConditionalCheckFailed" in codes:
            return CommitOutcome(CommitStatus.VIOLATED)
        raise error

    def _put_receipt(self, change: Change, receipt: Receipt, expires_at: int) -> TransactWriteItemTypeDef:
        return {
            "Put": {
                "TableName": self._table,
                "Item": to_item(
                    receipt.to_values(expires_at, journeyId=change.event.journeyId, eventId=change.event.eventId)
                ),
                "ConditionExpression": "attribute_not_exists(pk)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _put_ledger(self, change: Change) -> TransactWriteItemTypeDef:
        after = change.ledger_after
        put: PutTypeDef = {
            "TableName": self._table,
            "Item": to_item(
                {
                    "pk": outbox.journey_pk(after.journey_id),
                    "sk": outbox.LEDGER_SK,
                    "journeyId": after.journey_id,
                    "seq": after.seq,  # orders the journey's commands: the condition below
                    # The newest event, whole (its snapshot is where the journey stands). Nested, so the
                    # ledger never carries an event's top-level attributes into an index keyed on them.
                    "lastEvent": change.event.model_dump(mode="json"),
                }
            ),
        }
        if change.ledger_before.seq == 0:
            put["ConditionExpression"] = "attribute_not_exists(pk)"
        else:
            put["ConditionExpression"] = "seq = :seq"
            put["ExpressionAttributeValues"] = to_item({":seq": change.ledger_before.seq})
        return {"Put": put}

    def _entity_op(self, change: Change, write: EntityWrite) -> TransactWriteItemTypeDef:
        journey_id = change.event.journeyId
        pk = outbox.journey_pk(journey_id)
        sk = write.kind if write.kind == "DISBURSEMENT" else f"{write.kind}#{write.entity_id}"
        if not write.create:
            return {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item({"pk": pk, "sk": sk}),
                    "UpdateExpression": "SET #status = :new, updatedAt = :now",
                    "ConditionExpression": "#status = :active",
                    "ExpressionAttributeNames": {"#status": "status"},
                    "ExpressionAttributeValues": to_item(
                        {":new": write.status, ":active": "ACTIVE", ":now": change.event.occurredAt.isoformat()}
                    ),
                }
            }
        attributes = {**write.attributes, "journeyId": journey_id, "createdAt": change.event.occurredAt.isoformat()}
        return {
            "Put": {
                "TableName": self._table,
                # "One disbursement per journey, ever" is this condition on a fixed key.
                "Item": to_item({"pk": pk, "sk": sk, **attributes, "status": write.status}),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }


def _ledger_event(item: dict[str, Any]) -> LoanEvent:
    return LoanEvent.model_validate(item["lastEvent"])


def _public(item: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in item.items() if key not in ("pk", "sk")}
