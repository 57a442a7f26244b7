"""The orchestrator's own table: Control Records (via the shared CAS adapter), the receipts of
agent-supplied Idempotency-Keys, and the keys-only index of a customer's journeys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shared.control_record import ControlRecord
from shared.control_store import DynamoControlRecordStore, control_item
from shared.dynamo import cancellation_reasons, error_code, from_item, to_item
from shared.errors import StoreContention
from shared.idempotency import Receipt
from shared.keys import (
    CONTROL_SK,
    CUSTOMER_INDEX,
    CUSTOMER_PARTITION_ATTRIBUTE,
    CUSTOMER_SORT_ATTRIBUTE,
    journey_pk,
    receipt_key,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef


def _receipt_item(receipt: Receipt, expires_at: int) -> dict[str, Any]:
    return to_item(receipt.to_values(expires_at))


def _receipt_from(item: dict[str, Any]) -> Receipt:
    return Receipt.from_values(from_item(item))


class DynamoJourneyStore(DynamoControlRecordStore):
    def create(self, record: ControlRecord, receipt: Receipt | None, expires_at: int) -> Receipt | None:
        """Create the record (and the receipt that records its creation, in one transaction).
        Returns the existing receipt instead when the key was already used."""
        put_record: TransactWriteItemTypeDef = {
            "Put": {
                "TableName": self._table,
                "Item": control_item(record),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
        if receipt is None:
            self._transact([put_record])
            return None
        put_receipt: TransactWriteItemTypeDef = {
            "Put": {
                "TableName": self._table,
                "Item": _receipt_item(receipt, expires_at),
                "ConditionExpression": "attribute_not_exists(pk)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }
        try:
            self._transact([put_receipt, put_record])
        except ClientError as error:
            reason = (cancellation_reasons(error) or [{}])[0]
            if reason.get("Code") != "ConditionalCheckFailed":
                raise
            return _receipt_from(reason["Item"]) if "Item" in reason else self.get_receipt(receipt.key)
        return None

    def _transact(self, items: list[TransactWriteItemTypeDef]) -> None:
        """One TransactWriteItems. DynamoDB cancels it with TransactionConflict when another transaction
        holds one of its items (botocore does not retry that): the agent may retry, a 503 says so."""
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as error:
            if error_code(error) != "TransactionCanceledException":
                raise
            codes = {reason.get("Code") for reason in cancellation_reasons(error)}
            if "TransactionConflict" in codes and "ConditionalCheckFailed" not in codes:
                raise StoreContention("another transaction held the journey's items; retrying is safe") from error
            raise

    def listed(self, listing: str, limit: int, after: str | None) -> tuple[list[ControlRecord], str | None]:
        """Up to `limit` records listed under `listing`, newest first, from the journey after `after` (a
        journeyId; None: the newest); and the journeyId the next page starts after (None: no more). One
        Query of the keys-only index (eventually consistent: a journey created a moment ago may be missing)
        and one strongly consistent batch read."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": CUSTOMER_INDEX,
            "KeyConditionExpression": "#listing = :listing",
            "ExpressionAttributeNames": {"#listing": CUSTOMER_PARTITION_ATTRIBUTE},
            "ExpressionAttributeValues": to_item({":listing": listing}),
            "ScanIndexForward": False,
            "Limit": limit + 1,  # one more than asked: whether a next page exists, without a page that is empty
        }
        if after is not None:
            query["ExclusiveStartKey"] = to_item(
                {
                    "pk": journey_pk(after),
                    "sk": CONTROL_SK,
                    CUSTOMER_PARTITION_ATTRIBUTE: listing,
                    CUSTOMER_SORT_ATTRIBUTE: after,
                }
            )
        found = [from_item(item)[CUSTOMER_SORT_ATTRIBUTE] for item in self._client.query(**query).get("Items", [])]
        records = self.get_many(found[:limit])
        return [records[j] for j in found[:limit] if j in records], found[limit - 1] if len(found) > limit else None

    def get_receipt(self, key: str) -> Receipt | None:
        response = self._client.get_item(TableName=self._table, Key=to_item(receipt_key(key)), ConsistentRead=True)
        item = response.get("Item")
        return None if item is None else _receipt_from(item)
