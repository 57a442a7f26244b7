"""The agent's own Idempotency-Key on the orchestrator (moto, the real loans-api handler in-process): required
on createJourney, optional on simulate; a repeat creates nothing and answers what the first did, however far
the journey moved since; the same key with another request is 422 without showing the key; keys are scoped
by their caller and by the operation (never the spelling of the path)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from saga.local.apigw import CALLER_HEADER
from tests.integration.aws_calls import scan
from tests.integration.journeys import command, new_journey, simulate, truth, truth_names
from tests.support import json_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def test_create_journey_without_an_idempotency_key_is_400_and_creates_nothing(
    orchestrator, dynamodb: DynamoDBClient, resources
):
    response = orchestrator.post("/journeys", {"customerId": "c"})
    assert response.status == 400
    assert response.headers["Content-Type"] == "application/problem+json"
    assert dynamodb.scan(TableName=resources.journeys_table)["Count"] == 0


def test_two_callers_with_one_key_get_two_independent_results(orchestrator):
    # Given two agents (two IAM principals) that happen to pick the same Idempotency-Key
    alice = {CALLER_HEADER: "arn:aws:iam::111111111111:user/alice"}
    bob = {CALLER_HEADER: "arn:aws:sts::222222222222:assumed-role/bob-agent/session-1"}
    # When each creates a journey for its own customer with that key
    first = orchestrator.post("/journeys", {"customerId": "alice-customer"}, key="same", headers=alice)
    second = orchestrator.post("/journeys", {"customerId": "bob-customer"}, key="same", headers=bob)
    # Then each gets its own journey: neither is answered with the other's receipt
    assert (first.status, second.status) == (201, 201)
    assert json_of(first)["journeyId"] != json_of(second)["journeyId"]
    assert b"alice" not in second.body
    # And each one's repeat (bob's from a refreshed role session) is its own replay
    again = orchestrator.post(
        "/journeys",
        {"customerId": "bob-customer"},
        key="same",
        headers={CALLER_HEADER: "arn:aws:sts::222222222222:assumed-role/bob-agent/session-2"},
    )
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.body == second.body


def test_a_reused_key_problem_shows_neither_the_key_nor_an_internal_scope(orchestrator):
    # Given a journey created with a key, When the key comes again with another customer
    orchestrator.post("/journeys", {"customerId": "c-1"}, key="secret-key-1")
    reused = orchestrator.post("/journeys", {"customerId": "c-2"}, key="secret-key-1")
    # Then a 422 whose detail names neither the key nor any part of its scope (operation, method, path)
    assert reused.status == 422
    detail = json_of(reused)["detail"]
    for hidden in ("secret-key-1", "createJourney", "POST", "/journeys"):
        assert hidden not in detail, hidden


def test_repeating_a_simulate_key_after_the_journey_moved_on_keeps_the_acceptance(orchestrator, loans_http):
    # Given simulate with key K whose every reply was lost, then the agent accepting
    journey = new_journey(orchestrator)
    loans_http.persistent_fault = "lose"
    assert simulate(orchestrator, journey, key="K").status == 503
    loans_http.persistent_fault = None
    # (it names the quote it learned of: its record is behind; the orchestrator catches up, then accepts)
    quote = truth_names(loans_http, journey["journeyId"], "accept")
    accepted = json_of(command(orchestrator, journey, "accept", quote))
    # When the agent repeats K with the same amount written differently
    again = orchestrator.post(
        f"/journeys/{journey['journeyId']}/simulate",
        raw=b'{"amount": 10000.0, "termMonths": 36}',
        headers={"Idempotency-Key": "K"},
    )
    # Then it is a replay that changes nothing
    assert again.status == 200
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert json_of(again)["acceptance"] == accepted["acceptance"]
    facts = truth(loans_http, journey["journeyId"])
    assert [a["status"] for a in facts["acceptances"]] == ["ACTIVE"]
    assert len(facts["simulations"]) == 1


def test_one_key_two_amounts_at_once_is_one_quote_and_a_422(orchestrator, loans_http):
    journey = new_journey(orchestrator)
    inner: list[int] = []
    loans_http.faults = [lambda: inner.append(simulate(orchestrator, journey, 20000, key="K").status)]
    outer = simulate(orchestrator, journey, 10000, key="K")
    assert inner == [200]
    assert outer.status == 422
    problem = json_of(outer)
    assert problem["type"].endswith("idempotency-key-reused")
    assert journey["journeyId"] + ":" not in problem["detail"]
    assert len(truth(loans_http, journey["journeyId"])["simulations"]) == 1


def test_create_with_an_agent_key_is_replayed_not_duplicated(orchestrator, dynamodb: DynamoDBClient, resources):
    first = orchestrator.post("/journeys", {"customerId": "c-9"}, key="agent-create-1")
    again = orchestrator.post("/journeys", {"customerId": "c-9"}, key="agent-create-1")
    other = orchestrator.post("/journeys", {"customerId": "c-10"}, key="agent-create-1")
    assert first.status == again.status == 201
    assert again.body == first.body
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert other.status == 422
    records = [i for i in scan(dynamodb, resources.journeys_table) if i["sk"] == "CONTROL"]
    assert len(records) == 1


def test_simulate_with_an_agent_key_creates_one_quote(orchestrator, loans_http):
    journey = new_journey(orchestrator)
    first = simulate(orchestrator, journey, key="quote-1")
    again = simulate(orchestrator, journey, key="quote-1")
    different = simulate(orchestrator, journey, 20000, key="quote-1")
    assert again.body == first.body
    assert different.status == 422
    assert len(truth(loans_http, journey["journeyId"])["simulations"]) == 1


def test_an_agent_key_is_scoped_by_the_operation_not_the_spelling_of_the_path(orchestrator, loans_http):
    # Given a quote made with key K, then accepted
    journey = new_journey(orchestrator)
    jid = journey["journeyId"]
    assert simulate(orchestrator, journey, key="K").status == 200
    command(orchestrator, journey, "accept")
    # When K is repeated on the same route spelled with a trailing slash
    again = orchestrator.post(f"/journeys/{jid}/simulate/", {"amount": 10000, "termMonths": 36}, key="K")
    # Then it is the same request: a replay, the acceptance stands
    assert (again.status, again.headers.get("Idempotent-Replayed")) == (200, "true")
    assert [a["status"] for a in truth(loans_http, jid)["acceptances"]] == ["ACTIVE"]
    # And the same holds for createJourney
    first = orchestrator.post("/journeys", {"customerId": "c-1"}, key="create-K")
    second = orchestrator.post("/journeys/", {"customerId": "c-1"}, key="create-K")
    assert json_of(first)["journeyId"] == json_of(second)["journeyId"]
