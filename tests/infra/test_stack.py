"""The CDK stack's resources, synthesized once per session (offline, without packaging), checked point by
point: data, messaging, functions and their event sources, what the target rate sizes. APIs and IAM are in
test_apis_and_iam.py, observability in test_observability.py, what synthesis itself checks (cdk-nag,
cfn-lint, the code asset) in test_synthesis_checks.py."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from aws_cdk.assertions import Match

from saga.local.resources import table_definition
from shared import capacity, entry_points, tables, topology
from shared import metric_names as names
from shared.tables import EVENTS_DLQ, EVENTS_QUEUE, JOURNEYS_TABLE, LOANS_TABLE
from tests.infra.template import by_logical_prefix, of_type, scheduled_targets, stage_of

# -- data ------------------------------------------------------------------------------------


def test_tables_are_on_demand_recoverable_retained_and_expire_by_ttl(resources):
    for table in of_type(resources, "AWS::DynamoDB::Table").values():
        properties = table["Properties"]
        assert properties["BillingMode"] == "PAY_PER_REQUEST"
        assert properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
        assert properties["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
        # (not deletion protected: a failed first deploy could not roll back; tests/infra/test_deploy_rules.py)
        assert "DeletionProtectionEnabled" not in properties
        assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == ("RetainExceptOnCreate", "Retain")


def test_the_loans_table_streams_new_images_and_has_one_index_the_changes_index_and_no_pending_index(resources):
    loans = by_logical_prefix(resources, "AWS::DynamoDB::Table", "DataLoansTable")
    assert loans["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}
    indexes = {index["IndexName"]: index for index in loans["GlobalSecondaryIndexes"]}
    # No index of pending events (D7): the sweeper walks journey-changes, and no attribute of it is defined
    assert set(indexes) == {tables.CHANGES_INDEX}
    assert "pendingShard" not in {a["AttributeName"] for a in loans["AttributeDefinitions"]}
    # And the local runtime's table is the same: one index, no pending one
    local = table_definition(LOANS_TABLE, LOANS_TABLE.local_name)
    assert [index["IndexName"] for index in local["GlobalSecondaryIndexes"]] == [tables.CHANGES_INDEX]
    # The audit's and the sweeper's index: every event by type and time, keys only (small, and no write on NOTIFIED)
    changes = indexes[tables.CHANGES_INDEX]
    # Its partition key is the event type and a shard (`changesKey`, shared/keys.py), written on every event
    # item beside `type`: one entry per event, spread over the shards the target rate derives
    assert [(k["AttributeName"], k["KeyType"]) for k in changes["KeySchema"]] == [
        ("changesKey", "HASH"),
        ("eventId", "RANGE"),
    ]
    definitions = {a["AttributeName"]: a["AttributeType"] for a in loans["AttributeDefinitions"]}
    assert (definitions["changesKey"], definitions["eventId"]) == ("S", "S")
    assert "type" not in definitions, "the event type alone keys no index: one partition per type saturates"
    assert changes["Projection"] == {"ProjectionType": "KEYS_ONLY"}


def test_the_journeys_table_has_one_index_a_customers_journeys_keys_only(resources):
    journeys = by_logical_prefix(resources, "AWS::DynamoDB::Table", "DataJourneysTable")
    (index,) = journeys["GlobalSecondaryIndexes"]
    # Keyed by the creator and customer (`listing`) and the creation time (`createdAt`: a keyed create's
    # journeyId is derived from its key, so says nothing of when); keys only, so the record's later writes, which
    # carry the same key and no projected attribute, write no index item (one per journey). Not the index's first
    # name: a stack that has `customer-journeys` (by journeyId) upgrades in two deploys (docs/DEPLOY.md)
    assert index["IndexName"] == tables.CUSTOMER_INDEX != "customer-journeys"
    assert [k["AttributeName"] for k in index["KeySchema"]] == ["listing", "createdAt"]
    assert index["Projection"] == {"ProjectionType": "KEYS_ONLY"}


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


def policy_statements(resources, kind: str, target_prefix: str) -> list[dict[str, Any]]:
    """The statements of the resource policies (of `kind`) that name the resource `target_prefix`."""
    found = []
    for policy in of_type(resources, kind).values():
        if target_prefix in json.dumps(policy["Properties"].get("Topics", policy["Properties"].get("Queues"))):
            found += policy["Properties"]["PolicyDocument"]["Statement"]
    return found


def role(resources, prefix: str) -> dict[str, Any]:
    [name] = [name for name in of_type(resources, "AWS::IAM::Role") if name.startswith(prefix)]
    return {"Fn::GetAtt": [name, "Arn"]}


def test_the_topic_refuses_publish_to_every_principal_but_the_relay_and_the_sweeper(resources):
    # Given the events topic's policy (an explicit Deny: it holds against any identity policy of the account)
    statements = policy_statements(resources, "AWS::SNS::TopicPolicy", "MessagingEventsTopic")
    [deny] = [s for s in statements if s["Action"] == "sns:Publish" and "aws:PrincipalArn" in json.dumps(s)]
    # Then Publish is denied to anyone whose principal is neither the relay's role nor the sweeper's
    assert deny["Principal"] == {"AWS": "*"}
    publishers = [role(resources, "FunctionsRelayRole"), role(resources, "FunctionsSweeperRole")]
    assert deny["Condition"] == {"ArnNotEquals": {"aws:PrincipalArn": publishers}}
    # (the roles' own policies grant Publish; the other Deny is enforce_ssl's)
    assert [s["Effect"] for s in statements] == ["Deny", "Deny"]


def test_the_queue_admits_send_only_from_the_topic_and_the_redrive_role(resources):
    # Given the events queue's policy
    statements = policy_statements(resources, "AWS::SQS::QueuePolicy", "MessagingEventsQueue")
    [allow] = [s for s in statements if s["Effect"] == "Allow" and s["Action"] == "sqs:SendMessage"]
    [deny] = [s for s in statements if s["Effect"] == "Deny" and s["Action"] == "sqs:SendMessage"]
    topic = {"Ref": next(name for name in of_type(resources, "AWS::SNS::Topic") if name.startswith("MessagingEvents"))}
    # Then SNS may deliver from the topic, and every other send is denied unless it is the DLQ redrive role's
    assert allow["Principal"] == {"Service": "sns.amazonaws.com"}
    assert allow["Condition"] == {"ArnEquals": {"aws:SourceArn": topic}}
    assert deny["Principal"] == {"AWS": "*"}
    assert deny["Condition"] == {
        "ArnNotEquals": {"aws:SourceArn": topic, "aws:PrincipalArn": role(resources, "MessagingDlqRedriveRole")}
    }


def by_name(resources, kind: str, prefix: str) -> str:
    [name] = [name for name in of_type(resources, kind) if name.startswith(prefix)]
    return name


MOVE_TASK = ("sqs:StartMessageMoveTask", "sqs:ListMessageMoveTasks", "sqs:CancelMessageMoveTask")


def test_sqs_own_dlq_redrive_is_open_to_the_redrive_role_and_nobody_else(resources):
    # Given every identity policy of the stack, by the roles it is attached to
    dlq_ref = {"Fn::GetAtt": [by_name(resources, "AWS::SQS::Queue", "MessagingEventsDlq"), "Arn"]}
    queue_ref = {"Fn::GetAtt": [by_name(resources, "AWS::SQS::Queue", "MessagingEventsQueue"), "Arn"]}
    allowed: dict[str, set[tuple[str, str]]] = {}
    for policy in of_type(resources, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Effect"] != "Allow":
                continue
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            targets = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            for ref in policy["Properties"]["Roles"]:
                allowed.setdefault(ref["Ref"], set()).update(
                    (action, json.dumps(target)) for action in actions for target in targets
                )
    [redrive] = [name for name in allowed if name.startswith("MessagingDlqRedriveRole")]
    # Then the redrive role may start, follow and cancel a move task from the DLQ, with the rights the task
    # uses (receive, delete and read attributes on the DLQ, send to the queue: AWS's StartMessageMoveTask)
    needed = {(action, json.dumps(dlq_ref)) for action in
              (*MOVE_TASK, "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")}  # fmt: skip
    needed.add(("sqs:SendMessage", json.dumps(queue_ref)))
    assert needed <= allowed[redrive], sorted(needed - allowed[redrive])
    # and nothing else: SQS actions on those two queues only
    beyond = {(a, t) for a, t in allowed[redrive] if not a.startswith("sqs:") or t not in (
        json.dumps(dlq_ref), json.dumps(queue_ref))}  # fmt: skip
    assert not beyond, sorted(beyond)
    # and no other role may move messages anywhere
    others = {name: sorted(a for a, _ in grants if a in MOVE_TASK or a == "sqs:*")
              for name, grants in allowed.items() if name != redrive}  # fmt: skip
    assert not any(others.values()), {name: found for name, found in others.items() if found}
    # and the queue's resource policy lets the role's sends through (its deny spares the role's ARN)
    [deny] = [s for s in policy_statements(resources, "AWS::SQS::QueuePolicy", "MessagingEventsQueue")
              if s["Effect"] == "Deny" and s["Action"] == "sqs:SendMessage"]  # fmt: skip
    assert deny["Condition"]["ArnNotEquals"]["aws:PrincipalArn"] == {"Fn::GetAtt": [redrive, "Arn"]}, deny


# -- functions and event sources --------------------------------------------------------------


def saga_functions(resources: dict[str, Any]) -> dict[str, Any]:
    """The functions of the saga, and the Bedrock executor when enabled (not the deploy-time custom resource's)."""
    return {
        k: v
        for k, v in of_type(resources, "AWS::Lambda::Function").items()
        if k.startswith(("Functions", "BedrockAgent"))
    }


def test_functions_run_on_arm64_newest_python_with_tracing_json_logs_and_powertools(resources):
    functions = saga_functions(resources)
    assert len(functions) == 6
    for function in (f["Properties"] for f in functions.values()):
        assert function["Runtime"] == "python3.14"
        assert function["Architectures"] == ["arm64"]
        assert function["TracingConfig"] == {"Mode": "Active"}
        assert function["LoggingConfig"]["LogFormat"] == "JSON"
        assert function["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"] == names.stack_namespace("LoanSaga")
        assert function["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
        assert len(function["Layers"]) == 1
    for log_group in of_type(resources, "AWS::Logs::LogGroup").values():
        assert log_group["Properties"]["RetentionInDays"] > 0


def test_the_orchestrator_fits_api_gateways_29_seconds(resources):
    orchestrator = by_logical_prefix(resources, "AWS::Lambda::Function", "FunctionsOrchestrator")
    # the deployed timeout is the one every request budgets against (tests/integration/test_deadline.py)
    assert orchestrator["Timeout"] == topology.ORCHESTRATOR.timeout_seconds < 29
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
    # One lane at the default target (tests/infra/test_sweeper_lanes.py: more at higher targets)
    template.has_resource_properties("AWS::Scheduler::Schedule", {"ScheduleExpression": "rate(1 minute)"})


def test_scheduled_runs_are_never_retried_nor_kept_past_their_period(resources):
    # (one run at a time is a lease, shared/lease.py: tests/unit/test_lease.py, tests/integration/test_lease.py)
    configs = {c["Properties"]["FunctionName"]["Ref"]: c["Properties"]
               for c in of_type(resources, "AWS::Lambda::EventInvokeConfig").values()}  # fmt: skip
    assert sorted(name[: -len("0000000" + "0")] for name in configs) == sorted(
        k[:-8]
        for k in of_type(resources, "AWS::Lambda::Function")
        if k.startswith(("FunctionsSweeper", "FunctionsAuditor"))
    )
    targets = scheduled_targets(resources)
    assert {t["function"] for t in targets} == set(configs), f"scheduled: {targets}"
    for target in targets:
        period = 60 if target["expression"] == "rate(1 minute)" else 300
        assert target["retry"] == {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": period}, target
        assert configs[target["function"]] == {
            "FunctionName": {"Ref": target["function"]}, "Qualifier": "$LATEST",
            "MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": period}  # fmt: skip


def test_the_audit_runs_on_a_schedule_and_reads_its_tables(template, resources):
    template.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(5 minutes)"})
    auditor = by_logical_prefix(resources, "AWS::Lambda::Function", "FunctionsAuditor")
    assert auditor["Handler"] == "functions.auditor.handler.lambda_handler"
    assert set(auditor["Environment"]["Variables"]) >= {"LOANS_TABLE_NAME", "JOURNEYS_TABLE_NAME"}


# -- sizing ----------------------------------------------------------------------------------


def _sizing(resources: dict) -> dict:
    """What the target rate sets, as the template holds it."""
    functions = saga_functions(resources)
    variables = [f["Properties"].get("Environment", {}).get("Variables", {}) for f in functions.values()]
    mappings = [m["Properties"] for m in of_type(resources, "AWS::Lambda::EventSourceMapping").values()]
    stages = {
        api: stage_of(resources, api)["MethodSettings"][0]["ThrottlingRateLimit"]
        for api in ("OrchestratorApi", "LoansApi")
    }
    return {
        "pendingShards": [v["POWERTOOLS_SERVICE_NAME"] for v in variables if "PENDING_SHARDS" in v],
        # The journey-changes index's shards: its writer (loans-api) and its readers are told the same count
        "changesIndexShards": {
            v["POWERTOOLS_SERVICE_NAME"]: int(v["CHANGES_INDEX_SHARDS"])
            for v in variables
            if "CHANGES_INDEX_SHARDS" in v
        },
        "parallelization": [m["ParallelizationFactor"] for m in mappings if "StartingPosition" in m],
        "consumers": [m["ScalingConfig"]["MaximumConcurrency"] for m in mappings if "ScalingConfig" in m],
        "consumerPollers": [m["ProvisionedPollerConfig"] for m in mappings if "ProvisionedPollerConfig" in m],
        "throttles": [stages["OrchestratorApi"], stages["LoansApi"]],
    }


def test_the_defaults_are_sized_for_20_journeys_per_second(resources):
    assert _sizing(resources) == {
        "pendingShards": [],  # no function is told of pending shards: there is no pending index
        "changesIndexShards": dict.fromkeys(SHARDED_INDEX_USERS, 1),  # 40 write units/s on the hottest key: one
        "parallelization": [2],
        "consumers": [4],  # what 20 journeys/s needs (shared/capacity.py), no more: an account of 10 runs it
        "consumerPollers": [],  # standard mode: no pollers paid for while idle
        "throttles": [100, 500],  # loans-api admits every retry: 5 attempts
    }


def test_a_target_rate_sizes_throttles_concurrency_and_consumer_pollers_and_no_pending_shards(variant):
    # Given `-c targetJourneysPerSecond=10000` (the variant synthesis)
    wanted = capacity.derive(10_000)
    # Then the event sources, throttles and the changes index's shards follow, and no function is given a
    # PENDING_SHARDS
    assert _sizing(variant) == {
        "pendingShards": [],
        "changesIndexShards": dict.fromkeys(SHARDED_INDEX_USERS, wanted.changes_index_shards),
        "parallelization": [wanted.relay_parallelization_factor],
        "consumers": [],  # past 1,000 batches at once, the event source's provisioned mode instead
        "consumerPollers": [{"MinimumPollers": 2, "MaximumPollers": wanted.consumer_pollers}],
        "throttles": [wanted.orchestrator_rate, wanted.orchestrator_rate * 5],
    }
    # (10,000 journeys/s: 1,600 batches at once at the planning figure, 160 pollers of 10)
    assert (wanted.consumer_pollers, wanted.consumer_max_concurrency) == (160, 1600), wanted
    # (10,000 journeys/s, two SimulationCreated each: 20,000 index writes/s on that type, 500 per shard)
    assert wanted.changes_index_shards == 40


SHARDED_INDEX_USERS = (names.LOANS_API, names.RELAY, names.SWEEPER, names.AUDITOR)


def test_every_deployed_handler_is_an_entry_point_the_local_runtime_invokes(resources, variant):
    # Given the Handler of every function in the template, and in the variant (every flag set)
    deployed = {f["Properties"]["Handler"] for f in saga_functions(resources).values()}
    with_every_flag = {f["Properties"]["Handler"] for f in saga_functions(variant).values()}
    # Then they are exactly the entry points (saga local's containers run all but the Bedrock executor,
    # which is deployed only with `-c bedrockAgent=true`), and each is a function
    assert with_every_flag == {value for name, value in vars(entry_points).items() if name.isupper()}
    assert deployed == with_every_flag - {entry_points.BEDROCK_EXECUTOR}
    for handler in with_every_flag:
        module, function = handler.rsplit(".", 1)
        assert callable(getattr(importlib.import_module(module), function)), handler
