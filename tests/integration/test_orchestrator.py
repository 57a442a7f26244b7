"""The orchestrator over a moto server, calling the real loans-api handler in-process over a healthy link:
journeys, commands, compensations, the Control Record and what is refused. A link that loses replies is
in test_lost_replies.py, the agent's own keys in test_agent_keys.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.integration.aws_calls import scan
from tests.integration.journeys import action_names, command, journey_in, new_journey, simulate, truth
from tests.support import AGENT_OPERATIONS, json_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def test_a_new_journey_is_created_with_its_available_actions(orchestrator):
    record = new_journey(orchestrator)
    assert record["currentState"] == "created"
    assert record["version"] == 0
    assert record["lastAppliedSeq"] == 0
    assert record["availableActions"] == [
        {
            "name": "simulate",
            "operationId": "simulateLoan",
            "method": "POST",
            "href": f"/journeys/{record['journeyId']}/simulate",
            "requestSchema": "#/components/schemas/SimulateRequest",
        },
        {
            "name": "cancel",
            "operationId": "cancelJourney",
            "method": "POST",
            "href": f"/journeys/{record['journeyId']}/cancel",
            "requestSchema": "#/components/schemas/CancelRequest",
            "body": {},
        },
    ]
    assert json_of(orchestrator.get(f"/journeys/{record['journeyId']}")) == record


def test_a_journey_re_simulated_from_accepted_disburses_the_quote_accepted_last(orchestrator, loans_http):
    journey = new_journey(orchestrator)
    jid = journey["journeyId"]
    first = json_of(simulate(orchestrator, journey, 10000, 36))
    second = json_of(simulate(orchestrator, journey, 12000, 48))
    assert second["currentState"] == "simulated"
    assert second["simulation"]["simulationId"] != first["simulation"]["simulationId"]
    accepted = json_of(command(orchestrator, journey, "accept"))
    assert accepted["currentState"] == "accepted"
    assert accepted["acceptance"]["simulationId"] == second["simulation"]["simulationId"]
    assert action_names(accepted) == ["simulate", "disburse", "cancel"]
    # Re-simulating from accepted cancels the acceptance in the same loans-api transaction
    third = json_of(simulate(orchestrator, journey, 9000, 24))
    assert third["currentState"] == "simulated"
    assert third["acceptance"] is None
    accepted_again = json_of(command(orchestrator, journey, "accept"))
    disbursed = json_of(command(orchestrator, journey, "disburse"))
    assert disbursed["currentState"] == "disbursed"
    assert disbursed["disbursement"]["amount"] == "9000.00"
    assert disbursed["availableActions"] == []
    facts = truth(loans_http, jid)
    assert disbursed["lastAppliedSeq"] == facts["seq"] == 6  # one loans-api event per command (test_loans_api)
    assert disbursed["version"] == 6
    assert facts["acceptances"][0]["status"] == "CANCELLED"
    assert accepted_again["acceptance"]["acceptanceId"] == facts["disbursement"]["acceptanceId"]


@pytest.mark.parametrize("state", ["created", "simulated", "accepted"])
def test_cancel_from_every_live_state_cancels_what_loans_api_holds_and_a_repeat_answers_the_same_record(
    orchestrator, loans_http, state
):
    # Given a journey in a live state
    journey = journey_in(orchestrator, state)
    # When the agent cancels
    response = command(orchestrator, journey, "cancel")
    # Then the record is cancelled with nothing legal left, and loans-api cancelled whatever was active
    assert response.status == 200
    record = json_of(response)
    assert record["currentState"] == "cancelled"
    assert record["availableActions"] == []
    if state != "created":
        facts = truth(loans_http, journey["journeyId"])
        assert facts["state"] == "cancelled"
        assert {s["status"] for s in facts["simulations"]} == {"CANCELLED"}
        assert all(a["status"] == "CANCELLED" for a in facts["acceptances"])
        assert record["lastAppliedSeq"] == facts["seq"]
    # A repeated cancel is harmless and answers the same record
    again = command(orchestrator, journey, "cancel")
    assert again.status == 200
    assert json_of(again) == record


def test_disbursing_twice_makes_one_disbursement_and_answers_the_same_record(orchestrator, loans_http):
    journey = journey_in(orchestrator, "accepted")
    first = command(orchestrator, journey, "disburse")
    second = command(orchestrator, journey, "disburse")
    assert first.status == second.status == 200
    assert json_of(first) == json_of(second)
    assert second.headers.get("Idempotent-Replayed") == "true"
    assert truth(loans_http, journey["journeyId"])["disbursement"] is not None
    assert len([c for c in loans_http.calls if c[1] == "/disbursements"]) == 1


@pytest.mark.parametrize(
    ("state", "name"),
    [
        ("created", "accept"),
        ("created", "disburse"),
        ("simulated", "disburse"),
        ("disbursed", "simulate"),
        ("disbursed", "cancel"),
        ("cancelled", "simulate"),
        ("cancelled", "accept"),
    ],
)
def test_illegal_commands_are_409_problems_listing_the_actions_legal_now(orchestrator, state, name):
    journey = journey_in(orchestrator, state)
    body = {"amount": 1000, "termMonths": 12} if name == "simulate" else None
    response = command(orchestrator, journey, name, body)
    assert response.status == 409
    problem = json_of(response)
    assert response.headers["Content-Type"] == "application/problem+json"
    current = json_of(orchestrator.get(f"/journeys/{journey['journeyId']}"))
    assert problem["availableActions"] == current["availableActions"]
    assert problem["retryable"] is False


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/journeys", {}),
        ("/journeys", {"customerId": 42}),
        ("/journeys", {"customerId": ""}),
        ("/journeys", {"customerId": "c", "unexpected": True}),
        ("{journey}/simulate", {"amount": 100, "termMonths": 12}),
        ("{journey}/simulate", {"amount": 1000, "termMonths": 200}),
        ("{journey}/simulate", {"amount": "abc", "termMonths": 12}),
        ("{journey}/simulate", {"amount": 1000}),
        ("{journey}/simulate", {"amount": 1000, "termMonths": 12.5}),
    ],
    ids=[
        "create-without-customer",
        "create-with-a-numeric-customer",
        "create-with-an-empty-customer",
        "create-with-an-unknown-field",
        "simulate-under-the-minimum",
        "simulate-over-the-longest-term",
        "simulate-a-word-as-amount",
        "simulate-without-term",
        "simulate-a-fractional-term",
    ],
)
def test_bad_input_is_a_4xx_problem_and_writes_nothing(
    orchestrator, loans_http, dynamodb: DynamoDBClient, resources, path, body
):
    journey = new_journey(orchestrator)
    before = scan(dynamodb, resources.journeys_table)
    response = orchestrator.post(path.replace("{journey}", f"/journeys/{journey['journeyId']}"), body)
    assert 400 <= response.status < 500
    assert response.headers["Content-Type"] == "application/problem+json"
    assert scan(dynamodb, resources.journeys_table) == before
    assert loans_http.calls == []


def test_an_unknown_journey_is_404_on_every_route_and_a_key_over_255_characters_is_400(orchestrator):
    assert orchestrator.get("/journeys/nope").status == 404
    assert orchestrator.post("/journeys/nope/accept").status == 404
    assert orchestrator.post("/journeys/nope/simulate", {"amount": 1000, "termMonths": 12}).status == 404
    assert orchestrator.post("/journeys", {"customerId": "c"}, key="x" * 256).status == 400


def test_health_is_ok_and_the_document_has_every_agent_operation_with_its_key_and_errors(orchestrator):
    assert json_of(orchestrator.get("/health")) == {"status": "ok"}
    document = json_of(orchestrator.get("/openapi.json"))
    operations = {op["operationId"] for path in document["paths"].values() for op in path.values()}
    assert operations >= AGENT_OPERATIONS
    simulate_op = document["paths"]["/journeys/{journeyId}/simulate"]["post"]
    assert any(p["name"].lower() == "idempotency-key" and p["in"] == "header" for p in simulate_op["parameters"])
    assert {"409", "503"} <= set(simulate_op["responses"])
