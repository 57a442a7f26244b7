"""Interleaved commands on one journey, with deterministic fakes (tests/fakes.py): replies lost, a record
behind the truth (or ahead of it), commands at the same moment, an agent's key repeated after the journey moved on. Each
case was a bug when an agent command was several loans-api calls (D13 fixes them all); late attempts are
in test_late_attempts.py. After every step: a cancelled record hides nothing ACTIVE, at most one ACTIVE
simulation and acceptance, at most one disbursement, versions never go back; once drained, record == truth."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal

import pytest

from shared import metric_names as names
from shared.errors import IdempotencyKeyReused, IllegalTransition, JourneyNeedsRepair, StaleSimulation
from shared.idempotency import Answer
from shared.problems import domain_problem
from tests.fakes import FakeSystem, accept, cancel, current_id, disburse, every_reply_lost, simulate, state_of
from tests.support import ApiClient, quiet_metrics


@pytest.fixture
def system() -> FakeSystem:
    return FakeSystem()


def expect_needs_repair(system: FakeSystem, command: Callable[[], Answer], on_what: str) -> None:
    """The command raises JourneyNeedsRepair (not an answer to the agent) and loans-api wrote no event."""
    events_before = list(system.loans_store.events)
    try:
        answer = command()
    except JourneyNeedsRepair:
        pass
    else:
        pytest.fail(f"answered {answer.status} {answer.body[:200]} on {on_what}")
    assert system.loans_store.events == events_before, f"loans-api wrote events on {on_what}"


def test_repeating_a_simulate_key_after_the_journey_moved_on_changes_nothing(system):
    # Given a simulate with the agent's key K whose every reply was lost (503), road 2 bringing the
    # record to `simulated`, and the agent accepting
    journey = system.new_journey()
    every_reply_lost(system, lambda: simulate(system, journey, key="K"))
    system.road_two()
    accepted = json.loads(accept(system, journey).body)
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
    cancel(system, journey)
    again = simulate(system, journey, key="K")
    assert (first.status, again.status, again.replayed) == (200, 200, True)
    assert state_of(again) == "cancelled"
    with pytest.raises(IllegalTransition):
        simulate(system, journey, key="K2")


def test_re_simulating_from_accepted_is_one_command_and_the_next_accept_accepts_the_new_quote(system):
    # Given an accepted journey
    journey = system.new_journey()
    simulate(system, journey)
    first_acceptance = json.loads(accept(system, journey).body)["acceptance"]
    # When the agent re-simulates (the acceptance is cancelled in the same transaction) and accepts
    resimulated = json.loads(simulate(system, journey, 9000).body)
    accepted = json.loads(accept(system, journey).body)
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
    # Given an accepted journey
    journey = system.new_journey()
    simulate(system, journey)
    accept(system, journey)
    # When the agent re-simulates or cancels, and every reply is lost
    if command == "simulate":
        every_reply_lost(system, lambda: simulate(system, journey, 9000))
    else:
        every_reply_lost(system, lambda: cancel(system, journey))
    # Then loans-api made exactly one change, whole: the acceptance cancelled with it
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
    accept(system, journey)
    inner: list[str] = []
    system.wire.faults = ["timeout", lambda: inner.append(state_of(cancel(system, journey)))]
    # When the first cancel goes on
    outer = cancel(system, journey)
    # Then both answer cancelled, and loans-api cancelled once
    assert (inner, state_of(outer)) == (["cancelled"], "cancelled")
    assert [e.type for e in system.loans_store.events].count("JourneyCancelled") == 1
    system.assert_converged(journey)


def test_a_simulate_after_an_accept_whose_replies_were_lost_cancels_that_acceptance(system):
    # Given an accept that committed but whose every reply was lost: the record still says simulated
    journey = system.new_journey()
    simulate(system, journey)
    every_reply_lost(system, lambda: accept(system, journey))
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
    every_reply_lost(system, lambda: simulate(system, journey))
    # When the agent accepts that quote by name (illegal on its stale record)
    quote = system.truth(journey).snapshot.simulation
    record = json.loads(accept(system, journey, quote.simulationId).body)
    # Then the orchestrator caught up with loans-api first, and accepted: the record's trail says so
    assert record["currentState"] == "accepted"
    assert [(entry["seq"], entry["road"]) for entry in record["appliedBy"]] == [(1, "catch-up"), (2, "reply")]
    system.assert_converged(journey)


def test_a_repeated_accept_on_a_stale_accepted_record_is_refused_with_the_new_quote_not_applied_to_it(system):
    # Given an accepted journey whose re-simulate committed with every reply lost
    journey = system.new_journey()
    simulate(system, journey)
    first = accept(system, journey)
    old_quote = json.loads(first.body)["simulation"]["simulationId"]
    every_reply_lost(system, lambda: simulate(system, journey, 9000))
    assert system.record(journey).currentState == "accepted"  # stale
    # When the agent repeats its accept of the quote it saw
    with pytest.raises(StaleSimulation) as stale:
        accept(system, journey, old_quote)
    # Then nothing is accepted in its name: the 9000 quote is shown to it, and its acceptance stays cancelled
    assert stale.value.context["simulation"]["amount"] == "9000.00"
    assert [a["name"] for a in stale.value.available_actions] == ["simulate", "accept", "cancel"]
    assert system.loans_store.statuses(journey, "ACCEPTANCE#") == ["CANCELLED"]
    # And accepting the new quote by name works
    new_quote = stale.value.context["simulation"]["simulationId"]
    assert json.loads(accept(system, journey, new_quote).body)["acceptance"]["simulationId"] == new_quote
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
    accept(system, journey)
    disburse(system, journey)
    with pytest.raises(IllegalTransition) as refused:
        cancel(system, journey)
    assert refused.value.available_actions == []
    assert system.loans_store.statuses(journey, "DISBURSEMENT") == ["DISBURSED"]


def test_an_accept_answered_from_a_receipt_whose_acceptance_was_undone_is_not_a_success(system):
    # Given an accept with every reply lost, then a re-simulate the record never heard of (committed at
    # loans-api while the orchestrator's own writes failed), and road 2 not there yet
    journey = system.new_journey()
    simulate(system, journey)
    every_reply_lost(system, lambda: accept(system, journey))
    behind_the_records_back = ApiClient(system.wire.handler)
    body = {"journeyId": journey, "amount": 20000, "termMonths": 36}
    assert behind_the_records_back.post("/simulations", body, key="elsewhere").status == 201
    # When the agent repeats accept: loans-api answers it from the receipt of the first accept
    with pytest.raises(IllegalTransition) as refused:
        accept(system, journey)
    # Then the agent is told it was undone, with what is legal now, and the record shows the truth
    assert "undone" in refused.value.detail
    assert "accept" in [action["name"] for action in refused.value.available_actions]
    record = system.record(journey)
    assert (record.currentState, record.simulation.amount) == ("simulated", Decimal(20000))
    # And accepting again accepts the current quote
    assert state_of(accept(system, journey)) == "accepted"
    system.assert_converged(journey)


def test_concurrent_disburses_one_is_the_effect_the_other_a_replay(system):
    journey = system.new_journey()
    simulate(system, journey)
    accept(system, journey)
    inner = []
    system.wire.faults = [lambda: inner.append(disburse(system, journey))]
    outer = disburse(system, journey)
    assert [state_of(r) for r in (*inner, outer)] == ["disbursed", "disbursed"]
    assert (inner[0].replayed, outer.replayed) == (False, True)
    assert system.loans_store.statuses(journey, "DISBURSEMENT") == ["DISBURSED"]


def ahead_of_the_ledger(system: FakeSystem, ledger: str) -> str:
    """A journey whose record claims more than loans-api holds: `simulated` at seq 3 with no ledger at all (a
    restore of the journeys table), or, with a ledger at seq 1, its seq forged to 3."""
    journey = system.new_journey()
    if ledger == "at seq 1":
        simulate(system, journey)
    record = system.journeys.records[journey]
    system.journeys.records[journey] = record.model_copy(update={"currentState": "simulated", "lastAppliedSeq": 3})
    return journey


@pytest.mark.parametrize("ledger", ["none", "at seq 1"])
@pytest.mark.parametrize("command", ["simulate", "cancel"])
def test_a_command_on_a_record_ahead_of_the_ledger_tells_the_agent_an_operator_must_repair_it(system, command, ledger):
    # Given a record ahead of loans-api's ledger (no command decided on it can pass loans-api's ledger check)
    journey = ahead_of_the_ledger(system, ledger)
    events_before = list(system.loans_store.events)
    metrics = quiet_metrics("orchestrator")
    metrics.clear_metrics()
    system.wire.calls.clear()
    # When the agent simulates or cancels
    with pytest.raises(JourneyNeedsRepair) as needs_repair:
        simulate(system, journey) if command == "simulate" else cancel(system, journey)
    # Then it is told at once (one command refused by the ledger check, one ledger read: no loop) that retrying
    # cannot help and how an operator repairs it, nothing was done, and it is counted
    assert len(system.wire.calls) == 2, system.wire.calls
    answer = json.loads(str(domain_problem(needs_repair.value).body))
    assert (answer["status"], answer["retryable"]) == (500, False), answer
    assert answer["type"] == "urn:loan-saga:problem:journey-needs-repair", answer
    assert f"saga audit --repair --rebuild --journey {journey}" in answer["detail"], answer["detail"]
    assert "retrying is safe" not in answer["detail"]
    assert system.loans_store.events == events_before
    assert metrics.metric_set[names.JOURNEYS_NEEDING_REPAIR]["Value"] == [1.0]


@pytest.mark.parametrize("command", ["cancel", "disburse"])
def test_a_terminal_record_ahead_of_the_ledger_is_no_answer_to_the_agent_but_a_journey_to_repair(system, command):
    # Given a journey loans-api holds `accepted` at seq 2, whose record says `cancelled` at seq 3 (the journeys
    # table restored from a backup newer than the loans table's, or a forged record): loans-api cancelled nothing
    journey = system.new_journey()
    simulate(system, journey)
    accept(system, journey)
    acceptance = current_id(system, journey, "acceptance")
    record = system.journeys.records[journey]
    system.journeys.records[journey] = record.model_copy(update={"currentState": "cancelled", "lastAppliedSeq": 3})
    # When the agent cancels (a repeat, to the record) or disburses the acceptance loans-api holds active
    # Then it is not told the journey is cancelled (a 200 replay) nor final (a 409 with nothing legal), both
    # untrue of loans-api's journey, but that an operator must repair it; and nothing was done
    expect_needs_repair(
        system,
        lambda: cancel(system, journey) if command == "cancel" else disburse(system, journey, acceptance),
        "a record ahead of loans-api's ledger",
    )


@pytest.mark.parametrize("command", ["cancel", "accept"])
def test_a_record_diverged_from_the_ledger_at_its_seq_is_a_journey_to_repair_not_an_answer(system, command):
    # Given a journey loans-api holds `simulated` at seq 1, whose record says `cancelled` at that same seq (written
    # by something other than an event: no catch-up moves it, the seq being the ledger's)
    journey = system.new_journey()
    simulate(system, journey)
    quote = current_id(system, journey, "simulation")
    record = system.journeys.records[journey]
    system.journeys.records[journey] = record.model_copy(update={"currentState": "cancelled"})
    # When the agent cancels (a repeat, to the record) or accepts the quote loans-api holds active
    # Then it is told neither "cancelled" nor "final" of a journey loans-api holds live, but that an operator
    # must repair it; and nothing was done
    expect_needs_repair(
        system,
        lambda: cancel(system, journey) if command == "cancel" else accept(system, journey, quote),
        "a record diverged from loans-api's ledger",
    )
