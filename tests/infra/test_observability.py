"""What the stack lets operators see and hear: the dashboard, the alarms and whom they notify, the
outputs the ops CLI reads (from the session's synthesis, tests/infra/conftest.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match

from shared import dashboard as board
from shared import metric_names as names
from shared import stack_outputs as keys
from tests.infra.template import by_logical_prefix, of_type


def test_dashboard_shows_outbox_age_dlq_depth_and_the_roads(resources):
    [dashboard] = of_type(resources, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for needle in (names.OLDEST_PENDING_OUTBOX_AGE_SECONDS, names.OUTBOX_AGE_AT_PUBLISH_MS,
                   names.PENDING_OUTBOX_COUNT, "ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage",
                   "IteratorAge", names.EVENTS_APPLIED, names.EVENTS_DEDUPLICATED, names.EVENTS_FAILED,
                   names.IDEMPOTENT_REPLAYS, names.COMPENSATIONS, "5XXError", "4XXError", "Latency", "Throttles",
                   "Duration", names.JOURNEYS_OUT_OF_SYNC, names.OLDEST_OUT_OF_SYNC_AGE_SECONDS,
                   names.UNREADABLE_OUTBOX_ITEMS, names.EVENTS_REJECTED):  # fmt: skip
        assert needle in body, needle


def test_dashboard_shows_the_widgets_shared_dashboard_declares_in_their_order_with_their_metrics(resources):
    # (`saga local` serves the same widgets: tests/e2e/test_dashboard.py)
    [dashboard] = of_type(resources, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    positions = {widget.title: body.find(json.dumps(json.dumps(widget.title))[3:-3]) for widget in board.WIDGETS}
    assert -1 not in positions.values(), positions
    assert list(positions.values()) == sorted(positions.values()), positions
    for widget in board.WIDGETS:
        for series in widget.series:
            if isinstance(series, board.SagaMetric | board.SagaSum):
                assert series.name in body, (widget.title, series)
    assert "Invocations" in body, "the pollers' widget: each poller's function invocations"


@pytest.mark.parametrize(
    ("metric", "threshold"),
    [
        ("ApproximateNumberOfMessagesVisible", 0),
        (names.OLDEST_PENDING_OUTBOX_AGE_SECONDS, 300),
        ("IteratorAge", 60000),
        ("ApproximateAgeOfOldestMessage", 300),
        ("5XXError", 0.01),
        ("4XXError", 0.25),
        ("4XXError", 0.05),
        ("Latency", 10000),
        ("Latency", 2500),  # loans-api: the orchestrator's per-attempt read timeout
        ("Errors", 0),
        (names.JOURNEYS_OUT_OF_SYNC, 0),
        (names.UNREADABLE_OUTBOX_ITEMS, 0),
        (names.EVENTS_REJECTED, 0),  # road 2 set aside a message loans-api did not commit (D15)
        (names.JOURNEYS_NEEDING_REPAIR, 0),  # a command met a record ahead of loans-api's ledger (D15)
        ("Throttles", 0),
    ],
)
def test_alarms_and_their_recoveries_notify_the_alarm_topic(template, metric, threshold):
    topic = [{"Ref": Match.string_like_regexp("ObservabilityAlarmTopic")}]
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {"MetricName": metric, "Threshold": threshold, "ComparisonOperator": "GreaterThanThreshold",
         "AlarmActions": topic, "OKActions": topic},
    )  # fmt: skip


def alarm(resources, name: str) -> dict[str, Any]:
    return by_logical_prefix(resources, "AWS::CloudWatch::Alarm", f"Observability{name}")


def test_every_alarm_exists_with_a_recovery_action_and_every_function_has_errors_and_throttles_alarms(resources):
    for expected in ("EventsDlqNotEmpty", "RelayFailuresNotEmpty", "OutboxTooOld", "StreamIteratorAge",
                     "SweeperSilent", "AuditorSilent",
                     "EventsQueueTooOld", "PublishFailures", "JourneysOutOfSync", "UnreadableOutboxItems",
                     "EventsRejected", "JourneysNeedRepair",
                     "orchestrator5xxRate", "loans5xxRate", "orchestrator4xxRate", "loans4xxRate",
                     "orchestratorLatency", "loansLatency"):  # fmt: skip
        assert alarm(resources, expected)["OKActions"], expected
    for function in ("orchestrator", "loansapi", "relay", "sweeper", "consumer", "auditor"):
        for kind in ("Errors", "Throttles"):
            assert alarm(resources, f"{function}{kind}")["MetricName"] == kind


def test_no_alarm_pages_a_stack_that_has_not_reported_yet(resources):
    # A new deploy has no data at all: no alarm may treat that as breaching (tests/infra/test_deploy_rules.py)
    for properties in (a["Properties"] for a in of_type(resources, "AWS::CloudWatch::Alarm").values()):
        assert properties["TreatMissingData"] == "notBreaching", properties["AlarmDescription"]


@pytest.mark.parametrize(("service", "periods"), [("Sweeper", 5), ("Auditor", 3)])
def test_a_silent_sweeper_or_auditor_is_an_alarm_after_a_few_scheduled_runs(resources, service, periods):
    # Given the alarm on "scheduled, but did not report"
    silent = alarm(resources, f"{service}Silent")
    metrics = {m["Id"]: m for m in silent["Metrics"]}
    # Then it counts the schedules' firings (the audit's rule; every lane of the sweeper, their schedule group)
    # against the runs' reports (one sample a run, whatever its lane), several periods in a row
    fired = metrics["fired"]["MetricStat"]["Metric"]
    if service == "Auditor":
        [rule] = [k for k in of_type(resources, "AWS::Events::Rule") if k.startswith("AuditAuditSchedule")]
        assert (fired["Namespace"], fired["MetricName"]) == ("AWS/Events", "TriggeredRules")
        assert fired["Dimensions"] == [{"Name": "RuleName", "Value": {"Ref": rule}}]
    else:
        [group] = [g["Properties"]["Name"] for g in of_type(resources, "AWS::Scheduler::ScheduleGroup").values()]
        lanes = [s["Properties"] for s in of_type(resources, "AWS::Scheduler::Schedule").values()]
        assert {lane["GroupName"] for lane in lanes} == {group}, f"a lane outside the alarm's group: {lanes}"
        assert (fired["Namespace"], fired["MetricName"]) == ("AWS/Scheduler", "InvocationAttemptCount")
        assert fired["Dimensions"] == [{"Name": "ScheduleGroup", "Value": group}]
    assert metrics["fired"]["MetricStat"]["Stat"] == "Sum"
    assert metrics["reported"]["MetricStat"]["Stat"] == "SampleCount"
    assert metrics["reported"]["MetricStat"]["Metric"]["Dimensions"] == [{"Name": "service", "Value": service.lower()}]
    assert "FILL(fired, 0) - FILL(reported, 0)" in json.dumps(silent["Metrics"])
    assert (silent["EvaluationPeriods"], silent["DatapointsToAlarm"], silent["Threshold"]) == (periods, periods, 0)


def test_publish_failures_of_relay_and_sweeper_alarm_together(resources):
    metrics = alarm(resources, "PublishFailures")["Metrics"]
    services = {m["MetricStat"]["Metric"]["Dimensions"][0]["Value"] for m in metrics if "MetricStat" in m}
    assert services == {names.RELAY, names.SWEEPER}
    assert all(m["MetricStat"]["Metric"]["MetricName"] == names.PUBLISH_FAILURES for m in metrics if "MetricStat" in m)


def test_cloudwatch_of_this_account_alone_may_publish_alarms(resources):
    topic_policies = of_type(resources, "AWS::SNS::TopicPolicy").values()
    [policy] = [p["Properties"]["PolicyDocument"]["Statement"] for p in topic_policies
                if "ObservabilityAlarmTopic" in json.dumps(p["Properties"]["Topics"])]  # fmt: skip
    [allow] = [s for s in policy if s["Effect"] == "Allow"]
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert allow["Action"] == "sns:Publish"
    assert allow["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert ":alarm:*" in json.dumps(allow["Condition"]["ArnLike"]["aws:SourceArn"])
    # and the topic's key lets it encrypt, under the same condition
    [key] = of_type(resources, "AWS::KMS::Key").values()
    [for_cloudwatch] = [s for s in key["Properties"]["KeyPolicy"]["Statement"]
                        if s["Principal"] == {"Service": "cloudwatch.amazonaws.com"}]  # fmt: skip
    assert for_cloudwatch["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}


def test_no_one_is_subscribed_unless_asked(resources):
    assert not [
        s for s in of_type(resources, "AWS::SNS::Subscription").values() if s["Properties"]["Protocol"] == "email"
    ]


def test_an_alarm_email_subscribes_that_address_to_the_alarms(variant):
    [subscription] = [s["Properties"] for s in of_type(variant, "AWS::SNS::Subscription").values()
                      if s["Properties"]["Protocol"] == "email"]  # fmt: skip
    assert subscription["Endpoint"] == "ops@example.com"
    assert "ObservabilityAlarmTopic" in json.dumps(subscription["TopicArn"])


def test_outputs_name_everything_the_ops_cli_reads(template):
    outputs = template.to_json()["Outputs"]
    for key in (keys.OUTPUT_ORCHESTRATOR_URL, keys.OUTPUT_LOANS_API_URL, keys.OUTPUT_LOANS_TABLE,
                keys.OUTPUT_JOURNEYS_TABLE, keys.OUTPUT_EVENTS_QUEUE, keys.OUTPUT_EVENTS_DLQ,
                keys.OUTPUT_RELAY_FAILURES, keys.OUTPUT_AGENT_POLICY, keys.OUTPUT_EVENTS_TOPIC):  # fmt: skip
        assert key in outputs


def test_the_auditors_silence_alarm_sends_its_reader_to_nothing_of_the_sweeper(resources):
    # The sweeper's lanes are the sweeper's: the audit's silence has no lane to look for
    auditor = alarm(resources, "AuditorSilent")["AlarmDescription"]
    assert "sweeper" not in auditor.lower(), f"the auditor's silence alarm reads: {auditor}"
    sweeper = alarm(resources, "SweeperSilent")["AlarmDescription"]
    assert "sweeper_lane" in sweeper, f"the sweeper's silence alarm does not say how to find the silent lane: {sweeper}"
