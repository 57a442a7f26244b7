"""`saga verify --stack` as a user runs it after `cdk deploy`, against a deployment on this machine
(tests/e2e/deployed_stack.py): the session's local runtime behind API Gateway's IAM check, and moto's
CloudFormation, Lambda, CloudWatch, Logs, SNS and API Gateway account settings around it. A sound
stack passes every check (exit 0); each kind of breakage fails its own check by name (exit 1)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
import urllib3

from saga.local.resources import LocalResources, provision
from shared import aws
from shared.capacity import DEFAULT_CAPACITY
from tests import saga_command
from tests.e2e.deployed_stack import ORCHESTRATOR_KEY, REGION, IamGateway, StackSpec, deploy
from tests.support import PATIENT_AWS

if TYPE_CHECKING:
    from mypy_boto3_apigateway import APIGatewayClient
    from mypy_boto3_apigateway.type_defs import PatchOperationTypeDef
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.slow
# The test's own calls to the endpoint wait on a busy machine's moto rather than fail the fixture.
PATIENT = PATIENT_AWS  # tests/support.py
ROAD_TWO_PATIENCE = 300.0


class Deployment:
    def __init__(self, resources: LocalResources, orchestrator_url: str, gateways: dict[str, IamGateway]) -> None:
        self.resources = resources
        self.gateways = gateways
        self.endpoint = resources.endpoint_url
        self.orchestrator_url = orchestrator_url
        self.logging_role = ""  # the account's API Gateway logging role (made by the fixture)

    def apigateway(self) -> APIGatewayClient:
        return aws.client("apigateway", REGION, self.endpoint, PATIENT)

    def cloudwatch(self) -> CloudWatchClient:
        return aws.client("cloudwatch", REGION, self.endpoint, PATIENT)

    def sqs(self) -> SQSClient:
        return aws.client("sqs", REGION, self.endpoint, PATIENT)

    def stack(self, name: str, **differences: Any) -> str:
        """A stack deployed next to the runtime; `differences` from a sound one (StackSpec)."""
        apis = {name: gateway.url for name, gateway in self.gateways.items()}
        deploy(StackSpec(name, **differences), self.resources, apis)
        return name

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`saga verify ARGS` as a user runs it, against this machine's endpoint."""
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "AWS_ENDPOINT_URL"))}
        environment["AWS_ENDPOINT_URL"] = self.endpoint
        # A hang guard on road 2 and the alarm topic, not a budget: each check ends once what it waits for holds,
        # and none of these tests expects one to run out (PATIENCE, 60 s, is too short for road 2 on a busy machine).
        wait = str(ROAD_TWO_PATIENCE)
        return saga_command.run(["verify", "--region", REGION, "--wait", wait, *args], environment)

    def verify(self, stack: str) -> tuple[int, dict[str, Any]]:
        """`saga verify --stack STACK --json`: its exit code, and each check's outcome by name."""
        done = self.run("--stack", stack, "--json")
        report = json.loads(done.stdout)
        assert report["ok"] is (done.returncode == 0), done.stderr
        return done.returncode, {check["check"]: check for check in report["checks"]}


API_GATEWAY_TRUST = json.dumps({"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow", "Principal": {"Service": "apigateway.amazonaws.com"}, "Action": "sts:AssumeRole"}]})  # fmt: skip


def make_logging_role(deployment: Deployment, name: str) -> str:
    """A role API Gateway may assume, in the endpoint's IAM (made once per name: the account is shared)."""
    iam = aws.client("iam", REGION, deployment.endpoint, PATIENT)
    try:
        return iam.get_role(RoleName=name)["Role"]["Arn"]
    except iam.exceptions.NoSuchEntityException:
        return iam.create_role(RoleName=name, AssumeRolePolicyDocument=API_GATEWAY_TRUST)["Role"]["Arn"]


def set_logging_role(deployment: Deployment, role: str) -> None:
    """The account's API Gateway CloudWatch role, as `aws apigateway update-account` sets it."""
    operation: PatchOperationTypeDef = {"op": "replace", "path": "/cloudwatchRoleArn", "value": role}
    deployment.apigateway().update_account(patchOperations=[operation])


@pytest.fixture(scope="module")
def deployment(system) -> Iterator[Deployment]:
    """The session's `saga local` behind the two IAM gateways; its resources as `provision` names them
    (it finds what the runtime made: tables, queues, topic and subscription are made once)."""
    resources = provision(system.aws_url, REGION)
    gateways = {
        "orchestrator": IamGateway(system.api_url, {os.environ["AWS_ACCESS_KEY_ID"]}),
        "loans-api": IamGateway(system.loans_url, {ORCHESTRATOR_KEY}),
    }
    for gateway in gateways.values():
        threading.Thread(target=gateway.serve_forever, daemon=True).start()
    found = Deployment(resources, system.api_url, gateways)
    found.logging_role = make_logging_role(found, "apigw-logs")
    set_logging_role(found, found.logging_role)
    try:
        yield found
    finally:
        for gateway in gateways.values():
            gateway.shutdown()
            gateway.server_close()


@pytest.fixture(autouse=True)
def quiet_queues(deployment, clean_proxy) -> None:
    """A runtime whose DLQ and relay-failure queue hold nothing (what other tests on the session's system
    left there is theirs), and whose road 1 no fault cuts: what a freshly deployed stack has."""
    sqs = deployment.sqs()
    for url in (deployment.resources.events_dlq_url, deployment.resources.relay_failures_url):
        while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30).get("Messages"):
            for message in batch:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def failed(checks: dict[str, Any]) -> set[str]:
    return {name for name, check in checks.items() if not check["ok"]}


def test_a_sound_deployment_passes_every_check_and_leaves_its_journey_disbursed(deployment):
    # Given a stack deployed as the code builds it, where one command was retried: the orchestrator wrote
    # IdempotentReplays, loans-api (charted too) has not
    stack = deployment.stack("Sound", replayed_by="orchestrator")
    # When the user runs saga verify
    code, checks = deployment.verify(stack)
    # Then every check holds, and it exits 0
    assert failed(checks) == set(), checks
    assert code == 0, checks
    assert "512 ms" in checks["functions"]["detail"]  # the cold start read from the REPORT lines
    # the consumer's mapping scales to 10, and one each for the 5 other functions
    peak = DEFAULT_CAPACITY.consumer_max_concurrency + 5  # the consumer as far as it scales, one of each other
    assert f"needs up to {peak}" in checks["lambda-concurrency"]["detail"]
    # its journey is labelled as verification and left final
    journey_id = re.search(r"journey (\S+) ", checks["signed-journey"]["detail"])
    assert journey_id, checks["signed-journey"]
    record = json.loads(urllib3.request("GET", f"{deployment.orchestrator_url}/journeys/{journey_id[1]}").data)
    assert record["currentState"] == "disbursed"
    assert record["customerId"].startswith("saga-verify-")
    assert "reached the alarm topic" in checks["alarm-path"]["detail"]
    assert "written only when it happens" in checks["dashboard-metrics"]["detail"]
    # and the alarm it set off is back where it was, its test queue gone
    alarm = deployment.cloudwatch().describe_alarms(AlarmNamePrefix="Sound-")["MetricAlarms"]
    assert alarm[0]["StateValue"] != "ALARM"
    assert not [q for q in deployment.sqs().list_queues().get("QueueUrls", []) if "saga-verify" in q]


def verified_with_logging_role(deployment, stack, arn: str):
    """`saga verify` of `stack` while the account's API Gateway settings name `arn` ("" for none); the
    deployment's own role is named again after it."""
    set_logging_role(deployment, arn)
    try:
        return deployment.verify(stack)
    finally:
        set_logging_role(deployment, deployment.logging_role)


def test_an_account_without_api_gateways_logging_role_fails_that_check(deployment):
    code, checks = verified_with_logging_role(deployment, deployment.stack("NoLoggingRole"), "")
    assert failed(checks) == {"api-gateway-logging-role"}, checks
    assert code == 1, checks
    assert "update-account" in checks["api-gateway-logging-role"]["next"]


def test_an_account_whose_logging_role_was_deleted_fails_that_check(deployment):
    # Given the account's API Gateway settings name a role that has since been deleted
    stack = deployment.stack("DeletedLoggingRole")
    arn = make_logging_role(deployment, "apigw-logs-deleted")
    aws.client("iam", REGION, deployment.endpoint, PATIENT).delete_role(RoleName="apigw-logs-deleted")
    code, checks = verified_with_logging_role(deployment, stack, arn)
    # Then the logging-role check fails, saying the role does not exist, and only it
    assert failed(checks) == {"api-gateway-logging-role"}, checks
    assert code == 1, checks
    assert f"{arn} does not exist" in checks["api-gateway-logging-role"]["detail"], checks["api-gateway-logging-role"]


def test_an_account_that_cannot_run_one_of_each_function_fails_the_concurrency_check(deployment):
    # Given an account of 1,000 (saga/local/moto_deployment.py) where another function reserves 995
    stack = deployment.stack("Starved")
    lambda_ = aws.client("lambda", REGION, deployment.endpoint, PATIENT)
    lambda_.put_function_concurrency(FunctionName=f"{stack}-relay", ReservedConcurrentExecutions=995)
    try:
        code, checks = deployment.verify(stack)
    finally:  # the account is shared by this module's stacks
        lambda_.delete_function_concurrency(FunctionName=f"{stack}-relay")
    assert failed(checks) == {"lambda-concurrency"}, checks
    assert code == 1, checks
    assert "needs at least 6 at once" in checks["lambda-concurrency"]["detail"]


def test_a_consumer_scaling_past_what_the_account_leaves_unreserved_is_said_not_failed(deployment):
    # Given a consumer that scales to all of an account of 1,000: it runs, and throttles at a full backlog
    _, checks = deployment.verify(deployment.stack("Greedy", consumer_concurrency=1000))
    assert "lambda-concurrency" not in failed(checks), checks
    assert "may ask for 1005" in checks["lambda-concurrency"]["detail"]


@pytest.mark.parametrize(
    ("stack_name", "fault", "check", "detail"),
    [
        ("Disabled", {"relay_mapping_enabled": False}, "event-source-mappings", "Disabled"),
        ("X86", {"architecture": "x86_64"}, "functions", "relay: architecture x86_64 (expected arm64)"),
        (
            "WrongDimension",
            {"extra_metric_service": "relays"},
            "dashboard-metrics",
            "LoanSaga/WrongDimension/EventsPublished{service=relays}",
        ),
    ],
    ids=["disabled-relay-mapping", "wrong-architecture", "dashboard-metric-nothing-writes"],
)
def test_a_stack_deployed_wrong_fails_the_check_for_it_and_only_that_one(deployment, stack_name, fault, check, detail):
    # A disabled relay mapping, a function on the wrong architecture, a dashboard metric under dimensions
    # nothing writes
    code, checks = deployment.verify(deployment.stack(stack_name, **fault))
    assert failed(checks) == {check}, checks
    assert code == 1, checks
    assert detail in checks[check]["detail"], checks[check]


def test_the_bedrock_executor_when_deployed_is_checked_like_every_function(deployment):
    # Given a stack deployed with -c bedrockAgent=true whose executor runs on the wrong architecture
    code, checks = deployment.verify(deployment.stack("WithBedrock", bedrock_executor_architecture="x86_64"))
    # Then the functions check names it (and a sound one passes: the other tests' stacks have none)
    assert failed(checks) == {"functions"}, checks
    assert code == 1, checks
    assert "bedrock-executor: architecture x86_64 (expected arm64)" in checks["functions"]["detail"]
    _, sound = deployment.verify(deployment.stack("WithSoundBedrock", bedrock_executor_architecture="arm64"))
    assert "functions" not in failed(sound), sound
    assert "bedrock-executor" in sound["functions"]["detail"]


def test_a_message_in_the_dlq_fails_the_queues_check(deployment):
    stack = deployment.stack("DlqNotEmpty")
    sqs = deployment.sqs()
    sqs.send_message(QueueUrl=deployment.resources.events_dlq_url, MessageBody="{}")
    try:
        code, checks = deployment.verify(stack)
    finally:
        sqs.purge_queue(QueueUrl=deployment.resources.events_dlq_url)
    assert failed(checks) == {"queues-empty"}, checks
    assert code == 1, checks
    assert checks["queues-empty"]["detail"] == "events DLQ: 1"


@pytest.mark.parametrize(
    ("gateway", "stack_name", "check"),
    [("orchestrator", "Open", "unsigned-refused"), ("loans-api", "LoansOpen", "loans-api-refused")],
)
def test_a_gateway_open_to_unsigned_or_any_signer_fails_that_check(deployment, gateway, stack_name, check):
    # The orchestrator open to unsigned calls, or loans-api open to any signer
    stack = deployment.stack(stack_name)
    deployment.gateways[gateway].open = True
    try:
        code, checks = deployment.verify(stack)
    finally:
        deployment.gateways[gateway].open = False
    assert failed(checks) == {check}, checks
    assert code == 1, checks


def test_for_a_human_each_failed_check_is_a_fail_line_with_what_to_do_next(deployment):
    done = deployment.run("--stack", deployment.stack("ForHumans", architecture="x86_64"))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("FAIL functions: relay: architecture x86_64") for line in lines), done.stdout
    assert any(line.startswith("ok   signed-journey: journey ") for line in lines), done.stdout
    assert "     next: redeploy with `npx cdk deploy`" in done.stdout
    assert lines[-1] == "ForHumans: 1 check(s) failed: functions"


def test_a_stack_that_cannot_be_read_exits_2_with_a_problem_document(deployment):
    done = deployment.run("--stack", "NoSuchStack", "--json")
    assert done.returncode == 2, done.stdout + done.stderr
    problem = json.loads(done.stdout)
    assert (problem["status"], problem["title"]) == (503, "cannot read the stack")
    assert "NoSuchStack" in done.stderr
