"""Control Records on DynamoDB: the adapter behind the applier's ControlRecordStore port, used by
the orchestrator (road 1) and the consumer (road 2). The write is a compare-and-swap on `version`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shared.batch_read import batch_get
from shared.control_record import ControlRecord, RecordHead
from shared.dynamo import error_code, from_item, to_item
from shared.keys import CONTROL_SK, CUSTOMER_PARTITION_ATTRIBUTE, journey_pk

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def control_key(journey_id: str) -> dict[str, Any]:
    return to_item({"pk": journey_pk(journey_id), "sk": CONTROL_SK})


def record_of(item: dict[str, Any]) -> ControlRecord:
    values = from_item(item)
    return ControlRecord.model_validate({name: values[name] for name in ControlRecord.model_fields if name in values})


_HEAD_ATTRIBUTES = ("journeyId", "version", "lastAppliedSeq")


def _head(item: dict[str, Any]) -> RecordHead | None:
    """The item's head; None for one that does not read as one (a damaged record)."""
    try:
        values = from_item(item)
        return RecordHead(str(values["journeyId"]), int(values["version"]), int(values.get("lastAppliedSeq", 0)))
    except (KeyError, TypeError, ValueError):
        return None


def control_item(record: ControlRecord) -> dict[str, Any]:
    """The record's item: its fields and, when it has them, its `listing` (the customer index's key) and its
    `createHash` (what a keyed create asked for), which no dump includes: every write of the record carries
    them unchanged, so the index is written once and a repeated create is judged on any later write."""
    stored = {CUSTOMER_PARTITION_ATTRIBUTE: record.listing, "createHash": record.createHash}
    listed = {name: value for name, value in stored.items() if value is not None}
    return to_item({"pk": journey_pk(record.journeyId), "sk": CONTROL_SK, **record.model_dump(mode="json"), **listed})


class DynamoControlRecordStore:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def get(self, journey_id: str) -> ControlRecord | None:
        response = self._client.get_item(TableName=self._table, Key=control_key(journey_id), ConsistentRead=True)
        item = response.get("Item")
        return None if item is None else record_of(item)

    def get_many(self, journey_ids: list[str]) -> dict[str, ControlRecord]:
        """The records of `journey_ids` that exist, strongly consistent (shared/batch_read.py)."""
        keys = [control_key(j) for j in dict.fromkeys(journey_ids)]
        records = (record_of(item) for item in batch_get(self._client, self._table, keys))
        return {record.journeyId: record for record in records}

    def heads(self, journey_ids: list[str]) -> dict[str, RecordHead]:
        """The stale check's fields of the records of `journey_ids` that exist, strongly consistent: a
        projection, so neither DynamoDB nor this side serializes the rest of each record. A record that does
        not read as a head is left out: the reader reads it whole (`get`), and fails for its own message
        alone, not for the batch's."""
        keys = [control_key(j) for j in dict.fromkeys(journey_ids)]
        heads = (_head(item) for item in batch_get(self._client, self._table, keys, attributes=_HEAD_ATTRIBUTES))
        return {head.journeyId: head for head in heads if head is not None}

    def replace(self, record: ControlRecord, expected_version: int) -> bool:
        try:
            self._client.put_item(
                TableName=self._table,
                Item=control_item(record),
                ConditionExpression="version = :expected",
                ExpressionAttributeValues=to_item({":expected": expected_version}),
            )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True
