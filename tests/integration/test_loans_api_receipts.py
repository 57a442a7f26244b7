"""loans-api's idempotency receipts on a moto server (D1, D2): a replay answers the recorded status and body
byte for byte, the same key with another request is 422, a write without a key is 400, the fingerprint is
over the validated request, a receipt is small; and the ledger-position precondition is checked after the
receipt, so a repeat is still answered from it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from bench.billing import item_size
from shared.dynamo import to_item
from tests.integration.aws_calls import scan
from tests.integration.journeys import LOANS_JOURNEY as JOURNEY
from tests.integration.journeys import simulate_at_loans_api as simulate
from tests.support import json_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def test_replay_returns_the_recorded_body_byte_for_byte(loans_api):
    # Given a committed simulation
    first = simulate(loans_api, "k1")
    # When the same key and body arrive again (with keys in another order)
    again = loans_api.post("/simulations", {"termMonths": 36, "amount": 10000, "journeyId": JOURNEY}, key="k1")
    # Then the recorded status and body come back, marked as a replay
    assert again.status == first.status == 201
    assert again.body == first.body
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert "Idempotent-Replayed" not in first.headers


def test_same_key_with_a_different_body_is_422_and_writes_nothing(loans_api, dynamodb: DynamoDBClient, resources):
    simulate(loans_api, "k1")
    before = scan(dynamodb, resources.loans_table)
    response = simulate(loans_api, "k1", amount=20000)
    assert response.status == 422
    assert response.headers["Content-Type"] == "application/problem+json"
    assert json_of(response)["type"].endswith("idempotency-key-reused")
    assert scan(dynamodb, resources.loans_table) == before


@pytest.mark.parametrize("path", ["/simulations", "/acceptances", "/disbursements"])
def test_a_write_without_a_key_is_400(loans_api, dynamodb: DynamoDBClient, resources, path):
    bodies = {
        "/simulations": {"journeyId": JOURNEY, "amount": 1000, "termMonths": 12},
        "/acceptances": {"journeyId": JOURNEY, "simulationId": "s1"},
        "/disbursements": {"journeyId": JOURNEY, "acceptanceId": "a1"},
    }
    response = loans_api.post(path, bodies[path])
    assert response.status == 400
    assert json_of(response)["retryable"] is False
    assert scan(dynamodb, resources.loans_table) == []


def test_the_fingerprint_is_over_the_validated_request(loans_api):
    # Given a simulation keyed k1 for 10000
    first = simulate(loans_api, "k1", amount=10000)
    # When the same amount arrives spelled 10000.0 and 1e4, Then both replay; 10000.5 is another request
    for spelled in (b"10000.0", b"1e4"):
        raw = b'{"journeyId": "' + JOURNEY.encode() + b'", "amount": ' + spelled + b', "termMonths": 36}'
        again = loans_api.post("/simulations", raw=raw, key="k1")
        assert (again.status, again.body) == (201, first.body)
    assert simulate(loans_api, "k1", amount=10000.5).status == 422  # type: ignore[arg-type]


def test_a_command_decided_on_another_ledger_position_is_412_after_the_replay_check(
    loans_api, dynamodb: DynamoDBClient, resources
):
    # Given a journey at seq 1
    first = simulate(loans_api, "k1")
    before = scan(dynamodb, resources.loans_table)
    body = {"journeyId": JOURNEY, "amount": 9000, "termMonths": 12}
    # When a new command says it was decided at seq 0
    moved = loans_api.post("/simulations", body, key="k2", headers={"Expected-Ledger-Seq": "0"})
    # Then it is refused with 412 and nothing is written
    assert moved.status == 412
    assert json_of(moved)["type"].endswith("ledger-moved")
    assert scan(dynamodb, resources.loans_table) == before
    # But a repeat of k1 decided at seq 0 is still answered from its receipt (the precondition is not the request)
    raw = json.dumps({"journeyId": JOURNEY, "amount": 10000, "termMonths": 36}).encode()
    replay = loans_api.post("/simulations", raw=raw, key="k1", headers={"Expected-Ledger-Seq": "0"})
    assert (replay.status, replay.body) == (201, first.body)
    # And decided at the right position it commits
    assert loans_api.post("/simulations", body, key="k2", headers={"Expected-Ledger-Seq": "1"}).status == 201


def test_a_receipt_is_written_in_under_1_kb_and_its_replay_is_the_recorded_body(
    loans_api, dynamodb: DynamoDBClient, resources
):
    # Given a committed simulation, whose answer carries its whole event
    first = simulate(loans_api, "k-small")
    # Then its receipt holds the body compressed to under half its size, and fits one write unit
    raw = dynamodb.get_item(TableName=resources.loans_table, Key=to_item({"pk": "RECEIPT#k-small", "sk": "RECEIPT"}))
    assert "body" not in raw["Item"]
    assert len(raw["Item"]["bodyZ"]["B"]) < len(first.body) / 2
    assert item_size(raw["Item"]) < 1024
    # And a replay answers the recorded body, byte for byte
    again = simulate(loans_api, "k-small")
    assert (again.status, again.body) == (first.status, first.body)
