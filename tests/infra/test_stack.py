"""The CDK stack, synthesized once per session (offline, without packaging), checked point by point."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match

from functions.orchestrator.deadline import FUNCTION_TIMEOUT_SECONDS
from functions.orchestrator.settings import OrchestratorSettings
from infra import packaging
from infra.nag import ALL_REASONS
from saga.local.resources import table_definition
from shared import capacity, entry_points, tables
from shared import metric_names as names
from shared.tables import EVENTS_DLQ, EVENTS_QUEUE, JOURNEYS_TABLE, LOANS_TABLE


def of_type(resources: dict[str, Any], kind: str) -> dict[str, Any]:
    return {k: v for k, v in resources.items() if v["Type"] == kind}


def by_logical_prefix(resources: dict[str, Any], kind: str, prefix: str) -> dict[str, Any]:
    [(_, found)] = [(k, v) for k, v in of_type(resources, kind).items() if k.startswith(prefix)]
    return dict(found["Properties"])


# -- data ------------------------------------------------------------------------------------


def test_tables_are_on_demand_recoverable_protected_and_expire_by_ttl(resources):
    for table in of_type(resources, "AWS::DynamoDB::Table").values():
        properties = table["Properties"]
        assert properties["BillingMode"] == "PAY_PER_REQUEST"
        assert properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
        assert properties["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
        assert properties["DeletionProtectionEnabled"] is True
        assert table["DeletionPolicy"] == "Retain"


def test_the_loans_table_streams_new_images_and_has_the_sparse_pending_index(resources):
    loans = by_logical_prefix(resources, "AWS::DynamoDB::Table", "DataLoansTable")
    assert loans["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}
    indexes = {index["IndexName"]: index for index in loans["GlobalSecondaryIndexes"]}
    assert set(indexes) == {tables.PENDING_INDEX, tables.CHANGES_INDEX}
    assert [k["AttributeName"] for k in indexes[tables.PENDING_INDEX]["KeySchema"]] == ["pendingShard", "eventId"]
    # Keys only: every event is written to it and removed again, each write billed by the projected size
    assert indexes[tables.PENDING_INDEX]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    # The audit's index: every event by type and time, keys only (small, and no write on NOTIFIED)
    changes = indexes[tables.CHANGES_INDEX]
    assert [k["AttributeName"] for k in changes["KeySchema"]] == ["type", "eventId"]
    assert changes["Projection"] == {"ProjectionType": "KEYS_ONLY"}


@pytest.mark.parametrize("spec", [LOANS_TABLE, JOURNEYS_TABLE], ids=lambda s: s.logical_id)
def test_local_and_cdk_table_definitions_agree(resources, spec):
    cfn = by_logical_prefix(resources, "AWS::DynamoDB::Table", f"Data{spec.logical_id}")
    local = table_definition(spec, spec.local_name)
    assert sorted(cfn["KeySchema"], key=str) == sorted(local["KeySchema"], key=str)
    assert sorted(cfn["AttributeDefinitions"], key=str) == sorted(local["AttributeDefinitions"], key=str)
    assert [(i["IndexName"], i["KeySchema"], i["Projection"]) for i in cfn.get("GlobalSecondaryIndexes", [])] == [
        (i["IndexName"], i["KeySchema"], i["Projection"]) for i in local.get("GlobalSecondaryIndexes", [])
    ]
    assert ("StreamSpecification" in cfn) == ("StreamSpecification" in local)


def test_a_dev_stack_can_be_torn_down(variant):
    for table in of_type(variant, "AWS::DynamoDB::Table").values():
        assert table["DeletionPolicy"] == "Delete"
        assert table["Properties"]["DeletionProtectionEnabled"] is False


# -- messaging -------------------------------------------------------------------------------


def queue(resources, spec) -> dict[str, Any]:
    return by_logical_prefix(resources, "AWS::SQS::Queue", f"Messaging{spec.logical_id}")


def test_events_queue_redrives_to_the_dlq_after_3_receives(resources):
    policy = queue(resources, EVENTS_QUEUE)["RedrivePolicy"]
    assert policy["maxReceiveCount"] == 3
    assert "MessagingEventsDlq" in json.dumps(policy["deadLetterTargetArn"])
    assert queue(resources, EVENTS_DLQ)["MessageRetentionPeriod"] == 14 * 24 * 3600


def test_visibility_timeout_is_at_least_6x_the_consumers_timeout(resources):
    consumer = by_logical_prefix(resources, "AWS::Lambda::Function", "FunctionsConsumer")
    assert queue(resources, EVENTS_QUEUE)["VisibilityTimeout"] >= 6 * consumer["Timeout"]


def test_topic_is_encrypted_ssl_only_and_delivers_raw_to_the_queue(template, resources):
    topic = by_logical_prefix(resources, "AWS::SNS::Topic", "MessagingEventsTopic")
    assert "KmsMasterKeyId" in topic
    template.has_resource_properties("AWS::SNS::Subscription", {"Protocol": "sqs", "RawMessageDelivery": True})
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {"PolicyDocument": {"Statement": Match.array_with([Match.object_like(
            {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})])}},
    )  # fmt: skip
    for properties in (q["Properties"] for q in of_type(resources, "AWS::SQS::Queue").values()):
        assert properties["SqsManagedSseEnabled"] is True


# -- functions and event sources --------------------------------------------------------------


def test_functions_run_on_arm64_newest_python_with_tracing_json_logs_and_powertools(resources):
    functions = of_type(resources, "AWS::Lambda::Function")
    assert len(functions) == 6
    for function in (f["Properties"] for f in functions.values()):
        assert function["Runtime"] == "python3.14"
        assert function["Architectures"] == ["arm64"]
        assert function["TracingConfig"] == {"Mode": "Active"}
        assert function["LoggingConfig"]["LogFormat"] == "JSON"
        assert function["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"] == names.NAMESPACE
        assert function["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
        assert len(function["Layers"]) == 1
    for log_group in of_type(resources, "AWS::Logs::LogGroup").values():
        assert log_group["Properties"]["RetentionInDays"] > 0


def test_the_orchestrator_fits_api_gateways_29_seconds(resources):
    orchestrator = by_logical_prefix(resources, "AWS::Lambda::Function", "FunctionsOrchestrator")
    # the deployed timeout is the one every request budgets against (tests/integration/test_deadline.py)
    assert orchestrator["Timeout"] == FUNCTION_TIMEOUT_SECONDS < 29
    assert orchestrator["Environment"]["Variables"]["SIGN_LOANS_REQUESTS"] == "true"


def test_the_stream_feeds_the_relay_only_outbox_inserts_with_partial_failures(template):
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BisectBatchOnFunctionError": True,
            "MaximumRetryAttempts": Match.any_value(),
            "MaximumRecordAgeInSeconds": 86400,
            "DestinationConfig": {"OnFailure": {"Destination": Match.any_value()}},
            "FilterCriteria": {"Filters": [{"Pattern": json.dumps(
                {"eventName": ["INSERT"], "dynamodb": {"Keys": {"sk": {"S": [{"prefix": "EVENT#"}]}}}},
                separators=(",", ":"))}]},
        },
    )  # fmt: skip


def test_the_queue_feeds_the_consumer_with_partial_failures_and_bounded_concurrency(template):
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BatchSize": 10,
            "ScalingConfig": {"MaximumConcurrency": Match.any_value()},
        },
    )


def test_the_sweeper_runs_on_a_schedule(template):
    template.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(1 minute)"})


def test_the_audit_runs_on_a_schedule_and_reads_its_tables(template, resources):
    template.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(5 minutes)"})
    auditor = by_logical_prefix(resources, "AWS::Lambda::Function", "FunctionsAuditor")
    assert auditor["Handler"] == "functions.auditor.handler.lambda_handler"
    assert set(auditor["Environment"]["Variables"]) >= {"LOANS_TABLE_NAME", "JOURNEYS_TABLE_NAME"}


# -- APIs and IAM ----------------------------------------------------------------------------


def test_every_api_method_requires_iam_and_the_function_validates_bodies(resources):
    methods = of_type(resources, "AWS::ApiGateway::Method")
    assert len(methods) == 4
    for method in methods.values():
        assert method["Properties"]["AuthorizationType"] == "AWS_IAM"
        assert "RequestValidatorId" not in method["Properties"]
    assert not of_type(resources, "AWS::ApiGateway::RequestValidator")
    assert "AwsSolutions::AwsSolutions-APIG2" in ALL_REASONS


def test_stages_log_access_and_errors_throttle_and_trace(resources):
    stages = of_type(resources, "AWS::ApiGateway::Stage")
    assert len(stages) == 2
    for stage in stages.values():
        properties = stage["Properties"]
        assert "DestinationArn" in properties["AccessLogSetting"]
        assert properties["TracingEnabled"] is True
        [settings] = properties["MethodSettings"]
        assert settings["LoggingLevel"] == "ERROR"
        assert settings["DataTraceEnabled"] is False
        # API Gateway's own error-log group exists first, so it expires like every other log
        [execution_logs] = [name for name in stage["DependsOn"] if "ExecutionLogs" in name]
        group = resources[execution_logs]["Properties"]
        assert "API-Gateway-Execution-Logs_" in json.dumps(group["LogGroupName"])
        assert group["RetentionInDays"] > 0


def stage_of(resources, api_prefix: str) -> dict[str, Any]:
    return by_logical_prefix(resources, "AWS::ApiGateway::Stage", api_prefix)


def test_loans_api_admits_every_retry_of_every_orchestrator_request(resources):
    orchestrator = stage_of(resources, "OrchestratorApi")["MethodSettings"][0]
    loans = stage_of(resources, "LoansApi")["MethodSettings"][0]
    attempts = OrchestratorSettings.model_fields["retry_attempts"].default
    assert loans["ThrottlingRateLimit"] >= orchestrator["ThrottlingRateLimit"] * attempts
    assert loans["ThrottlingBurstLimit"] >= orchestrator["ThrottlingBurstLimit"] * attempts


def test_each_api_has_its_own_name_so_its_metrics_are_its_own(resources):
    names_by_api = {prefix: by_logical_prefix(resources, "AWS::ApiGateway::RestApi", prefix)["Name"]
                    for prefix in ("OrchestratorApi", "LoansApi")}  # fmt: skip
    assert names_by_api == {"OrchestratorApi": "LoanSaga-orchestrator", "LoansApi": "LoanSaga-loans"}
    alarms = of_type(resources, "AWS::CloudWatch::Alarm").values()
    api_alarm_names = {json.dumps(a["Properties"]["Dimensions"]) for a in alarms if "ApiName" in json.dumps(a)}
    assert len(api_alarm_names) == 2


def test_loans_api_lets_only_the_orchestrators_role_in(resources):
    orchestrator_role = {"Fn::GetAtt": [next(name for name in of_type(resources, "AWS::IAM::Role")
                                             if name.startswith("FunctionsOrchestratorRole")), "Arn"]}  # fmt: skip
    policy = by_logical_prefix(resources, "AWS::ApiGateway::RestApi", "LoansApi")["Policy"]
    allow, deny = policy["Statement"]
    assert allow == {"Effect": "Allow", "Principal": {"AWS": orchestrator_role}, "Action": "execute-api:Invoke",
                     "Resource": "execute-api:/*"}  # fmt: skip
    assert deny == {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "execute-api:Invoke",
                    "Resource": "execute-api:/*",
                    "Condition": {"StringNotEquals": {"aws:PrincipalArn": orchestrator_role}}}  # fmt: skip
    # the agent-facing API is opened by the managed policy an agent's role attaches, not by a resource policy
    assert "Policy" not in by_logical_prefix(resources, "AWS::ApiGateway::RestApi", "OrchestratorApi")


def test_the_api_gateway_account_role_is_opt_in(resources):
    assert not of_type(resources, "AWS::ApiGateway::Account")


def test_the_account_role_when_asked_for_is_kept_and_precedes_the_stages(variant):
    # Given a stack synthesized with -c apiGatewayAccountRole=true
    resources = variant
    # Then the account setting points at a role API Gateway assumes, both kept when the stack goes
    [(_, account)] = of_type(resources, "AWS::ApiGateway::Account").items()
    role_name = account["Properties"]["CloudWatchRoleArn"]["Fn::GetAtt"][0]
    role = resources[role_name]
    assert account["DeletionPolicy"] == role["DeletionPolicy"] == "Retain"
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "apigateway.amazonaws.com"
    }
    [policy] = role["Properties"]["Policies"]
    [statement] = policy["PolicyDocument"]["Statement"]
    assert all(action.startswith("logs:") for action in statement["Action"])
    # And no stage is created before the account has its role
    account_name = next(iter(of_type(resources, "AWS::ApiGateway::Account")))
    for stage in of_type(resources, "AWS::ApiGateway::Stage").values():
        assert account_name in stage["DependsOn"]


def test_the_sweeper_never_overlaps_itself(resources):
    assert (
        by_logical_prefix(resources, "AWS::Lambda::Function", "FunctionsSweeper")["ReservedConcurrentExecutions"] == 1
    )


def statements(resources) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for name, resource in resources.items():
        if resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            found += [(name, s) for s in resource["Properties"]["PolicyDocument"]["Statement"]]
    return found


def test_no_policy_grants_wildcard_actions(resources):
    for name, statement in statements(resources):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert all(action != "*" and not action.endswith(":*") for action in actions), (name, actions)


def test_only_the_orchestrator_may_invoke_loans_api_and_agents_get_only_the_orchestrator(resources):
    invokers = {name for name, s in statements(resources) if "execute-api:Invoke" in json.dumps(s["Action"])
                and "LoansApi" in json.dumps(s["Resource"])}  # fmt: skip
    assert len(invokers) == 1
    assert next(iter(invokers)).startswith("FunctionsOrchestratorRole")
    agent = by_logical_prefix(resources, "AWS::IAM::ManagedPolicy", "AgentInvokePolicy")
    [statement] = agent["PolicyDocument"]["Statement"]
    assert statement["Action"] == "execute-api:Invoke"
    assert "OrchestratorApi" in json.dumps(statement["Resource"])


def test_roles_write_only_their_own_logs_without_managed_policies(resources):
    for role in of_type(resources, "AWS::IAM::Role").values():
        assert "ManagedPolicyArns" not in role["Properties"]


# -- observability ---------------------------------------------------------------------------


def test_dashboard_shows_outbox_age_dlq_depth_and_the_roads(resources):
    [dashboard] = of_type(resources, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for needle in (names.OLDEST_PENDING_OUTBOX_AGE_SECONDS, names.OUTBOX_AGE_AT_PUBLISH_MS,
                   names.PENDING_OUTBOX_COUNT, "ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage",
                   "IteratorAge", names.EVENTS_APPLIED, names.EVENTS_DEDUPLICATED, names.EVENTS_FAILED,
                   names.IDEMPOTENT_REPLAYS, names.COMPENSATIONS, "5XXError", "4XXError", "Latency", "Throttles",
                   "Duration", names.JOURNEYS_OUT_OF_SYNC, names.OLDEST_OUT_OF_SYNC_AGE_SECONDS,
                   names.UNREADABLE_OUTBOX_ITEMS):  # fmt: skip
        assert needle in body, needle


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
        ("Latency", 2000),  # loans-api: the orchestrator's per-attempt read timeout
        ("Errors", 0),
        (names.JOURNEYS_OUT_OF_SYNC, 0),
        (names.UNREADABLE_OUTBOX_ITEMS, 0),
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


def test_every_alarm_exists(resources):
    for expected in ("EventsDlqNotEmpty", "RelayFailuresNotEmpty", "OutboxTooOld", "StreamIteratorAge",
                     "EventsQueueTooOld", "PublishFailures", "JourneysOutOfSync", "UnreadableOutboxItems",
                     "orchestrator5xxRate", "loans5xxRate", "orchestrator4xxRate", "loans4xxRate",
                     "orchestratorLatency", "loansLatency"):  # fmt: skip
        assert alarm(resources, expected)["OKActions"], expected
    for function in ("orchestrator", "loansapi", "relay", "sweeper", "consumer", "auditor"):
        for kind in ("Errors", "Throttles"):
            assert alarm(resources, f"{function}{kind}")["MetricName"] == kind


def test_a_silent_sweeper_or_auditor_is_an_alarm_not_a_quiet_night(resources):
    assert alarm(resources, "OutboxTooOld")["TreatMissingData"] == "breaching"
    assert alarm(resources, "JourneysOutOfSync")["TreatMissingData"] == "breaching"


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
    for key in (tables.OUTPUT_ORCHESTRATOR_URL, tables.OUTPUT_LOANS_API_URL, tables.OUTPUT_LOANS_TABLE,
                tables.OUTPUT_JOURNEYS_TABLE, tables.OUTPUT_EVENTS_QUEUE, tables.OUTPUT_EVENTS_DLQ,
                tables.OUTPUT_RELAY_FAILURES, tables.OUTPUT_AGENT_POLICY, tables.OUTPUT_EVENTS_TOPIC):  # fmt: skip
        assert key in outputs


# -- checks and packaging ----------------------------------------------------------------------


def test_every_nag_acknowledgement_gives_a_real_reason():
    for rule, reason in ALL_REASONS.items():
        assert rule.startswith("AwsSolutions::AwsSolutions-")
        assert len(reason) > 60, rule


def test_cfn_lint_passes(synthesized):
    _, out = synthesized
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    # Run from the project root, where .cfnlintrc.yaml lists (and explains) the ignored rules.
    done = subprocess.run([str(cfn_lint), str(out / "LoanSaga.template.json")], capture_output=True, text=True,
                          check=False, cwd=packaging.ROOT)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_code_asset_holds_importable_handlers(tmp_path):
    # Given the code asset as local bundling lays it out
    packaging.copy_app(tmp_path)
    handlers = ["functions.loans_api.handler", "functions.orchestrator.handler", "functions.relay.handler",
                "functions.consumer.handler"]  # fmt: skip
    # When a fresh interpreter imports every handler from the asset alone (dependencies from the venv)
    code = (
        f"import importlib, sys\nsys.path.insert(0, {str(tmp_path)!r})\n"
        f"for name in {handlers!r}:\n"
        "    module = importlib.import_module(name)\n"
        f"    assert module.__file__.startswith({str(tmp_path)!r}), module.__file__\n"
        "    assert callable(getattr(module, 'lambda_handler'))\n"
        "print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd="/")
    # Then each one imports, from the asset
    assert done.stdout.strip() == "ok", done.stderr
    assert not list(tmp_path.rglob("*.pyc"))


def test_cdk_nag_fails_synthesis_on_an_unacknowledged_finding(tmp_path):
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_sqs as sqs

    from app import build_app

    # Given the stack plus one queue that breaks the AWS Solutions rules (no DLQ, no SSL, no encryption)
    app, stack = build_app(cdk.App(outdir=str(tmp_path), context={"skipBundling": "true"}))
    sqs.Queue(stack, "Careless", encryption=sqs.QueueEncryption.UNENCRYPTED)
    # And one role with a wildcard resource (the finding the functions' roles acknowledge for X-Ray)
    careless_role = iam.Role(stack, "CarelessRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    careless_role.add_to_policy(iam.PolicyStatement(actions=["dynamodb:GetItem"], resources=["*"]))
    # When it is synthesized, Then synthesis fails and names the rules
    with pytest.raises(Exception, match="ValidationFailed") as failed:
        app.synth()
    # (an acknowledgement scoped to other constructs covers neither)
    for rule in ("AwsSolutions-SQS2", "AwsSolutions-SQS3", "AwsSolutions-SQS4", "AwsSolutions-IAM5"):
        assert rule in str(failed.value)
    assert "LoanSaga/Careless" in str(failed.value)
    assert "LoanSaga/CarelessRole" in str(failed.value)


def _sizing(resources: dict) -> dict:
    """What the target rate sets, as the template holds it."""
    functions = of_type(resources, "AWS::Lambda::Function")
    variables = [f["Properties"].get("Environment", {}).get("Variables", {}) for f in functions.values()]
    shards = {v["POWERTOOLS_SERVICE_NAME"]: v["PENDING_SHARDS"] for v in variables if "PENDING_SHARDS" in v}
    mappings = [m["Properties"] for m in of_type(resources, "AWS::Lambda::EventSourceMapping").values()]
    stages = {
        api: stage_of(resources, api)["MethodSettings"][0]["ThrottlingRateLimit"]
        for api in ("OrchestratorApi", "LoansApi")
    }
    return {
        "shards": sorted(set(shards.values())),
        "writers": sorted(shards),
        "parallelization": [m["ParallelizationFactor"] for m in mappings if "StartingPosition" in m],
        "consumers": [m["ScalingConfig"]["MaximumConcurrency"] for m in mappings if "ScalingConfig" in m],
        "throttles": [stages["OrchestratorApi"], stages["LoansApi"]],
    }


def test_the_defaults_are_sized_for_20_journeys_per_second(resources):
    assert _sizing(resources) == {
        "shards": ["4"],
        "writers": ["loans-api", "relay", "sweeper"],
        "parallelization": [2],
        "consumers": [10],
        "throttles": [100, 500],  # loans-api admits every retry: 5 attempts
    }


def test_a_target_rate_sizes_shards_throttles_and_concurrency(variant):
    # Given `-c targetJourneysPerSecond=10000` (the variant synthesis)
    wanted = capacity.derive(10_000)
    # Then loans-api and the sweeper agree on the shards, and the event sources and throttles follow
    assert _sizing(variant) == {
        "shards": [str(wanted.pending_shards)],
        "writers": ["loans-api", "relay", "sweeper"],
        "parallelization": [wanted.relay_parallelization_factor],
        "consumers": [wanted.consumer_max_concurrency],
        "throttles": [wanted.orchestrator_rate, wanted.orchestrator_rate * 5],
    }
    assert (wanted.pending_shards, wanted.consumer_max_concurrency) == (160, 1000)


def test_every_deployed_handler_is_an_entry_point_the_local_runtime_invokes(resources):
    # Given the Handler of every function in the template
    deployed = {f["Properties"]["Handler"] for f in of_type(resources, "AWS::Lambda::Function").values()}
    # Then they are exactly the entry points saga local's containers run, and each is a function
    assert deployed == {value for name, value in vars(entry_points).items() if name.isupper()}
    for handler in deployed:
        module, function = handler.rsplit(".", 1)
        assert callable(getattr(importlib.import_module(module), function)), handler
