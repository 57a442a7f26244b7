"""`python -m bench.scale`: what breaks first at 1k, 10k and 100k journeys per second, from the costs
`make bench` measured (bench/measured.json) and AWS's default quotas (below, each with its source).
Writes docs/SCALE.md. The settings a target rate derives are in shared/capacity.py."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.capacity import (
    DEFAULT_CAPACITY,
    DEFAULT_TARGET_JOURNEYS_PER_SECOND,
    INITIAL_PARTITIONS,
    PARTITION_WRITE_UNITS_PER_SECOND,
    Capacity,
    Workload,
    derive,
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
    "sqs_esm": Quota(1_000, "maximum concurrency of one SQS event source mapping",
                     "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html"),
    "parallelization": Quota(10, "concurrent batches per stream shard (ParallelizationFactor)",
                             "https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html"),
    "sns": Quota(30_000, "messages/s published per account in us-east-1 (adjustable; read from the quotas page "
                 "as remembered: the stored copy did not show the table, verify before relying on it)",
                 "https://docs.aws.amazon.com/general/latest/gr/sns.html"),
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


LIMITS = (
    Limit("agent API stage throttle (infra/apis.py)", lambda m, c, r: c.orchestrator_rate / m.agent_commands,
          "`-c targetJourneysPerSecond`"),
    Limit("API Gateway account throttle (both APIs)", lambda m, c, r: QUOTAS["api_account"].value / m.api_requests,
          "quota increase"),
    Limit("pending-outbox index: one partition per shard", lambda m, c, r: c.pending_shards
          * QUOTAS["partition"].value / max(m.units("loans/pending-outbox"), 1e-9), "`-c targetJourneysPerSecond`"),
    Limit("journey-changes index: one partition per event type", lambda m, c, r: QUOTAS["partition"].value
          / (m.units("loans/journey-changes") / m.events * m.raw["hottestEventTypeCount"]),
          "code: shard the index's key (type#n), as the pending index is"),
    Limit("loans table write units (on-demand table quota)", lambda m, c, r: QUOTAS["table"].value
          / m.units("loans/table"), "quota increase"),
    Limit("Lambda account concurrency (all functions)", lambda m, c, r: QUOTAS["lambda"].value / m.lambda_seconds(),
          "quota increase"),
    Limit("consumer concurrency (SQS event source)", lambda m, c, r: c.consumer_max_concurrency
          / (m.lambda_seconds("consumer") or 1e-9), "`-c targetJourneysPerSecond` (up to 1,000)"),
    Limit("relay: stream shards x parallelization factor", _relay_ceiling,
          "`-c targetJourneysPerSecond` (factor up to 10)"),
    Limit("SNS publish quota", lambda m, c, r: QUOTAS["sns"].value / m.events, "quota increase"),
)  # fmt: skip


def first_bottleneck(m: Measured, capacity: Capacity, rate: float) -> list[tuple[str, float, str]]:
    """Every limit below `rate` with the settings `capacity`, lowest first."""
    found = [(limit.resource, limit.ceiling(m, capacity, rate), limit.moved_by) for limit in LIMITS]
    return sorted((f for f in found if f[1] < rate), key=lambda f: f[1])


def _journeys(value: float) -> str:
    return f"{value:,.0f}" if value < 1e7 else "unbounded"


def report(m: Measured) -> str:
    lines: list[str] = []
    say = lines.append
    w = Workload()
    default_ceiling = min(limit.ceiling(m, DEFAULT_CAPACITY, 1.0) for limit in LIMITS)
    say("# Scale: what breaks first, and what setting moves it")
    say("")
    say(
        "Generated by `python -m bench.scale` (run by `make bench`) from the per-journey costs the benchmark "
        f"measured ({m.raw['measuredAt']}, bench/measured.json) and AWS's default quotas (cited below). A journey "
        f"is {', '.join(m.raw['journey'])}: {m.agent_commands} agent commands, {m.events} events. Rates are "
        "completed journeys per second, steady state. Function seconds are this machine's durations against moto "
        "(each AWS call a few ms, as in AWS): read the Lambda rows as estimates, the unit rows as exact."
    )
    say("")
    say("## Measured per journey (the model's inputs)")
    say("")
    say("| input | per journey |")
    say("|---|---|")
    for key, units in m.raw["writeUnits"].items():
        say(f"| write units, {key} | {units:g} |")
    say(f"| API Gateway requests (orchestrator + loans-api) | {m.api_requests} |")
    say(f"| SNS messages | {m.raw['snsMessages']} |")
    for name, seconds in m.raw["lambdaSeconds"].items():
        say(f"| Lambda seconds, {name} ({m.raw['lambdaInvocations'][name]} invocations) | {seconds:.3f} |")
    say(f"| dollars (bench/prices.py) | ${m.raw['dollarsPerMillionJourneys'] / 1e6:.6f} |")
    say("")
    say(
        f"Planning figures of shared/capacity.py against the measurement: {w.events} events "
        f"(measured {m.events}), {w.agent_commands} agent commands (measured {m.agent_commands}), "
        f"{w.pending_index_write_units_per_event} pending-index write units per event (measured "
        f"{m.units('loans/pending-outbox') / m.events:g}), consumer {w.consumer_seconds_per_event * 1000:.0f} ms "
        f"per event (measured {m.lambda_seconds('consumer') / m.events * 1000:.1f} ms here), relay "
        f"{w.relay_seconds_per_event * 1000:.0f} ms per event "
        f"(measured {m.lambda_seconds('relay') / m.events * 1000:.1f} ms)."
    )
    say("")
    say("## The defaults' ceiling")
    say("")
    say(
        f"Without `-c targetJourneysPerSecond` the stack is sized for {DEFAULT_TARGET_JOURNEYS_PER_SECOND:g} "
        f"journeys/s ({DEFAULT_CAPACITY.pending_shards} pending shards, agent API {DEFAULT_CAPACITY.orchestrator_rate} "
        f"requests/s, {DEFAULT_CAPACITY.consumer_max_concurrency} consumers, parallelization factor "
        f"{DEFAULT_CAPACITY.relay_parallelization_factor}). Its ceiling is **{default_ceiling:,.0f} journeys/s**:"
    )
    say("")
    say("| limit | journeys/s it carries with the defaults |")
    say("|---|---|")
    for limit in LIMITS:
        carried = limit.ceiling(m, DEFAULT_CAPACITY, DEFAULT_TARGET_JOURNEYS_PER_SECOND)
        say(f"| {limit.resource} | {_journeys(carried)} |")
    say("")
    say("## At 1k, 10k and 100k journeys/s")
    say("")
    say("| target | with the defaults, first to break | sized with `-c targetJourneysPerSecond`: still short |")
    say("|---|---|---|")
    for rate in RATES:
        at_defaults = first_bottleneck(m, DEFAULT_CAPACITY, rate)
        sized = first_bottleneck(m, derive(rate), rate)
        first = f"{at_defaults[0][0]} ({at_defaults[0][1]:,.0f}/s)" if at_defaults else "nothing"
        remaining = "; ".join(f"{name} ({ceiling:,.0f}/s; {moved})" for name, ceiling, moved in sized) or "nothing"
        say(f"| {rate:,} | {first} | {remaining} |")
    _settings_table(say)
    say(SCALE_NOTES)
    say("")
    say("## Quotas used")
    say("")
    for quota in QUOTAS.values():
        say(f"* {quota.value:,.0f} {quota.what}: {quota.source}")
    say(
        "* Prices: bench/prices.py (each with its page). GSI write billing and hot-key behaviour: "
        "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html"
    )
    return "\n".join(lines) + "\n"


def _settings_table(say: Callable[[str], None]) -> None:
    say("")
    say("Settings the target derives (shared/capacity.py; `cdk deploy -c targetJourneysPerSecond=N`):")
    say("")
    say("| target | pending shards | agent API rate / burst | consumer max concurrency | relay parallelization |")
    say("|---|---|---|---|---|")
    for rate in (DEFAULT_TARGET_JOURNEYS_PER_SECOND, *map(float, RATES)):
        c = derive(rate)
        say(
            f"| {rate:,.0f} | {c.pending_shards} | {c.orchestrator_rate:,} / {c.orchestrator_burst:,} | "
            f"{c.consumer_max_concurrency} | {c.relay_parallelization_factor} |"
        )
    say("")
    say(
        "A derived setting that exceeds what AWS allows (a stage throttle above the account's, 1,000 consumers, "
        "a factor of 10) is where the target stops being reachable by configuration alone: the table above "
        "lists those as still below target, with what moves them."
    )
    say("")


SCALE_NOTES = """## How to read it, and what is not modelled

* **Index keys are the hot partitions.** Both indexes of the loans table are keyed by a small set of values
  with a sort key (a UUIDv7 `eventId`) that only grows, so DynamoDB's split-for-heat cannot spread a key's
  writes: each value is one partition at 1,000 write units/s, and a throttled index write throttles the
  table write (the whole transaction). The pending index has `PENDING_SHARDS` values and two writes per
  event (enter when committed, leave when published): the target rate sizes it. The journey-changes index
  (the audit's) has one value per event type and one write per event; the most frequent type (two
  `SimulationCreated` per journey) caps it, and no setting moves that: its key needs write sharding too
  (left undone: the auditor reads it, and another change owns it now).
* **Journey partitions are not hot.** Every item of a journey shares its partition, but a journey's
  commands are sequential (one agent, one ledger `seq`): tens of write units per journey, spread over
  seconds. Receipts are one partition each.
* **Raising the shard count on a live table is safe; lowering it is not**: the sweeper reads shards
  0..N-1, so items on a shard past a lowered N would wait unswept. `saga status` reads N from the stack's
  `PendingShards` output.
* **SQS** standard queues have no practical throughput quota; **stream shards** are not a setting (they
  follow the table's partitions), the parallelization factor is.
* Not modelled: cold-start bursts (Lambda adds 1,000 concurrent executions per function every 10 s),
  on-demand tables' ramp (double the previous peak within 30 minutes; pre-warm with warm throughput),
  retries under throttling, and the sweeper (one run a minute, at most 100 items)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.scale", description=__doc__)
    parser.add_argument("--measured", default="bench/measured.json")
    parser.add_argument("--out", default="docs/SCALE.md")
    args = parser.parse_args(argv)
    measured = Measured(json.loads(Path(args.measured).read_text()))
    Path(args.out).write_text(report(measured))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
