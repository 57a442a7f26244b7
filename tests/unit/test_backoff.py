"""Every retry loop's schedule (shared/backoff.py): a pause that grows by its factor, with jitter only ever
added, and each loop's own schedule as its module names it."""

from __future__ import annotations

import random
from dataclasses import replace
from decimal import Decimal

import pytest

from functions.loans_api.domain import Change
from functions.loans_api.service import CommitOutcome, CommitStatus, KeyedRequest, LoansService
from functions.orchestrator import bootstrap as orchestrator_bootstrap
from functions.orchestrator.retry import RetryPolicy
from functions.orchestrator.service import MAX_DECISIONS
from saga.orchestrator_api import TransportRetry
from shared import backoff
from shared.backoff import LOST_RACE, Backoff
from shared.batch_read import ROUNDS
from shared.clock import utc_now
from shared.errors import StoreContention
from shared.idempotency import Receipt
from tests.fakes import FakeLoanStore, FakeSystem, simulate
from tests.support import quiet_metrics


@pytest.mark.parametrize("schedule", [RetryPolicy(), ROUNDS, TransportRetry(), Backoff(4, 0.3, 3.0, 0.7)])
def test_each_pause_lies_between_its_floor_and_its_floor_plus_the_jitter_and_the_floor_grows_by_the_factor(
    schedule: Backoff,
):
    for n in range(1, schedule.attempts):
        assert schedule.floor_delay(n) == pytest.approx(schedule.base_delay * schedule.multiplier ** (n - 1))
        for unit in (0.0, 0.5, 0.999):
            pause = schedule.delay(n, unit)
            assert schedule.floor_delay(n) <= pause <= schedule.floor_delay(n) + schedule.max_jitter, (n, unit, pause)
    assert schedule.floor_seconds() == pytest.approx(sum(schedule.delays()))
    jitters = schedule.max_jitter * (schedule.attempts - 1)
    assert schedule.ceiling_seconds() == pytest.approx(schedule.floor_seconds() + jitters)


def test_each_loops_schedule_is_the_one_its_module_states():
    # The orchestrator's (D8): 1, 2, 4, 8 s plus up to 0.1 s each; the batch read's: 50, 100, 200, 400 ms plus up to
    # 50 ms; the MCP server's transport retries: 0.5 then 1 s, no jitter.
    assert (RetryPolicy().delays(), RetryPolicy().max_jitter) == ([1.0, 2.0, 4.0, 8.0], 0.1)
    assert (ROUNDS.delays(), ROUNDS.max_jitter) == ([0.05, 0.1, 0.2, 0.4], 0.05)
    assert (TransportRetry().delays(), TransportRetry().max_jitter) == ([0.5, 1.0], 0.0)


def test_the_pause_after_a_lost_race_is_short_random_and_longer_with_each_loss(monkeypatch):
    # Given the random draw at its least, then at its most
    for unit, grows in ((0.0, [0.005, 0.01, 0.02]), (1.0, [0.05, 0.055, 0.065])):
        monkeypatch.setattr(random, "random", lambda unit=unit: unit)
        # Then the pause after the 1st, 2nd and 3rd loss in a row is as LOST_RACE says
        assert [backoff.after_lost_race(n) for n in (1, 2, 3)] == pytest.approx(grows)
    assert LOST_RACE.max_jitter > LOST_RACE.base_delay  # two deciders' pauses mostly differ


class _LedgerAlwaysMoves(FakeLoanStore):
    """A journey another writer keeps moving: every commit loses the race."""

    def commit(self, change: Change, receipt: Receipt, expires_at: int) -> CommitOutcome:
        return CommitOutcome(CommitStatus.CONFLICT)


def test_loans_api_gives_up_after_its_last_lost_race_without_a_pause_that_precedes_no_attempt():
    sleeps: list[float] = []
    service = LoansService(_LedgerAlwaysMoves(), quiet_metrics("loans-api"), utc_now, 3600, sleep=sleeps.append)
    request = KeyedRequest("k-1", "POST", "/journeys/j1/simulations", {"amount": 10000, "termMonths": 36})
    with pytest.raises(StoreContention):
        service.create_simulation(request, "j1", Decimal(10000), 36)
    attempts = 8  # LoansService's max_conflict_retries
    # A pause only between two attempts: the last loss answers at once (with LOST_RACE doubling, the 8th
    # pause alone would be 0.64 s more, spent from the orchestrator's attempt for nothing).
    assert len(sleeps) == attempts - 1, f"{len(sleeps)} pauses for {attempts} attempts: {sleeps}"


def test_the_orchestrator_gives_up_after_its_last_lost_race_without_a_pause_that_precedes_no_decision():
    system = FakeSystem()
    paused: list[float] = []
    system.ports = replace(system.ports, pause=paused.append)
    system.service = orchestrator_bootstrap.build_service(
        system.settings, quiet_metrics("orchestrator"), system.deadline, system.ports
    )
    journey = system.new_journey()
    landed: list[int] = []

    def another_writer() -> None:  # lands a quote on the journey just before each call to loans-api
        remaining, system.wire.faults = system.wire.faults, []
        simulate(system, journey, 7000)
        landed.append(1)
        system.wire.faults = remaining

    system.wire.faults = [another_writer] * (4 * MAX_DECISIONS)
    with pytest.raises(StoreContention):
        simulate(system, journey)
    assert len(landed) >= MAX_DECISIONS, f"only {len(landed)} other writes landed"
    assert len(paused) == MAX_DECISIONS - 1, f"{len(paused)} lost-race pauses for {MAX_DECISIONS} decisions: {paused}"
