"""The scale model (bench/limits.py) and the settings a target rate derives (shared/capacity.py)."""

import math

import pytest

from bench.limits import Measured, first_bottleneck
from shared.capacity import (
    DEFAULT_CAPACITY,
    SQS_BATCHES_PER_POLLER,
    SQS_STANDARD_MAX_CONCURRENCY,
    UTILIZATION,
    Workload,
    derive,
)

MEASURED = Measured(
    {
        "agentCommands": 5,
        "events": 4,
        "hottestEventTypeCount": 2,
        "writeUnits": {"loans/table": 38.0, "loans/journey-changes": 4.0},
        "apiRequests": {"orchestrator": 5, "loans-api": 4},
        "lambdaSeconds": {"orchestrator": 0.1, "loans-api": 0.05, "relay": 0.02, "consumer": 0.01},
    }
)


def test_the_defaults_break_first_at_the_agent_api_throttle():
    [(first, ceiling, _), *_] = first_bottleneck(MEASURED, DEFAULT_CAPACITY, 1_000)
    assert (first, ceiling) == ("agent API stage throttle (infra/apis.py)", 20)


def test_sized_for_1000_nothing_is_left_short():
    # The changes index's hot type (2 SimulationCreated per journey, 1 write unit each) has 4 shards at 1,000/s
    assert derive(1_000).changes_index_shards == 4
    assert first_bottleneck(MEASURED, derive(1_000), 1_000) == []


@pytest.mark.parametrize("rate", [1_000, 10_000, 100_000])
def test_the_changes_index_carries_the_target_it_is_sized_for_at_half_a_partition_per_shard(rate):
    # Given the stack sized for `rate`
    capacity = derive(rate)
    # Then no shard of the hottest type takes more than half a partition's 1,000 write units/s
    per_shard = rate * MEASURED.raw["hottestEventTypeCount"] / capacity.changes_index_shards
    assert per_shard <= 500, f"{per_shard} write units/s per shard at {rate}/s with {capacity.changes_index_shards}"
    # And the index is not among what is left short, and what is left a quota increase moves
    short = first_bottleneck(MEASURED, capacity, rate)
    assert not [name for name, _, _ in short if "journey-changes" in name], f"short: {short}"
    assert {moved for _, _, moved in short} <= {"quota increase"}, f"short: {short}"


def test_a_target_rate_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        derive(0)


@pytest.mark.parametrize("rate", [1_000, 10_000, 100_000])
def test_the_sweeper_sized_for_a_target_carries_it_with_its_lanes(rate):
    # Given the stack sized for `rate`: its lanes' runs carry more than the rate (the busiest lane within
    # its whole run), so the sweeper is not among what is left short
    short = first_bottleneck(MEASURED, derive(rate), rate)
    assert not [name for name, _, _ in short if "sweeper" in name], f"short: {short}"
    # And with the default's one lane it is short at such a rate, and the lanes are what move it
    [(name, _, moved)] = [s for s in first_bottleneck(MEASURED, DEFAULT_CAPACITY, rate) if "sweeper" in s[0]]
    assert moved == "`-c targetJourneysPerSecond` (lanes)", (name, moved)


@pytest.mark.parametrize("rate", [20, 250, 10_000, 100_000])
def test_past_1000_batches_at_once_the_consumer_gets_provisioned_pollers_not_a_code_ceiling(rate):
    # Given a target rate whose consumers, at the planning figure, may need more than the 1,000 batches at
    # once an SQS event source's standard mode allows
    c = derive(rate)
    needed = math.ceil(rate * Workload().events * Workload().consumer_seconds_per_event / UTILIZATION)
    # Then standard mode up to 1,000, provisioned mode past it, with enough pollers (10 batches each) for
    # what the rate needs, and the modes never both set
    if needed <= SQS_STANDARD_MAX_CONCURRENCY:
        assert (c.consumer_pollers, c.consumer_max_concurrency) == (None, max(2, needed)), c
    else:
        assert c.consumer_pollers is not None, c
        assert c.consumer_max_concurrency == c.consumer_pollers * SQS_BATCHES_PER_POLLER >= needed, (c, needed)
    assert "code" not in " ".join(moved for _, _, moved in first_bottleneck(MEASURED, c, rate)), rate
