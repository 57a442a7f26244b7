"""What deploys, declared once: each function (its entry point, settings, timeout, memory, how many
run at once), each event source (batch size, retries, bisect, filter, schedule) and the alarm
thresholds. infra turns it into CDK (infra/functions.py, infra/event_sources.py, infra/audit.py,
infra/alarms.py), the local runtime into its containers and pollers (saga/local/runtime.py), the CLI
reads its thresholds; tests/infra/test_topology.py holds the synthesized stack and the local runtime to
it. Pure data: no AWS call, no CDK, and nothing heavier than the names it declares, so a function that
reads it (the audit: its lease lasts its timeout) loads it cheaply."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared import entry_points
from shared import metric_names as names
from shared.capacity import DEFAULT_CAPACITY

if TYPE_CHECKING:
    from collections.abc import Mapping

    from shared.settings import BaseSettings

# API Gateway ends every integration at 29 s (https://docs.aws.amazon.com/apigateway/latest/developerguide/
# limits.html), and on a cold start that includes the function's init, which Lambda does not count
# against the function's timeout. The allowance for it: the orchestrator's cold init measured from
# sources (no bytecode, the slowest it deploys), 1.6 s (BENCHMARKS.md section 5), about twice over.
# What each request does within its timeout: functions/orchestrator/deadline.py.
API_GATEWAY_TIMEOUT_SECONDS = 29
COLD_INIT_ALLOWANCE_SECONDS = 3
# Lambda gives a function CPU in proportion to its memory, one full vCPU at 1,769 MB
# (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html).
LAMBDA_MB_PER_VCPU = 1769


@dataclass(frozen=True)
class Function:
    """One Lambda function: its construct id, its Powertools service name (its metrics' `service`),
    its entry point (shared/entry_points.py), its Settings class ("module.Class", imported only when
    asked for), its timeout, its memory (Lambda bills GB-seconds at this size; bench/report.py prices
    them) and, when it runs on a schedule, how often. How many run at once: no function reserves
    concurrency (D12), the scheduled ones, which must not overlap, take a lease (shared/lease.py) that
    lasts their timeout, and the consumer's concurrency follows the target rate (shared/capacity.py)."""

    construct_id: str
    service: str
    entry_point: str
    settings_class: str
    timeout_seconds: int
    memory_mb: int
    schedule_minutes: int | None = None

    def settings(self) -> type[BaseSettings]:
        """The function's Settings class: what its environment variables are, on both sides."""
        module, name = self.settings_class.rsplit(".", 1)
        found: type[BaseSettings] = getattr(importlib.import_module(module), name)
        return found


LOANS_API = Function(
    "LoansApi", names.LOANS_API, entry_points.LOANS_API, "functions.loans_api.settings.LoansSettings",
    # It bounds how late an attempt the orchestrator abandoned can still commit; loans-api answers within
    # the orchestrator's per-attempt read timeout in normal operation. Its memory buys the CPU that makes a
    # cold start short enough for the first attempt's timeout (`cold_loans_api_seconds` below): one full vCPU
    # (at 512 MB, 0.29 of one, a cold start took about 3.7 s; at 1,024 MB, about 2 s, and 1.5x that no
    # longer left the retries room in the orchestrator's deadline).
    timeout_seconds=10, memory_mb=LAMBDA_MB_PER_VCPU,
)  # fmt: skip
ORCHESTRATOR = Function(
    "Orchestrator", names.ORCHESTRATOR, entry_points.ORCHESTRATOR,
    "functions.orchestrator.settings.OrchestratorSettings",
    # The function must not outlive API Gateway's integration, init included; each request budgets its
    # steps against this (functions/orchestrator/deadline.py, tests/integration/test_deadline.py).
    timeout_seconds=API_GATEWAY_TIMEOUT_SECONDS - COLD_INIT_ALLOWANCE_SECONDS, memory_mb=512,
)  # fmt: skip
RELAY = Function(
    "Relay", names.RELAY, entry_points.RELAY, "functions.relay.settings.RelaySettings",
    timeout_seconds=30, memory_mb=256,
)  # fmt: skip
SWEEPER = Function(
    "Sweeper", names.SWEEPER, entry_points.SWEEPER, "functions.relay.settings.RelaySettings",
    timeout_seconds=60, memory_mb=256, schedule_minutes=1,
)  # fmt: skip
CONSUMER = Function(
    "Consumer", names.CONSUMER, entry_points.CONSUMER, "functions.consumer.settings.ConsumerSettings",
    # A full batch whose every message needs a ledger read that runs out its timeouts (10 x 2.8 s) still
    # ends with a margin (tests/unit/test_consumer.py); the events queue's visibility timeout is 6x this.
    timeout_seconds=35, memory_mb=256,
)  # fmt: skip
AUDITOR = Function(
    "Auditor", names.AUDITOR, entry_points.AUDITOR, "functions.auditor.settings.AuditorSettings",
    timeout_seconds=120, memory_mb=256, schedule_minutes=5,
)  # fmt: skip
# Deployed only with `-c bedrockAgent=true` (infra/bedrock.py): the orchestrator behind a second entry point.
BEDROCK_EXECUTOR = Function(
    "Function", names.BEDROCK_EXECUTOR, entry_points.BEDROCK_EXECUTOR, ORCHESTRATOR.settings_class,
    timeout_seconds=ORCHESTRATOR.timeout_seconds, memory_mb=ORCHESTRATOR.memory_mb,
)  # fmt: skip


# A cold loans-api as the first call after idle meets it (docs/DEPLOY.md, "A first call after idle"). Init
# and the first request are CPU-bound (the interpreter's start, imports, the composition root, the first
# request's lazy imports), so their CPU time as the bench measures it (bench/cold_start.py,
# bench/measured.json `initCpuMs`, `firstRequest`'s `cpuMs`) is divided by the function's share of a vCPU
# (LAMBDA_MB_PER_VCPU). Around them: the sandbox's start (the execution environment made, the code and the layer
# fetched) and the new connection's TLS handshake, neither of which the function's memory speeds.
SANDBOX_START_SECONDS = 0.25
TLS_SETUP_SECONDS = 0.1
# How much longer than a cold loans-api the first attempt waits (the model's margin).
COLD_TIMEOUT_MULTIPLE = 1.5


def cpu_share(memory_mb: int) -> float:
    """The share of one vCPU a function of `memory_mb` runs on (a single thread uses at most one)."""
    return min(1.0, memory_mb / LAMBDA_MB_PER_VCPU)


def cold_loans_api_seconds(init_cpu_seconds: float, first_request_cpu_seconds: float, memory_mb: int) -> float:
    """How long a call meeting a cold loans-api of `memory_mb` waits for its answer."""
    cpu = (init_cpu_seconds + first_request_cpu_seconds) / cpu_share(memory_mb)
    return SANDBOX_START_SECONDS + cpu + TLS_SETUP_SECONDS


def powertools_environment(service: str, namespace: str = names.NAMESPACE) -> dict[str, str]:
    """What configures Powertools in a function (its logs' and metrics' service, the namespace, the log
    level), and pydantic, beside its settings: infra sets it on the deployed function with its stack's own
    namespace (metric_names.stack_namespace), the local runtime on its containers with the default.
    pydantic looks for plugins when the first model is built, importing importlib.metadata and scanning every
    installed distribution's entry points: a cold start cost (the larger part of the relay's beyond the
    floor) for plugins no function has."""
    return {
        "POWERTOOLS_SERVICE_NAME": service,
        "POWERTOOLS_METRICS_NAMESPACE": namespace,
        "POWERTOOLS_LOG_LEVEL": "INFO",
        "PYDANTIC_DISABLE_PLUGINS": "__all__",
    }


# Every function of the stack, by service name (the Bedrock executor is an option, apart).
FUNCTIONS = {f.service: f for f in (LOANS_API, ORCHESTRATOR, RELAY, SWEEPER, CONSUMER, AUDITOR)}


def memory_mb() -> dict[str, int]:
    """Each function's memory by service name (what bench/report.py prices a journey's GB-seconds at)."""
    return {service: f.memory_mb for service, f in FUNCTIONS.items()}


@dataclass(frozen=True)
class StreamSource:
    """The loans table's stream feeding the relay, as its event source mapping: batches of up to
    `batch_size`, a failed batch retried `retries` times (split in two on a function error), then its
    description sent to the relay-failures queue; records older than `max_record_age_hours` dropped the
    same way (the sweeper republishes what stays PENDING); up to `parallelization_factor` batches of one
    shard at once, each partition key's records in order on one of them (the factor follows the stack's
    target rate, shared/capacity.py: this is its value at the default rate). Only INSERTs of items whose
    sort key starts with `sort_key_prefix` (outbox events) reach the relay: its own NOTIFIED marks
    (MODIFY) and every other item are filtered out (the relay checks the same in code)."""

    function: Function
    batch_size: int
    retries: int
    bisect_on_error: bool
    max_record_age_hours: int
    parallelization_factor: int
    event_name: str
    sort_key_prefix: str

    @property
    def max_record_age_seconds(self) -> int:
        return 3600 * self.max_record_age_hours

    def admits(self, record: Mapping[str, Any]) -> bool:
        """Whether the mapping's filter passes this stream record to the function (the local runtime
        filters with this; infra/event_sources.py writes the same as the mapping's filter pattern)."""
        sort_key = record.get("dynamodb", {}).get("Keys", {}).get("sk", {}).get("S", "")
        return record.get("eventName") == self.event_name and str(sort_key).startswith(self.sort_key_prefix)


@dataclass(frozen=True)
class QueueSource:
    """The events queue feeding the consumer: batches of up to `batch_size`, partial batch failures
    reported, a failed message received again after the queue's visibility timeout; up to
    `max_concurrency` batches at once (it follows the stack's target rate, shared/capacity.py: this is its
    value at the default rate)."""

    function: Function
    batch_size: int
    max_concurrency: int


# (The outbox's event items are `EVENT#{seq}`, shared/keys.py EVENT_PREFIX: checked by the topology test.)
RELAY_STREAM = StreamSource(
    RELAY, batch_size=100, retries=5, bisect_on_error=True, max_record_age_hours=24,
    parallelization_factor=DEFAULT_CAPACITY.relay_parallelization_factor, event_name="INSERT",
    sort_key_prefix="EVENT#",
)  # fmt: skip
# A batch whose every message needs a ledger read still fits the consumer's timeout (tests/unit/test_consumer.py).
EVENTS_QUEUE_SOURCE = QueueSource(CONSUMER, batch_size=10, max_concurrency=DEFAULT_CAPACITY.consumer_max_concurrency)
# The events queue's visibility timeout: 6x the consumer's timeout (AWS guidance for SQS event sources),
# so a message is not received again while its batch is still being applied.
EVENTS_QUEUE_VISIBILITY_SECONDS = 6 * CONSUMER.timeout_seconds


@dataclass(frozen=True)
class ApiLimits:
    """When an API's health alarms: the share of 4xx answers, and the p99 latency in milliseconds (None:
    the orchestrator's per-attempt read timeout of loans-api, which infra/observability.py reads from its
    settings, so that an answer slower than it, which is a retry, alarms)."""

    client_error_rate: float
    p99_latency_ms: float | None


# The alarms' thresholds (infra/observability.py builds them; `saga status` compares with the first).
OUTBOX_AGE_ALARM_SECONDS = 300
ITERATOR_AGE_ALARM_MS = 60_000
EVENTS_QUEUE_AGE_ALARM_SECONDS = 300
API_5XX_RATE_ALARM = 0.01
# Any command answered `journey-needs-repair` pages: no agent can move that journey until an operator does.
JOURNEYS_NEEDING_REPAIR_ALARM = 0
API_LIMITS = {
    # Agents meet 404 and 409 (an illegal command) as part of the protocol; a quarter of all answers
    # means an agent is stuck or its signing broke (403).
    "orchestrator": ApiLimits(client_error_rate=0.25, p99_latency_ms=10_000),
    # Only the orchestrator calls loans-api, with well-formed, signed commands.
    "loans": ApiLimits(client_error_rate=0.05, p99_latency_ms=None),
}
# A scheduled function is silent when its schedule fired and no run reported, this many periods in a
# row: a few missed runs, not one late report (and nothing at all before the schedule first fires).
SILENT_PERIODS = {names.SWEEPER: 5, names.AUDITOR: 3}
# API latency pages when the p99 is over its limit for this many 5-minute periods in a row: a cold start
# (a second or two, BENCHMARKS.md section 5) is one slow request, not a slow API.
LATENCY_PERIODS = 3
