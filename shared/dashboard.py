"""The dashboard an operator reads, declared once: infra/observability.py renders it into the stack's
CloudWatch dashboard, `saga local` into its web page (saga/local/dashboard.py), so the two show the same
widgets. Pure data: each widget is a title, a width (of CloudWatch's 24 columns) and its series, each
series a metric named by what writes it, not by how either side reads it."""

from __future__ import annotations

from dataclasses import dataclass

from shared import metric_names as names


@dataclass(frozen=True)
class SagaMetric:
    """A metric the functions write (in the stack's namespace, `LoanSaga/<stack>`, or `LoanSaga` locally;
    dimension `service`). `audit_period`: read over the audit's schedule (it reports once a run), not the
    dashboard's minute."""

    service: str
    name: str
    statistic: str = "Sum"
    audit_period: bool = False

    @property
    def label(self) -> str:
        statistic = {"Sum": "", "Maximum": " max"}.get(self.statistic, f" {self.statistic}")
        return f"{self.service} {self.name}{statistic}"


@dataclass(frozen=True)
class SagaSum:
    """One metric summed over the services that write it (`publish failures (relay + sweeper)`)."""

    name: str
    services: tuple[str, ...]
    label: str


# The queues an operator watches, by what `saga status` calls them.
EVENTS_QUEUE = "events"
EVENTS_DLQ = "eventsDlq"
RELAY_FAILURES = "relayFailures"
VISIBLE = "visible"  # AWS/SQS ApproximateNumberOfMessagesVisible
OLDEST_AGE = "oldestAge"  # AWS/SQS ApproximateAgeOfOldestMessage, seconds


@dataclass(frozen=True)
class QueueMetric:
    queue: str
    measure: str
    label: str


@dataclass(frozen=True)
class IteratorAge:
    """The relay's stream iterator age (AWS/Lambda IteratorAge, ms): how far road 2 lags the commits."""

    label: str = "stream iterator age (ms)"


@dataclass(frozen=True)
class PollerRuns:
    """Whether the poller or schedule invoking a function runs: deployed, the function's invocations a
    period (its event source mapping or schedule invoking it); locally, whether `saga local` runs it."""

    service: str

    @property
    def label(self) -> str:
        return self.service


Series = SagaMetric | SagaSum | QueueMetric | IteratorAge | PollerRuns


@dataclass(frozen=True)
class Widget:
    title: str
    width: int
    left: tuple[Series, ...]
    right: tuple[Series, ...] = ()

    @property
    def series(self) -> tuple[Series, ...]:
        return self.left + self.right


# The pollers and schedules that drive road 2 and the audit (what `saga local --disable` turns off).
POLLERS = (names.RELAY, names.CONSUMER, names.SWEEPER, names.AUDITOR)

OUTBOX_AGE = Widget(
    "Outbox age (s; at publish, ms)", 12,
    left=(SagaMetric(names.SWEEPER, names.OLDEST_PENDING_OUTBOX_AGE_SECONDS, "Maximum"),),
    right=tuple(SagaMetric(names.RELAY, names.OUTBOX_AGE_AT_PUBLISH_MS, stat) for stat in ("p50", "p99", "Maximum")),
)  # fmt: skip
PENDING_OUTBOX = Widget(
    "Pending outbox count", 6, left=(SagaMetric(names.SWEEPER, names.PENDING_OUTBOX_COUNT, "Maximum"),)
)
DLQ_DEPTH = Widget(
    "DLQ depth", 6,
    left=(QueueMetric(EVENTS_DLQ, VISIBLE, "events DLQ"), QueueMetric(RELAY_FAILURES, VISIBLE, "relay failures")),
)  # fmt: skip
EVENTS_QUEUE_WIDGET = Widget(
    "Events queue: backlog and oldest message (s)", 8,
    left=(QueueMetric(EVENTS_QUEUE, VISIBLE, "messages visible"),),
    right=(QueueMetric(EVENTS_QUEUE, OLDEST_AGE, "oldest message age (s)"),),
)  # fmt: skip
ROAD_TWO_LAG = Widget(
    "Road 2's lag: stream iterator age (ms) and publish failures", 8,
    left=(IteratorAge(),),
    right=(SagaSum(names.PUBLISH_FAILURES, (names.RELAY, names.SWEEPER), "publish failures (relay + sweeper)"),),
)  # fmt: skip
CONSUMER_OUTCOMES = Widget(
    "Consumer outcomes per minute", 8,
    left=tuple(SagaMetric(names.CONSUMER, metric) for metric in (
        names.EVENTS_APPLIED, names.EVENTS_DEDUPLICATED, names.EVENTS_SKIPPED, names.EVENTS_FAILED)),
)  # fmt: skip
COMMANDS = Widget(
    "Commands, replays and compensations per minute", 8,
    left=(SagaMetric(names.LOANS_API, names.COMMANDS_COMMITTED), SagaMetric(names.LOANS_API, names.IDEMPOTENT_REPLAYS),
          SagaMetric(names.ORCHESTRATOR, names.IDEMPOTENT_REPLAYS), SagaMetric(names.LOANS_API, names.COMPENSATIONS)),
)  # fmt: skip
REJECTED = Widget("Rejected events per minute", 8, left=(SagaMetric(names.CONSUMER, names.EVENTS_REJECTED),))
POLLERS_WIDGET = Widget("Pollers running (invocations)", 8, left=tuple(PollerRuns(service) for service in POLLERS))
OUT_OF_SYNC = Widget(
    "Journeys out of sync (audit), and commands refused for a journey to repair", 12,
    left=(SagaMetric(names.AUDITOR, names.JOURNEYS_OUT_OF_SYNC, "Maximum", audit_period=True),
          SagaMetric(names.ORCHESTRATOR, names.JOURNEYS_NEEDING_REPAIR)),
    right=(SagaMetric(names.AUDITOR, names.OLDEST_OUT_OF_SYNC_AGE_SECONDS, "Maximum", audit_period=True),),
)  # fmt: skip
UNREADABLE = Widget(
    "Unreadable outbox items", 12,
    left=(SagaMetric(names.SWEEPER, names.UNREADABLE_OUTBOX_ITEMS, "Maximum"),
          SagaMetric(names.RELAY, names.UNREADABLE_OUTBOX_ITEMS)),
)  # fmt: skip

# The dashboard, row by row (CloudWatch lays each row out left to right, 24 columns wide).
ROWS: tuple[tuple[Widget, ...], ...] = (
    (OUTBOX_AGE, PENDING_OUTBOX, DLQ_DEPTH),
    (EVENTS_QUEUE_WIDGET, ROAD_TWO_LAG, CONSUMER_OUTCOMES),
    (COMMANDS, REJECTED, POLLERS_WIDGET),
    (OUT_OF_SYNC, UNREADABLE),
)
WIDGETS = tuple(widget for row in ROWS for widget in row)
