"""What an operator relies on: every metric the stack's dashboard charts is in CloudWatch under the
dimensions the dashboard reads, and an alarm's state change reaches the alarm topic."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from saga.verify.checks import Check, Deployment, Failed
from shared import metric_names, stack_outputs

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch.type_defs import DimensionFilterTypeDef, MetricAlarmTypeDef
    from mypy_boto3_sqs import SQSClient

Metric = tuple[str, str, tuple[tuple[str, str], ...]]


def dashboard_metrics(body: dict[str, Any]) -> list[Metric]:
    """Every metric the dashboard body charts (math expressions' inputs included), with its dimensions:
    CloudWatch's metric arrays [namespace, name, dimension, value, ..., {options}], "." repeating the
    array before."""
    found: dict[Metric, None] = {}
    for widget in body.get("widgets", []):
        previous: list[Any] = []
        for row in widget.get("properties", {}).get("metrics", []):
            values = [value for value in row if not isinstance(value, dict)]
            values = [previous[i] if v == "." and i < len(previous) else v for i, v in enumerate(values)]
            previous = values
            if len(values) >= 2 and len(values) % 2 == 0:
                pairs = tuple(sorted(zip(values[2::2], values[3::2], strict=True)))
                found[(values[0], values[1], pairs)] = None
    return list(found)


def metrics_present(deployment: Deployment) -> str:
    """ListMetrics knows each charted metric with exactly the dashboard's dimensions. A metric written only
    when what it counts happens (metric_names.ON_OCCURRENCE) may be absent under them whatever other
    dimensions hold: one retried command writes IdempotentReplays for the orchestrator, not for loans-api.
    Any other metric absent is a failure, said with where else it is written (a wrong dimension).
    ListMetrics shows a metric up to 15 minutes after it is first written, and none not written in two
    weeks (docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_ListMetrics.html)."""
    cloudwatch = deployment.cloudwatch
    body = json.loads(
        cloudwatch.get_dashboard(DashboardName=deployment.output(stack_outputs.OUTPUT_DASHBOARD))["DashboardBody"]
    )
    charted = dashboard_metrics(body)
    missing, quiet = [], []
    for namespace, name, dimensions in charted:
        wanted: list[DimensionFilterTypeDef] = [{"Name": key, "Value": value} for key, value in dimensions]
        listed = cloudwatch.list_metrics(Namespace=namespace, MetricName=name, Dimensions=wanted)["Metrics"]
        # ListMetrics also answers metrics with more dimensions than asked: the dashboard reads exactly these.
        if any({(d["Name"], d["Value"]) for d in m.get("Dimensions", [])} == set(dimensions) for m in listed):
            continue
        label = f"{namespace}/{name}{{{','.join(f'{k}={v}' for k, v in dimensions)}}}"
        if name in metric_names.ON_OCCURRENCE:
            quiet.append(label)
            continue
        elsewhere = cloudwatch.list_metrics(Namespace=namespace, MetricName=name)["Metrics"]
        missing.append(label + (" (present under other dimensions)" if elsewhere else ""))
    if missing:
        raise Failed(f"{len(missing)} of {len(charted)} dashboard metrics absent: {'; '.join(missing)}")
    seen = f"{len(charted) - len(quiet)} of {len(charted)} dashboard metrics present"
    return seen + (f"; {len(quiet)} written only when it happens, none yet" if quiet else "")


def _stack_alarms(deployment: Deployment) -> list[MetricAlarmTypeDef]:
    """The stack's alarms: those it lists, else (an endpoint whose CloudFormation keeps none) the
    alarms named as CloudFormation names them, STACK-LogicalId-SUFFIX."""
    cloudwatch = deployment.cloudwatch
    named = [r.physical_id for r in deployment.of_type("AWS::CloudWatch::Alarm")]
    if named:
        return [a for i in range(0, len(named), 100)
                for a in cloudwatch.describe_alarms(AlarmNames=named[i : i + 100])["MetricAlarms"]]  # fmt: skip
    pages = cloudwatch.get_paginator("describe_alarms").paginate(AlarmNamePrefix=f"{deployment.stack}-")
    return [alarm for page in pages for alarm in page["MetricAlarms"]]


@contextlib.contextmanager
def _listening(deployment: Deployment, topic: str) -> Iterator[str]:
    """A queue of this check's own subscribed to `topic` (confirmed) while the block runs; then the
    subscription and the queue are deleted."""
    sns, sqs = deployment.sns, deployment.sqs
    queue = sqs.create_queue(QueueName=f"saga-verify-alarm-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    subscription = None
    try:
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sqs.set_queue_attributes(QueueUrl=queue, Attributes={"Policy": _from_topic(queue_arn, topic)})
        subscription = sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn, ReturnSubscriptionArn=True)
        deadline = time.monotonic() + deployment.wait_seconds
        arn = subscription["SubscriptionArn"]
        while sns.get_subscription_attributes(SubscriptionArn=arn)["Attributes"].get("PendingConfirmation") == "true":
            if time.monotonic() > deadline:
                raise Failed(f"the test subscription to {topic} was never confirmed")
            for message in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1).get("Messages", []):
                body = json.loads(message["Body"])
                if body.get("Type") == "SubscriptionConfirmation":
                    sns.confirm_subscription(TopicArn=topic, Token=body["Token"])
        yield queue
    finally:
        if subscription is not None:
            sns.unsubscribe(SubscriptionArn=subscription["SubscriptionArn"])
        sqs.delete_queue(QueueUrl=queue)


def alarm_path(deployment: Deployment) -> str:
    """One of the stack's alarms set to ALARM (SetAlarmState) notifies the alarm topic: a queue this
    check subscribes for the test receives it. The alarm is set back to the state it had."""
    topic = deployment.output(stack_outputs.OUTPUT_ALARM_TOPIC)
    alarms = _stack_alarms(deployment)
    if not alarms:
        raise Failed("the stack has no alarm")
    quiet = [a for a in alarms if topic in a.get("AlarmActions", []) and a["StateValue"] != "ALARM"]
    if not quiet:
        raise Failed(f"no alarm of the stack notifies {topic} from a state other than ALARM")
    alarm, cloudwatch = quiet[0], deployment.cloudwatch
    with _listening(deployment, topic) as queue:
        reason = "saga verify: a test of the alarm path (set back at once)"
        cloudwatch.set_alarm_state(AlarmName=alarm["AlarmName"], StateValue="ALARM", StateReason=reason)
        try:
            received = _receive(deployment.sqs, queue, alarm["AlarmName"], deployment.wait_seconds)
        finally:
            cloudwatch.set_alarm_state(
                AlarmName=alarm["AlarmName"], StateValue=alarm["StateValue"], StateReason=alarm.get("StateReason", "")
            )
    if not received:
        waited = f"{deployment.wait_seconds:.0f} s"
        raise Failed(f"alarm {alarm['AlarmName']} set to ALARM: nothing reached {topic} in {waited}")
    return f"alarm {alarm['AlarmName']} set to ALARM reached the alarm topic; set back to {alarm['StateValue']}"


def _from_topic(queue_arn: str, topic_arn: str) -> str:
    """A queue policy letting the topic (and only it) deliver."""
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "sns.amazonaws.com"}, "Action": "sqs:SendMessage",
        "Resource": queue_arn, "Condition": {"ArnEquals": {"aws:SourceArn": topic_arn}}}]})  # fmt: skip


def _receive(sqs: SQSClient, queue: str, alarm_name: str, wait_seconds: float) -> bool:
    """True once a notification naming the alarm arrives, within `wait_seconds`."""
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        for message in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1).get("Messages", []):
            if alarm_name in message["Body"]:
                return True
    return False


CHECKS = [
    Check("dashboard-metrics", metrics_present,
          "a metric reaches ListMetrics up to 15 minutes after it is first written: rerun later; one still "
          "absent means its function does not emit it under those dimensions (its logs show the EMF lines)"),
    Check("alarm-path", alarm_path,
          "the alarm topic's policy must let cloudwatch.amazonaws.com publish and its KMS key let CloudWatch "
          "use it (infra/observability.py); `aws sns list-subscriptions-by-topic` shows who is told"),
]  # fmt: skip
