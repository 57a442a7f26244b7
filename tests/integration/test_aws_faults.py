"""AWS-side faults on the local moto endpoint (saga/local/aws_faults.py): each fault kind reaches boto3 in
the shape real AWS gives it, botocore's retry modes as configured in production handle it as they would in
AWS, and the loans-api conflict path (CommitStatus.CONFLICT -> decide again) is reached. The fidelity of
the endpoint's transactions is in test_moto_transactions.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
import urllib3

from functions.orchestrator.deadline import DYNAMO_BUDGET
from functions.relay.publisher import SnsPublisher
from saga.local.aws_faults import CONTROL_PATH, FaultRule
from saga.local.resources import provision
from shared import aws
from shared.dynamo import to_item
from shared.events import LoanEvent, LoanSnapshot
from tests.integration.aws_calls import NO_RETRIES, error_of, put, sqs_client
from tests.support import ApiClient

# -- each kind, its AWS shape through boto3 ---------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        ("ThrottlingException", 400),
        ("ProvisionedThroughputExceededException", 400),
        ("InternalServerError", 500),
        ("ServiceUnavailable", 503),
    ],
)
def test_each_dynamodb_error_reaches_boto3_with_its_code_and_status(faults, resources, kind, status):
    # Given every GetItem answers the fault
    faults.add(FaultRule("dynamodb", "GetItem", kind))
    dynamodb = aws.client("dynamodb", resources.region, resources.endpoint_url, NO_RETRIES)
    # When a GetItem is made, Then boto3 raises the service's error code with its HTTP status
    code, http_status, _ = error_of(
        lambda: dynamodb.get_item(TableName=resources.loans_table, Key=to_item({"pk": "a", "sk": "b"}))
    )
    assert (code, http_status) == (kind, status)
    assert faults.injected == {f"dynamodb:GetItem:{kind}": 1}
    # And another operation is untouched
    dynamodb.describe_table(TableName=resources.loans_table)


def test_a_transaction_conflict_cancels_the_whole_transaction_with_its_reason(faults, resources):
    faults.add(FaultRule("dynamodb", "TransactWriteItems", "TransactionConflict"))
    # loans-api's budget: 3 attempts
    dynamodb = aws.client("dynamodb", resources.region, resources.endpoint_url, aws.AwsCallBudget())
    items = [put(resources.loans_table, "J#1"), put(resources.loans_table, "J#2")]
    code, status, response = error_of(lambda: dynamodb.transact_write_items(TransactItems=items))
    assert (code, status) == ("TransactionCanceledException", 400)
    codes = [reason["Code"] for reason in response["CancellationReasons"]]
    assert sorted(codes) == ["None", "TransactionConflict"]
    # botocore does not retry a cancelled transaction (as in AWS), and nothing was written
    assert faults.injected == {"dynamodb:TransactWriteItems:TransactionConflict": 1}
    assert "Item" not in dynamodb.get_item(TableName=resources.loans_table, Key=to_item({"pk": "J#1", "sk": "S"}))


def test_sns_throttling_and_failed_entries_reach_the_relays_publisher(faults, resources):
    sns = aws.client("sns", resources.region, resources.endpoint_url, NO_RETRIES)
    event = LoanEvent.model_validate(
        {
            "eventId": "e-1",
            "journeyId": "j-1",
            "seq": 1,
            "type": "JourneyCancelled",
            "occurredAt": "2026-01-01T00:00:00Z",
            "snapshot": LoanSnapshot(journeyId="j-1", state="cancelled").model_dump(),
        }
    )
    faults.add(FaultRule("sns", "PublishBatch", "Throttled", limit=1))
    code, status, _ = error_of(
        lambda: sns.publish_batch(
            TopicArn=resources.topic_arn, PublishBatchRequestEntries=[{"Id": "1", "Message": "m"}]
        )
    )
    assert (code, status) == ("Throttled", 429)
    faults.add(FaultRule("sns", "PublishBatch", "PublishBatchFailed", limit=1))
    response = sns.publish_batch(
        TopicArn=resources.topic_arn,
        PublishBatchRequestEntries=[{"Id": "a", "Message": "m"}, {"Id": "b", "Message": "n"}],
    )
    assert response["Successful"] == []
    assert sorted((f["Id"], f["Code"], f["SenderFault"]) for f in response["Failed"]) == [
        ("a", "InternalError", False),
        ("b", "InternalError", False),
    ]
    # The relay's publisher reports the event as not published, both ways
    faults.add(FaultRule("sns", "PublishBatch", "Throttled", limit=1))
    assert set(SnsPublisher(sns, resources.topic_arn).publish([event])) == {"e-1"}
    faults.add(FaultRule("sns", "PublishBatch", "PublishBatchFailed", limit=1))
    assert set(SnsPublisher(sns, resources.topic_arn).publish([event])) == {"e-1"}
    assert SnsPublisher(sns, resources.topic_arn).publish([event]) == {}


@pytest.mark.parametrize(
    ("operation", "kind", "status"),
    [("ReceiveMessage", "RequestThrottled", 400), ("DeleteMessage", "InternalError", 500)],
)
def test_each_sqs_error_reaches_boto3_with_its_code_and_status(faults, resources, operation, kind, status):
    sqs = sqs_client(resources)
    faults.add(FaultRule("sqs", operation, kind))
    if operation == "ReceiveMessage":
        call: Any = lambda: sqs.receive_message(QueueUrl=resources.events_queue_url)  # noqa: E731
    else:
        call = lambda: sqs.delete_message(QueueUrl=resources.events_queue_url, ReceiptHandle="h")  # noqa: E731
    code, http_status, _ = error_of(call)
    assert (code, http_status) == (kind, status)


# -- botocore's retries, as configured in production ------------------------------------------


@pytest.mark.parametrize(
    "kind",
    ["ThrottlingException", "ProvisionedThroughputExceededException", "InternalServerError", "ServiceUnavailable"],
)
def test_the_orchestrators_budget_absorbs_one_fault_and_surfaces_the_second(faults, resources, kind):
    # Given the orchestrator's DynamoDB client (standard mode, 2 attempts)
    dynamodb = aws.client("dynamodb", resources.region, resources.endpoint_url, DYNAMO_BUDGET)
    key = to_item({"pk": "a", "sk": "b"})
    # When one call fails once, Then botocore's retry absorbs it
    faults.add(FaultRule("dynamodb", "GetItem", kind, limit=1))
    response = dynamodb.get_item(TableName=resources.journeys_table, Key=key)
    assert response["ResponseMetadata"]["RetryAttempts"] == 1
    # And when it fails twice, the error surfaces after exactly two attempts
    faults.clear()
    faults.add(FaultRule("dynamodb", "GetItem", kind, limit=2))
    code, _, failed = error_of(lambda: dynamodb.get_item(TableName=resources.journeys_table, Key=key))
    assert code == kind
    assert failed["ResponseMetadata"]["RetryAttempts"] == 1
    assert faults.injected[f"dynamodb:GetItem:{kind}"] == 3


# -- the conflict path in loans-api -----------------------------------------------------------


def test_loans_api_decides_again_after_a_transaction_conflict(faults, loans_api: ApiClient, resources):
    # Given DynamoDB cancels loans-api's first transaction with TransactionConflict
    faults.add(FaultRule("dynamodb", "TransactWriteItems", "TransactionConflict", limit=1))
    # When a simulation is created, Then it commits once, on the second decision
    response = loans_api.post(
        "/simulations",
        {"journeyId": "j-conflict", "amount": 5000, "termMonths": 12},
        headers={"Idempotency-Key": "k-conflict"},
    )
    assert response.status == 201, response.body
    assert faults.injected == {"dynamodb:TransactWriteItems:TransactionConflict": 1}
    truth = json.loads(loans_api.get("/journeys/j-conflict").body)
    assert [e["seq"] for e in truth["events"]] == [1]


def test_loans_api_answers_a_retryable_503_when_conflicts_never_end(faults, loans_api: ApiClient):
    faults.add(FaultRule("dynamodb", "TransactWriteItems", "TransactionConflict"))
    response = loans_api.post(
        "/simulations", {"journeyId": "j-busy", "amount": 5000, "termMonths": 12}, headers={"Idempotency-Key": "k-busy"}
    )
    assert response.status == 503
    assert json.loads(response.body)["retryable"] is True
    assert faults.injected["dynamodb:TransactWriteItems:TransactionConflict"] == 8  # max_conflict_retries
    assert loans_api.get("/journeys/j-busy").status == 404


# -- the control API, and idempotent local resources ------------------------------------------


def test_the_control_api_sets_lists_and_clears_rules(faults, moto_server, resources):
    url = moto_server.url + CONTROL_PATH
    rule = {"service": "dynamodb", "operation": "DescribeTable", "kind": "InternalServerError", "limit": 1}
    added = json.loads(urllib3.request("POST", url, body=json.dumps(rule)).data)
    assert added["rules"][0]["kind"] == "InternalServerError"
    dynamodb = aws.client("dynamodb", resources.region, resources.endpoint_url, NO_RETRIES)
    code, _, _ = error_of(lambda: dynamodb.describe_table(TableName=resources.loans_table))
    assert code == "InternalServerError"
    assert json.loads(urllib3.request("GET", url).data)["injected"] == {"dynamodb:DescribeTable:InternalServerError": 1}
    assert json.loads(urllib3.request("DELETE", url).data)["rules"] == []
    bad = urllib3.request("POST", url, body=json.dumps({**rule, "kind": "Nope"}))
    assert bad.status == 400


def test_provisioning_survives_a_create_table_retried_after_its_reply_was_lost(faults, moto_server):
    # Given CreateTable commits and its reply is lost (botocore retries it)
    urllib3.request("POST", f"{moto_server.url}/moto-api/reset")
    faults.add(FaultRule("dynamodb", "CreateTable", "ReplyLost", limit=1))
    # When the resources are provisioned, Then it succeeds, and again on the same endpoint
    first = provision(moto_server.url)
    assert faults.injected == {"dynamodb:CreateTable:ReplyLost": 1}
    again = provision(moto_server.url)
    assert again == first
    sns = aws.client("sns", first.region, first.endpoint_url, NO_RETRIES)
    assert len(sns.list_subscriptions_by_topic(TopicArn=first.topic_arn)["Subscriptions"]) == 1


def test_a_journey_creation_cancelled_by_a_conflict_is_a_503_the_agent_may_retry(faults, orchestrator: ApiClient):
    # Given DynamoDB refuses the orchestrator's creating write once with TransactionConflict (a transaction
    # held the record's key; found by the soak when the create was a transaction: an unhandled error, a 500)
    faults.add(FaultRule("dynamodb", "PutItem", "TransactionConflict", match='"journeys"', limit=1))
    # When an agent creates a journey with its key, Then a 503 `contention` it may retry
    response = orchestrator.post("/journeys", {"customerId": "c-1"}, key="agent-1")
    problem = json.loads(response.body)
    assert (response.status, problem["type"].rsplit(":", 1)[-1], problem["retryable"]) == (503, "contention", True)
    # And the retry with the same key creates the journey, once
    created = orchestrator.post("/journeys", {"customerId": "c-1"}, key="agent-1")
    again = orchestrator.post("/journeys", {"customerId": "c-1"}, key="agent-1")
    assert created.status == 201
    assert json.loads(again.body)["journeyId"] == json.loads(created.body)["journeyId"]
