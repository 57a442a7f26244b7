"""The local endpoint's Query patch (saga/local/moto_queries.py) answers exactly what moto's own Query
answers, page for page, and never lists the whole table to do it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from moto.dynamodb.models.table import Table

from saga.local import moto_queries
from saga.local.moto_server import MotoServer

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TABLE = "queries"


@pytest.fixture
def table(moto_server: MotoServer, dynamodb: DynamoDBClient) -> str:
    # Given a table with a sparse index, several partitions of several items each, and items without
    # the index's keys
    dynamodb.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk", "g", "gs")],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "sparse",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}, {"AttributeName": "gs", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
    )
    for p in range(6):
        for s in range(9):
            item = {"pk": {"S": f"P{p}"}, "sk": {"S": f"{'EVENT' if s % 2 else 'SIM'}#{s:03}"}, "n": {"N": str(s)}}
            if (p + s) % 3 == 0:
                item |= {"g": {"S": f"G{s % 2}"}, "gs": {"S": f"{9 - s:03}-{p}"}}
            dynamodb.put_item(TableName=TABLE, Item=item)
    return TABLE


QUERIES: list[dict[str, Any]] = [
    {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "P2"}}},
    {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "nobody"}}},
    {
        "KeyConditionExpression": "pk = :p AND begins_with(sk, :b)",
        "ExpressionAttributeValues": {":p": {"S": "P3"}, ":b": {"S": "EVENT#"}},
        "ScanIndexForward": False,
        "Limit": 2,
    },
    {
        "KeyConditionExpression": "pk = :p AND sk BETWEEN :a AND :z",
        "ExpressionAttributeValues": {
            ":p": {"S": "P1"},
            ":a": {"S": "EVENT#002"},
            ":z": {"S": "SIM#006"},
            ":n": {"N": "3"},
        },
        "FilterExpression": "n > :n",
        "Limit": 3,
    },
    {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "P4"}}, "Select": "COUNT"},
    {"IndexName": "sparse", "KeyConditionExpression": "g = :g", "ExpressionAttributeValues": {":g": {"S": "G1"}}},
    {
        "IndexName": "sparse",
        "KeyConditionExpression": "g = :g AND gs < :t",
        "ExpressionAttributeValues": {":g": {"S": "G0"}, ":t": {"S": "006"}},
        "ScanIndexForward": False,
        "Limit": 2,
    },
]


def pages(dynamodb: DynamoDBClient, query: dict[str, Any]) -> list[dict[str, Any]]:
    """Every page of a query, following LastEvaluatedKey."""
    answers: list[dict[str, Any]] = []
    arguments: dict[str, Any] = {"TableName": TABLE, **query}
    while True:
        answer = {k: v for k, v in dynamodb.query(**arguments).items() if k != "ResponseMetadata"}
        answers.append(answer)
        if "LastEvaluatedKey" not in answer:
            return answers
        arguments["ExclusiveStartKey"] = answer["LastEvaluatedKey"]


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: q["KeyConditionExpression"] + q.get("IndexName", ""))
def test_a_patched_query_answers_every_page_as_moto_does(
    table: str, dynamodb: DynamoDBClient, query: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # When the query is answered by the patched Query, and then by moto's own
    patched = pages(dynamodb, query)
    monkeypatch.setattr(Table, "query", moto_queries._original_query)
    original = pages(dynamodb, query)
    # Then the pages are the same, item for item
    assert patched == original
    assert sum(page["Count"] for page in patched) > 0 or "nobody" in str(query)


def test_a_patched_query_never_asks_moto_to_list_and_sort_the_whole_table(
    table: str, dynamodb: DynamoDBClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a spy on moto's sorted listing of every item, and on what each Query is handed
    listed: list[str] = []
    handed: list[int] = []
    every_item, original = Table.all_items, moto_queries._original_query

    def spy(self: Table) -> Any:
        listed.append(self.name)
        return every_item(self)

    def handed_over(self: Table, *args: Any, **kwargs: Any) -> Any:
        handed.append(len(self.all_items()))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Table, "all_items", spy)
    monkeypatch.setattr(moto_queries, "_original_query", handed_over)
    # When a partition and an index are queried
    pages(dynamodb, QUERIES[0])
    pages(dynamodb, QUERIES[5])
    # Then the table was never listed and sorted (a Scan still does, as it must), the partition query
    # was handed its 9 items, and the index query the 54 items unsorted
    assert listed == []
    assert handed == [9, 54]
    dynamodb.scan(TableName=TABLE, Limit=1)
    assert listed == [TABLE]
