"""The dashboard an operator reads (the widgets shared/dashboard.py declares, which `saga local` serves too:
outbox age, DLQ depth, the events queue, road 2's lag, the roads' outcomes, the audit; then API health and
the functions') and, from the same metrics, the alarms that
wake them (infra/alarms.py; here, the scheduled functions' silence alarms next to the widgets they read).
Alarms (and their recoveries) go to a topic CloudWatch may publish to; `alarm_email` subscribes a person."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import alarms
from infra.apis import ProxyApi
from infra.functions import schedule
from shared import dashboard as board
from shared import metric_names as names
from shared import topology
from shared.topology import SILENT_PERIODS

PERIOD = Duration.minutes(1)
# What a silence alarm's reader looks for in the function's logs, beyond its errors.
LOGS_HINT = {names.SWEEPER: " (a sweeper run's lines carry its `sweeper_lane`: the lane missing is the silent one)"}
# The audit's metrics are read over its schedule's period.
AUDIT_PERIOD = schedule(topology.AUDITOR)


@dataclass(frozen=True)
class Watched:
    """What the observability construct looks at."""

    functions: dict[str, lambda_.Function]
    apis: dict[str, ProxyApi]
    queue: sqs.Queue
    dlq: sqs.Queue
    relay_failures: sqs.Queue
    relay: lambda_.Function
    # The schedules of the sweeper (a group of one per lane) and the auditor (a rule), by service.
    schedules: dict[str, events.Rule | scheduler.ScheduleGroup]


def saga_metric(namespace: str, service: str, name: str, statistic: str = "Sum") -> cw.Metric:
    """One of the saga's metrics as its `service` writes it in a stack's `namespace` (its own:
    metric_names.stack_namespace), so a stack's widgets and alarms read only what its functions write."""
    return cw.Metric(
        namespace=namespace,
        metric_name=name,
        dimensions_map={"service": service},
        statistic=statistic,
        period=PERIOD,
    )


class Observability(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, watched: Watched, key: kms.IKey, alarm_email: str | None = None
    ) -> None:
        super().__init__(scope, construct_id)
        self.alarm_topic = self._alarm_topic(key, alarm_email)
        self.alarms: dict[str, cw.Alarm] = {}
        w = watched
        own = names.stack_namespace(Stack.of(self).stack_name)

        def metric(service: str, name: str, statistic: str = "Sum") -> cw.Metric:
            return saga_metric(own, service, name, statistic)

        oldest_pending = metric(names.SWEEPER, names.OLDEST_PENDING_OUTBOX_AGE_SECONDS, "Maximum")
        iterator_age = w.relay.metric("IteratorAge", statistic="Maximum", period=PERIOD)
        queue_age = w.queue.metric_approximate_age_of_oldest_message(period=PERIOD)
        publish_failures = cw.MathExpression(
            expression="FILL(relay, 0) + FILL(sweeper, 0)",
            using_metrics={service: metric(service, names.PUBLISH_FAILURES) for service in ("relay", "sweeper")},
            label="publish failures (relay + sweeper)",
            period=PERIOD,
        )
        self.dashboard = cw.Dashboard(self, "Dashboard", default_interval=Duration.hours(3))
        # The widgets shared/dashboard.py declares (`saga local` serves the same ones), then the APIs' and
        # the functions' health, which only the deployed stack has.
        for row in board.ROWS:
            self.dashboard.add_widgets(*(self._graph(widget, w, own) for widget in row))
        self.dashboard.add_widgets(
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
        out_of_sync = metric(names.AUDITOR, names.JOURNEYS_OUT_OF_SYNC, "Maximum").with_(period=AUDIT_PERIOD)
        unreadable = metric(names.SWEEPER, names.UNREADABLE_OUTBOX_ITEMS, "Maximum")

        alarms.road_two(
            self._alarm,
            alarms.RoadTwo(
                dlq_depth=w.dlq.metric_approximate_number_of_messages_visible(period=PERIOD),
                relay_failures_depth=w.relay_failures.metric_approximate_number_of_messages_visible(period=PERIOD),
                oldest_pending=oldest_pending,
                queue_age=queue_age,
                publish_failures=publish_failures,
                iterator_age=iterator_age,
                out_of_sync=out_of_sync,
                needs_repair=metric(names.ORCHESTRATOR, names.JOURNEYS_NEEDING_REPAIR),
                rejected=metric(names.CONSUMER, names.EVENTS_REJECTED),
                unreadable=unreadable,
            ),
        )
        # Missing data cannot say "stopped": before the first run it only means "not yet". A silent run is
        # one the schedule fired (EventBridge's TriggeredRules; for the sweeper's lanes, their schedule
        # group's invocation attempts, one per lane a period) that reported nothing (the metric every run
        # emits, one sample per run whatever its lane): a new deploy has neither, a throttled, crashing or
        # stuck run has the first only. So one silent lane among many is a period short every period.
        for service, reported, period in (
            (names.SWEEPER, oldest_pending, PERIOD),
            (names.AUDITOR, metric(names.AUDITOR, names.JOURNEYS_AUDITED), AUDIT_PERIOD),
        ):
            fired = _fired(w.schedules[service], period)
            # What the silence alarm reads is charted too: an operator sees which side stopped.
            self.dashboard.add_widgets(
                cw.GraphWidget(title=f"{service} runs: scheduled vs reported", width=12, left=[
                    fired.with_(label="scheduled"),
                    reported.with_(statistic="SampleCount", period=period, label="reported")]),
            )  # fmt: skip
            self._alarm(
                f"{service.capitalize()}Silent",
                cw.MathExpression(
                    expression="FILL(fired, 0) - FILL(reported, 0)",
                    using_metrics={"fired": fired, "reported": reported.with_(statistic="SampleCount", period=period)},
                    label=f"{service} runs scheduled but not reported",
                    period=period,
                ),
                0,
                f"The {service}'s schedule fired and no run reported, {SILENT_PERIODS[service]} periods in a row: "
                f"its runs are throttled, failing before they report, or stuck. Read the {service} function's "
                f"logs{LOGS_HINT.get(service, '')} and its Errors and Throttles alarms.",
                periods=SILENT_PERIODS[service],
            )
        alarms.api_health(self._alarm, {name: api.api for name, api in w.apis.items()})
        alarms.function_health(self._alarm, w.functions)

    @staticmethod
    def _graph(widget: board.Widget, w: Watched, namespace: str) -> cw.GraphWidget:
        return cw.GraphWidget(
            title=widget.title,
            width=widget.width,
            left=[_metric(series, w, namespace) for series in widget.left],
            right=[_metric(series, w, namespace) for series in widget.right],
        )

    def _alarm_topic(self, key: kms.IKey, email: str | None) -> sns.Topic:
        """A topic CloudWatch alarms of this account may publish to (the SSL-only policy alone denies
        everything and allows nothing), through the key that encrypts it."""
        stack = Stack.of(self)
        cloudwatch = iam.ServicePrincipal("cloudwatch.amazonaws.com").with_conditions(
            {"StringEquals": {"aws:SourceAccount": stack.account}}
        )
        key.grant(cloudwatch, "kms:Decrypt", "kms:GenerateDataKey*")
        topic = sns.Topic(self, "AlarmTopic", master_key=key, enforce_ssl=True)
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[cloudwatch],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions={
                    "ArnLike": {
                        "aws:SourceArn": f"arn:{stack.partition}:cloudwatch:{stack.region}:{stack.account}:alarm:*"
                    }
                },
            )
        )
        if email:
            topic.add_subscription(subscriptions.EmailSubscription(email))
        return topic

    def _alarm(
        self,
        construct_id: str,
        metric: cw.IMetric,
        threshold: float,
        description: str,
        periods: int = 1,
    ) -> None:
        """An alarm on `metric` over `threshold` for `periods` periods in a row. Missing data is never
        breaching: no alarm here may page a stack that has not yet reported."""
        alarm = cw.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=periods,
            datapoints_to_alarm=periods,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        action = actions.SnsAction(self.alarm_topic)
        alarm.add_alarm_action(action)
        alarm.add_ok_action(action)
        self.alarms[construct_id] = alarm


def _fired(schedule: events.Rule | scheduler.ScheduleGroup, period: Duration) -> cw.Metric:
    """The runs `schedule` fired in each `period`: a rule's triggers, or a schedule group's invocation
    attempts (each of its schedules, retries off: one per schedule a period)."""
    if isinstance(schedule, scheduler.ScheduleGroup):
        attempts: cw.Metric = schedule.metric_attempts(statistic="Sum", period=period)
        return attempts
    return cw.Metric(namespace="AWS/Events", metric_name="TriggeredRules",
                     dimensions_map={"RuleName": schedule.rule_name}, statistic="Sum", period=period)  # fmt: skip


def _metric(series: board.Series, w: Watched, namespace: str) -> cw.IMetric:
    """One series of shared/dashboard.py as CloudWatch reads it (the saga's own metrics in the stack's
    `namespace`)."""
    match series:
        case board.SagaMetric(service=service, name=name, statistic=statistic, audit_period=audit_period):
            metric = saga_metric(namespace, service, name, statistic)
            return metric.with_(period=AUDIT_PERIOD) if audit_period else metric
        case board.SagaSum(name=name, services=services, label=label):
            return cw.MathExpression(
                expression=" + ".join(f"FILL({service}, 0)" for service in services),
                using_metrics={service: saga_metric(namespace, service, name) for service in services},
                label=label,
                period=PERIOD,
            )
        case board.QueueMetric(queue=queue, measure=measure, label=label):
            sqs_queue = {board.EVENTS_QUEUE: w.queue, board.EVENTS_DLQ: w.dlq, board.RELAY_FAILURES: w.relay_failures}
            read = sqs_queue[queue]
            if measure == board.OLDEST_AGE:
                return read.metric_approximate_age_of_oldest_message(label=label, period=PERIOD)
            return read.metric_approximate_number_of_messages_visible(label=label, period=PERIOD)
        case board.IteratorAge(label=label):
            return w.relay.metric("IteratorAge", statistic="Maximum", period=PERIOD, label=label)
        case board.PollerRuns(service=service):
            period = AUDIT_PERIOD if service == names.AUDITOR else PERIOD
            return w.functions[service].metric_invocations(label=f"{service} invocations", period=period)
    raise TypeError(f"not a dashboard series: {series!r}")
