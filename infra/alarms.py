"""The stack's alarms and what each tells the operator to do: road 2's (the DLQ, relay failures, the
outbox's and the queue's age, publish failures, the stream's lag, journeys out of sync, rejected messages,
unreadable outbox items), each API's health and each function's. Their thresholds are shared/topology.py's;
infra/observability.py builds them from the metrics its dashboard charts, sends them to its alarm topic,
and adds the silence alarms of the scheduled functions next to the widgets they read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_lambda as lambda_

from functions.orchestrator.settings import OrchestratorSettings
from shared import topology
from shared.topology import (
    API_5XX_RATE_ALARM,
    EVENTS_QUEUE_AGE_ALARM_SECONDS,
    ITERATOR_AGE_ALARM_MS,
    JOURNEYS_NEEDING_REPAIR_ALARM,
    LATENCY_PERIODS,
    OUTBOX_AGE_ALARM_SECONDS,
)


class Alarm(Protocol):
    def __call__(
        self, construct_id: str, metric: cw.IMetric, threshold: float, description: str, periods: int = 1
    ) -> None:
        """An alarm on `metric` over `threshold` for `periods` periods in a row, to the alarm topic."""
        ...


@dataclass(frozen=True)
class RoadTwo:
    """The metrics road 2's alarms read (the dashboard charts the same)."""

    dlq_depth: cw.IMetric
    relay_failures_depth: cw.IMetric
    oldest_pending: cw.IMetric
    queue_age: cw.IMetric
    publish_failures: cw.IMetric
    iterator_age: cw.IMetric
    out_of_sync: cw.IMetric
    needs_repair: cw.IMetric
    rejected: cw.IMetric
    unreadable: cw.IMetric


def road_two(alarm: Alarm, metrics: RoadTwo) -> None:
    """Road 2's alarms, the DLQ's first."""
    alarm(
        "EventsDlqNotEmpty",
        metrics.dlq_depth,
        0,
        "A loan event is in the DLQ: run `saga dlq list`, fix the cause, `saga dlq redrive`.",
    )
    alarm(
        "RelayFailuresNotEmpty",
        metrics.relay_failures_depth,
        0,
        "Stream batches exhausted their retries; the sweeper republishes their PENDING events. `saga status "
        "--check` fails until it has; then `saga relay-failures clear` removes the records (and ends this alarm).",
    )
    alarm(
        "OutboxTooOld",
        metrics.oldest_pending,
        OUTBOX_AGE_ALARM_SECONDS,
        "An outbox event has been PENDING for over 5 minutes: road 2 may be stuck. (A sweeper that stopped "
        "reporting is SweeperSilent.)",
    )
    alarm(
        "EventsQueueTooOld",
        metrics.queue_age,
        EVENTS_QUEUE_AGE_ALARM_SECONDS,
        "A message has waited in the events queue for over 5 minutes: the consumer is not draining it.",
    )
    alarm(
        "PublishFailures",
        metrics.publish_failures,
        0,
        "The relay or the sweeper could not publish outbox events to SNS (they stay PENDING and are retried).",
    )
    alarm(
        "StreamIteratorAge",
        metrics.iterator_age,
        ITERATOR_AGE_ALARM_MS,
        "The relay is more than 60 s behind the loans table's stream.",
    )
    alarm(
        "JourneysOutOfSync",
        metrics.out_of_sync,
        0,
        "A Control Record disagrees with loans-api past the grace period: `saga audit` lists it, says "
        "which road should have brought it, and repairs it with --repair where that is mechanical. "
        "(An audit that stopped reporting is AuditorSilent.)",
    )
    alarm(
        "JourneysNeedRepair",
        metrics.needs_repair,
        JOURNEYS_NEEDING_REPAIR_ALARM,
        "An agent's command met a Control Record ahead of loans-api's ledger (answered 500 journey-needs-repair, "
        "not retryable): no command can move that journey. The orchestrator's log names it ('journey needs "
        "repair'); `saga audit --journey J` says how it differs, `saga audit --repair --rebuild --journey J` "
        "re-projects it from the ledger.",
    )
    alarm(
        "EventsRejected",
        metrics.rejected,
        0,
        "The consumer set aside a message loans-api did not commit (forged content, a seq beyond the ledger, "
        "an edited redrive): nothing was applied. `saga dlq list` gives the reason; find who published it.",
    )
    alarm(
        "UnreadableOutboxItems",
        metrics.unreadable,
        0,
        "A PENDING outbox item is not an event the relay can read; it is skipped (and kept). The relay's "
        "and sweeper's logs name it ('unreadable outbox item skipped').",
    )


def p99_latency_ms(api: str) -> float:
    """When `api`'s p99 latency alarms: its declared limit, or for loans-api the orchestrator's
    per-attempt read timeout (an answer slower than that is a retry)."""
    declared = topology.API_LIMITS[api].p99_latency_ms
    if declared is not None:
        return declared
    return 1000 * float(OrchestratorSettings.model_fields["loans_read_timeout"].default)


def api_health(alarm: Alarm, apis: dict[str, apigw.RestApi]) -> None:
    """Each API's 5xx and 4xx rates and p99 latency, over 5 minutes."""
    five_minutes = Duration.minutes(5)
    for name, api in apis.items():
        limits = topology.API_LIMITS[name]
        latency_ms = p99_latency_ms(name)
        alarm(
            f"{name}5xxRate",
            api.metric_server_error(statistic="Average", period=five_minutes),
            API_5XX_RATE_ALARM,
            f"More than 1% of {name} API calls answer 5xx.",
        )
        alarm(
            f"{name}4xxRate",
            api.metric_client_error(statistic="Average", period=five_minutes),
            limits.client_error_rate,
            f"More than {limits.client_error_rate:.0%} of {name} API calls answer 4xx.",
        )
        alarm(
            f"{name}Latency",
            api.metric_latency(statistic="p99", period=five_minutes),
            latency_ms,
            f"The {name} API's p99 latency has been over {latency_ms:.0f} ms for {LATENCY_PERIODS * 5} minutes.",
            periods=LATENCY_PERIODS,
        )


def function_health(alarm: Alarm, functions: dict[str, lambda_.Function]) -> None:
    """Each function's errors and throttles, over 5 minutes."""
    five_minutes = Duration.minutes(5)
    for name, fn in functions.items():
        alarm(
            f"{name}Errors",
            fn.metric_errors(period=five_minutes),
            0,
            f"The {name} function raised errors (not problem responses: crashes or timeouts).",
        )
        alarm(
            f"{name}Throttles",
            fn.metric_throttles(period=five_minutes),
            0,
            f"Invocations of the {name} function were throttled.",
        )
