"""Settings derived from a target rate of journeys per second: the agent API's throttle, the
consumer's concurrency (past 1,000 batches at once, its event source's provisioned pollers), the relay's
parallelization factor, the journey-changes index's shards and the sweeper's lanes. The CDK app takes the
target as `-c targetJourneysPerSecond=N` (docs/SCALE.md); bench/scale.py finds what breaks first at a rate,
from the benchmark's measured costs and AWS's quotas. Pure: no AWS, no CDK."""

from __future__ import annotations

import math
from dataclasses import dataclass

# The rate the defaults are sized for: at this rate the settings are the stack's historical defaults
# (100 requests/s with a 200 burst on the agent API, 10 consumers), except the relay's
# parallelization factor, 2 where it was 1 (the measured relay time per event needs it).
DEFAULT_TARGET_JOURNEYS_PER_SECOND = 20.0

# DynamoDB: one partition serves at most 1,000 write units per second.
PARTITION_WRITE_UNITS_PER_SECOND = 1000
# A new on-demand table starts with capacity for 4,000 write units per second (about 4 partitions, so
# about 4 stream shards) and splits as it grows.
INITIAL_PARTITIONS = 4
# Size everything to run at most half full: hashing is not perfectly even and traffic is not flat.
UTILIZATION = 0.5
# An SQS event source mapping runs at most 1,000 batches at once in its standard mode (its maximum
# concurrency: 2..1,000). Past that, its provisioned mode: dedicated event pollers (2..2,000), each
# invoking up to 10 batches at once, so up to 20,000; the two modes exclude each other
# (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html; ProvisionedPollerConfig).
SQS_STANDARD_MAX_CONCURRENCY = 1000
SQS_PROVISIONED_MIN_POLLERS = 2
SQS_PROVISIONED_MAX_POLLERS = 2000
SQS_BATCHES_PER_POLLER = 10


@dataclass(frozen=True)
class Workload:
    """What one journey (create, simulate, re-simulate, accept, disburse) costs, as the benchmark
    measures it (docs/SCALE.md, written by bench/scale.py, sets these figures against its run)."""

    agent_commands: int = 5  # orchestrator API requests
    events: int = 4  # outbox events: one per loans-api command
    # Function time per event, rounded up from what the benchmark measured (bench/scale.py prints both):
    # the consumer applies one event (measured ~7 ms), the relay publishes and marks one (~45 ms).
    consumer_seconds_per_event: float = 0.02
    relay_seconds_per_event: float = 0.05
    loans_table_write_units: float = 28.0  # measured; it decides how many partitions (stream shards) there are
    # Events of the most frequent type (a journey simulates twice): one journey-changes index entry each,
    # one write unit each (keys only), all on that type's partitions of the index.
    hottest_event_type_events: int = 2
    # The sweeper (functions/relay/sweeper.py), one run a minute per lane. Planning figures for a lane's run
    # in AWS, which this machine cannot measure (its calls go to moto): the bookkeeping of one partition of
    # the journey-changes index (its Query and its cursor's write, ~10 ms each) and the reading of one event
    # (a BatchGetItem of 100 small items, ~20 ms, read eventually consistent: a fifth of a millisecond each).
    sweeper_seconds_per_partition: float = 0.02
    sweeper_seconds_per_event: float = 0.0002
    sweeper_run_seconds: float = 40.0  # a run's wall-time budget (functions/relay/settings.py sweep_budget_seconds)
    sweeper_period_seconds: float = 60.0  # how often each lane runs (shared/topology.py SWEEPER)
    # The event types, each with its shards in the index (shared/events.py KNOWN_EVENT_TYPES).
    event_types: int = 4


@dataclass(frozen=True)
class Capacity:
    target_journeys_per_second: float
    orchestrator_rate: int
    orchestrator_burst: int
    # Batches the consumer's event source runs at once: its maximum concurrency in standard mode, or what
    # its provisioned pollers invoke at most (`consumer_pollers` x 10) when the target needs more than 1,000.
    consumer_max_concurrency: int
    relay_parallelization_factor: int
    # Partitions per event type of the journey-changes index (shared/keys.py changes_partition): enough
    # that the most frequent type's entries stay at half a partition's write units.
    changes_index_shards: int
    # The sweeper's lanes: each a scheduled run of its own, with its own lease, walking its own partitions
    # (functions/relay/sweeper.py lane_partitions), enough that a lane's bookkeeping plus its reading takes
    # at most half its run (see `sweeper_lanes`).
    sweeper_lanes: int = 1
    # The consumer's event source in provisioned mode: its maximum event pollers (None: standard mode).
    consumer_pollers: int | None = None


def sweeper_lane_seconds(rate: float, shards: int, lanes: int, w: Workload) -> float:
    """The busiest lane's run at `rate`: for each of its partitions, the bookkeeping, and the reading of
    the events written there in a period. The partitions are dealt over the lanes one by one, shard by
    shard, type by type (functions/relay/sweeper.py lane_partitions), so a lane holds at most
    ceil(partitions / lanes) of them, and with a lane count coprime with the types at most
    ceil(shards / lanes) of the most frequent type's (whose partitions hold its share of the events; the
    other types share the rest): the busiest lane holds as many of those as it can."""
    partitions = shards * w.event_types
    held = math.ceil(partitions / lanes)
    hot = min(held, math.ceil(shards / lanes))
    hot_events = rate * w.hottest_event_type_events * w.sweeper_period_seconds / shards
    other_events = (rate * (w.events - w.hottest_event_type_events) * w.sweeper_period_seconds
                    / (shards * (w.event_types - 1)))  # fmt: skip
    reading = (hot * hot_events + (held - hot) * other_events) * w.sweeper_seconds_per_event
    return held * w.sweeper_seconds_per_partition + reading


def sweeper_lanes(rate: float, shards: int, w: Workload) -> int:
    """How many lanes the sweeper needs: the fewest, coprime with the number of event types (so that each
    type's shards spread over every lane alike), whose busiest lane's run (`sweeper_lane_seconds`: its
    partitions' bookkeeping plus their reading) takes at most UTILIZATION of a run's budget. 1 at the
    default target (one lane: the sweeper as it always ran); at most one lane per partition."""
    budget = w.sweeper_run_seconds * UTILIZATION
    lanes = 1
    while lanes < shards * w.event_types and (
        math.gcd(lanes, w.event_types) != 1 or sweeper_lane_seconds(rate, shards, lanes, w) > budget
    ):
        lanes += 1
    return lanes


def derive(target_journeys_per_second: float, workload: Workload | None = None) -> Capacity:
    """The settings that carry `target_journeys_per_second` with headroom (see UTILIZATION)."""
    w = workload or Workload()
    rate = float(target_journeys_per_second)
    if rate <= 0:
        raise ValueError("the target rate must be positive")
    api_rate = max(100, math.ceil(rate * w.agent_commands))
    consumers = math.ceil(rate * w.events * w.consumer_seconds_per_event / UTILIZATION)
    stream_shards = max(INITIAL_PARTITIONS, rate * w.loans_table_write_units / PARTITION_WRITE_UNITS_PER_SECOND)
    per_shard = rate * w.events / stream_shards * w.relay_seconds_per_event / UTILIZATION
    hottest_units = rate * w.hottest_event_type_events  # an index entry is one write unit (keys only, < 1 KB)
    shards = max(1, math.ceil(hottest_units / (PARTITION_WRITE_UNITS_PER_SECOND * UTILIZATION)))
    pollers = None
    if consumers > SQS_STANDARD_MAX_CONCURRENCY:
        pollers = min(SQS_PROVISIONED_MAX_POLLERS, math.ceil(consumers / SQS_BATCHES_PER_POLLER))
    return Capacity(
        target_journeys_per_second=rate,
        orchestrator_rate=api_rate,
        orchestrator_burst=2 * api_rate,
        consumer_max_concurrency=max(2, consumers) if pollers is None else pollers * SQS_BATCHES_PER_POLLER,
        consumer_pollers=pollers,
        relay_parallelization_factor=min(10, max(1, math.ceil(per_shard))),  # streams: 1..10
        changes_index_shards=shards,
        sweeper_lanes=sweeper_lanes(rate, shards, w),
    )


DEFAULT_CAPACITY = derive(DEFAULT_TARGET_JOURNEYS_PER_SECOND)
