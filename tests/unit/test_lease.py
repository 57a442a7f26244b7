"""The lease that keeps scheduled runs apart (shared/lease.py): the decision as a specification, then
what a run does under it, on the in-memory lease that applies the same decision (tests/fakes.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared import metric_names as names
from shared.lease import Lease, Leased, may_take
from tests.fakes import FakeLease
from tests.support import quiet_metrics

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


@pytest.mark.parametrize(
    ("current", "holder", "taken"),
    [
        (None, "me", True),  # never taken
        (Lease("other", NOW - MINUTE), "me", True),  # expired
        (Lease("other", NOW), "me", True),  # expires now: released (a release writes an expiry of now)
        (Lease("me", NOW + MINUTE), "me", True),  # my own
        (Lease("other", NOW + MINUTE), "me", False),  # held
    ],
    ids=["free", "expired", "released", "own", "held"],
)
def test_a_lease_is_taken_when_free_expired_or_own_and_never_while_another_holds_it(current, holder, taken):
    assert may_take(current, holder, NOW) is taken


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(min_value=0, max_value=600)), max_size=30))
def test_two_holders_never_hold_the_lease_at_once(attempts):
    # Given any sequence of takes by three runs at increasing times
    lease, held = FakeLease(), []
    moment = NOW
    for holder, seconds_later in attempts:
        moment += timedelta(seconds=seconds_later)
        if lease.take(holder, moment, moment + MINUTE):
            held.append((holder, moment))
    # Then whenever a holder changed, the previous holder's lease had run out
    for (previous, since), (holder, taken_at) in pairwise(held):
        assert holder == previous or taken_at >= since + MINUTE


def leased(lease: FakeLease, holder: str = "run-1") -> tuple[Leased, object]:
    metrics = quiet_metrics("sweeper")
    metrics.clear_metrics()
    return Leased(lease, "sweeper", MINUTE, metrics, clock=lambda: NOW, holder=lambda: holder), metrics


def test_a_run_that_finds_the_lease_held_does_nothing_and_counts_it_quietly():
    # Given another run holding the lease
    runner, metrics = leased(FakeLease(Lease("run-0", NOW + MINUTE)))
    done: list[str] = []
    # When this run starts, Then it does no work and raises nothing: it counts LeaseHeld
    assert runner.run(lambda: done.append("swept")) is None
    assert done == []
    assert metrics.metric_set[names.LEASE_HELD]["Value"] == [1]  # type: ignore[attr-defined]


def test_a_run_holds_the_lease_while_it_works_and_frees_it_when_done():
    # Given a free lease
    lease = FakeLease()
    runner, metrics = leased(lease)
    seen: list[Lease | None] = []

    def work() -> str:
        seen.append(lease.current)
        return "report"

    # When a run works under it
    assert runner.run(work) == "report"
    # Then it held the lease for its duration while working, and freed it afterwards (the next
    # scheduled run need not wait for the expiry)
    assert seen == [Lease("run-1", NOW + MINUTE)]
    assert lease.current == Lease("run-1", NOW)
    assert may_take(lease.current, "run-2", NOW)
    assert names.LEASE_HELD not in metrics.metric_set  # type: ignore[attr-defined]


def test_a_run_that_fails_still_frees_the_lease():
    lease = FakeLease()
    runner, _ = leased(lease)

    def crash() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        runner.run(crash)
    assert may_take(lease.current, "run-2", NOW)


def test_a_run_never_frees_a_lease_another_run_has_taken_over():
    # Given a lease that run-2 took over after run-1's expired
    lease = FakeLease(Lease("run-2", NOW + MINUTE))
    # When run-1 releases late, Then run-2 keeps it
    lease.release("run-1", NOW)
    assert lease.current == Lease("run-2", NOW + MINUTE)


def test_a_release_that_fails_does_not_fail_the_run_the_lease_then_expires_by_itself():
    # Given a lease whose release write fails (say, throttled)
    class UnreleasableLease(FakeLease):
        def release(self, holder: str, now: datetime) -> None:
            raise RuntimeError("ProvisionedThroughputExceededException")

    lease = UnreleasableLease()
    runner, _ = leased(lease)
    # When a run works under it, Then its work's result stands
    assert runner.run(lambda: "report") == "report"
    # And the lease is held until its expiry, no longer
    assert not may_take(lease.current, "run-2", NOW)
    assert may_take(lease.current, "run-2", NOW + MINUTE)
