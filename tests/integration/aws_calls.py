"""Direct AWS calls on the local endpoint, for the tests of its faults and of its transactions."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from saga.local.resources import LocalResources
from shared import aws
from shared.dynamo import from_item, to_item

NO_RETRIES = aws.AwsCallBudget(max_attempts=1)


def client(resources: LocalResources, service: str, budget: aws.AwsCallBudget = NO_RETRIES) -> Any:
    return aws.client(service, resources.region, resources.endpoint_url, budget)


def put(table: str, pk: str, **extra: Any) -> dict[str, Any]:
    return {
        "Put": {
            "TableName": table,
            "Item": to_item({"pk": pk, "sk": "S", **extra}),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


def stream_inserts(resources: LocalResources) -> list[str]:
    streams = client(resources, "dynamodbstreams")
    shard = streams.describe_stream(StreamArn=resources.loans_stream_arn)["StreamDescription"]["Shards"][0]
    iterator = streams.get_shard_iterator(
        StreamArn=resources.loans_stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    records = streams.get_records(ShardIterator=iterator)["Records"]
    return [r["dynamodb"]["Keys"]["pk"]["S"] for r in records if r["eventName"] == "INSERT"]


def error_of(call: Any) -> tuple[str, int, dict[str, Any]]:
    with pytest.raises(ClientError) as caught:
        call()
    response = caught.value.response
    return response["Error"]["Code"], response["ResponseMetadata"]["HTTPStatusCode"], response


def scan(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    """Every item of `table`, read strongly consistent, in key order."""
    items, kwargs = [], {"TableName": table, "ConsistentRead": True}
    while True:
        page = dynamodb.scan(**kwargs)
        items += [from_item(item) for item in page["Items"]]
        if "LastEvaluatedKey" not in page:
            return sorted(items, key=lambda i: (i["pk"], i["sk"]))
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
