"""Direct AWS calls on the local endpoint, for the tests of its faults and of its transactions."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pytest
from botocore.exceptions import ClientError

from saga.local.resources import LocalResources
from shared import aws
from shared.dynamo import from_item, to_item
from tests.support import ONE_PATIENT_ATTEMPT

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_sqs import SQSClient

NO_RETRIES = ONE_PATIENT_ATTEMPT  # one attempt (a retry would hide what one call did), patient (tests/support.py)


def dynamodb_client(resources: LocalResources, budget: aws.AwsCallBudget = NO_RETRIES) -> DynamoDBClient:
    return aws.client("dynamodb", resources.region, resources.endpoint_url, budget)


def sqs_client(resources: LocalResources) -> SQSClient:
    return aws.client("sqs", resources.region, resources.endpoint_url, NO_RETRIES)


def streams_client(resources: LocalResources) -> DynamoDBStreamsClient:
    return aws.client("dynamodbstreams", resources.region, resources.endpoint_url, NO_RETRIES)


def put(table: str, pk: str, **extra: Any) -> TransactWriteItemTypeDef:
    return {
        "Put": {
            "TableName": table,
            "Item": to_item({"pk": pk, "sk": "S", **extra}),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


def stream_inserts(resources: LocalResources) -> list[str]:
    streams = streams_client(resources)
    shard = streams.describe_stream(StreamArn=resources.loans_stream_arn)["StreamDescription"]["Shards"][0]
    iterator = streams.get_shard_iterator(
        StreamArn=resources.loans_stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    records = streams.get_records(ShardIterator=iterator)["Records"]
    return [r["dynamodb"]["Keys"]["pk"]["S"] for r in records if r["eventName"] == "INSERT"]


def error_of(call: Callable[[], object]) -> tuple[str, int, Mapping[str, Any]]:
    with pytest.raises(ClientError) as caught:
        call()
    response = caught.value.response
    return response["Error"]["Code"], response["ResponseMetadata"]["HTTPStatusCode"], response


def scan(dynamodb: DynamoDBClient, table: str) -> list[dict[str, Any]]:
    """Every item of `table`, read strongly consistent, in key order."""
    pages = dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
    items = [from_item(item) for page in pages for item in page["Items"]]
    return sorted(items, key=lambda i: (i["pk"], i["sk"]))
