"""AWS's documented deploy-time rules, checked on the template of every context variant docs/DEPLOY.md
shows: the default deploy (`npx cdk deploy`, with or without `-c alarmEmail`), and the
variant with every other flag flipped (`-c dev=true -c stackName=...`, `-c apiGatewayAccountRole=false`,
`-c targetJourneysPerSecond=10000`). Both are the session's syntheses (tests/infra/conftest.py). Each
test names the AWS page its rule comes from: a template that breaks one synthesizes and lints cleanly
and fails only in `cdk deploy`, in some accounts, or at the first cold start."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from functions.relay.settings import SWEEPER_TIMEOUT_SECONDS
from infra import packaging
from shared import metric_names as names
from shared import topology
from shared.lease import CLOCK_SKEW_MARGIN
from tests.infra.template import by_logical_prefix, of_type, scheduled_targets

# The quota a new account may start with (Service Quotas, "Concurrent executions"): the stack must deploy
# and run in it.
SMALLEST_ACCOUNT_CONCURRENCY = 10
# What Lambda keeps unreserved in every account: a reservation may only take what is above it.
UNRESERVED_MINIMUM = 100


@dataclass(frozen=True)
class Variant:
    resources: dict[str, Any]
    dev: bool
    sets_account_role: bool


@pytest.fixture(params=["default", "dev-and-every-flag-flipped"])
def variant_of_readme(request) -> Variant:
    """The template's resources, per variant, and what its flags ask for."""
    if request.param == "default":
        return Variant(dict(request.getfixturevalue("resources")), dev=False, sets_account_role=True)
    return Variant(dict(request.getfixturevalue("variant")), dev=True, sets_account_role=False)


@pytest.fixture
def deployed(variant_of_readme: Variant) -> dict[str, Any]:
    return variant_of_readme.resources


def functions_of(resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in of_type(resources, "AWS::Lambda::Function").items()}


# -- concurrency -----------------------------------------------------------------------------------


def test_no_function_reserves_or_provisions_concurrency(deployed):
    """https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html: Lambda keeps at least
    100 of the account's concurrency unreserved, so reserving any fails the deploy in an account whose
    quota is under 101 (new accounts often have 10). One run at a time is a lease (shared/lease.py)."""
    for name, function in functions_of(deployed).items():
        assert "ReservedConcurrentExecutions" not in function, name
    for kind in ("AWS::Lambda::Alias", "AWS::Lambda::Version"):
        for name, resource in of_type(deployed, kind).items():
            assert "ProvisionedConcurrencyConfig" not in resource["Properties"], name


def test_the_default_stack_asks_no_more_concurrency_than_an_account_of_10_has(resources):
    """https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html (an SQS mapping's maximum
    concurrency, 2 to 1000) and https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html:
    in an account whose quota is 10, nothing may be set aside (above), and no poller may be allowed more
    than the whole account: the consumer would throttle every other function. (The target-rate variant
    says which quotas it needs: docs/SCALE.md.)"""
    for mapping in (m["Properties"] for m in of_type(resources, "AWS::Lambda::EventSourceMapping").values()):
        if "ScalingConfig" in mapping:
            assert 2 <= mapping["ScalingConfig"]["MaximumConcurrency"] <= SMALLEST_ACCOUNT_CONCURRENCY
    assert SMALLEST_ACCOUNT_CONCURRENCY < UNRESERVED_MINIMUM  # why no reservation can ever be made there


# -- API Gateway's account role ---------------------------------------------------------------------


def test_every_stage_that_logs_waits_for_the_accounts_logging_role_unless_left_to_the_account(variant_of_readme):
    """https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html: a stage with
    execution or access logging is refused ("CloudWatch Logs role ARN must be set in account settings")
    until the account (per region) has a CloudWatch role. By default the stack sets one where none is
    set (a custom resource, never AWS::ApiGateway::Account, which would overwrite an existing role)."""
    deployed = variant_of_readme.resources
    settings = of_type(deployed, "Custom::ApiGatewayAccountCloudWatchRole")
    assert not of_type(deployed, "AWS::ApiGateway::Account")
    stages = of_type(deployed, "AWS::ApiGateway::Stage")
    logging = [s for s in stages.values() if "AccessLogSetting" in s["Properties"]
               or any(m.get("LoggingLevel", "OFF") != "OFF" for m in s["Properties"]["MethodSettings"])]  # fmt: skip
    assert len(logging) == 2
    if not variant_of_readme.sets_account_role:  # -c apiGatewayAccountRole=false: docs/DEPLOY.md's preflight checks it
        assert settings == {}
        return
    [name] = settings
    for stage in logging:
        assert name in stage["DependsOn"]


# -- removal ----------------------------------------------------------------------------------------

_HOLDS_DATA = ("AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::KMS::Key", "AWS::Logs::LogGroup")


def test_nothing_survives_a_failed_creation_and_a_production_stack_keeps_its_data(variant_of_readme):
    """https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-deletionpolicy.html:
    `Retain` keeps a resource even when the stack's creation rolls back, and the orphans (tables, key,
    log groups) stay behind the retry; `RetainExceptOnCreate` keeps it on delete only once the stack
    was created. A dev stack keeps nothing; a production stack keeps its tables, queues (DLQs with their
    messages), key and logs on delete and replacement."""
    deployed, dev = variant_of_readme.resources, variant_of_readme.dev
    # The one exception: the role the account's API Gateway setting may name (infra/apis.py says why; a
    # rolled-back deploy that deleted it would leave every API of the region logging nowhere).
    account_role = {s["Properties"]["RoleArn"]["Fn::GetAtt"][0]
                    for s in of_type(deployed, "Custom::ApiGatewayAccountCloudWatchRole").values()}  # fmt: skip
    for name, resource in deployed.items():
        if name in account_role:
            assert resource["DeletionPolicy"] == "Retain", name
            continue
        assert resource.get("DeletionPolicy") != "Retain", name
        if dev:
            assert resource.get("DeletionPolicy", "Delete") == "Delete", name
            assert resource.get("UpdateReplacePolicy", "Delete") == "Delete", name
        elif resource["Type"] in _HOLDS_DATA:
            assert (resource.get("DeletionPolicy"), resource.get("UpdateReplacePolicy")) == (
                "RetainExceptOnCreate", "Retain"), name  # fmt: skip
    if not dev:
        assert len(of_type(deployed, "AWS::SQS::Queue")) == 3  # events, DLQ, relay failures: all kept


def test_no_table_is_deletion_protected_so_a_failed_first_deploy_can_roll_back(deployed):
    """https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/WorkingWithTables.Basics.html
    #WorkingWithTables.Basics.DeletionProtection: a protected table cannot be deleted by anyone,
    CloudFormation's rollback included. docs/DEPLOY.md says how to protect them once the stack is up."""
    for name, table in of_type(deployed, "AWS::DynamoDB::Table").items():
        assert not table["Properties"].get("DeletionProtectionEnabled", False), name


def test_every_log_group_expires(deployed):
    """https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/Working-with-log-groups-and-streams.html:
    a log group keeps its events forever unless it has a retention."""
    for name, group in of_type(deployed, "AWS::Logs::LogGroup").items():
        assert group["Properties"]["RetentionInDays"] > 0, name


# -- event sources ----------------------------------------------------------------------------------

# https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html#filtering-syntax
_OPERATORS = {"prefix", "suffix", "anything-but", "numeric", "exists", "equals-ignore-case", "wildcard"}
# The fields of a DynamoDB stream record a filter may match (with-ddb.html#services-ddb-filtering).
_STREAM_RECORD_FIELDS = {"eventID", "eventName", "eventVersion", "eventSource", "awsRegion", "dynamodb",
                         "userIdentity"}  # fmt: skip
_STREAM_EVENT_NAMES = {"INSERT", "MODIFY", "REMOVE"}


def _valid_pattern_values(value: Any) -> bool:
    """A leaf of a filter pattern is an array of literals and operator objects."""
    if not isinstance(value, list) or not value:
        return False
    for item in value:
        if isinstance(item, dict):
            if len(item) != 1 or next(iter(item)) not in _OPERATORS:
                return False
        elif not (item is None or isinstance(item, str | int | float | bool)):
            return False
    return True


def _leaves(pattern: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    found = []
    for key, value in pattern.items():
        if isinstance(value, dict):
            found += _leaves(value, (*path, key))
        else:
            found.append(((*path, key), value))
    return found


def test_the_stream_filter_is_valid_event_filter_syntax_for_dynamodb_records(deployed):
    """https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html and
    https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html#services-ddb-filtering: a pattern is JSON
    (at most 4,096 characters, at most 5 filters per mapping) whose every leaf is an array of values or
    operators, naming the record's fields with their attribute types (`Keys.sk.S`); a wrong one is
    refused at deploy, or silently matches nothing."""
    streams = [m["Properties"] for m in of_type(deployed, "AWS::Lambda::EventSourceMapping").values()
               if "StartingPosition" in m["Properties"]]  # fmt: skip
    assert streams
    for mapping in streams:
        filters = mapping["FilterCriteria"]["Filters"]
        assert 1 <= len(filters) <= 5
        for pattern_text in (f["Pattern"] for f in filters):
            assert len(pattern_text) <= 4096
            pattern = json.loads(pattern_text)
            assert set(pattern) <= _STREAM_RECORD_FIELDS
            for path, value in _leaves(pattern):
                assert _valid_pattern_values(value), (path, value)
                if path == ("eventName",):
                    assert set(value) <= _STREAM_EVENT_NAMES
                if path[:2] in (("dynamodb", "Keys"), ("dynamodb", "NewImage")):
                    assert len(path) == 4, path
                    assert path[3] in {"S", "N", "B", "BOOL", "NULL", "M", "L"}, path


def test_each_queue_hides_a_message_at_least_6x_its_consumers_timeout(deployed):
    """https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html: set the source queue's
    visibility timeout to at least six times the function's timeout, or a batch still being retried by
    Lambda becomes visible again and is processed twice (and counted toward the DLQ)."""
    functions = functions_of(deployed)
    queues = of_type(deployed, "AWS::SQS::Queue")
    sqs_mappings = [m["Properties"] for m in of_type(deployed, "AWS::Lambda::EventSourceMapping").values()
                    if "StartingPosition" not in m["Properties"]]  # fmt: skip
    assert sqs_mappings
    for mapping in sqs_mappings:
        queue = queues[mapping["EventSourceArn"]["Fn::GetAtt"][0]]["Properties"]
        function = functions[mapping["FunctionName"]["Ref"]]
        assert queue["VisibilityTimeout"] >= 6 * function["Timeout"]


# -- schedules --------------------------------------------------------------------------------------


def test_scheduled_runs_are_not_retried_and_expire_within_their_period(deployed):
    """https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-configuring.html (an asynchronous
    invocation, as a schedule's, is retried twice by default and kept up to 6 hours) and
    https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-retry-policy.html (EventBridge retries
    delivery for 24 hours, 185 times, by default; a maximum event age is at least 60 s): a retried sweep
    or audit overlaps the next scheduled one, which comes within the period anyway."""
    configs = {c["Properties"]["FunctionName"]["Ref"]: c["Properties"]
               for c in of_type(deployed, "AWS::Lambda::EventInvokeConfig").values()}  # fmt: skip
    targets = scheduled_targets(deployed)
    assert len({t["function"] for t in targets}) == 2, targets  # the sweeper's lanes and the audit
    for target in targets:
        period = {"rate(1 minute)": 60, "rate(5 minutes)": 300}[target["expression"]]
        assert target["retry"] == {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": period}, target
        config = configs[target["function"]]
        assert (config["MaximumRetryAttempts"], config["MaximumEventAgeInSeconds"]) == (0, period)
        assert 60 <= period <= 21600


def test_a_lease_outlives_the_longest_run_it_guards(deployed):
    """https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html: a run ends at its timeout,
    so a lease that lasts longer (by the clock-skew margin) is never taken from a run still working."""
    functions = functions_of(deployed)
    for prefix, seconds in (
        ("FunctionsSweeper", SWEEPER_TIMEOUT_SECONDS),
        ("FunctionsAuditor", topology.AUDITOR.timeout_seconds),
    ):
        [timeout] = [f["Timeout"] for name, f in functions.items() if name.startswith(prefix)]
        assert timeout == seconds
        assert seconds + CLOCK_SKEW_MARGIN.total_seconds() > timeout


def test_the_orchestrator_answers_within_api_gateways_29_seconds_even_cold(deployed):
    """https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html (an integration times out
    at 29 s) and https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html (the init
    phase runs before the invocation and outside its timeout): a cold orchestrator's init plus its
    whole timeout must fit in API Gateway's 29 s, or a cold worst case ends as a bare 504."""
    orchestrator = by_logical_prefix(deployed, "AWS::Lambda::Function", "FunctionsOrchestrator")
    assert orchestrator["Timeout"] + topology.COLD_INIT_ALLOWANCE_SECONDS <= topology.API_GATEWAY_TIMEOUT_SECONDS == 29


# -- alarms -----------------------------------------------------------------------------------------

# What the AWS metrics the alarms read are named in their services' docs: Lambda (monitoring-metrics.html),
# SQS (sqs-available-cloudwatch-metrics.html), API Gateway (api-gateway-metrics-and-dimensions.html),
# EventBridge (eb-monitoring.html), EventBridge Scheduler (scheduler/latest/UserGuide/monitoring-cloudwatch.html).
AWS_METRICS = {
    "AWS/Lambda": {"Errors", "Throttles", "Duration", "IteratorAge", "Invocations"},
    "AWS/SQS": {"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage"},
    "AWS/ApiGateway": {"5XXError", "4XXError", "Latency"},
    "AWS/Events": {"TriggeredRules"},
    "AWS/Scheduler": {"InvocationAttemptCount"},
}
# Where each service's metrics are emitted (Powertools' `service` dimension: the function's package).
EMITTERS = {names.LOANS_API: "loans_api", names.ORCHESTRATOR: "orchestrator", names.RELAY: "relay",
            names.SWEEPER: "relay", names.CONSUMER: "consumer", names.AUDITOR: "auditor"}  # fmt: skip
_CONSTANTS = {value: name for name, value in vars(names).items() if name.isupper() and isinstance(value, str)}


def alarm_metrics(alarm: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(namespace, metric name, dimensions) of every metric an alarm reads."""
    if "MetricName" in alarm:
        return [(alarm["Namespace"], alarm["MetricName"], {d["Name"]: d["Value"] for d in alarm["Dimensions"]})]
    read = [m["MetricStat"]["Metric"] for m in alarm["Metrics"] if "MetricStat" in m]
    return [(m["Namespace"], m["MetricName"], {d["Name"]: d["Value"] for d in m.get("Dimensions", [])}) for m in read]


def emitted_by(service: str, metric: str) -> bool:
    """Whether the service's package (or a shared module) adds `metric` (by its shared/metric_names.py
    constant) where it calls add_metric."""
    constant = f"names.{_CONSTANTS[metric]}"
    for path in [
        *(packaging.ROOT / "functions" / EMITTERS[service]).glob("*.py"),
        *(packaging.ROOT / "shared").glob("*.py"),
    ]:
        text = Path(path).read_text()
        if "add_metric" in text and re.search(rf"{re.escape(constant)}\b", text):
            return True
    return False


def test_every_alarm_reads_a_metric_that_is_emitted(deployed):
    """https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html: an alarm on
    a metric nobody emits never leaves INSUFFICIENT_DATA (or, missing data being not breaching, stays OK):
    it can never page. Ours are in our namespace with the emitting service as dimension; AWS's are the
    names in each service's documentation."""
    alarms = of_type(deployed, "AWS::CloudWatch::Alarm")
    assert alarms
    for name, alarm in alarms.items():
        for namespace, metric, dimensions in alarm_metrics(alarm["Properties"]):
            if not namespace.startswith("AWS/"):
                assert metric in _CONSTANTS, (name, metric)
                assert emitted_by(dimensions["service"], metric), (name, metric, dimensions)
            else:
                assert metric in AWS_METRICS[namespace], (name, namespace, metric)


def test_no_alarm_pages_a_stack_that_has_not_reported_yet(deployed):
    """https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-missing-data.html: with
    missing data as breaching, an alarm goes to ALARM as soon as it is created, before the first run has
    had a chance to report. Silence is an alarm of its own (SweeperSilent, AuditorSilent: the schedule
    fired, no run reported, several periods in a row)."""
    for name, alarm in of_type(deployed, "AWS::CloudWatch::Alarm").items():
        assert alarm["Properties"]["TreatMissingData"] == "notBreaching", name
        assert alarm["Properties"]["DatapointsToAlarm"] == alarm["Properties"]["EvaluationPeriods"], name
