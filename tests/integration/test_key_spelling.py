"""How both APIs read an Idempotency-Key (shared/idempotency.py `read_key`, D10): the spaces and tabs
around it are not part of it (RFC 9110 section 5.5), so a repeat whose key an HTTP stack left padded is
still a repeat; anything but printable ASCII in it is a 400 that names the character and writes nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.integration.aws_calls import scan
from tests.integration.journeys import new_journey, simulate, simulate_at_loans_api, truth
from tests.support import json_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

INVALID = ["k\x0b", "k\u00a0", "a\tb", "ключ"]
INVALID_IDS = ["vertical-tab", "no-break-space", "inner-tab", "non-ascii"]


def test_a_loans_api_repeat_whose_key_is_padded_with_spaces_and_tabs_is_a_replay(loans_api):
    # Given a simulation made with key `k-1`
    first = simulate_at_loans_api(loans_api, "k-1")
    # When it is repeated with the key padded (as http.server passes a trailing space on)
    again = simulate_at_loans_api(loans_api, " k-1\t ")
    # Then it is the same key: the recorded answer, replayed
    assert (first.status, again.status) == (201, 201)
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.body == first.body


def test_an_orchestrator_simulate_repeated_with_a_padded_key_prices_once(orchestrator, loans_http):
    # Given a journey simulated with the agent's key `quote-1`
    journey = new_journey(orchestrator)
    first = simulate(orchestrator, journey, key="quote-1")
    # When the agent's repeat arrives with a trailing space and tab
    again = simulate(orchestrator, journey, key="quote-1 \t")
    # Then it is a replay, and loans-api holds one quote
    assert (first.status, again.status) == (200, 200)
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert len(truth(loans_http, journey["journeyId"])["simulations"]) == 1


@pytest.mark.parametrize("key", INVALID, ids=INVALID_IDS)
def test_a_key_with_anything_but_printable_ascii_is_400_on_both_apis_and_writes_nothing(
    orchestrator, loans_api, dynamodb: DynamoDBClient, resources, key
):
    # Given an existing journey, and what both tables hold
    journey = new_journey(orchestrator)
    tables = (resources.loans_table, resources.journeys_table)
    before = [scan(dynamodb, table) for table in tables]
    # When a key holding a character no key may hold is sent: createJourney (required), simulate
    # (optional) and loans-api's simulation
    answers = [
        orchestrator.post("/journeys", {"customerId": "c-2"}, key=key),
        simulate(orchestrator, journey, key=key),
        simulate_at_loans_api(loans_api, key),
    ]
    # Then each is a 400 naming the character, and nothing is written
    for answer in answers:
        assert answer.status == 400, answer.body[:300]
        assert answer.headers["Content-Type"] == "application/problem+json"
        problem = json_of(answer)
        assert problem["type"] == "urn:loan-saga:problem:idempotency-key-invalid"
        assert f"U+{ord(next(c for c in key if not ' ' <= c <= '~')):04X}" in problem["detail"]
    assert [scan(dynamodb, table) for table in tables] == before


def test_a_simulate_key_of_only_spaces_is_400_not_ignored(orchestrator, loans_http):
    # Given a journey, When simulate is sent with a key of only spaces and tabs (no key is left of it)
    journey = new_journey(orchestrator)
    calls = len(loans_http.calls)
    answer = simulate(orchestrator, journey, key=" \t ")
    # Then 400: an agent that meant to send a key is told, rather than having its repeat priced again;
    # loans-api was never called
    assert answer.status == 400
    assert "empty" in json_of(answer)["detail"]
    assert len(loans_http.calls) == calls
