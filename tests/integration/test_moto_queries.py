"""The local endpoint's Query patch (saga/local/moto_queries.py) answers exactly what moto's own Query
answers, page for page, and never lists the whole table to do it."""

from __future__ import annotations

from typing import Any

import pytest
from moto.dynamodb.models.table import Table

from saga.local import moto_queries

TABLE = "queries"


@pytest.fixture
def table(moto_server, dynamodb) -> str:
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


def pages(dynamodb: Any, query: dict[str, Any]) -> list[dict[str, Any]]:
    """Every page of a query, following LastEvaluatedKey."""
    answers, start = [], None
    while True:
        answer = dynamodb.query(TableName=TABLE, **query, **({"ExclusiveStartKey": start} if start else {}))
        answer.pop("ResponseMetadata")
        answers.append(answer)
        start = answer.get("LastEvaluatedKey")
        if not start:
            return answers


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: q["KeyConditionExpression"] + q.get("IndexName", ""))
def test_a_patched_query_answers_every_page_as_moto_does(table, dynamodb, query, monkeypatch):
    # When the query is answered by the patched Query, and then by moto's own
    patched = pages(dynamodb, query)
    monkeypatch.setattr(Table, "query", moto_queries._original_query)
    original = pages(dynamodb, query)
    # Then the pages are the same, item for item
    assert patched == original
    assert sum(page["Count"] for page in patched) > 0 or "nobody" in str(query)


def test_a_patched_query_never_lists_the_whole_table(table, dynamodb, monkeypatch):
    # Given a spy on moto's listing of every item
    listed: list[str] = []
    every_item = Table.all_items

    def spy(self: Table) -> Any:
        listed.append(self.name)
        return every_item(self)

    monkeypatch.setattr(Table, "all_items", spy)
    # When a partition and an index are queried
    pages(dynamodb, QUERIES[0])
    pages(dynamodb, QUERIES[5])
    # Then the table was never listed (a Scan still lists it, as it must)
    assert listed == []
    dynamodb.scan(TableName=TABLE, Limit=1)
    assert listed == [TABLE]
