"""The sweeper's lanes: how its partitions are dealt out (functions/relay/sweeper.py lane_partitions), how
many lanes a target rate derives (shared/capacity.py sweeper_lanes) and which lane a run sweeps (the
schedule's input, functions/relay/bootstrap.py sweeper_lane)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from functions.relay.bootstrap import sweeper_lane
from functions.relay.settings import RelaySettings
from functions.relay.sweeper import lane_partitions, partitions
from shared import topology
from shared.capacity import DEFAULT_CAPACITY, UTILIZATION, Workload, derive, sweeper_lane_seconds
from shared.events import KNOWN_EVENT_TYPES
from shared.keys import SWEEPER_LEASE_KEY, sweeper_lease_key


@given(shards=st.integers(1, 60), lanes=st.integers(1, 40))
def test_every_partition_is_walked_by_exactly_one_lane(shards, lanes):
    dealt = [p for lane in range(lanes) for p in lane_partitions(shards, lanes, lane)]
    assert sorted(dealt) == sorted(partitions(shards)), f"{shards} shards over {lanes} lanes: {dealt}"


@given(shards=st.integers(1, 60), more=st.integers(0, 60), lanes=st.integers(1, 40))
def test_a_partitions_lane_does_not_depend_on_the_shard_count(shards, more, lanes):
    # A raised (or lowered) shard count moves no partition to another lane: only the lane count does
    for lane in range(lanes):
        fewer, raised = set(lane_partitions(shards, lanes, lane)), set(lane_partitions(shards + more, lanes, lane))
        assert fewer <= raised, f"lane {lane} of {lanes} lost {fewer - raised}: {shards} shards became {shards + more}"


@pytest.mark.parametrize("rate", [1_000, 10_000, 100_000])
def test_the_derived_lanes_get_each_event_types_shards_evenly(rate):
    capacity = derive(rate)
    lanes, shards = capacity.sweeper_lanes, capacity.changes_index_shards
    for event_type in KNOWN_EVENT_TYPES:
        dealt = [lane_partitions(shards, lanes, lane) for lane in range(lanes)]
        counts = [sum(p.startswith(f"{event_type}#") for p in mine) for mine in dealt]
        assert max(counts) - min(counts) <= 1, f"{event_type}'s {shards} shards over {lanes} lanes: {counts}"


def test_a_lane_not_among_the_lanes_is_refused():
    with pytest.raises(ValueError, match="no lane 3 among 3"):
        lane_partitions(4, 3, 3)
    with pytest.raises(ValueError, match="no lane -1"):
        lane_partitions(4, 3, -1)


def test_the_default_target_has_one_lane_that_walks_every_partition():
    assert DEFAULT_CAPACITY.sweeper_lanes == 1
    assert RelaySettings.model_fields["sweep_lanes"].default == 1
    shards = DEFAULT_CAPACITY.changes_index_shards
    assert lane_partitions(shards, 1, 0) == partitions(shards)


@pytest.mark.parametrize("rate", [20, 1_000, 10_000, 100_000])
def test_each_lanes_bookkeeping_plus_reading_fits_half_its_run(rate):
    # Given the lanes derived for `rate`, the partitions each walks, and the events written to each in a
    # period (the most frequent type's partitions its share, the other types' the rest)
    w, capacity = Workload(), derive(rate)
    lanes, shards = capacity.sweeper_lanes, capacity.changes_index_shards
    period = rate * w.sweeper_period_seconds / shards
    hot, other = period * w.hottest_event_type_events, period * (w.events - w.hottest_event_type_events) / 3
    runs = [sum(w.sweeper_seconds_per_partition
                + (hot if p.startswith("SimulationCreated#") else other) * w.sweeper_seconds_per_event
                for p in lane_partitions(shards, lanes, lane)) for lane in range(lanes)]  # fmt: skip
    # Then the busiest lane's run (a Query and a cursor write per partition, its events read 100 a call)
    # takes at most half its budget, as capacity.sweeper_lane_seconds bounds it
    assert max(runs) <= w.sweeper_run_seconds * UTILIZATION, (
        f"at {rate}/s the busiest of {lanes} lanes works {max(runs):.1f} s of a {w.sweeper_run_seconds} s run"
    )
    assert max(runs) <= sweeper_lane_seconds(rate, shards, lanes, w) + 1e-9, f"{max(runs)} over the bound"
    # And one lane fewer (coprime with the types) would not fit: no more lanes than needed
    fewer = next((n for n in range(lanes - 1, 0, -1) if math.gcd(n, w.event_types) == 1), None)
    if fewer is not None:
        assert sweeper_lane_seconds(rate, shards, fewer, w) > w.sweeper_run_seconds * UTILIZATION
    assert math.gcd(lanes, w.event_types) == 1, f"{lanes} lanes, {w.event_types} types"


def test_the_planning_figures_are_the_stacks_own():
    w = Workload()
    assert w.sweeper_run_seconds == RelaySettings.model_fields["sweep_budget_seconds"].default
    assert w.sweeper_period_seconds == 60 * (topology.SWEEPER.schedule_minutes or 0)
    assert w.event_types == len(KNOWN_EVENT_TYPES)


def test_lanes_grow_with_the_target():
    assert [derive(rate).sweeper_lanes for rate in (20, 1_000, 10_000, 100_000)] == [1, 5, 33, 321]


def test_a_run_sweeps_the_lane_its_schedule_names_and_lane_0_without_one():
    assert sweeper_lane({"lane": 7}, 8) == 7
    assert sweeper_lane({"source": "aws.events", "detail-type": "Scheduled Event"}, 1) == 0
    for bad in ("1", 1.0, True, None, [1]):
        with pytest.raises(ValueError, match="integer"):
            sweeper_lane({"lane": bad}, 8)
    # An input that is not an object (a direct invocation's `null`, a list) is refused in words, not an AttributeError
    for not_an_object in (None, [{"lane": 1}], "lane", 3):
        with pytest.raises(ValueError, match="a JSON object"):
            sweeper_lane(not_an_object, 8)  # type: ignore[arg-type]
    # A lane outside the count is refused before any lease is taken (no stray lease item per bad input)
    for outside in (8, -1, 10**12):
        with pytest.raises(ValueError, match="among the sweeper's 8 lanes"):
            sweeper_lane({"lane": outside}, 8)


def test_each_lane_has_its_own_lease_and_lane_0_keeps_the_one_lane_sweepers():
    keys = [sweeper_lease_key(lane) for lane in range(321)]
    assert keys[0] == SWEEPER_LEASE_KEY
    assert len({(k["pk"], k["sk"]) for k in keys}) == 321, "two lanes share a lease"
