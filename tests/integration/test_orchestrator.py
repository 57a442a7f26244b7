"""The orchestrator over a moto server, calling the real loans-api handler through a transport that
can lose responses: retries, replays, compensations and the Control Record."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import pytest

from saga.local.inprocess import InProcessHttp
from tests.integration.test_loans_api import scan
from tests.support import AGENT_OPERATIONS, ApiClient, json_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def new_journey(orchestrator: ApiClient, customer: str = "c-1") -> Any:
    response = orchestrator.post("/journeys", {"customerId": customer}, key=str(uuid.uuid4()))
    assert response.status == 201
    return json_of(response)


def command(orchestrator: ApiClient, journey: dict, name: str, body: dict | None = None, **kwargs):
    return orchestrator.post(f"/journeys/{journey['journeyId']}/{name}", body, **kwargs)


def simulate(orchestrator: ApiClient, journey: dict, amount: int = 10000, term: int = 36, **kwargs):
    return command(orchestrator, journey, "simulate", {"amount": amount, "termMonths": term}, **kwargs)


def truth(loans_http: InProcessHttp, journey_id: str) -> Any:
    return json_of(ApiClient(loans_http.handler).get(f"/journeys/{journey_id}"))


def action_names(record: dict) -> list[str]:
    return [action["name"] for action in record["availableActions"]]


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
        },
    ]
    assert json_of(orchestrator.get(f"/journeys/{record['journeyId']}")) == record


def test_response_lost_after_commit_is_retried_and_replayed(orchestrator, loans_http, sleeps):
    # Given a journey, and a network that loses loans-api's first reply after the commit
    journey = new_journey(orchestrator)
    loans_http.faults = ["lose"]
    # When the agent simulates
    response = simulate(orchestrator, journey)
    # Then the call succeeds after one retry, which loans-api answered from its receipt
    assert response.status == 200
    record = json_of(response)
    assert record["currentState"] == "simulated"
    assert record["version"] == 1
    assert len(sleeps) == 1
    assert sleeps[0] >= 1.0
    # And there is exactly one simulation
    facts = truth(loans_http, journey["journeyId"])
    assert len(facts["simulations"]) == 1
    assert record["simulation"]["simulationId"] == facts["simulations"][0]["simulationId"]
    assert record["lastAppliedSeq"] == facts["seq"] == 1


def test_persistent_failure_is_503_retryable_after_the_whole_schedule(orchestrator, loans_http, sleeps):
    # Given loans-api commits every time but every reply is lost
    journey = new_journey(orchestrator)
    loans_http.persistent_fault = "lose"
    # When the agent simulates
    response = simulate(orchestrator, journey, key="agent-key-1")
    # Then after 5 attempts the agent is told to retry, safely
    assert response.status == 503
    problem = json_of(response)
    assert problem["retryable"] is True
    assert "safe" in problem["detail"]
    assert len(sleeps) == 4
    assert sum(sleeps) > 12
    # And loans-api committed exactly once (four replays), with no duplicate
    assert len([c for c in loans_http.calls if c == ("POST", "/simulations")]) == 5
    assert len(truth(loans_http, journey["journeyId"])["simulations"]) == 1
    # When the network heals and the agent retries with the same key
    loans_http.persistent_fault = None
    retried = simulate(orchestrator, journey, key="agent-key-1")
    # Then the recorded simulation is applied, and nothing new is created
    assert retried.status == 200
    assert json_of(retried)["version"] == 1
    assert len(truth(loans_http, journey["journeyId"])["simulations"]) == 1
    # And a further repeat is answered from loans-api's receipt of that key, changing nothing
    again = simulate(orchestrator, journey, key="agent-key-1")
    assert again.body == retried.body
    assert again.headers.get("Idempotent-Replayed") == "true"


def test_5xx_before_loans_api_is_503_and_nothing_is_written(orchestrator, loans_http, sleeps):
    journey = new_journey(orchestrator)
    loans_http.persistent_fault = "5xx"
    response = simulate(orchestrator, journey)
    assert response.status == 503
    assert json_of(response)["retryable"] is True
    assert len(sleeps) == 4
    assert json_of(orchestrator.get(f"/journeys/{journey['journeyId']}"))["version"] == 0


def test_4xx_from_loans_api_is_not_retried(orchestrator, loans_http, sleeps):
    # Given a simulated journey that loans-api cancelled behind the record's back
    journey = new_journey(orchestrator)
    simulate(orchestrator, journey)
    ApiClient(loans_http.handler).post(f"/journeys/{journey['journeyId']}/cancel", key="elsewhere")
    # When the agent accepts
    response = command(orchestrator, journey, "accept")
    # Then loans-api's 409 comes back at once, and the record caught up: nothing is legal now
    assert response.status == 409
    assert sleeps == []
    assert json_of(response)["availableActions"] == []
    assert json_of(orchestrator.get(f"/journeys/{journey['journeyId']}"))["currentState"] == "cancelled"


def test_the_full_journey_with_re_simulations_and_a_compensated_acceptance(orchestrator, loans_http):
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
    assert [e["type"] for e in facts["events"]] == [
        "SimulationCreated",
        "SimulationCreated",
        "AcceptanceCreated",
        "SimulationCreated",
        "AcceptanceCreated",
        "LoanDisbursed",
    ]
    assert disbursed["lastAppliedSeq"] == facts["seq"] == 6
    assert disbursed["version"] == 6
    assert facts["acceptances"][0]["status"] == "CANCELLED"
    assert accepted_again["acceptance"]["acceptanceId"] == facts["disbursement"]["acceptanceId"]


@pytest.mark.parametrize("state", ["created", "simulated", "accepted"])
def test_cancel_from_every_non_terminal_state(orchestrator, loans_http, state):
    journey = new_journey(orchestrator)
    if state in ("simulated", "accepted"):
        simulate(orchestrator, journey)
    if state == "accepted":
        command(orchestrator, journey, "accept")
    response = command(orchestrator, journey, "cancel")
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


@pytest.mark.parametrize("name", ["simulate", "cancel"])
def test_compensating_from_accepted_with_every_reply_lost_is_whole_or_nothing(orchestrator, loans_http, name):
    # Given an accepted journey, and loans-api committing while every reply is lost
    journey = new_journey(orchestrator)
    simulate(orchestrator, journey)
    command(orchestrator, journey, "accept")
    loans_http.persistent_fault = "lose"
    # When the agent re-simulates or cancels
    response = simulate(orchestrator, journey, 9000) if name == "simulate" else command(orchestrator, journey, name)
    # Then it answers 503 retryable, and loans-api made the whole change once: no half-done compensation
    assert response.status == 503
    assert json_of(response)["retryable"] is True
    loans_http.persistent_fault = None
    facts = truth(loans_http, journey["journeyId"])
    assert facts["state"] == ("simulated" if name == "simulate" else "cancelled")
    assert [a["status"] for a in facts["acceptances"]] == ["CANCELLED"]
    assert len(facts["events"]) == 3
    # And the next command catches up with the truth instead of refusing
    record = json_of(command(orchestrator, journey, "accept" if name == "simulate" else "cancel"))
    assert record["currentState"] == ("accepted" if name == "simulate" else "cancelled")
    assert record["lastAppliedSeq"] == truth(loans_http, journey["journeyId"])["seq"]


def test_a_cancel_between_a_simulates_attempts_wins_over_http(orchestrator, loans_http):
    # Given a new journey; the simulate's first attempt is abandoned but will commit late, and the
    # agent's cancel lands before the second attempt
    journey = new_journey(orchestrator)
    jid = journey["journeyId"]
    cancelled: list[int] = []
    loans_http.faults = ["hold", lambda: cancelled.append(command(orchestrator, journey, "cancel").status)]
    # When the simulate goes on, and then its abandoned attempt reaches loans-api
    response = simulate(orchestrator, journey)
    late = loans_http.deliver_held()
    # Then the cancel answered 200, the simulate 409 with nothing legal, and the late attempt 412
    assert cancelled == [200]
    assert response.status == 409
    assert json_of(response)["availableActions"] == []
    assert [reply.status for reply in late] == [412]
    facts = truth(loans_http, jid)
    assert facts["state"] == "cancelled"
    assert facts["simulations"] == []
    assert json_of(orchestrator.get(f"/journeys/{jid}"))["lastAppliedSeq"] == facts["seq"]


def test_repeating_a_simulate_key_after_the_journey_moved_on_keeps_the_acceptance(orchestrator, loans_http):
    # Given simulate with key K whose every reply was lost, then the agent accepting
    journey = new_journey(orchestrator)
    loans_http.persistent_fault = "lose"
    assert simulate(orchestrator, journey, key="K").status == 503
    loans_http.persistent_fault = None
    accepted = json_of(command(orchestrator, journey, "accept"))  # catches up, then accepts
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


def test_disbursing_twice_makes_one_disbursement_and_answers_the_same_record(orchestrator, loans_http):
    journey = new_journey(orchestrator)
    simulate(orchestrator, journey)
    command(orchestrator, journey, "accept")
    first = command(orchestrator, journey, "disburse")
    second = command(orchestrator, journey, "disburse")
    assert first.status == second.status == 200
    assert json_of(first) == json_of(second)
    assert second.headers.get("Idempotent-Replayed") == "true"
    assert truth(loans_http, journey["journeyId"])["disbursement"] is not None
    assert len([c for c in loans_http.calls if c[1] == "/disbursements"]) == 1


def test_disburse_with_a_lost_reply_disburses_once(orchestrator, loans_http):
    journey = new_journey(orchestrator)
    simulate(orchestrator, journey)
    command(orchestrator, journey, "accept")
    loans_http.faults = ["lose", "lose"]
    record = json_of(command(orchestrator, journey, "disburse"))
    assert record["currentState"] == "disbursed"
    assert len([c for c in loans_http.calls if c[1] == "/disbursements"]) == 3
    assert truth(loans_http, journey["journeyId"])["events"][-1]["type"] == "LoanDisbursed"


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
def test_illegal_commands_are_409_with_the_available_actions(orchestrator, state, name):
    journey = new_journey(orchestrator)
    if state in ("simulated", "disbursed"):
        simulate(orchestrator, journey)
    if state == "disbursed":
        command(orchestrator, journey, "accept")
        command(orchestrator, journey, "disburse")
    if state == "cancelled":
        command(orchestrator, journey, "cancel")
    body = {"amount": 1000, "termMonths": 12} if name == "simulate" else None
    response = command(orchestrator, journey, name, body)
    assert response.status == 409
    problem = json_of(response)
    assert response.headers["Content-Type"] == "application/problem+json"
    current = json_of(orchestrator.get(f"/journeys/{journey['journeyId']}"))
    assert problem["availableActions"] == current["availableActions"]
    assert problem["retryable"] is False


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


def test_unknown_journeys_malformed_json_and_huge_bodies(orchestrator):
    assert orchestrator.get("/journeys/nope").status == 404
    assert orchestrator.post("/journeys/nope/accept").status == 404
    assert orchestrator.post("/journeys/nope/simulate", {"amount": 1000, "termMonths": 12}).status == 404
    assert orchestrator.post("/journeys", raw=b"{not json").status == 400
    assert orchestrator.post("/journeys", raw=b'{"customerId": "' + b"x" * 70000 + b'"}').status == 413
    assert orchestrator.post("/journeys", {"customerId": "c"}, key="x" * 256).status == 400


def test_health_and_openapi(orchestrator):
    assert json_of(orchestrator.get("/health")) == {"status": "ok"}
    document = json_of(orchestrator.get("/openapi.json"))
    operations = {op["operationId"] for path in document["paths"].values() for op in path.values()}
    assert operations >= AGENT_OPERATIONS
    simulate_op = document["paths"]["/journeys/{journeyId}/simulate"]["post"]
    assert any(p["name"].lower() == "idempotency-key" and p["in"] == "header" for p in simulate_op["parameters"])
    assert {"409", "503"} <= set(simulate_op["responses"])


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
def test_a_body_that_is_not_json_is_415(orchestrator, content_type):
    response = orchestrator.request("POST", "/journeys", {"customerId": "c"}, headers={"Content-Type": content_type})
    assert response.status == 415
    assert json_of(response)["type"].endswith("unsupported-media-type")


def test_json_with_a_utf8_charset_is_accepted(orchestrator):
    charset = orchestrator.request(
        "POST",
        "/journeys",
        {"customerId": "c"},
        headers={"Content-Type": "application/json; charset=utf-8", "Idempotency-Key": "k"},
    )
    assert charset.status == 201


def test_cancel_compensates_what_loans_api_committed_even_if_the_record_never_heard(orchestrator, loans_http):
    # Found by the model-based test: a simulate whose every reply was lost leaves the record in
    # `created` while loans-api holds an active simulation; cancel must not only mark the record.
    journey = new_journey(orchestrator)
    loans_http.persistent_fault = "lose"
    assert simulate(orchestrator, journey).status == 503
    loans_http.persistent_fault = None
    record = json_of(command(orchestrator, journey, "cancel"))
    facts = truth(loans_http, journey["journeyId"])
    assert record["currentState"] == facts["state"] == "cancelled"
    assert {s["status"] for s in facts["simulations"]} == {"CANCELLED"}
    assert record["lastAppliedSeq"] == facts["seq"]


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


def test_a_reused_key_problem_shows_neither_the_key_nor_an_internal_scope(orchestrator):
    orchestrator.post("/journeys", {"customerId": "c-1"}, key="secret-key-1")
    reused = orchestrator.post("/journeys", {"customerId": "c-2"}, key="secret-key-1")
    assert reused.status == 422
    assert "secret-key-1" not in json_of(reused)["detail"]
    assert "createJourney" not in json_of(reused)["detail"]
