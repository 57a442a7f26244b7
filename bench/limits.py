"""The scale model: AWS's default quotas (each with its source) and the journeys per second each limit
carries, from the per-journey costs `make bench` measured (bench/measured.json) and the settings a
target rate derives (shared/capacity.py). bench/scale.py writes docs/SCALE.md from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shared.capacity import (
    INITIAL_PARTITIONS,
    PARTITION_WRITE_UNITS_PER_SECOND,
    SQS_BATCHES_PER_POLLER,
    SQS_PROVISIONED_MAX_POLLERS,
    Capacity,
    Workload,
    sweeper_lane_seconds,
)

RATES = (1_000, 10_000, 100_000)


@dataclass(frozen=True)
class Quota:
    value: float
    what: str
    source: str


# Default quotas, us-east-1 (the stored copies of these pages were read on 2026-11-30).
DDB_LIMITS = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html"
QUOTAS = {
    "partition": Quota(PARTITION_WRITE_UNITS_PER_SECOND, "write units/s per partition (per index key value)",
                       "https://repost.aws/knowledge-center/on-demand-table-throttling-dynamodb"),
    "table": Quota(40_000, "write request units/s per on-demand table (adjustable)", DDB_LIMITS),
    "api_account": Quota(10_000, "requests/s per account and Region, across all APIs (adjustable)",
                         "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html"),
    "lambda": Quota(1_000, "concurrent executions per account and Region (adjustable)",
                    "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"),
    "sqs_esm": Quota(1_000, "maximum concurrency of one SQS event source mapping in standard mode",
                     "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html"),
    "sqs_esm_provisioned": Quota(SQS_PROVISIONED_MAX_POLLERS * SQS_BATCHES_PER_POLLER,
                                 "batches at once of one SQS event source mapping in provisioned mode (up to "
                                 f"{SQS_PROVISIONED_MAX_POLLERS:,} event pollers of {SQS_BATCHES_PER_POLLER} each)",
                                 "https://docs.aws.amazon.com/lambda/latest/api/API_ProvisionedPollerConfig.html"),
    "parallelization": Quota(10, "concurrent batches per stream shard (ParallelizationFactor)",
                             "https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html"),
    "sns": Quota(30_000, "messages/s published per account in us-east-1 (adjustable; read from the quotas page "
                 "as remembered: the stored copy did not show the table, verify before relying on it)",
                 "https://docs.aws.amazon.com/general/latest/gr/sns.html"),
    # Where the sweeper's lanes live (infra/event_sources.py, docs/ARCHITECTURE.md D7).
    "scheduler": Quota(1_000, "EventBridge Scheduler invocations/s per account (adjustable): the sweeper's "
                       "lanes invoke once each a minute", "https://docs.aws.amazon.com/scheduler/latest/UserGuide/"
                       "scheduler-quotas.html"),
    "rules": Quota(300, "EventBridge rules per event bus (adjustable): fewer than the sweeper's lanes at "
                   "100,000 journeys/s, which are therefore Scheduler schedules",
                   "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html"),
    "template": Quota(500, "resources declared in one CloudFormation template (a sweeper lane is one)",
                      "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html"),
}  # fmt: skip


@dataclass(frozen=True)
class Measured:
    """The benchmark's per-journey figures (bench/run.py `measured`)."""

    raw: dict[str, Any]

    def units(self, key: str) -> float:
        return float(self.raw["writeUnits"].get(key, 0.0))

    @property
    def agent_commands(self) -> int:
        return int(self.raw["agentCommands"])

    @property
    def events(self) -> int:
        return int(self.raw["events"])

    @property
    def api_requests(self) -> int:
        return int(sum(self.raw["apiRequests"].values()))

    def lambda_seconds(self, function: str | None = None) -> float:
        seconds = self.raw["lambdaSeconds"]
        return float(sum(seconds.values()) if function is None else seconds.get(function, 0.0))


@dataclass(frozen=True)
class Limit:
    resource: str
    ceiling: Callable[[Measured, Capacity, float], float]  # journeys/s it carries (may depend on the rate)
    moved_by: str


def _relay_ceiling(m: Measured, c: Capacity, rate: float) -> float:
    # Stream shards follow the table's partitions: at least the initial ones, more as writes grow.
    shards = max(INITIAL_PARTITIONS, rate * m.units("loans/table") / PARTITION_WRITE_UNITS_PER_SECOND)
    seconds = m.lambda_seconds("relay") or 1e-9
    return shards * c.relay_parallelization_factor / seconds


def _sweeper_ceiling(m: Measured, c: Capacity, rate: float) -> float:
    """The rate at which the sweeper's busiest lane fills its whole run (shared/capacity.py
    sweeper_lane_seconds: linear in the rate, from the planning figures, which AWS would measure)."""
    w = Workload()
    fixed = sweeper_lane_seconds(0.0, c.changes_index_shards, c.sweeper_lanes, w)
    per_journey = sweeper_lane_seconds(1.0, c.changes_index_shards, c.sweeper_lanes, w) - fixed
    return (w.sweeper_run_seconds - fixed) / per_journey


LIMITS = (
    Limit("agent API stage throttle (infra/apis.py)", lambda m, c, r: c.orchestrator_rate / m.agent_commands,
          "`-c targetJourneysPerSecond`"),
    Limit("API Gateway account throttle (both APIs)", lambda m, c, r: QUOTAS["api_account"].value / m.api_requests,
          "quota increase"),
    Limit("journey-changes index: its most frequent type's shards", lambda m, c, r: QUOTAS["partition"].value
          * c.changes_index_shards / (m.units("loans/journey-changes") / m.events * m.raw["hottestEventTypeCount"]),
          "`-c targetJourneysPerSecond` (shards)"),
    Limit("loans table write units (on-demand table quota)", lambda m, c, r: QUOTAS["table"].value
          / m.units("loans/table"), "quota increase"),
    Limit("Lambda account concurrency (all functions)", lambda m, c, r: QUOTAS["lambda"].value / m.lambda_seconds(),
          "quota increase"),
    Limit("consumer concurrency (SQS event source)", lambda m, c, r: c.consumer_max_concurrency
          / (m.lambda_seconds("consumer") or 1e-9),
          "`-c targetJourneysPerSecond` (up to 1,000 batches at once in the event source's standard mode; past "
          "that, its provisioned pollers: up to 20,000)"),
    Limit("relay: stream shards x parallelization factor", _relay_ceiling,
          "`-c targetJourneysPerSecond` (factor up to 10)"),
    Limit("SNS publish quota", lambda m, c, r: QUOTAS["sns"].value / m.events, "quota increase"),
    Limit("sweeper: its lanes' runs (planning figures)", _sweeper_ceiling, "`-c targetJourneysPerSecond` (lanes)"),
)  # fmt: skip


def first_bottleneck(m: Measured, capacity: Capacity, rate: float) -> list[tuple[str, float, str]]:
    """Every limit below `rate` with the settings `capacity`, lowest first."""
    found = [(limit.resource, limit.ceiling(m, capacity, rate), limit.moved_by) for limit in LIMITS]
    return sorted((f for f in found if f[1] < rate), key=lambda f: f[1])
