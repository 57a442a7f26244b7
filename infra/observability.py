"""The dashboard an operator reads and the alarms that wake them: outbox age, DLQ depth, iterator
age, the roads' outcomes, API health and the functions'."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.apis import ProxyApi
from shared import metric_names as names

PERIOD = Duration.minutes(1)
OUTBOX_AGE_ALARM_SECONDS = 300
ITERATOR_AGE_ALARM_MS = 60_000
API_5XX_RATE_ALARM = 0.01
# The audit runs every 5 minutes (infra/audit.py): its metrics are read over the same period.
AUDIT_PERIOD = Duration.minutes(5)


@dataclass(frozen=True)
class Watched:
    """What the observability construct looks at."""

    functions: dict[str, lambda_.Function]
    apis: dict[str, ProxyApi]
    queue: sqs.Queue
    dlq: sqs.Queue
    relay_failures: sqs.Queue
    relay: lambda_.Function


def saga_metric(service: str, name: str, statistic: str = "Sum") -> cw.Metric:
    return cw.Metric(
        namespace=names.NAMESPACE,
        metric_name=name,
        dimensions_map={"service": service},
        statistic=statistic,
        period=PERIOD,
    )


class Observability(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, watched: Watched, key: kms.IKey) -> None:
        super().__init__(scope, construct_id)
        # CloudWatch publishes alarms to an encrypted topic only when the key lets it.
        key.grant(iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*")
        self.alarm_topic = sns.Topic(self, "AlarmTopic", master_key=key, enforce_ssl=True)
        self.alarms: dict[str, cw.Alarm] = {}
        w = watched
        oldest_pending = saga_metric(names.SWEEPER, names.OLDEST_PENDING_OUTBOX_AGE_SECONDS, "Maximum")
        iterator_age = w.relay.metric("IteratorAge", statistic="Maximum", period=PERIOD)
        self.dashboard = cw.Dashboard(self, "Dashboard", default_interval=Duration.hours(3))
        self.dashboard.add_widgets(
            cw.GraphWidget(title="Outbox age", width=12, left=[oldest_pending], right=[
                saga_metric(names.RELAY, names.OUTBOX_AGE_AT_PUBLISH_MS, stat)
                for stat in ("p50", "p99", "Maximum")]),
            cw.GraphWidget(title="Pending outbox count", width=6,
                           left=[saga_metric(names.SWEEPER, names.PENDING_OUTBOX_COUNT, "Maximum")]),
            cw.GraphWidget(title="DLQ depth", width=6, left=[
                w.dlq.metric_approximate_number_of_messages_visible(label="events DLQ", period=PERIOD),
                w.relay_failures.metric_approximate_number_of_messages_visible(label="relay failures", period=PERIOD),
            ]),
        )  # fmt: skip
        self.dashboard.add_widgets(
            cw.GraphWidget(title="Events queue", width=8,
                           left=[w.queue.metric_approximate_number_of_messages_visible(period=PERIOD)],
                           right=[w.queue.metric_approximate_age_of_oldest_message(period=PERIOD)]),
            cw.GraphWidget(title="Stream iterator age (ms)", width=8, left=[iterator_age]),
            cw.GraphWidget(title="Consumer outcomes", width=8, left=[
                saga_metric(names.CONSUMER, metric) for metric in
                (names.EVENTS_APPLIED, names.EVENTS_DEDUPLICATED, names.EVENTS_SKIPPED, names.EVENTS_FAILED)]),
        )  # fmt: skip
        out_of_sync = saga_metric(names.AUDITOR, names.JOURNEYS_OUT_OF_SYNC, "Maximum").with_(period=AUDIT_PERIOD)
        unreadable = saga_metric(names.SWEEPER, names.UNREADABLE_OUTBOX_ITEMS, "Maximum")
        self.dashboard.add_widgets(
            cw.GraphWidget(title="Journeys out of sync (audit)", width=12, left=[out_of_sync], right=[
                saga_metric(names.AUDITOR, names.OLDEST_OUT_OF_SYNC_AGE_SECONDS, "Maximum").with_(period=AUDIT_PERIOD)
            ]),
            cw.GraphWidget(title="Unreadable outbox items", width=12, left=[
                unreadable, saga_metric(names.RELAY, names.UNREADABLE_OUTBOX_ITEMS)]),
        )  # fmt: skip
        self.dashboard.add_widgets(
            cw.GraphWidget(title="Idempotent replays and compensations", width=8, left=[
                saga_metric(names.LOANS_API, names.IDEMPOTENT_REPLAYS),
                saga_metric(names.ORCHESTRATOR, names.IDEMPOTENT_REPLAYS),
                saga_metric(names.LOANS_API, names.COMPENSATIONS),
            ]),
            *(cw.GraphWidget(title=f"{name} API", width=8,
                             left=[rest.metric_client_error(period=PERIOD), rest.metric_server_error(period=PERIOD)],
                             right=[rest.metric_latency(statistic="p99", period=PERIOD)])
              for name, rest in ((name, api.api) for name, api in w.apis.items())),
        )  # fmt: skip
        self.dashboard.add_widgets(
            *(cw.GraphWidget(title=f"{name} function", width=6,
                             left=[fn.metric_errors(period=PERIOD), fn.metric_throttles(period=PERIOD)],
                             right=[fn.metric_duration(statistic="p99", period=PERIOD)])
              for name, fn in w.functions.items()),
        )  # fmt: skip

        self._alarm(
            "EventsDlqNotEmpty",
            w.dlq.metric_approximate_number_of_messages_visible(period=PERIOD),
            0,
            "A loan event is in the DLQ: run `saga dlq list`, fix the cause, `saga dlq redrive`.",
        )
        self._alarm(
            "RelayFailuresNotEmpty",
            w.relay_failures.metric_approximate_number_of_messages_visible(period=PERIOD),
            0,
            "Stream batches exhausted their retries; the sweeper republishes their PENDING events.",
        )
        self._alarm(
            "OutboxTooOld",
            oldest_pending,
            OUTBOX_AGE_ALARM_SECONDS,
            "An outbox event has been PENDING for over 5 minutes: road 2 is stuck.",
        )
        self._alarm(
            "StreamIteratorAge",
            iterator_age,
            ITERATOR_AGE_ALARM_MS,
            "The relay is more than 60 s behind the loans table's stream.",
        )
        self._alarm(
            "JourneysOutOfSync",
            out_of_sync,
            0,
            "A Control Record disagrees with loans-api past the grace period: `saga audit` lists it, says "
            "which road should have brought it, and repairs it with --repair where that is mechanical.",
        )
        self._alarm(
            "UnreadableOutboxItems",
            unreadable,
            0,
            "A PENDING outbox item is not an event the relay can read; it is skipped (and kept). The relay's "
            "and sweeper's logs name it ('unreadable outbox item skipped').",
        )
        for name, api in w.apis.items():
            self._alarm(
                f"{name}5xxRate",
                api.api.metric_server_error(statistic="Average", period=Duration.minutes(5)),
                API_5XX_RATE_ALARM,
                f"More than 1% of {name} API calls answer 5xx.",
            )
        for name in ("orchestrator", "loans-api"):
            fn = w.functions[name]
            self._alarm(
                f"{name}Errors",
                fn.metric_errors(period=Duration.minutes(5)),
                0,
                f"The {name} function raised errors (not problem responses: crashes).",
            )

    def _alarm(self, construct_id: str, metric: cw.IMetric, threshold: float, description: str) -> None:
        alarm = cw.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        alarm.add_alarm_action(actions.SnsAction(self.alarm_topic))
        self.alarms[construct_id] = alarm
