"""Attempts that land late, with deterministic fakes (tests/fakes.py): an attempt the orchestrator gave up on
(API Gateway does not stop the Lambda) commits after the agent's later commands, or another command lands
between two attempts of this one. Every command carries the ledger position it was decided on, so a late
attempt is refused (412) and a simulate or cancel is decided again under the same key (D13). After every
step the invariants of FakeSystem.assert_invariants hold; once drained, record == truth."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from functions.orchestrator.deadline import DeadlineReached
from shared.errors import IllegalTransition
from tests.fakes import FakeSystem, abandon_a_simulate, accept, cancel, every_reply_lost, simulate, state_of


@pytest.fixture
def system() -> FakeSystem:
    return FakeSystem()


def expect_late_simulates_refused(system: FakeSystem, journey: str, attempts: int) -> None:
    """The `attempts` held-back simulates, delivered now, are each refused (412); no simulation is left."""
    statuses = [reply.status for reply in system.wire.deliver_held()]
    assert statuses == [412] * attempts, f"late attempts answered {statuses}, not {attempts} x 412"
    simulations = system.loans_store.statuses(journey, "SIMULATION#")
    assert simulations == [], f"simulations left by the late attempts: {simulations}"
    system.assert_invariants(journey)
    system.assert_converged(journey)


def test_a_cancel_between_two_attempts_of_a_simulate_wins_and_the_late_attempt_is_refused(system):
    # Given a new journey; the simulate's first attempt is abandoned (held back), and before its
    # second attempt the agent's cancel lands
    journey = system.new_journey()
    system.wire.faults = ["hold", lambda: cancel(system, journey)]
    # When the simulate goes on
    with pytest.raises(IllegalTransition) as refused:
        simulate(system, journey)
    # Then it is refused with nothing left to do, and the journey is cancelled
    assert refused.value.available_actions == []
    assert system.record(journey).currentState == "cancelled"
    system.assert_invariants(journey)
    # When the abandoned first attempt finally reaches loans-api
    # Then the ledger refuses it (it was decided on a ledger that has moved): nothing ACTIVE
    expect_late_simulates_refused(system, journey, attempts=1)


def test_a_simulate_that_commits_after_the_agent_cancelled_is_refused(system):
    # Given a simulate whose every attempt was abandoned (the agent got 503)
    journey = system.new_journey()
    abandon_a_simulate(system, journey)
    # When the agent cancels, and then all five attempts reach loans-api late
    assert state_of(cancel(system, journey)) == "cancelled"
    # Then every late attempt is refused (decided on a ledger that has moved) and nothing is ACTIVE
    expect_late_simulates_refused(system, journey, attempts=5)


def test_a_late_simulate_that_commits_before_the_cancel_is_cancelled_by_it(system):
    # Given a simulate abandoned by the orchestrator whose attempt commits late, before the cancel
    journey = system.new_journey()
    abandon_a_simulate(system, journey)
    assert [reply.status for reply in system.wire.deliver_held()] == [201, 201, 201, 201, 201]
    # When the agent cancels (its record never heard of the simulation)
    record = json.loads(cancel(system, journey).body)
    # Then the one simulation that committed (the other four replayed) is cancelled with the journey
    assert record["currentState"] == "cancelled"
    assert system.loans_store.statuses(journey, "SIMULATION#") == ["CANCELLED"]
    system.assert_converged(journey)


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


def test_a_simulate_abandoned_with_503_cannot_commit_after_the_agents_next_commands(system):
    # Given a simulate whose every attempt is held back (the agent got 503)
    journey = system.new_journey()
    abandon_a_simulate(system, journey, 11111)
    # And the agent re-simulates another amount and accepts it
    simulate(system, journey, 22222)
    accepted = json.loads(accept(system, journey).body)
    # When the abandoned attempts finally reach loans-api
    late = system.wire.deliver_held()
    # Then each is refused (decided on a ledger that has moved): the acceptance of 22222 stands
    assert [reply.status for reply in late] == [412] * 5
    assert system.loans_store.statuses(journey, "ACCEPTANCE#") == ["ACTIVE"]
    assert system.truth(journey).snapshot.simulation.amount == Decimal(22222)
    assert system.record(journey).acceptance.acceptanceId == accepted["acceptance"]["acceptanceId"]
    system.assert_converged(journey)


def test_a_command_decided_on_a_moved_ledger_is_decided_again_under_the_same_key(system):
    # Given a record behind the truth: a simulate committed with every reply lost
    journey = system.new_journey()
    every_reply_lost(system, lambda: simulate(system, journey, 10000))
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
