"""Every function as deployed: its handler string, its environment and its role come from the synthesized
template; each runs in its own interpreter (tests/infra/lambda_container.py) against a moto server, and is
invoked with the events its trigger sends (API Gateway proxy requests, stream and SQS batches, the
schedule). Then each role is held to the AWS calls its function made: no more, no fewer.

The template's deploy-time references (a table's name, the topic's ARN, loans-api's invoke URL) are
replaced by the local resource that stands for the resource they name, and nothing else is: an
environment variable that no Settings field reads, or a Settings field that is required and unset,
fails here.

The harness is in tests/infra/deployment.py."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import urllib3

from functions.consumer.settings import ConsumerSettings
from functions.orchestrator.settings import OrchestratorSettings
from saga.links import naming
from saga.local.moto_server import MotoServer
from saga.local.pollers import SqsPoller, StreamPoller
from saga.local.resources import provision
from shared import aws
from shared.settings import BaseSettings
from shared.tables import CHANGES_INDEX, CUSTOMER_INDEX, JOURNEYS_TABLE, LOANS_TABLE
from tests.infra.deployment import REGION, SETTINGS, Container, Deployment, api_call, named, scheduled_event
from tests.infra.lambda_container import STAGE_PATH
from tests.support import PATIENT_AWS

# Set in every function by infra/functions.py for Powertools and pydantic, which read them themselves.
POWERTOOLS = {
    "POWERTOOLS_SERVICE_NAME",
    "POWERTOOLS_METRICS_NAMESPACE",
    "POWERTOOLS_LOG_LEVEL",
    "PYDANTIC_DISABLE_PLUGINS",
}
# Granted for what the platform does with the function's role, not for calls its code makes: writing its
# logs, traces, the event source mappings' polling and on-failure delivery, SNS's use of the topic's key,
# and the orchestrator's and the consumer's signed HTTP calls to loans-api.
PLATFORM = {"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}
PLATFORM_OF = {
    "LoansApi": set(),
    "Orchestrator": {"execute-api:Invoke"},
    "Relay": {"dynamodb:ListStreams", "dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator",
              "sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "kms:Decrypt", "kms:GenerateDataKey*"},
    "Sweeper": {"kms:Decrypt", "kms:GenerateDataKey*"},
    "Consumer": {"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl", "sqs:DeleteMessage",
                 "sqs:GetQueueAttributes", "execute-api:Invoke"},
    "Auditor": set(),
}  # fmt: skip
# The one setting changed from the deployed environment: the sweeper republishes what is pending now,
# not only what has waited a minute, so that one run has work.
SWEEPER_OVERRIDES = {"SWEEP_THRESHOLD_SECONDS": "0"}


@dataclass
class DeployedRun:
    template: dict[str, Any]
    settings: dict[str, BaseSettings]
    containers: dict[str, Container]
    statuses: list[tuple[str, int]]
    journey_only_road_2_knew: dict[str, Any]
    sweep: dict[str, Any]
    audit: dict[str, Any]
    dlq_depth: int


@pytest.fixture(scope="module")
def deployed(template, tmp_path_factory) -> Iterator[DeployedRun]:
    tmp = tmp_path_factory.mktemp("entry-points")
    moto = MotoServer().start()
    moto.reset()  # moto's backends are the process's: other suites' servers may have left resources
    local = provision(moto.url, REGION)
    deployment = Deployment(template.to_json(), moto, local, tmp)
    containers: dict[str, Container] = {}
    try:
        # Given loans-api served behind its stage, and the orchestrator pointed at it by the template's URL
        containers["LoansApi"] = loans = deployment.start("LoansApi", serve=True)
        assert loans.process.stdout is not None
        loans_url = f"http://127.0.0.1:{int(loans.process.stdout.readline())}{STAGE_PATH}"
        deployment.refs[named(deployment.resources, "AWS::ApiGateway::RestApi", "LoansApi")] = loans_url
        containers["Orchestrator"] = orchestrator = deployment.start("Orchestrator")

        # When an agent walks one journey to its end and cancels another
        statuses: list[tuple[str, int]] = []

        def agent(method: str, path: str, body: Any = None, key: str | None = None) -> dict[str, Any]:
            response = api_call(orchestrator, method, path, body, key)
            statuses.append((f"{method} {path}", response["statusCode"]))
            return dict(json.loads(response["body"]))

        terms = {"amount": 10000, "termMonths": 36}
        walked = agent("POST", "/journeys", {"customerId": "c-1"}, key=str(uuid.uuid4()))["journeyId"]
        record: dict[str, Any] = {}
        for command in ("simulate", "accept", "disburse"):
            body = terms if command == "simulate" else naming(record, command)
            record = agent("POST", f"/journeys/{walked}/{command}", body)
        agent("GET", f"/journeys/{walked}")
        assert [j["journeyId"] for j in agent("GET", "/journeys?customerId=c-1")["journeys"]] == [walked]
        cancelled = agent("POST", "/journeys", {"customerId": "c-2"}, key=str(uuid.uuid4()))["journeyId"]
        quote = naming(agent("POST", f"/journeys/{cancelled}/simulate", terms), "accept")
        agent("POST", f"/journeys/{cancelled}/accept", quote)
        agent("POST", f"/journeys/{cancelled}/accept", quote)  # a repeat on a live record: catches up with the ledger
        agent("POST", f"/journeys/{cancelled}/cancel")
        # And loans-api commits one simulation whose reply never reaches the orchestrator (road 1 cut)
        unseen = agent("POST", "/journeys", {"customerId": "c-3"}, key=str(uuid.uuid4()))["journeyId"]
        direct = urllib3.request("POST", f"{loans_url}/simulations", json={"journeyId": unseen, **terms},
                                 headers={"Idempotency-Key": f"direct-{unseen}"})  # fmt: skip
        statuses.append(("POST loans-api /simulations", direct.status))
        history = urllib3.request("GET", f"{loans_url}/journeys/{walked}")  # the whole truth, as operators read it
        statuses.append(("GET loans-api /journeys/{id}", history.status))

        # And the schedule runs the sweeper, the stream feeds the relay, the queue feeds the consumer
        containers["Sweeper"] = sweeper = deployment.start("Sweeper", overrides=SWEEPER_OVERRIDES)
        sweep = sweeper.invoke(scheduled_event())
        containers["Relay"] = relay = deployment.start("Relay")
        streams = aws.client("dynamodbstreams", REGION, moto.url, PATIENT_AWS)
        mappings = [
            v["Properties"] for v in deployment.resources.values() if v["Type"] == "AWS::Lambda::EventSourceMapping"
        ]
        relay_batch = int(next(m["BatchSize"] for m in mappings if "StartingPosition" in m))
        stream_poller = StreamPoller(streams, local.loans_stream_arn, relay.invoke, batch_size=relay_batch)
        while stream_poller.poll_once():
            pass
        # And the audit's schedule fires while road 2 has not yet delivered that simulation
        containers["Auditor"] = auditor = deployment.start("Auditor")
        audit = auditor.invoke(scheduled_event())
        containers["Consumer"] = consumer = deployment.start("Consumer")
        sqs = aws.client("sqs", REGION, moto.url, PATIENT_AWS)
        queue_arn = sqs.get_queue_attributes(QueueUrl=local.events_queue_url, AttributeNames=["QueueArn"])
        sqs_poller = SqsPoller(sqs, local.events_queue_url, queue_arn["Attributes"]["QueueArn"], consumer.invoke)
        while sqs_poller.poll_once():
            pass
        dlq = sqs.get_queue_attributes(QueueUrl=local.events_dlq_url, AttributeNames=["ApproximateNumberOfMessages"])
        yield DeployedRun(
            template=deployment.resources,
            settings=deployment.settings,
            containers=containers,
            statuses=statuses,
            journey_only_road_2_knew=agent("GET", f"/journeys/{unseen}"),
            sweep=sweep,
            audit=audit,
            dlq_depth=int(dlq["Attributes"]["ApproximateNumberOfMessages"]),
        )
    finally:
        for container in containers.values():
            container.stop()
        moto.stop()


# -- the entry points -----------------------------------------------------------------------------


def test_every_function_of_the_template_was_started(deployed):
    functions = [k for k, v in deployed.template.items()
                 if v["Type"] == "AWS::Lambda::Function" and k.startswith("Functions")]  # fmt: skip
    assert sorted(deployed.containers) == sorted(SETTINGS)
    assert len(functions) == len(SETTINGS)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_every_variable_the_template_sets_is_a_setting_the_function_reads(deployed, name):
    variables = set(deployed.template[named(deployed.template, "AWS::Lambda::Function", f"Functions{name}")]
                    ["Properties"]["Environment"]["Variables"])  # fmt: skip
    fields = {field.upper() for field in SETTINGS[name].model_fields}
    assert variables - POWERTOOLS <= fields, "a variable no Settings field reads"
    required = {f.upper() for f, info in SETTINGS[name].model_fields.items() if info.is_required()}
    assert required <= variables, "a required setting the template does not set"


def test_the_deployed_orchestrator_signs_its_calls_and_reaches_loans_api_by_the_templates_url(deployed):
    settings = deployed.settings["Orchestrator"]
    assert isinstance(settings, OrchestratorSettings)
    assert settings.sign_loans_requests is True
    assert settings.loans_api_url.endswith(STAGE_PATH)


def test_the_deployed_consumer_signs_its_ledger_reads_to_loans_api_by_the_templates_url(deployed):
    settings = deployed.settings["Consumer"]
    assert isinstance(settings, ConsumerSettings)
    assert settings.sign_loans_requests is True
    assert settings.loans_api_url == deployed.settings["Orchestrator"].loans_api_url


def test_the_agents_commands_succeed_through_the_deployed_entry_points(deployed):
    assert [call for call, status in deployed.statuses if status >= 300] == []


def test_the_roads_run_through_the_deployed_entry_points_without_failures(deployed):
    assert {name: c.failures for name, c in deployed.containers.items() if c.failures} == {}
    assert deployed.sweep["republished"] > 0
    assert deployed.sweep["failed"] == 0
    assert deployed.dlq_depth == 0


def test_the_deployed_audit_sees_the_journey_road_2_had_not_delivered_yet(deployed):
    # within the grace period, so not yet reported as out of sync; but looked at
    assert deployed.audit["audited"] >= 3
    assert deployed.audit["withinGrace"] == 1


def test_road_2_alone_brings_the_record_to_the_simulation_road_1_never_reported(deployed):
    # (loans-api's reply to that simulation never reached the orchestrator)
    record = deployed.journey_only_road_2_knew
    assert record["currentState"] == "simulated", record


# -- each role against the calls its function made -------------------------------------------------

_LOCAL_TABLES = {LOANS_TABLE.local_name: "loans", JOURNEYS_TABLE.local_name: "journeys"}


def called(call: dict[str, Any]) -> set[tuple[str, str]]:
    """The (IAM action, resource) pairs one recorded AWS call needs."""
    service, operation = call["service"], call["operation"]
    if service == "sns":  # PublishBatch is authorized as sns:Publish
        return {("sns:Publish", "events-topic")}
    if service != "dynamodb":
        return {(f"{service}:{operation}", "?")}
    if operation == "TransactWriteItems":  # each item needs its own action
        return {(f"dynamodb:{kind}Item", _LOCAL_TABLES[table]) for kind, table in call["TransactItems"]}
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return {(f"dynamodb:{operation}", _LOCAL_TABLES[table]) for table in call["RequestItems"]}
    target = _LOCAL_TABLES[call["TableName"]] + (f"/index/{call['IndexName']}" if "IndexName" in call else "")
    return {(f"dynamodb:{operation}", target)}


def granted(resources: dict[str, Any], name: str) -> set[tuple[str, str]]:
    """The (action, resource) pairs of the function's role, resources named as `called` names them."""
    role = named(resources, "AWS::IAM::Role", f"Functions{name}Role")
    policy = resources[named(resources, "AWS::IAM::Policy", f"Functions{name}RoleDefaultPolicy")]["Properties"]
    assert policy["Roles"] == [{"Ref": role}]
    tables = {named(resources, "AWS::DynamoDB::Table", f"Data{spec.logical_id}"): label
              for spec, label in ((LOANS_TABLE, "loans"), (JOURNEYS_TABLE, "journeys"))}  # fmt: skip
    topic = named(resources, "AWS::SNS::Topic", "MessagingEventsTopic")

    def label(resource: Any) -> str:
        text = json.dumps(resource)
        for logical_id, table in tables.items():
            if resource == {"Fn::GetAtt": [logical_id, "Arn"]}:
                return table
            if logical_id in text and "/index/" in text:
                return f"{table}/index/{resource['Fn::Join'][1][-1].split('/index/')[1]}"
        return "events-topic" if resource == {"Ref": topic} else "other"

    pairs = set()
    for statement in policy["PolicyDocument"]["Statement"]:
        assert statement["Effect"] == "Allow"
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        targets = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        pairs |= {(action, label(target)) for action in actions for target in targets}
    return pairs


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_each_role_allows_exactly_the_calls_its_function_makes(deployed, name):
    # Given the AWS calls the function made while it served its part of the run
    needed = set().union(*(called(call) for call in deployed.containers[name].calls()))
    assert needed, "the function made no AWS call: the run did not exercise it"
    # When its role's statements are read from the template
    allowed = granted(deployed.template, name)
    platform = PLATFORM | PLATFORM_OF[name]
    # Then the role allows what the code called, on the resources it called it on, and nothing else
    assert {pair for pair in allowed if pair[0] not in platform} == needed
    assert {action for action, _ in allowed} & platform == platform


def test_only_the_sweeper_and_the_auditor_read_the_changes_index(deployed):
    readers = {name for name in SETTINGS if any(target.endswith(f"/index/{CHANGES_INDEX}")
                                                 for _, target in granted(deployed.template, name))}  # fmt: skip
    assert readers == {"Sweeper", "Auditor"}


def test_only_the_orchestrator_reads_the_customer_index(deployed):
    readers = {name for name in SETTINGS if any(target.endswith(f"/index/{CUSTOMER_INDEX}")
                                                 for _, target in granted(deployed.template, name))}  # fmt: skip
    assert readers == {"Orchestrator"}


def emitted(container: Container) -> set[tuple[str, str]]:
    """(service, metric name) of every EMF metric the container's function printed (its log)."""
    found = set()
    for line in container.calls_file.with_suffix(".log").read_text().splitlines():
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if not isinstance(document, dict) or "_aws" not in document:
            continue
        for directive in document["_aws"]["CloudWatchMetrics"]:
            found |= {(document["service"], metric["Name"]) for metric in directive["Metrics"]}
    return found


@pytest.mark.parametrize(("name", "service", "metric"), [
    ("Sweeper", "sweeper", "OldestPendingOutboxAgeSeconds"),
    ("Auditor", "auditor", "JourneysAudited"),
])  # fmt: skip
def test_each_scheduled_run_emits_the_metric_its_silence_alarm_counts(deployed, name, service, metric):
    # Given the SweeperSilent / AuditorSilent alarm's "reported" metric, as the template names it
    [alarm] = [a["Properties"] for k, a in deployed.template.items()
               if a["Type"] == "AWS::CloudWatch::Alarm" and k.startswith(f"Observability{name}Silent")]  # fmt: skip
    [reported] = [m["MetricStat"]["Metric"] for m in alarm["Metrics"] if m["Id"] == "reported"]
    assert (reported["MetricName"], reported["Dimensions"]) == (metric, [{"Name": "service", "Value": service}])
    # Then the deployed function's one scheduled run emitted it (else the alarm would fire after every run)
    assert (service, metric) in emitted(deployed.containers[name])
