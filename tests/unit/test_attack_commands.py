"""Adversarial review: each test is a defect found by attacking the named commands, the truthful answers
and the quote cap on the deterministic fakes (tests/fakes.py), through the
orchestrator's real app where the answer's wire shape is the point. Each fails on the code it was written
against; the report that came with it says the scenario and a suggested fix."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from functions.orchestrator import keys
from functions.orchestrator.api import create_app as create_orchestrator_app
from shared.errors import IllegalTransition, QuotesExhausted, StaleAcceptance, UpstreamUnavailable
from shared.guards import guarded
from shared.idempotency import ORIGIN_HEADER
from tests.fakes import FakeSystem, accept, agent_key, cancel, current_id, disburse, simulate
from tests.support import ApiClient, json_of


def orchestrator(system: FakeSystem) -> ApiClient:
    """The orchestrator's real app (guards, resolver, problem mapping) over the fakes."""
    return ApiClient(guarded(create_orchestrator_app(system.service)), "orchestrator")


def loans_api(system: FakeSystem) -> ApiClient:
    """loans-api straight, past the orchestrator (another writer, or the orchestrator's lost replies)."""
    return ApiClient(system.wire.handler)


# -- point 4: a 503 on a keyless simulate must not say that repeating it is safe ----------------------


def test_a_503_on_a_keyless_simulate_does_not_say_repeating_is_safe_and_says_how_to_repeat_safely():
    # Given a keyless simulate whose every attempt meets a 5xx (its outcome is unknown to the orchestrator)
    system = FakeSystem()
    api = orchestrator(system)
    journey = system.new_journey()
    system.wire.persistent_fault = "5xx"
    # When the agent's simulate, sent without an Idempotency-Key, is answered 503
    answer = api.post(f"/journeys/{journey}/simulate", {"amount": 10000, "termMonths": 36})
    problem = json_of(answer)
    assert answer.status == 503
    # Then its detail does not claim a repeat is safe: it says a keyless repeat may price a second quote and
    # how to repeat safely. (`retryable` stays true: the call may succeed later, and the documented exception,
    # ProblemDetails.retryable and the API's description, is this very case.)
    assert "repeating this request is safe" not in problem["detail"]
    assert "may price a second quote" in problem["detail"]
    assert "getJourney" in problem["detail"]
    assert problem["retryable"] is True


def test_an_unexpected_failure_after_a_keyless_simulate_committed_is_not_marked_retryable():
    # Given a keyless simulate that loans-api commits, and a fault in the orchestrator's own code or store
    # after that (not a transient AWS error: here the Control Record's write raises)
    system = FakeSystem()
    api = orchestrator(system)
    journey = system.new_journey()

    def broken(record: Any, expected_version: int) -> bool:
        raise RuntimeError("a bug after the commit")

    system.journeys.replace = broken  # type: ignore[method-assign]
    # When the agent's simulate is answered
    answer = api.post(f"/journeys/{journey}/simulate", {"amount": 10000, "termMonths": 36})
    # Then, a quote having been made, the problem does not invite a keyless repeat (a second quote)
    assert system.loans_store.statuses(journey, "SIMULATION#") == ["ACTIVE"]
    assert answer.status >= 500
    assert json_of(answer)["retryable"] is False


# -- point 4: Idempotent-Replayed for a receipt written before Origin-Request-Id existed ---------------


def test_a_keyed_repeat_answered_from_a_receipt_without_origin_says_replayed_even_after_a_lost_reply():
    # Given a keyed simulate committed before the orchestrator sent Origin-Request-Id (its receipt records
    # no origin), its reply lost (the agent got 503)
    system = FakeSystem()
    journey = system.new_journey()
    scope = agent_key(journey, "K", {"amount": Decimal(10000), "termMonths": 36}).scope
    downstream = keys.simulation(journey, keys.nonce_from_agent_key(scope))
    body = {"journeyId": journey, "amount": 10000.0, "termMonths": 36}
    first = loans_api(system).post("/simulations", body, key=downstream)
    assert first.status == 201
    assert ORIGIN_HEADER not in first.headers
    # When the agent repeats it (after the deploy) and the repeat's first attempt loses its reply
    system.wire.faults = ["lose"]
    again = simulate(system, journey, 10000, key="K")
    # Then the answer is the earlier request's effect, and says so
    assert system.loans_store.statuses(journey, "SIMULATION#") == ["ACTIVE"]
    assert again.replayed


# -- point 1: precedence is decided on the journey's state, not on a record behind it ------------------


@pytest.mark.parametrize("body", [None, {}, [], "x", 1, {"bogus": 1}])
def test_an_accept_with_any_body_on_a_journey_cancelled_at_loans_api_is_409_not_422(body):
    # Given a journey quoted through the orchestrator, then cancelled at loans-api (the reply lost: the
    # Control Record still says simulated)
    system = FakeSystem()
    api = orchestrator(system)
    journey = system.new_journey()
    simulate(system, journey)
    assert loans_api(system).post(f"/journeys/{journey}/cancel", None, key="elsewhere").status == 200
    assert system.record(journey).currentState == "simulated"
    # When the agent accepts with a body that is not what accept takes
    answer = api.post(f"/journeys/{journey}/accept", body)
    # Then the command is illegal in the journey's state: 409 with availableActions, whatever the body
    assert answer.status == 409, json_of(answer)
    assert json_of(answer)["availableActions"] == []


def test_a_disburse_without_its_acceptance_id_on_a_journey_re_priced_at_loans_api_is_409_not_422():
    # Given an accepted journey whose acceptance a re-price at loans-api cancelled (reply lost)
    system = FakeSystem()
    api = orchestrator(system)
    journey = system.new_journey()
    simulate(system, journey)
    accept(system, journey)
    body = {"journeyId": journey, "amount": 7000, "termMonths": 36}
    assert loans_api(system).post("/simulations", body, key="elsewhere").status == 201
    assert system.record(journey).currentState == "accepted"
    # When the agent disburses with no acceptanceId
    answer = api.post(f"/journeys/{journey}/disburse", {})
    # Then disburse is illegal where the journey is (simulated): 409, not 422 for the body
    assert answer.status == 409, json_of(answer)


# -- point 5: the cap is a number of quotes per journey, whatever it was when the journey started -----


def with_cap(system: FakeSystem, cap: int) -> FakeSystem:
    """The same stores behind loans-api redeployed with `max_simulations_per_journey` = `cap`."""
    return FakeSystem(loans_store=system.loans_store, journeys=system.journeys, max_simulations=cap)


def test_a_cap_lowered_below_a_journeys_quotes_refuses_its_next_quote():
    # Given a journey that has had 5 quotes under the default cap
    system = FakeSystem()
    journey = system.new_journey()
    for index in range(5):
        simulate(system, journey, 1000 + index)
    # When loans-api's cap is lowered to 3 quotes per journey
    lowered = with_cap(system, 3)
    # Then the journey, which has had more than 3, gets no further quote (it got 3 more: 8 in all)
    with pytest.raises(QuotesExhausted):
        simulate(lowered, journey, 2000)
    assert len(system.loans_store.statuses(journey, "SIMULATION#")) == 5


def test_a_cap_raised_above_a_journeys_quotes_allows_its_next_quote():
    # Given a journey that has had both its quotes under a cap of 2
    system = FakeSystem(max_simulations=2)
    journey = system.new_journey()
    simulate(system, journey, 1000)
    simulate(system, journey, 1001)
    # When the cap is raised to 5
    raised = with_cap(system, 5)
    # Then the journey may have a third quote (the setting says how many a journey may have)
    answer = json.loads(simulate(raised, journey, 1002).body)
    assert answer["simulation"]["amount"] == "1002.00"
    assert answer["simulationsLeft"] == 2


# -- what held: Idempotent-Replayed says who made the effect, whatever lands between the steps ------

COMMANDS = st.sampled_from(["accept", "disburse", "cancel", "keyed-simulate"])
WIRE = st.lists(st.sampled_from(["lose", "5xx", "timeout", "hold"]), max_size=3)


@settings(max_examples=120, deadline=None)
@given(command=COMMANDS, before=WIRE, after=WIRE, late=st.booleans())
def test_the_same_command_by_another_request_landing_between_any_two_steps_is_told_apart_by_replayed(
    command, before, after, late
):
    # Given a journey where `command` is legal, and request o1 of it whose attempts meet `before`, then the
    # same command by request o2 (another agent, or the agent's own repeat) landing before o1's next call to
    # loans-api (an attempt or a catch-up read), then `after`
    system = FakeSystem()
    journey = system.new_journey()
    if command in ("accept", "disburse"):
        simulate(system, journey, 5000)
    if command == "disburse":
        accept(system, journey)
    origins = iter(f"o{n}" for n in range(1, 100))  # each request's origin: o1, o2, ... in request order

    def send() -> Any:
        if command == "accept":
            return accept(system, journey)
        if command == "disburse":
            return disburse(system, journey)
        if command == "cancel":
            return cancel(system, journey)
        return simulate(system, journey, 7000, key="K")

    others: list[Any] = []

    def other() -> None:
        remaining, system.wire.faults = system.wire.faults, []
        try:
            others.append(send())
        except UpstreamUnavailable:
            others.append(None)
        system.wire.faults = remaining

    system.wire.faults = [*before, other, *after]
    with patch.object(keys, "new_nonce", lambda: next(origins)):
        try:
            answer = send()
        except UpstreamUnavailable:
            answer = None
        if late:
            system.wire.deliver_held()
    # Then o1's answer, when it is one, says Idempotent-Replayed exactly when o2 made the effect
    downstream = {
        "accept": lambda: keys.acceptance(journey, current_id(system, journey, "simulation")),
        "disburse": lambda: keys.disbursement(journey, current_id(system, journey, "acceptance")),
        "cancel": lambda: keys.cancellation(journey),
        "keyed-simulate": lambda: keys.simulation(
            journey,
            keys.nonce_from_agent_key(agent_key(journey, "K", {"amount": Decimal(7000), "termMonths": 36}).scope),
        ),
    }[command]()
    receipt = system.loans_store.receipts.get(downstream)
    if answer is not None and receipt is not None:
        assert answer.replayed is (receipt.origin != "o1"), (receipt.origin, answer.replayed)
    if others and others[0] is not None and receipt is not None:
        assert others[0].replayed is (receipt.origin != "o2"), (receipt.origin, others[0].replayed)
    system.assert_invariants(journey)
    system.assert_converged(journey)


@settings(max_examples=120, deadline=None)
@given(
    move=st.sampled_from(["reprice", "reprice-and-accept", "cancel", "reprice-accept-disburse"]),
    before=WIRE,
    after=WIRE,
    late=st.booleans(),
)
def test_a_disburse_of_x_pays_x_its_quote_or_nothing_whatever_lands_between_its_steps(move, before, after, late):
    # Given acceptance X of a 5,000 quote, and a disburse of X whose calls meet `before`, then another agent's
    # `move` landing before its next call to loans-api, then `after`
    system = FakeSystem()
    journey = system.new_journey()
    simulate(system, journey, 5000)
    acceptance_x = json.loads(accept(system, journey).body)["acceptance"]["acceptanceId"]

    def other() -> None:
        remaining, system.wire.faults = system.wire.faults, []
        try:  # the other agent's commands are refused once the journey is past them
            if move == "cancel":
                cancel(system, journey)
            else:
                simulate(system, journey, 100000)
                if move != "reprice":
                    accept(system, journey)
                if move == "reprice-accept-disburse":
                    disburse(system, journey)
        except IllegalTransition:
            pass
        system.wire.faults = remaining

    system.wire.faults = [*before, other, *after]
    try:
        answer: Any = json.loads(disburse(system, journey, acceptance_x).body)
    except (StaleAcceptance, IllegalTransition) as refused:
        answer = refused
    except UpstreamUnavailable:
        answer = None
    if late:
        system.wire.deliver_held()
    system.wire.deliver_held()
    # Then X is paid at its quote, or nothing is paid in its name, and the answer says which
    paid = [item for item in [system.loans_store.disbursement(journey)] if item is not None]
    ours = [item for item in paid if item["acceptanceId"] == acceptance_x]
    for item in ours:
        assert item["amount"] == "5000.00"
    if isinstance(answer, dict):
        assert answer["disbursement"]["amount"] == "5000.00"
        assert answer["acceptance"]["acceptanceId"] == acceptance_x
        assert len(ours) == 1
    if isinstance(answer, (StaleAcceptance, IllegalTransition)):
        assert ours == []
    if isinstance(answer, StaleAcceptance):
        current = system.record(journey).acceptance
        shown = answer.context["acceptance"]
        assert (shown and shown["acceptanceId"]) == (current and current.acceptanceId)
    system.assert_invariants(journey)
    system.assert_converged(journey)
