"""Settings derived from a target rate of journeys per second: the agent API's throttle, the
consumer's concurrency, the relay's parallelization factor and the journey-changes index's shards. The CDK app
takes the target as `-c targetJourneysPerSecond=N` (docs/SCALE.md); bench/scale.py finds what breaks
first at a rate, from the benchmark's measured costs and AWS's quotas. Pure: no AWS, no CDK."""

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


@dataclass(frozen=True)
class Capacity:
    target_journeys_per_second: float
    orchestrator_rate: int
    orchestrator_burst: int
    consumer_max_concurrency: int
    relay_parallelization_factor: int
    # Partitions per event type of the journey-changes index (shared/keys.py changes_partition): enough
    # that the most frequent type's entries stay at half a partition's write units.
    changes_index_shards: int


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
    return Capacity(
        target_journeys_per_second=rate,
        orchestrator_rate=api_rate,
        orchestrator_burst=2 * api_rate,
        consumer_max_concurrency=min(1000, max(2, consumers)),  # SQS event source: 2..1,000
        relay_parallelization_factor=min(10, max(1, math.ceil(per_shard))),  # streams: 1..10
        changes_index_shards=max(1, math.ceil(hottest_units / (PARTITION_WRITE_UNITS_PER_SECOND * UTILIZATION))),
    )


DEFAULT_CAPACITY = derive(DEFAULT_TARGET_JOURNEYS_PER_SECOND)
