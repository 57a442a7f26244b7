"""Creates the stack's data and messaging resources on a local endpoint, from the same definitions
(`shared.tables`) the CDK stack uses."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared import aws
from shared.tables import (
    EVENTS_DLQ,
    EVENTS_QUEUE,
    EVENTS_TOPIC_LOCAL_NAME,
    JOURNEYS_TABLE,
    LOANS_TABLE,
    RELAY_FAILURES_QUEUE,
    QueueSpec,
    TableSpec,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType


@dataclass(frozen=True)
class LocalResources:
    """Names and addresses of what `provision` created."""

    endpoint_url: str
    region: str
    loans_table: str
    journeys_table: str
    loans_stream_arn: str
    topic_arn: str
    events_queue_url: str
    events_dlq_url: str
    relay_failures_url: str


def table_definition(spec: TableSpec, name: str) -> dict[str, Any]:
    """CreateTable arguments for a spec: on-demand, string keys, streams and GSIs as specified."""
    attributes = {spec.partition_key, spec.sort_key}
    for index in spec.indexes:
        attributes |= {index.partition_key, index.sort_key}
    definition: dict[str, Any] = {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": a, "AttributeType": "S"} for a in sorted(attributes)],
        "KeySchema": [
            {"AttributeName": spec.partition_key, "KeyType": "HASH"},
            {"AttributeName": spec.sort_key, "KeyType": "RANGE"},
        ],
    }
    if spec.indexes:
        definition["GlobalSecondaryIndexes"] = [
            {
                "IndexName": index.name,
                "KeySchema": [
                    {"AttributeName": index.partition_key, "KeyType": "HASH"},
                    {"AttributeName": index.sort_key, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": index.projection},
            }
            for index in spec.indexes
        ]
    if spec.stream_new_image:
        definition["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    return definition


def _create_table(dynamodb: DynamoDBClient, spec: TableSpec) -> str:
    """Create the table, or use it if it exists: botocore retries a CreateTable whose reply was lost
    (a read timeout), and the retry finds the table its first attempt created."""
    try:
        description = dynamodb.create_table(**table_definition(spec, spec.local_name))["TableDescription"]
    except dynamodb.exceptions.ResourceInUseException:
        description = dynamodb.describe_table(TableName=spec.local_name)["Table"]
    ttl = dynamodb.describe_time_to_live(TableName=spec.local_name)["TimeToLiveDescription"]
    if ttl.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
        dynamodb.update_time_to_live(
            TableName=spec.local_name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": spec.ttl_attribute},
        )
    return str(description.get("LatestStreamArn", ""))


def _create_queue(sqs: SQSClient, spec: QueueSpec, dead_letter_arn: str | None = None) -> str:
    attributes: dict[QueueAttributeNameType, str] = {
        "VisibilityTimeout": str(spec.visibility_timeout_seconds),
        "MessageRetentionPeriod": str(spec.retention_days * 24 * 3600),
    }
    if dead_letter_arn is not None:
        attributes["RedrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": dead_letter_arn, "maxReceiveCount": str(spec.max_receive_count)}
        )
    return str(sqs.create_queue(QueueName=spec.local_name, Attributes=attributes)["QueueUrl"])


def _queue_arn(sqs: SQSClient, url: str) -> str:
    return str(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])


@dataclass(frozen=True)
class ProvisionClients:
    """The clients `provision` calls: a caller that provisions the same endpoint again and again (a test
    after each reset) makes them once, as each costs more to create than the calls it makes."""

    dynamodb: DynamoDBClient
    sqs: SQSClient
    sns: SNSClient

    @classmethod
    def of(cls, endpoint_url: str, region: str) -> ProvisionClients:
        return cls(
            aws.client("dynamodb", region, endpoint_url),
            aws.client("sqs", region, endpoint_url),
            aws.client("sns", region, endpoint_url),
        )


def provision(endpoint_url: str, region: str = "us-east-1", clients: ProvisionClients | None = None) -> LocalResources:
    """Create tables, topic, queues and the raw-delivery subscription on `endpoint_url` (through
    `clients`, made for `endpoint_url` and `region`, when given)."""
    clients = clients or ProvisionClients.of(endpoint_url, region)
    dynamodb, sqs, sns = clients.dynamodb, clients.sqs, clients.sns
    stream_arn = _create_table(dynamodb, LOANS_TABLE)
    _create_table(dynamodb, JOURNEYS_TABLE)
    dlq_url = _create_queue(sqs, EVENTS_DLQ)
    queue_url = _create_queue(sqs, EVENTS_QUEUE, _queue_arn(sqs, dlq_url))
    relay_failures_url = _create_queue(sqs, RELAY_FAILURES_QUEUE)
    topic_arn = str(sns.create_topic(Name=EVENTS_TOPIC_LOCAL_NAME)["TopicArn"])
    queue_arn = _queue_arn(sqs, queue_url)
    subscribed = sns.list_subscriptions_by_topic(TopicArn=topic_arn)["Subscriptions"]
    if not any(s["Endpoint"] == queue_arn for s in subscribed):  # one delivery per event, however often run
        sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "true"})
    return LocalResources(
        endpoint_url=endpoint_url,
        region=region,
        loans_table=LOANS_TABLE.local_name,
        journeys_table=JOURNEYS_TABLE.local_name,
        loans_stream_arn=stream_arn,
        topic_arn=topic_arn,
        events_queue_url=queue_url,
        events_dlq_url=dlq_url,
        relay_failures_url=relay_failures_url,
    )
