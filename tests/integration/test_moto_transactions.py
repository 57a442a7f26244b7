"""The local endpoint's transactions against DynamoDB's documented behaviour (saga/local/moto_transactions.py
patches moto where it differs): a ClientRequestToken makes a retried transaction a replay for 10 minutes, a
write refused after every check passed leaves nothing behind, and a reply lost after the commit is
recovered by botocore's retry with the same token."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from botocore.exceptions import ConnectionClosedError

from saga.local import moto_transactions
from saga.local.aws_faults import FaultRule
from shared import aws
from shared.dynamo import to_item
from tests.integration.aws_calls import dynamodb_client, error_of, put, stream_inserts

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef


def test_a_transaction_retried_with_its_token_succeeds_again(dynamodb: DynamoDBClient, resources):
    # Given a committed transaction (botocore retries a timed-out call with the same token)
    first: TransactWriteItemTypeDef = {
        "Put": {
            "TableName": resources.loans_table,
            "Item": to_item({"pk": "T#1", "sk": "T"}),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }
    items = [first]
    dynamodb.transact_write_items(TransactItems=items, ClientRequestToken="token-1")
    # When it arrives again with the same token, Then it succeeds (as in DynamoDB), writing nothing new
    dynamodb.transact_write_items(TransactItems=items, ClientRequestToken="token-1")
    assert stream_inserts(resources) == ["T#1"]
    # And without the token its condition fails, as it should
    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(TransactItems=items, ClientRequestToken="token-2")


def test_a_transaction_whose_reply_is_lost_is_retried_with_its_token_and_commits_once(faults, resources):
    # Given loans-api's client (standard mode, 3 attempts) and a transaction whose first reply is lost
    dynamodb = dynamodb_client(resources, aws.AwsCallBudget())
    faults.add(FaultRule("dynamodb", "TransactWriteItems", "ReplyLost", limit=1))
    items = [put(resources.loans_table, "LOST#1"), put(resources.loans_table, "LOST#2")]
    # When it is called, Then botocore's retry (same ClientRequestToken) succeeds
    response = dynamodb.transact_write_items(TransactItems=items)
    assert response["ResponseMetadata"]["RetryAttempts"] == 1
    assert faults.injected == {"dynamodb:TransactWriteItems:ReplyLost": 1}
    # And it committed once: one INSERT per item on the stream
    assert sorted(stream_inserts(resources)) == ["LOST#1", "LOST#2"]


def test_a_lost_reply_without_retries_is_an_error_and_the_token_then_replays_it(faults, resources):
    dynamodb = dynamodb_client(resources)
    faults.add(FaultRule("dynamodb", "TransactWriteItems", "ReplyLost", limit=1))
    items = [put(resources.loans_table, "LOST#3")]
    with pytest.raises(ConnectionClosedError):
        dynamodb.transact_write_items(TransactItems=items, ClientRequestToken="lost-3")
    dynamodb.transact_write_items(TransactItems=items, ClientRequestToken="lost-3")
    assert stream_inserts(resources) == ["LOST#3"]


def test_a_write_refused_after_the_checks_writes_nothing_at_all(resources):
    # Given a transaction whose second Put is over DynamoDB's 400 KB item limit
    dynamodb = dynamodb_client(resources)
    items = [put(resources.loans_table, "BIG#1"), put(resources.loans_table, "BIG#2", blob="x" * 410_000)]
    # When it is sent, Then DynamoDB's ValidationException, and neither item nor stream record exists
    code, status, _ = error_of(lambda: dynamodb.transact_write_items(TransactItems=items))
    assert (code, status) == ("ValidationException", 400)
    assert "Item" not in dynamodb.get_item(TableName=resources.loans_table, Key=to_item({"pk": "BIG#1", "sk": "S"}))
    assert stream_inserts(resources) == []


def test_an_update_undone_by_a_later_refusal_keeps_its_old_value(resources):
    dynamodb = dynamodb_client(resources)
    dynamodb.put_item(TableName=resources.loans_table, Item=to_item({"pk": "U#1", "sk": "S", "n": "old"}))
    update: TransactWriteItemTypeDef = {
        "Update": {
            "TableName": resources.loans_table,
            "Key": to_item({"pk": "U#1", "sk": "S"}),
            "UpdateExpression": "SET n = :n",
            "ExpressionAttributeValues": to_item({":n": "new"}),
        }
    }
    error_of(
        lambda: dynamodb.transact_write_items(
            TransactItems=[update, put(resources.loans_table, "BIG#3", blob="x" * 410_000)]
        )
    )
    item = dynamodb.get_item(TableName=resources.loans_table, Key=to_item({"pk": "U#1", "sk": "S"}))["Item"]
    assert item["n"] == {"S": "old"}


@pytest.fixture
def clock() -> Iterator[list[float]]:
    now = [1_000.0]
    previous = moto_transactions.tokens.clock
    moto_transactions.tokens.clock = lambda: now[0]
    yield now
    moto_transactions.tokens.clock = previous


def test_a_token_expires_after_ten_minutes(resources, clock):
    dynamodb = dynamodb_client(resources)
    items = [put(resources.loans_table, "TOK#1")]
    dynamodb.transact_write_items(TransactItems=items, ClientRequestToken="tok-1")
    clock[0] += 599
    dynamodb.transact_write_items(TransactItems=items, ClientRequestToken="tok-1")  # still a replay
    clock[0] += 1
    # After 10 minutes the token is forgotten: the same call is a new transaction, and its condition fails
    code, _, _ = error_of(lambda: dynamodb.transact_write_items(TransactItems=items, ClientRequestToken="tok-1"))
    assert code == "TransactionCanceledException"


def test_a_token_reused_with_other_parameters_is_an_idempotent_parameter_mismatch(resources, clock):
    dynamodb = dynamodb_client(resources)
    dynamodb.transact_write_items(TransactItems=[put(resources.loans_table, "TOK#2")], ClientRequestToken="tok-2")
    code, status, _ = error_of(
        lambda: dynamodb.transact_write_items(
            TransactItems=[put(resources.loans_table, "TOK#3")], ClientRequestToken="tok-2"
        )
    )
    assert (code, status) == ("IdempotentParameterMismatchException", 400)
    assert "Item" not in dynamodb.get_item(TableName=resources.loans_table, Key=to_item({"pk": "TOK#3", "sk": "S"}))
    # After the token expired, the other parameters are a new transaction
    clock[0] += 600
    dynamodb.transact_write_items(TransactItems=[put(resources.loans_table, "TOK#3")], ClientRequestToken="tok-2")
