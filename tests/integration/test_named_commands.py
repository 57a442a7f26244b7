"""accept and disburse name what they act on, over HTTP (D14): the agent's body names the quote or the
acceptance, loans-api checks it against its ledger, and the answers say exactly what stands. Against
moto, with loans-api behind the in-process wire (tests/integration/conftest.py)."""

from __future__ import annotations

import pytest

from functions.loans_api.history import HISTORY_PAGE
from saga.links import link, link_body
from tests.integration.journeys import command, journey_in, new_journey, simulate, truth
from tests.support import ApiClient, json_of
from tools.inprocess import InProcessHttp

PROBLEM = "urn:loan-saga:problem:"


def problem_type(response) -> str:
    return str(json_of(response)["type"]).removeprefix(PROBLEM)


def test_an_accept_of_the_quote_the_agent_saw_after_a_re_price_is_stale_and_pays_nothing(orchestrator, loans_http):
    # Given the agent saw a 5,000 quote, and a second agent re-priced it to 100,000
    journey = new_journey(orchestrator)
    seen = json_of(simulate(orchestrator, journey, 5000))
    repriced = json_of(simulate(orchestrator, journey, 100000))
    # When the first agent accepts the quote it saw, by the body of its link
    response = command(orchestrator, journey, "accept", link_body(seen, "accept"))
    # Then nothing is accepted: 409 stale-simulation, with the current quote and its link's exact body
    assert response.status == 409
    assert problem_type(response) == "stale-simulation"
    problem = json_of(response)
    assert problem["simulation"] == repriced["simulation"]
    assert link_body(problem, "accept") == {"simulationId": repriced["simulation"]["simulationId"]}
    assert truth(loans_http, journey["journeyId"])["acceptances"] == []
    # And following the problem's link accepts the 100,000 quote, and the disburse pays exactly that
    accepted = json_of(command(orchestrator, journey, "accept", link_body(problem, "accept")))
    paid = json_of(command(orchestrator, journey, "disburse", link_body(accepted, "disburse")))
    assert paid["disbursement"]["amount"] == "100000.00"
    assert paid["acceptance"] == accepted["acceptance"]


@pytest.mark.parametrize(
    ("state", "name"),
    [("created", "accept"), ("created", "disburse"), ("simulated", "disburse"), ("cancelled", "accept")],
)
@pytest.mark.parametrize("body", [None, {}, {"unknown": 1}, {"simulationId": "x", "acceptanceId": "y"}])
def test_a_command_illegal_in_the_state_is_409_with_the_actions_whatever_its_body(orchestrator, state, name, body):
    journey = journey_in(orchestrator, state)
    response = orchestrator.post(f"/journeys/{journey['journeyId']}/{name}", body)
    assert response.status == 409
    assert problem_type(response) == "illegal-transition"
    assert "availableActions" in json_of(response)


@pytest.mark.parametrize(
    ("state", "name", "body", "field"),
    [
        ("simulated", "accept", None, "body.simulationId"),
        ("simulated", "accept", {}, "body.simulationId"),
        ("simulated", "accept", {"simulationId": "x", "extra": 1}, "body.extra"),
        ("simulated", "accept", {"simulationId": "not an id!"}, "body.simulationId"),
        ("accepted", "disburse", {}, "body.acceptanceId"),
        ("accepted", "disburse", {"acceptanceId": 7}, "body.acceptanceId"),
        ("created", "cancel", {"reason": "changed mind"}, "body.reason"),
        ("accepted", "cancel", {"x": None}, "body.x"),
    ],
)
def test_a_legal_command_with_a_body_it_does_not_take_is_422_naming_the_field_and_changes_nothing(
    orchestrator, loans_http, state, name, body, field
):
    journey = journey_in(orchestrator, state)
    calls = len(loans_http.calls)
    response = orchestrator.post(f"/journeys/{journey['journeyId']}/{name}", body)
    assert response.status == 422
    assert field in [error["field"] for error in json_of(response)["errors"]]
    # nothing is written: the only call is the read that checks the command is legal in loans-api's truth
    assert loans_http.calls[calls:] == [("GET", f"/journeys/{journey['journeyId']}/ledger")]


@pytest.mark.parametrize("body", [None, {}])
def test_cancel_takes_no_body_or_an_empty_object(orchestrator, body):
    journey = journey_in(orchestrator, "simulated")
    response = orchestrator.post(f"/journeys/{journey['journeyId']}/cancel", body)
    assert response.status == 200
    assert json_of(response)["currentState"] == "cancelled"


def test_every_link_carries_the_exact_body_and_following_links_alone_finishes_a_journey(orchestrator):
    # Given a new journey, and an agent that only ever sends what a link carries (simulate: its own terms)
    record = new_journey(orchestrator)
    for name in ("simulate", "accept", "disburse"):
        found = link(record, name)
        assert found is not None
        body = found.get("body", {"amount": 12000, "termMonths": 24})
        # Then accept's body names the record's quote, disburse's its acceptance
        if name == "accept":
            assert body == {"simulationId": record["simulation"]["simulationId"]}
        if name == "disburse":
            assert body == {"acceptanceId": record["acceptance"]["acceptanceId"]}
        response = orchestrator.post(found["href"], body)
        assert response.status == 200, response.body
        record = json_of(response)
    assert record["currentState"] == "disbursed"
    assert record["disbursement"]["amount"] == "12000.00"


def test_a_repeated_disburse_naming_the_paid_acceptance_is_a_replay_and_naming_another_is_stale(orchestrator):
    journey = journey_in(orchestrator, "accepted")
    accepted = json_of(orchestrator.get(f"/journeys/{journey['journeyId']}"))
    body = link_body(accepted, "disburse")
    first = command(orchestrator, journey, "disburse", body)
    again = command(orchestrator, journey, "disburse", body)
    other = command(orchestrator, journey, "disburse", {"acceptanceId": "not-the-one"})
    assert (first.status, again.status, again.headers.get("Idempotent-Replayed")) == (200, 200, "true")
    assert other.status == 409
    assert problem_type(other) == "stale-acceptance"
    assert json_of(other)["acceptance"] == accepted["acceptance"]
    assert json_of(other)["availableActions"] == []


def test_a_keyless_disburse_after_a_lost_reply_is_never_answered_key_reused(orchestrator, loans_http):
    # Given an accepted journey whose disburse committed with every reply lost (the agent got 503)
    journey = journey_in(orchestrator, "accepted")
    body = link_body(json_of(orchestrator.get(f"/journeys/{journey['journeyId']}")), "disburse")
    loans_http.persistent_fault = "lose"
    assert command(orchestrator, journey, "disburse", body).status == 503
    loans_http.persistent_fault = None
    # When the agent repeats it, and then names some other acceptance
    again = command(orchestrator, journey, "disburse", body)
    other = command(orchestrator, journey, "disburse", {"acceptanceId": "a-2"})
    # Then the repeat is the disbursed record (from the earlier request's effect), the other is stale
    assert again.status == 200
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert (other.status, problem_type(other)) == (409, "stale-acceptance")


def test_a_keyed_simulate_repeated_after_a_503_is_marked_replayed_even_when_its_own_retries_were_lost(
    orchestrator, loans_http
):
    journey = new_journey(orchestrator)
    loans_http.persistent_fault = "lose"
    assert simulate(orchestrator, journey, key="K").status == 503
    loans_http.persistent_fault = None
    loans_http.faults = ["lose"]  # the repeat's first attempt loses its reply too
    again = simulate(orchestrator, journey, key="K")
    assert again.status == 200
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert len(truth(loans_http, journey["journeyId"])["simulations"]) == 1


def test_loans_api_answers_a_replay_with_the_request_that_made_it(loans_api):
    body = {"journeyId": "j-origin", "amount": 10000, "termMonths": 36}
    first = loans_api.post("/simulations", body, key="k", headers={"Origin-Request-Id": "r-1"})
    again = loans_api.post("/simulations", body, key="k", headers={"Origin-Request-Id": "r-2"})
    assert first.status == again.status == 201
    assert "Origin-Request-Id" not in first.headers
    assert again.headers.get("Origin-Request-Id") == "r-1"
    assert again.body == first.body


@pytest.mark.parametrize("origin", ["\U00010000" * 16, "r 1", "r" * 65], ids=["beyond-ascii", "a-space", "65-chars"])
def test_loans_api_refuses_an_origin_request_id_that_is_not_an_id_with_a_400_and_writes_nothing(loans_api, origin):
    # Given an Origin-Request-Id that is not 1..64 letters, digits and dashes (its receipt's budget: D2)
    body = {"journeyId": "j-origin-bad", "amount": 10000, "termMonths": 36}
    # When a simulate carries it
    response = loans_api.post("/simulations", body, key="k-bad", headers={"Origin-Request-Id": origin})
    # Then it is a 400 problem, and the journey was never written
    assert response.status == 400, response.body
    assert response.headers.get("Content-Type") == "application/problem+json"
    assert json_of(response)["type"] == "urn:loan-saga:problem:origin-request-id-invalid"
    assert loans_api.get("/journeys/j-origin-bad").status == 404


def test_a_keyless_simulate_that_gets_a_503_says_a_repeat_may_price_again(orchestrator, loans_http):
    journey = new_journey(orchestrator)
    loans_http.persistent_fault = "5xx"
    keyless = json_of(simulate(orchestrator, journey))
    keyed = json_of(simulate(orchestrator, journey, key="K"))
    assert keyless["retryable"] is True
    assert "may price a second quote" in keyless["detail"]
    assert "Idempotency-Key" in keyless["detail"]
    assert "may price" not in keyed["detail"]


@pytest.fixture
def capped(loans_settings, orchestrator_settings, sleeps) -> ApiClient:
    """The orchestrator over a loans-api that allows 3 quotes per journey."""
    from functions.loans_api import bootstrap as loans_bootstrap
    from functions.orchestrator import bootstrap as orchestrator_bootstrap
    from tests.support import quiet_metrics

    settings = loans_settings.model_copy(update={"max_simulations_per_journey": 3})
    wire = InProcessHttp(loans_bootstrap.build(settings, quiet_metrics("loans-api")))
    ports = orchestrator_bootstrap.Ports(http=wire, sleep=sleeps.append)
    handler = orchestrator_bootstrap.build(orchestrator_settings, quiet_metrics("o"), ports)
    return ApiClient(handler, name="orchestrator")


def test_the_quote_after_the_last_one_allowed_is_409_quotes_exhausted_without_simulate(capped):
    journey = new_journey(capped)
    records = [json_of(simulate(capped, journey, 1000 + i)) for i in range(3)]
    assert [r["simulationsLeft"] for r in records] == [2, 1, 0]
    assert [a["name"] for a in records[-1]["availableActions"]] == ["accept", "cancel"]
    refused = simulate(capped, journey, 2000)
    assert (refused.status, problem_type(refused)) == (409, "quotes-exhausted")
    assert [a["name"] for a in json_of(refused)["availableActions"]] == ["accept", "cancel"]
    accepted = command(capped, journey, "accept", link_body(records[-1], "accept"))
    assert json_of(accepted)["simulation"]["amount"] == "1002.00"


def test_the_journey_read_lists_the_newest_history_and_says_what_it_left_out(loans_api):
    # Given a journey with more quotes than one read lists
    for index in range(HISTORY_PAGE + 2):
        loans_api.post(
            "/simulations", {"journeyId": "j-long", "amount": 1000 + index, "termMonths": 12}, key=f"k{index}"
        )
    # When an operator reads it
    journey = json_of(loans_api.get("/journeys/j-long"))
    # Then it lists the newest page, oldest first, with the active quote last, and says what it omits
    assert len(journey["simulations"]) == HISTORY_PAGE
    assert [s["status"] for s in journey["simulations"]][-1] == "ACTIVE"
    assert journey["simulations"][-1]["amount"] == f"{1000 + HISTORY_PAGE + 1}.00"
    assert set(journey["olderOmitted"]) == {"simulations", "events"}
    assert journey["seq"] == HISTORY_PAGE + 2
