"""accept and disburse act on exactly what the agent names (D14), with deterministic fakes (tests/fakes.py).
The specification: whatever lands between two steps of an accept of quote A (a re-price to B before its
first attempt, between attempts, after a commit whose reply was lost, or after the accept's abandoned
attempt), and however late that attempt commits, no acceptance of B is ever made in its name; the agent
gets A accepted, or 409 stale-simulation showing B. The same for disburse and its acceptance."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from functions.orchestrator.service import KEYLESS_SIMULATE
from shared.errors import QuotesExhausted, StaleAcceptance, StaleSimulation, UpstreamUnavailable
from tests.fakes import FakeSystem, accept, agent_key, disburse, every_reply_lost, simulate
from tests.support import ApiClient, json_of

# What the wire may do to one attempt of the accept (None: deliver it).
FAULTS = st.sampled_from([None, "5xx", "timeout", "lose", "hold"])


def acceptances_of(system: FakeSystem, journey: str) -> dict[str, str]:
    """simulationId -> status of every acceptance loans-api holds for the journey."""
    return {item["simulationId"]: item["status"] for item in system.loans_store.acceptances(journey)}


@settings(max_examples=80, deadline=None)
@given(read_first=st.booleans(), before=st.lists(FAULTS, max_size=3), late_first=st.booleans())
def test_an_accept_of_quote_a_never_accepts_a_quote_b_that_lands_between_any_two_of_its_steps(
    read_first, before, late_first
):
    # Given a journey quoting A, and an accept of A whose attempts meet `before`, with a re-price to B
    # landing right after them (before the accept's next attempt)
    system = FakeSystem()
    journey = system.new_journey()
    quote_a = json.loads(simulate(system, journey, 5000).body)["simulation"]["simulationId"]
    repriced: list[str] = []

    def reprice() -> None:
        system.wire.faults = []  # the re-price's own calls are delivered
        answer = simulate(system, journey, 100000)
        repriced.append(json.loads(answer.body)["simulation"]["simulationId"])

    if read_first:  # B lands after the agent read A, before its accept starts
        reprice()
    else:  # B lands after `before` met the accept's attempts, before its next one
        system.wire.faults = [*(fault for fault in before if fault), reprice]
    # When the agent accepts A by name (its earlier attempts held back may commit late, before or after)
    try:
        answer = json.loads(accept(system, journey, quote_a).body)
        outcome = ("accepted", answer["acceptance"]["simulationId"])
    except StaleSimulation as stale:
        outcome = ("stale", stale.context["simulation"]["simulationId"])
    except UpstreamUnavailable:
        outcome = ("unavailable", "")
    if late_first:
        system.wire.deliver_held()
    # Then B was never accepted in the agent's name, and the answer says what stands
    quote_b = repriced[0] if repriced else None
    assert quote_b is None or quote_b not in acceptances_of(system, journey)
    if outcome[0] == "accepted":
        assert outcome[1] == quote_a
    if outcome[0] == "stale":
        assert outcome[1] == quote_b
    system.wire.deliver_held()
    assert quote_b is None or quote_b not in acceptances_of(system, journey)
    system.assert_invariants(journey)
    system.assert_converged(journey)


def test_a_disburse_of_an_acceptance_that_a_re_price_and_re_accept_replaced_pays_nothing():
    # Given acceptance X of a 5,000 quote, then another agent re-prices to 100,000 and accepts that (Y)
    system = FakeSystem()
    journey = system.new_journey()
    simulate(system, journey, 5000)
    acceptance_x = json.loads(accept(system, journey).body)["acceptance"]["acceptanceId"]
    simulate(system, journey, 100000)
    acceptance_y = json.loads(accept(system, journey).body)["acceptance"]["acceptanceId"]
    # When the first agent disburses X by name
    with pytest.raises(StaleAcceptance) as stale:
        disburse(system, journey, acceptance_x)
    # Then nothing is paid, and the problem shows the current acceptance with its link's exact body
    assert system.loans_store.statuses(journey, "DISBURSEMENT") == []
    assert stale.value.context["acceptance"]["acceptanceId"] == acceptance_y
    [link] = [a for a in stale.value.available_actions if a["name"] == "disburse"]
    assert link["body"] == {"acceptanceId": acceptance_y}
    # And disbursing Y pays Y's quote
    paid = json.loads(disburse(system, journey, acceptance_y).body)
    assert paid["disbursement"]["amount"] == "100000.00"


def test_a_disburse_on_a_record_behind_a_disbursement_of_another_acceptance_is_stale_not_key_reused():
    # Given a record that shows acceptance X while loans-api re-priced, accepted Y and paid Y (replies lost:
    # here, straight at loans-api)
    system = FakeSystem()
    journey = system.new_journey()
    simulate(system, journey, 5000)
    acceptance_x = json.loads(accept(system, journey).body)["acceptance"]["acceptanceId"]
    loans = ApiClient(system.wire.handler)
    quote_y = json_of(loans.post("/simulations", {"journeyId": journey, "amount": 7000, "termMonths": 36}, key="s"))
    body = {"journeyId": journey, "simulationId": quote_y["simulationId"]}
    acceptance_y = json_of(loans.post("/acceptances", body, key="a"))["acceptanceId"]
    paid = loans.post("/disbursements", {"journeyId": journey, "acceptanceId": acceptance_y}, key="d")
    assert paid.status == 201
    behind = system.record(journey).acceptance
    assert behind is not None
    assert behind.acceptanceId == acceptance_x
    # When the agent disburses X, the acceptance its record shows
    with pytest.raises(StaleAcceptance) as stale:
        disburse(system, journey, acceptance_x)
    # Then it is told X is not what was paid (never "Idempotency-Key reused"), and one disbursement exists
    assert stale.value.context["acceptance"]["acceptanceId"] == acceptance_y
    assert stale.value.available_actions == []
    assert system.loans_store.statuses(journey, "DISBURSEMENT") == ["DISBURSED"]
    # And a repeat naming Y is the settled answer
    assert disburse(system, journey, acceptance_y).replayed


def test_the_quote_after_the_last_one_allowed_is_refused_without_simulate_in_the_actions():
    # Given a journey that may have 3 quotes, and has had them
    system = FakeSystem(max_simulations=3)
    journey = system.new_journey()
    lefts = [json.loads(simulate(system, journey, 1000 + i, key=f"k{i}").body)["simulationsLeft"] for i in range(3)]
    assert lefts == [2, 1, 0]
    assert [a["name"] for a in json.loads(simulate(system, journey, 1002, key="k2").body)["availableActions"]] == [
        "accept",
        "cancel",
    ]
    # When the agent asks for a fourth (with or without a key)
    for key in (None, "k3"):
        with pytest.raises(QuotesExhausted) as exhausted:
            simulate(system, journey, 2000, key=key)
        # Then it is refused, and availableActions no longer offers simulate
        assert [a["name"] for a in exhausted.value.available_actions] == ["accept", "cancel"]
    # And the third quote's key still replays, and its quote can still be accepted
    assert simulate(system, journey, 1002, key="k2").replayed
    assert json.loads(accept(system, journey).body)["currentState"] == "accepted"
    assert system.loans_store.statuses(journey, "SIMULATION#").count("ACTIVE") == 1


def test_a_keyed_repeat_answered_from_its_first_requests_effect_says_replayed_whatever_was_retried():
    # Given a keyed simulate whose every reply was lost (the agent got 503)
    system = FakeSystem()
    journey = system.new_journey()
    every_reply_lost(system, lambda: simulate(system, journey, key="K"))
    # When the agent repeats it and the repeat's first attempt also loses its reply
    system.wire.faults = ["timeout"]
    again = simulate(system, journey, key="K")
    # Then the answer comes from the first request's effect, and says so
    assert again.replayed
    assert system.loans_store.statuses(journey, "SIMULATION#") == ["ACTIVE"]


def test_a_request_whose_own_first_attempt_committed_is_not_a_replay():
    system = FakeSystem()
    journey = system.new_journey()
    system.wire.faults = ["lose"]
    answer = simulate(system, journey, key="K")
    assert not answer.replayed
    assert json.loads(answer.body)["currentState"] == "simulated"


@pytest.mark.parametrize("key", [None, "K"])
def test_a_503_on_a_simulate_says_whether_repeating_it_may_price_again(key):
    system = FakeSystem()
    journey = system.new_journey()
    system.wire.persistent_fault = "5xx"
    body = {"amount": Decimal(10000), "termMonths": 36}
    scoped = None if key is None else agent_key(journey, key, body)
    with pytest.raises(UpstreamUnavailable) as unavailable:
        system.service.simulate(journey, Decimal(10000), 36, scoped)
    assert (KEYLESS_SIMULATE in unavailable.value.detail) is (key is None)
    assert "safe" in unavailable.value.detail
