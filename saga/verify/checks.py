"""What a check is, what it reads (`Deployment`: the stack's outputs and resources), and how the
checks run and report: every check runs, each failure names itself, its finding and its remedy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from urllib3.exceptions import HTTPError

from saga.ops.target import OPS_BUDGET, Target, Unreachable, target_from_outputs
from shared import aws, metric_names

if TYPE_CHECKING:
    from mypy_boto3_apigateway import APIGatewayClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_iam import IAMClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_lambda.type_defs import FunctionConfigurationResponseTypeDef
    from mypy_boto3_logs import CloudWatchLogsClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient

# The stack's own functions, by the Powertools service each is configured with (infra/functions.py).
SERVICES = (
    metric_names.ORCHESTRATOR,
    metric_names.LOANS_API,
    metric_names.RELAY,
    metric_names.SWEEPER,
    metric_names.CONSUMER,
    metric_names.AUDITOR,
)
# Functions a stack has only when a flag asks for them: checked like the others when it has them.
OPTIONAL_SERVICES = (metric_names.BEDROCK_EXECUTOR,)


class Failed(Exception):
    """A check found the deployment not as it must be: the message says what it found."""


@dataclass(frozen=True)
class Check:
    """One verification: `run` answers what it saw when all holds, and raises Failed otherwise."""

    name: str
    run: Callable[[Deployment], str]
    remedy: str


@dataclass(frozen=True)
class StackResource:
    logical_id: str
    kind: str
    physical_id: str


@dataclass
class Deployment:
    """A deployed stack as the checks read it: its outputs, its resources, and clients in its region."""

    stack: str
    region: str
    outputs: dict[str, str]
    resources: list[StackResource]
    wait_seconds: float = 60.0

    @classmethod
    def read(cls, stack: str, region: str, wait_seconds: float = 60.0) -> Deployment:
        """The stack's outputs and every resource it holds (ListStackResources, all pages)."""
        cloudformation = aws.client("cloudformation", region, None, OPS_BUDGET)
        described = cloudformation.describe_stacks(StackName=stack)["Stacks"][0]
        outputs = {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}
        resources = [
            StackResource(r["LogicalResourceId"], r["ResourceType"], r.get("PhysicalResourceId", ""))
            for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack)
            for r in page["StackResourceSummaries"]
        ]
        return cls(stack, region, outputs, resources, wait_seconds)

    def output(self, name: str) -> str:
        """One of the stack's outputs; a stack without it is not this system's (Unreachable, as the target's)."""
        if name not in self.outputs:
            raise Unreachable(f"stack {self.stack} has no output {name}: is it this system's stack?")
        return self.outputs[name]

    def of_type(self, kind: str) -> list[StackResource]:
        return [r for r in self.resources if r.kind == kind]

    @cached_property
    def lambda_(self) -> LambdaClient:
        return aws.client("lambda", self.region, None, OPS_BUDGET)

    @cached_property
    def logs(self) -> CloudWatchLogsClient:
        return aws.client("logs", self.region, None, OPS_BUDGET)

    @cached_property
    def iam(self) -> IAMClient:
        return aws.client("iam", self.region, None, OPS_BUDGET)

    @cached_property
    def cloudwatch(self) -> CloudWatchClient:
        return aws.client("cloudwatch", self.region, None, OPS_BUDGET)

    @cached_property
    def apigateway(self) -> APIGatewayClient:
        return aws.client("apigateway", self.region, None, OPS_BUDGET)

    @cached_property
    def sns(self) -> SNSClient:
        return aws.client("sns", self.region, None, OPS_BUDGET)

    @cached_property
    def sqs(self) -> SQSClient:
        """SQS in the stack's region (AWS_ENDPOINT_URL_* as botocore reads them, as every client here)."""
        return aws.client("sqs", self.region, None, OPS_BUDGET)

    @cached_property
    def target(self) -> Target:
        return target_from_outputs(self.outputs, self.region)

    @cached_property
    def functions(self) -> dict[str, FunctionConfigurationResponseTypeDef]:
        """The stack's saga functions by service (its other functions, e.g. custom resources', left out)."""
        found: dict[str, FunctionConfigurationResponseTypeDef] = {}
        lambda_ = self.lambda_
        for resource in self.of_type("AWS::Lambda::Function"):
            configuration = lambda_.get_function_configuration(FunctionName=resource.physical_id)
            service = configuration.get("Environment", {}).get("Variables", {}).get("POWERTOOLS_SERVICE_NAME")
            if service in SERVICES or service in OPTIONAL_SERVICES:
                found[service] = configuration
        return found


@dataclass(frozen=True)
class Outcome:
    check: str
    ok: bool
    detail: str
    remedy: str

    def to_json(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"check": self.check, "ok": self.ok, "detail": self.detail}
        return answer if self.ok else {**answer, "next": self.remedy}


def run_all(deployment: Deployment, checks: list[Check], say: Callable[[Outcome], None]) -> list[Outcome]:
    """Every check, in order, each told as it ends: a check that cannot read what it needs (an AWS
    error, an API that does not answer, a stack without an output) fails with what it met, and the others
    still run. Anything else is a bug in saga and propagates (`saga verify` exits 70 with its traceback)."""
    outcomes = []
    for check in checks:
        try:
            outcome = Outcome(check.name, True, check.run(deployment), check.remedy)
        except Failed as failure:
            outcome = Outcome(check.name, False, str(failure), check.remedy)
        except (BotoCoreError, ClientError, HTTPError, Unreachable) as error:
            outcome = Outcome(check.name, False, f"could not read it: {type(error).__name__}: {error}", check.remedy)
        say(outcome)
        outcomes.append(outcome)
    return outcomes


def line(outcome: Outcome) -> str:
    """One check as `saga status --check` tells a problem: FAIL, what, and the next step."""
    if outcome.ok:
        return f"ok   {outcome.check}: {outcome.detail}"
    return f"FAIL {outcome.check}: {outcome.detail}\n     next: {outcome.remedy}"
