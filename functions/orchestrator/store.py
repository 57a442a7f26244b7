"""The orchestrator's own table: Control Records (via the shared CAS adapter) and the keys-only index of a
customer's journeys."""

from __future__ import annotations

from typing import Any, cast

from botocore.exceptions import ClientError

from shared.control_record import ControlRecord
from shared.control_store import DynamoControlRecordStore, control_item, record_of
from shared.dynamo import error_code, from_item, to_item
from shared.errors import StoreContention
from shared.keys import CUSTOMER_INDEX, CUSTOMER_PARTITION_ATTRIBUTE, CUSTOMER_SORT_ATTRIBUTE, JOURNEY_PREFIX


class DynamoJourneyStore(DynamoControlRecordStore):
    def create(self, record: ControlRecord) -> ControlRecord | None:
        """Create the record: ONE conditional PutItem (one write unit; no receipt item, docs/ARCHITECTURE.md
        D2). Returns the record that already holds its journeyId instead, as the failed condition read it."""
        try:
            self._client.put_item(
                TableName=self._table,
                Item=control_item(record),
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error_code(error) == "TransactionConflictException":  # a transaction holds the record's key
                raise StoreContention("another transaction held the journey's record; retrying is safe") from error
            if error_code(error) != "ConditionalCheckFailedException":
                raise
            item = error.response.get("Item")
            return record_of(cast(dict[str, Any], item)) if item else self.get(record.journeyId)
        return None

    def listed(self, listing: str, limit: int, after: ControlRecord | None) -> tuple[list[ControlRecord], str | None]:
        """Up to `limit` records listed under `listing`, newest first, from the journey after `after` (a record
        of that listing; None: the newest); and the journeyId the next page starts after (None: no more). One
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
            # The index's key of `after` and the table's: the same attributes its item holds.
            item = from_item(control_item(after))
            start = ("pk", "sk", CUSTOMER_PARTITION_ATTRIBUTE, CUSTOMER_SORT_ATTRIBUTE)
            query["ExclusiveStartKey"] = to_item({name: item[name] for name in start})
        items = self._client.query(**query).get("Items", [])
        found = [str(from_item(item)["pk"]).removeprefix(JOURNEY_PREFIX) for item in items]
        records = self.get_many(found[:limit])
        return [records[j] for j in found[:limit] if j in records], found[limit - 1] if len(found) > limit else None
