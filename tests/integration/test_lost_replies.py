"""The orchestrator over a link to loans-api that loses replies after the commit, answers 5xx, or holds an
attempt back until after the agent's next command (tools/inprocess.py), on a moto server: retried with
the same key and replayed, a 503 `retryable` once the schedule is spent, never a half-done compensation,
and the next command catches up with what loans-api committed."""

from __future__ import annotations

import pytest

from tests.integration.journeys import command, journey_in, new_journey, simulate, truth, truth_names
from tests.support import ApiClient, json_of


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


def test_a_409_from_loans_api_is_not_retried_and_the_record_catches_up_with_the_cancel(
    orchestrator, loans_http, sleeps
):
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


@pytest.mark.parametrize("name", ["simulate", "cancel"])
def test_compensating_from_accepted_with_every_reply_lost_is_whole_or_nothing(orchestrator, loans_http, name):
    # Given an accepted journey, and loans-api committing while every reply is lost
    journey = journey_in(orchestrator, "accepted")
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
    # And the next command (naming the new quote) catches up with the truth instead of refusing
    follow_up = "accept" if name == "simulate" else "cancel"
    body = truth_names(loans_http, journey["journeyId"], "accept") if name == "simulate" else None
    record = json_of(command(orchestrator, journey, follow_up, body))
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


def test_disburse_with_a_lost_reply_disburses_once(orchestrator, loans_http):
    journey = journey_in(orchestrator, "accepted")
    loans_http.faults = ["lose", "lose"]
    record = json_of(command(orchestrator, journey, "disburse"))
    assert record["currentState"] == "disbursed"
    assert len([c for c in loans_http.calls if c[1] == "/disbursements"]) == 3
    assert truth(loans_http, journey["journeyId"])["events"][-1]["type"] == "LoanDisbursed"


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
