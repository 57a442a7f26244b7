"""Where a running system's parts are (the local runtime's, or a deployed stack's outputs), and the
HTTP client the commands call its APIs with."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import botocore.session
import urllib3

from shared import aws, stack_outputs, tables
from shared.loans_client import SigV4Signer

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

# Every AWS call of an ops command (and of `saga verify`). A read waits as long as botocore's own default (60 s):
# a slow answer is not a wrong one (the local endpoint serves one request at a time, and on a busy machine a
# read of 5 s timed out: a sound check failed "could not read it", a command exited 1), and a read retried after
# a timeout repeats a call AWS may have done: a second ReceiveMessage hides ten more messages from a DLQ
# listing for 30 s. A connection that cannot be made fails at once: an operator is waiting.
OPS_BUDGET = aws.AwsCallBudget(connect_timeout=1.0, read_timeout=60.0, max_attempts=2)
LOCAL_AWS_ENDPOINT = "http://127.0.0.1:4566"
LOCAL_API_URL = "http://127.0.0.1:3000"
LOCAL_LOANS_API_URL = "http://127.0.0.1:3001"


@dataclass(frozen=True)
class Target:
    """Where a running system's parts are."""

    region: str
    endpoint_url: str | None
    loans_table: str
    journeys_table: str
    events_queue_url: str
    events_dlq_url: str
    relay_failures_url: str
    api_url: str
    loans_api_url: str
    signed: bool = False
    # The role `saga dlq redrive` moves messages as: the events queue admits SendMessage from the topic and
    # from it alone (infra/messaging.py). None: the caller's own identity (the local endpoint checks none).
    redrive_role_arn: str | None = None

    def dynamodb(self) -> DynamoDBClient:
        """A DynamoDB client there (OPS_BUDGET)."""
        return aws.client("dynamodb", self.region, self.endpoint_url, OPS_BUDGET)

    def sqs(self) -> SQSClient:
        """An SQS client there (OPS_BUDGET)."""
        return aws.client("sqs", self.region, self.endpoint_url, OPS_BUDGET)

    def cloudwatch(self) -> CloudWatchClient:
        """A CloudWatch client there (the queues' ages are its AWS/SQS metrics; OPS_BUDGET)."""
        return aws.client("cloudwatch", self.region, self.endpoint_url, OPS_BUDGET)

    def redrive_sqs(self) -> SQSClient:
        """An SQS client as the DLQ redrive role (assumed with the caller's credentials), or `sqs()`."""
        if self.redrive_role_arn is None:
            return self.sqs()
        sts: Any = aws.session().create_client("sts", region_name=self.region, endpoint_url=self.endpoint_url)
        granted = sts.assume_role(RoleArn=self.redrive_role_arn, RoleSessionName="saga-dlq-redrive")["Credentials"]
        assumed = botocore.session.Session()
        assumed.set_credentials(granted["AccessKeyId"], granted["SecretAccessKey"], granted["SessionToken"])
        return aws.client("sqs", self.region, self.endpoint_url, OPS_BUDGET, from_session=assumed)


def local_target(endpoint_url: str, region: str, api_url: str, loans_api_url: str) -> Target:
    """The system at a local (or other) AWS endpoint: its tables and queues by their local names."""
    sqs = aws.client("sqs", region, endpoint_url, OPS_BUDGET)

    def url(spec: tables.QueueSpec) -> str:
        return str(sqs.get_queue_url(QueueName=spec.local_name)["QueueUrl"])

    return Target(
        region,
        endpoint_url,
        tables.LOANS_TABLE.local_name,
        tables.JOURNEYS_TABLE.local_name,
        url(tables.EVENTS_QUEUE),
        url(tables.EVENTS_DLQ),
        url(tables.RELAY_FAILURES_QUEUE),
        api_url,
        loans_api_url,
    )


def stack_target(stack_name: str, region: str) -> Target:
    """A deployed stack, found through its outputs; its APIs take SigV4-signed requests."""
    stacks = aws.client("cloudformation", region, None).describe_stacks(StackName=stack_name)["Stacks"]
    try:
        return target_from_outputs({o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}, region)
    except KeyError as missing:
        raise Unreachable(f"stack {stack_name} has no output {missing}: is it this system's stack?") from None


def target_from_outputs(outputs: dict[str, str], region: str) -> Target:
    """The system a stack's outputs name."""
    return Target(
        region,
        None,
        outputs[stack_outputs.OUTPUT_LOANS_TABLE],
        outputs[stack_outputs.OUTPUT_JOURNEYS_TABLE],
        outputs[stack_outputs.OUTPUT_EVENTS_QUEUE],
        outputs[stack_outputs.OUTPUT_EVENTS_DLQ],
        outputs[stack_outputs.OUTPUT_RELAY_FAILURES],
        outputs[stack_outputs.OUTPUT_ORCHESTRATOR_URL].rstrip("/"),
        outputs[stack_outputs.OUTPUT_LOANS_API_URL].rstrip("/"),
        signed=True,
        # A stack older than this output admits anyone's redrive.
        redrive_role_arn=outputs.get(stack_outputs.OUTPUT_DLQ_REDRIVE_ROLE),
    )


class Unreachable(Exception):
    """A part of the system did not answer as it should (exit code 2)."""


class Http:
    """JSON over HTTP to the system's APIs, signed with SigV4 for a deployed stack; no retries."""

    def __init__(self, target: Target) -> None:
        self._pool = urllib3.PoolManager(timeout=urllib3.Timeout(connect=2.0, read=40.0), retries=False)
        self._signer = None
        if target.signed:
            import boto3

            self._signer = SigV4Signer(boto3.session.Session().get_credentials, target.region)

    def call(
        self, method: str, url: str, body: dict[str, Any] | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        """One request: the status and the JSON answer (or its text, when it is not JSON)."""
        data = None if body is None else json.dumps(body).encode()
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        if self._signer is not None:
            all_headers = self._signer.sign(method, url, data, all_headers)
        response = self._pool.request(method, url, body=data, headers=all_headers)
        try:
            return response.status, json.loads(response.data or b"null")
        except ValueError:
            return response.status, response.data.decode(errors="replace")
