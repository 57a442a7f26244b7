"""Interleaved commands on one journey, with deterministic fakes: another command landing between two
attempts of a command, an abandoned attempt committing late, replies lost, a record behind the
truth. Each case was a bug when an agent command was several loans-api calls (D13 fixes them all).
After every step: a cancelled record hides nothing ACTIVE, at most one ACTIVE simulation and
acceptance, at most one disbursement, versions never go back; once drained, record == truth."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from functions.orchestrator.deadline import DeadlineReached
from shared.errors import IdempotencyKeyReused, IllegalTransition, UpstreamUnavailable
from tests.fakes import FakeSystem, agent_key, state_of
from tests.support import ApiClient

TERMS = {"amount": 10000, "termMonths": 36}


@pytest.fixture
def system() -> FakeSystem:
    return FakeSystem()


def simulate(system: FakeSystem, journey: str, amount: int = 10000, key: str | None = None):
    body = {"amount": Decimal(amount), "termMonths": 36}
    return system.service.simulate(journey, Decimal(amount), 36, None if key is None else agent_key(journey, key, body))


def abandon_a_simulate(system: FakeSystem, journey: str, amount: int = 10000) -> None:
    """A simulate whose five attempts are all held back (each may commit later): the agent gets 503."""
    system.wire.faults = ["hold"] * 5
    with pytest.raises(UpstreamUnavailable):
        simulate(system, journey, amount)


def test_a_cancel_between_two_attempts_of_a_simulate_wins_and_the_late_attempt_is_refused(system):
    # Given a new journey; the simulate's first attempt is abandoned (held back), and before its
    # second attempt the agent's cancel lands
    journey = system.new_journey()
    system.wire.faults = ["hold", lambda: system.service.cancel(journey)]
    # When the simulate goes on
    with pytest.raises(IllegalTransition) as refused:
        simulate(system, journey)
    # Then it is refused with nothing left to do, and the journey is cancelled
    assert refused.value.available_actions == []
    assert system.record(journey).currentState == "cancelled"
    system.assert_invariants(journey)
    # When the abandoned first attempt finally reaches loans-api
    [late] = system.wire.deliver_held()
    # Then the ledger refuses it (it was decided on a ledger that has moved): nothing ACTIVE
    assert late.status == 412
    assert system.loans_store.statuses(journey, "SIMULATION#") == []
    system.assert_invariants(journey)
    system.assert_converged(journey)


def test_a_simulate_that_commits_after_the_agent_cancelled_is_refused(system):
    # Given a simulate whose every attempt was abandoned (the agent got 503)
    journey = system.new_journey()
    abandon_a_simulate(system, journey)
    # When the agent cancels, and then all five attempts reach loans-api late
    assert state_of(system.service.cancel(journey)) == "cancelled"
    late = system.wire.deliver_held()
    # Then every late attempt is refused (decided on a ledger that has moved) and nothing is ACTIVE
    assert [reply.status for reply in late] == [412] * 5
    assert system.loans_store.statuses(journey, "SIMULATION#") == []
    system.assert_invariants(journey)
    system.assert_converged(journey)


def test_a_late_simulate_that_commits_before_the_cancel_is_cancelled_by_it(system):
    # Given a simulate abandoned by the orchestrator whose attempt commits late, before the cancel
    journey = system.new_journey()
    abandon_a_simulate(system, journey)
    assert [reply.status for reply in system.wire.deliver_held()] == [201, 201, 201, 201, 201]
    # When the agent cancels (its record never heard of the simulation)
    record = json.loads(system.service.cancel(journey).body)
    # Then the one simulation that committed (the other four replayed) is cancelled with the journey
    assert record["currentState"] == "cancelled"
    assert system.loans_store.statuses(journey, "SIMULATION#") == ["CANCELLED"]
    system.assert_converged(journey)


def test_repeating_a_simulate_key_after_the_journey_moved_on_changes_nothing(system):
    # Given a simulate with the agent's key K whose every reply was lost (503), road 2 bringing the
    # record to `simulated`, and the agent accepting
    journey = system.new_journey()
    system.wire.persistent_fault = "lose"
    with pytest.raises(UpstreamUnavailable):
        simulate(system, journey, key="K")
    system.wire.persistent_fault = None
    system.road_two()
    accepted = json.loads(system.service.accept(journey).body)
    assert accepted["currentState"] == "accepted"
    # When the agent repeats K with the same body
    again = simulate(system, journey, key="K")
    # Then it is a replay: the acceptance stands, one simulation exists
    assert again.replayed
    assert json.loads(again.body)["acceptance"] == accepted["acceptance"]
    assert system.loans_store.statuses(journey, "ACCEPTANCE#") == ["ACTIVE"]
    assert system.loans_store.statuses(journey, "SIMULATION#") == ["ACTIVE"]
    system.assert_invariants(journey)
    system.assert_converged(journey)


def test_a_simulate_key_repeated_after_cancel_is_a_replay_not_a_refusal(system):
    journey = system.new_journey()
    first = simulate(system, journey, key="K")
    system.service.cancel(journey)
    again = simulate(system, journey, key="K")
    assert (first.status, again.status, again.replayed) == (200, 200, True)
    assert state_of(again) == "cancelled"
    with pytest.raises(IllegalTransition):
        simulate(system, journey, key="K2")


def test_re_simulating_from_accepted_is_one_command_and_the_next_accept_accepts_the_new_quote(system):
    # Given an accepted journey
    journey = system.new_journey()
    simulate(system, journey)
    first_acceptance = json.loads(system.service.accept(journey).body)["acceptance"]
    # When the agent re-simulates (the acceptance is cancelled in the same transaction) and accepts
    resimulated = json.loads(simulate(system, journey, 9000).body)
    accepted = json.loads(system.service.accept(journey).body)
    # Then the new quote is accepted: a new acceptance, not a replay of the cancelled one
    assert resimulated["currentState"] == "simulated"
    assert accepted["currentState"] == "accepted"
    assert accepted["acceptance"]["simulationId"] == resimulated["simulation"]["simulationId"]
    assert accepted["acceptance"]["acceptanceId"] != first_acceptance["acceptanceId"]
    assert sorted(system.loans_store.statuses(journey, "ACCEPTANCE#")) == ["ACTIVE", "CANCELLED"]
    assert [e.type for e in system.loans_store.events] == [
        "SimulationCreated",
        "AcceptanceCreated",
        "SimulationCreated",
        "AcceptanceCreated",
    ]
    system.assert_invariants(journey)
    system.assert_converged(journey)


@pytest.mark.parametrize("command", ["simulate", "cancel"])
def test_compensating_commands_from_accepted_with_every_reply_lost_leave_nothing_half_done(system, command):
    # Given an accepted journey and a wire that loses every reply
    journey = system.new_journey()
    simulate(system, journey)
    system.service.accept(journey)
    system.wire.persistent_fault = "lose"
    # When the agent re-simulates or cancels
    with pytest.raises(UpstreamUnavailable):
        simulate(system, journey, 9000) if command == "simulate" else system.service.cancel(journey)
    # Then loans-api made exactly one change, whole: the acceptance cancelled with it
    system.wire.persistent_fault = None
    assert system.loans_store.statuses(journey, "ACCEPTANCE#") == ["CANCELLED"]
    assert len(system.loans_store.events) == 3
    system.assert_invariants(journey)
    system.assert_converged(journey)
    expected = "simulated" if command == "simulate" else "cancelled"
    assert system.record(journey).currentState == expected


def test_concurrent_cancels_all_answer_cancelled_with_one_effect(system):
    # Given an accepted journey, and a second cancel that lands between the first cancel's attempts
    journey = system.new_journey()
    simulate(system, journey)
    system.service.accept(journey)
    inner: list[str] = []
    system.wire.faults = ["timeout", lambda: inner.append(state_of(system.service.cancel(journey)))]
    # When the first cancel goes on
    outer = system.service.cancel(journey)
    # Then both answer cancelled, and loans-api cancelled once
    assert (inner, state_of(outer)) == (["cancelled"], "cancelled")
    assert [e.type for e in system.loans_store.events].count("JourneyCancelled") == 1
    system.assert_converged(journey)


def test_simulate_right_after_an_accept_whose_replies_were_lost(system):
    # Given an accept that committed but whose every reply was lost: the record still says simulated
    journey = system.new_journey()
    simulate(system, journey)
    system.wire.persistent_fault = "lose"
    with pytest.raises(UpstreamUnavailable):
        system.service.accept(journey)
    system.wire.persistent_fault = None
    assert system.record(journey).currentState == "simulated"
    # When the agent re-simulates
    record = json.loads(simulate(system, journey, 12000).body)
    # Then loans-api decides on its own ledger: the acceptance is cancelled, the new quote active
    assert record["currentState"] == "simulated"
    assert record["simulation"]["amount"] == "12000.00"
    assert system.loans_store.statuses(journey, "ACCEPTANCE#") == ["CANCELLED"]
    system.assert_converged(journey)


def test_a_command_on_a_record_behind_the_truth_catches_up_instead_of_refusing(system):
    # Given a simulate whose every reply was lost: the record says created, loans-api simulated
    journey = system.new_journey()
    system.wire.persistent_fault = "lose"
    with pytest.raises(UpstreamUnavailable):
        simulate(system, journey)
    system.wire.persistent_fault = None
    # When the agent accepts (illegal on its stale record)
    record = json.loads(system.service.accept(journey).body)
    # Then the orchestrator caught up with loans-api first, and accepted: the record's trail says so
    assert record["currentState"] == "accepted"
    assert [(entry["seq"], entry["road"]) for entry in record["appliedBy"]] == [(1, "catch-up"), (2, "reply")]
    system.assert_converged(journey)


def test_a_repeated_accept_on_a_stale_accepted_record_does_not_answer_a_dead_acceptance(system):
    # Given an accepted journey whose re-simulate committed with every reply lost
    journey = system.new_journey()
    simulate(system, journey)
    system.service.accept(journey)
    system.wire.persistent_fault = "lose"
    with pytest.raises(UpstreamUnavailable):
        simulate(system, journey, 9000)
    system.wire.persistent_fault = None
    assert system.record(journey).currentState == "accepted"  # stale
    # When the agent repeats accept
    record = json.loads(system.service.accept(journey).body)
    # Then it accepts the current quote: one ACTIVE acceptance, on the new simulation
    assert record["acceptance"]["simulationId"] == record["simulation"]["simulationId"]
    assert record["simulation"]["amount"] == "9000.00"
    assert sorted(system.loans_store.statuses(journey, "ACCEPTANCE#")) == ["ACTIVE", "CANCELLED"]
    system.assert_converged(journey)


def test_one_key_two_bodies_at_once_one_succeeds_the_other_is_422_without_internal_keys(system):
    journey = system.new_journey()
    inner: list[str] = []
    system.wire.faults = [lambda: inner.append(state_of(simulate(system, journey, 20000, key="K")))]
    with pytest.raises(IdempotencyKeyReused) as reused:
        simulate(system, journey, 10000, key="K")
    assert inner == ["simulated"]
    assert f"{journey}:" not in reused.value.detail
    assert system.loans_store.statuses(journey, "SIMULATION#") == ["ACTIVE"]


def test_cancel_after_disbursed_is_refused_with_no_actions(system):
    journey = system.new_journey()
    simulate(system, journey)
    system.service.accept(journey)
    system.service.disburse(journey)
    with pytest.raises(IllegalTransition) as refused:
        system.service.cancel(journey)
    assert refused.value.available_actions == []
    assert system.loans_store.statuses(journey, "DISBURSEMENT") == ["DISBURSED"]


def test_a_deadline_that_cannot_fit_an_attempt_sends_nothing(system):
    # Given a request whose budget is already spent
    journey = system.new_journey()

    class Spent:
        def get_remaining_time_in_millis(self) -> int:
            return 100

    system.deadline.start(Spent())
    # When the agent simulates, then nothing reaches loans-api
    with pytest.raises(DeadlineReached):
        simulate(system, journey)
    assert system.wire.calls == []


# -- found by an adversarial review ----------------------------------------------------------------


def test_a_simulate_abandoned_with_503_cannot_commit_after_the_agents_next_commands(system):
    # Given a simulate whose every attempt is held back (the agent got 503)
    journey = system.new_journey()
    abandon_a_simulate(system, journey, 11111)
    # And the agent re-simulates another amount and accepts it
    simulate(system, journey, 22222)
    accepted = json.loads(system.service.accept(journey).body)
    # When the abandoned attempts finally reach loans-api
    late = system.wire.deliver_held()
    # Then each is refused (decided on a ledger that has moved): the acceptance of 22222 stands
    assert [reply.status for reply in late] == [412] * 5
    assert system.loans_store.statuses(journey, "ACCEPTANCE#") == ["ACTIVE"]
    assert system.truth(journey).snapshot.simulation.amount == Decimal(22222)
    assert system.record(journey).acceptance.acceptanceId == accepted["acceptance"]["acceptanceId"]
    system.assert_converged(journey)


def test_an_accept_answered_from_a_receipt_whose_acceptance_was_undone_is_not_a_success(system):
    # Given an accept with every reply lost, then a re-simulate the record never heard of (committed at
    # loans-api while the orchestrator's own writes failed), and road 2 not there yet
    journey = system.new_journey()
    simulate(system, journey)
    system.wire.persistent_fault = "lose"
    with pytest.raises(UpstreamUnavailable):
        system.service.accept(journey)
    system.wire.persistent_fault = None
    behind_the_records_back = ApiClient(system.wire.handler)
    body = {"journeyId": journey, "amount": 20000, "termMonths": 36}
    assert behind_the_records_back.post("/simulations", body, key="elsewhere").status == 201
    # When the agent repeats accept: loans-api answers it from the receipt of the first accept
    with pytest.raises(IllegalTransition) as refused:
        system.service.accept(journey)
    # Then the agent is told it was undone, with what is legal now, and the record shows the truth
    assert "undone" in refused.value.detail
    assert "accept" in [action["name"] for action in refused.value.available_actions]
    record = system.record(journey)
    assert (record.currentState, record.simulation.amount) == ("simulated", Decimal(20000))
    # And accepting again accepts the current quote
    assert state_of(system.service.accept(journey)) == "accepted"
    system.assert_converged(journey)


def test_a_command_decided_on_a_moved_ledger_is_decided_again_under_the_same_key(system):
    # Given a record behind the truth: a simulate committed with every reply lost
    journey = system.new_journey()
    system.wire.persistent_fault = "lose"
    with pytest.raises(UpstreamUnavailable):
        simulate(system, journey, 10000)
    system.wire.persistent_fault = None
    system.wire.calls.clear()
    # When the agent simulates again
    record = json.loads(simulate(system, journey, 12000).body)
    # Then loans-api refused the first decision (412), the record caught up with one ledger read, and the
    # simulate was decided again on it: two quotes in all, the newest active
    assert [path for _, path in system.wire.calls] == [
        "/simulations",
        f"/journeys/{journey}/ledger",
        "/simulations",
    ]
    assert record["simulation"]["amount"] == "12000.00"
    assert sorted(system.loans_store.statuses(journey, "SIMULATION#")) == ["ACTIVE", "SUPERSEDED"]
    system.assert_converged(journey)


def test_concurrent_disburses_one_is_the_effect_the_other_a_replay(system):
    journey = system.new_journey()
    simulate(system, journey)
    system.service.accept(journey)
    inner = []
    system.wire.faults = [lambda: inner.append(system.service.disburse(journey))]
    outer = system.service.disburse(journey)
    assert [state_of(r) for r in (*inner, outer)] == ["disbursed", "disbursed"]
    assert (inner[0].replayed, outer.replayed) == (False, True)
    assert system.loans_store.statuses(journey, "DISBURSEMENT") == ["DISBURSED"]


def test_a_simulate_that_keeps_losing_the_race_is_decided_again_until_it_lands(system):
    # Given a journey on which three other simulates commit, each just before this one's attempt
    journey = system.new_journey()

    def another() -> None:
        simulate(system, journey, 9000)

    system.wire.faults = [another, "ok", another, "ok", another, "ok"]
    # When the agent's simulate goes on
    record = json.loads(simulate(system, journey, 12000).body)
    # Then it was refused three times (the ledger moved), caught up, decided again, and landed last
    assert record["simulation"]["amount"] == "12000.00"
    assert sorted(system.loans_store.statuses(journey, "SIMULATION#")) == ["ACTIVE"] + ["SUPERSEDED"] * 3
    system.assert_converged(journey)
