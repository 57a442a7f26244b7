"""loans-api's storage: the DynamoDB adapter of its port (LoanStore, in functions/loans_api/service.py).
What the loans table's items hold lives here (the outbox item's in `shared.outbox`, every key in
`shared.keys`). Every command is ONE TransactWriteItems of exactly three items (D1): the journey's loan
item (updated on a condition on its previous `seq` and on what the command was decided on), the
receipt, and the event, which is also the journey's history."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError
from pydantic import ValidationError

from functions.loans_api import history
from functions.loans_api.domain import Change, Ledger, Requirements
from functions.loans_api.models import JourneyTruth
from functions.loans_api.service import CommitOutcome, CommitStatus
from shared import outbox
from shared.dynamo import cancellation_reasons, error_code, from_item, to_item
from shared.events import LoanEvent
from shared.idempotency import Receipt
from shared.keys import EVENT_PREFIX, LEDGER_SK, journey_pk, receipt_key

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import PutTypeDef, TransactWriteItemTypeDef

logger = Logger(child=True)

# The positions of the three items in every command's transaction.
_RECEIPT, _JOURNEY = 0, 1
# Set on the journey's item by its disbursement and never removed: every command's condition requires
# its absence, so "one disbursement per journey, ever" holds on this permanent item, whatever the
# receipts (they expire) or the item's snapshot say.
DISBURSED_MARK = "disbursementId"
# The one-disbursement condition (D1), on every command's journey item after its first command
# (`_conditions`); the domain refuses a second disbursement before it (`domain.create_disbursement`).
NEVER_DISBURSED = f"attribute_not_exists({DISBURSED_MARK})"


class DynamoLoanStore:
    """LoanStore on one DynamoDB table (single-table design, see docs/ARCHITECTURE.md, Data model)."""

    def __init__(self, client: DynamoDBClient, table_name: str, changes_shards: int = 1) -> None:
        self._client = client
        self._table = table_name
        self._changes_shards = changes_shards  # the journey-changes index's shards to write events to
        # A count above 1 is recorded before the first write under it (once per container), so the sweeper
        # and the audit walk every shard written to, even if no reader ever runs with this count (a deploy
        # rolled back, or superseded by a lower count, before they did). At 1 nothing is recorded: every
        # reader walks shard 0.
        self._shards_recorded = changes_shards <= 1

    # -- reads -------------------------------------------------------------------------------

    def read_ledger(self, journey_id: str) -> Ledger:
        item = self._get(journey_pk(journey_id), LEDGER_SK)
        return Ledger(journey_id, None if item is None else _ledger_event(item))

    def get_receipt(self, key: str) -> Receipt | None:
        item = self._get(**receipt_key(key))
        return None if item is None else Receipt.from_values(item)

    def read_journey(self, journey_id: str) -> JourneyTruth | None:
        """The journey's item and its newest events (`history.WINDOW_PAGE` a page, at most
        `history.MAX_WINDOW_PAGES` pages, fewer once they hold the newest 50 of each kind): at most three
        reads whatever the journey's history, two for most journeys."""
        pk = journey_pk(journey_id)
        item = self._get(pk, LEDGER_SK)
        if item is None:
            return None
        last = _ledger_event(item)
        newest: list[history.Entry] = []
        pages = self._client.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=to_item({":pk": pk, ":prefix": EVENT_PREFIX}),
            ScanIndexForward=False,
            ConsistentRead=True,
            PaginationConfig={"PageSize": history.WINDOW_PAGE},
        )
        for page in itertools.islice(pages, history.MAX_WINDOW_PAGES):  # lazy: stopping reads no further page
            broken = False
            for found in page.get("Items", []):
                entry = _entry(found)
                if entry is not None and entry.event.seq > last.seq:
                    continue  # committed between the item's read and this query: the next state's (history.unbroken)
                # An unreadable event or a hole in the seqs ends the window there (history.unbroken).
                if entry is None or entry.event.seq != last.seq - len(newest):
                    broken = True
                    break
                newest.append(entry)
            if broken or history.is_enough(last, newest):
                break
        return history.truth(last, newest)

    def _get(self, pk: str, sk: str) -> dict[str, Any] | None:
        response = self._client.get_item(TableName=self._table, Key=to_item({"pk": pk, "sk": sk}), ConsistentRead=True)
        item = response.get("Item")
        return None if item is None else from_item(item)

    # -- the one transaction ------------------------------------------------------------------

    def commit(self, change: Change, receipt: Receipt, expires_at: int) -> CommitOutcome:
        if not self._shards_recorded:
            outbox.record_changes_shards(self._client, self._table, self._changes_shards)
            self._shards_recorded = True
        items: list[TransactWriteItemTypeDef] = [
            self._put_receipt(receipt, expires_at),
            self._put_journey(change),
            {
                "Put": {
                    "TableName": self._table,
                    "Item": outbox.outbox_item(change.event, self._changes_shards),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
        ]
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as error:
            return self._decode(error, change)
        return CommitOutcome(CommitStatus.COMMITTED)

    def _decode(self, error: ClientError, change: Change) -> CommitOutcome:
        if error_code(error) != "TransactionCanceledException":
            raise error
        reasons = cancellation_reasons(error)
        codes = [str(reason.get("Code") or "None") for reason in reasons]
        if codes and codes[_RECEIPT] == "ConditionalCheckFailed":
            old = reasons[_RECEIPT].get("Item")
            return CommitOutcome(CommitStatus.REPLAY, Receipt.from_values(from_item(old)) if old else None)
        if len(codes) > _JOURNEY and codes[_JOURNEY] == "ConditionalCheckFailed":
            # At the seq the command was decided on, the item refused what it was decided on (its
            # snapshot was edited, or it was disbursed): no longer legal. Otherwise it moved: decide again.
            old = reasons[_JOURNEY].get("Item")
            unmoved = old is not None and int(from_item(old).get("seq", -1)) == change.ledger_before.seq
            return CommitOutcome(CommitStatus.VIOLATED if unmoved else CommitStatus.CONFLICT)
        if "TransactionConflict" in codes:
            return CommitOutcome(CommitStatus.CONFLICT)
        if "ConditionalCheckFailed" in codes:
            return CommitOutcome(CommitStatus.VIOLATED)
        raise error

    def _put_receipt(self, receipt: Receipt, expires_at: int) -> TransactWriteItemTypeDef:
        return {
            "Put": {
                "TableName": self._table,
                "Item": to_item(receipt.to_values(expires_at)),
                "ConditionExpression": "attribute_not_exists(pk)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _put_journey(self, change: Change) -> TransactWriteItemTypeDef:
        """The journey's loan item: its `seq` and its newest event whole (the snapshot is the journey's
        state: the active quote with its terms, the active acceptance, the disbursement, cancelled or
        not). Nested, so the item never carries an event's top-level attributes into an index keyed on
        them. Put over the previous version on a condition on it (`_conditions`)."""
        event = change.event
        values: dict[str, Any] = {
            "pk": journey_pk(event.journeyId),
            "sk": LEDGER_SK,
            "journeyId": event.journeyId,
            "seq": event.seq,
            "lastEvent": event.model_dump(mode="json"),
        }
        if event.snapshot.disbursement is not None:
            values[DISBURSED_MARK] = event.snapshot.disbursement.disbursementId
        put: PutTypeDef = {
            "TableName": self._table,
            "Item": to_item(values),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            "ConditionExpression": "attribute_not_exists(pk)",
        }
        seq = change.ledger_before.seq
        if seq > 0:
            expression, values = _conditions(seq, change.requires)
            put["ConditionExpression"] = expression
            put["ExpressionAttributeNames"] = {"#last": "lastEvent", "#snapshot": "snapshot", "#state": "state"}
            put["ExpressionAttributeValues"] = to_item(values)
        return {"Put": put}


def _conditions(seq: int, requires: Requirements) -> tuple[str, dict[str, Any]]:
    """The condition on a journey's item after its first command (before it, the item must not exist):
    at `seq`, never disbursed, not ended, and still what the command was decided on (D14)."""
    snapshot = "#last.#snapshot"
    # A journey disbursed before the mark existed says so in its state alone: both are checked.
    ended = f"{snapshot}.#state IN (:cancelled, :disbursed)"
    clauses = ["seq = :seq", NEVER_DISBURSED, f"NOT ({ended})"]
    values: dict[str, Any] = {":seq": seq, ":cancelled": "cancelled", ":disbursed": "disbursed"}
    if requires.simulation_id is not None:
        clauses.append(f"{snapshot}.simulation.simulationId = :simulation")
        values[":simulation"] = requires.simulation_id
    if requires.no_acceptance:
        clauses.append(f"attribute_not_exists({snapshot}.acceptance.acceptanceId)")
    if requires.acceptance_id is not None:
        clauses.append(f"{snapshot}.acceptance.acceptanceId = :acceptance")
        values[":acceptance"] = requires.acceptance_id
    if requires.quotes_below is not None:
        clauses.append(f"{snapshot}.simulationCount < :quotes")
        values[":quotes"] = requires.quotes_below
    return " AND ".join(clauses), values


def _entry(item: dict[str, Any]) -> history.Entry | None:
    """The history's entry in a DynamoDB-typed event item, or None (logged with its key) when it cannot be
    read as one: edited by hand, restored from elsewhere, or of a type this version does not know."""
    try:
        return history.Entry(outbox.event_from_item(item), str(from_item(item)["status"]))
    except (ValidationError, KeyError) as error:
        key = {name: item.get(name, {}).get("S") for name in ("pk", "sk")}
        logger.warning(
            "Unreadable event item: the journey's history is listed down to it",
            extra={**key, "error": repr(error)[:500]},
        )
        return None


def _ledger_event(item: dict[str, Any]) -> LoanEvent:
    return LoanEvent.model_validate(item["lastEvent"])
