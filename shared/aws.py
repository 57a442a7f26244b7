"""botocore clients with explicit timeouts and capped retries, so every call fits a known budget (D8).
botocore, not boto3: importing boto3 imports s3transfer, which none of our functions uses."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Literal, overload

import botocore.session
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError, HTTPClientError

if TYPE_CHECKING:
    # The typed clients exist for the type checker only (dev dependencies, never in the Lambda layer):
    # nothing here is imported at run time, so a function still loads botocore alone.
    from botocore.client import BaseClient
    from botocore.credentials import Credentials
    from mypy_boto3_apigateway import APIGatewayClient
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_iam import IAMClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_logs import CloudWatchLogsClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient

# The services the code creates clients for; `client` gives each its typed client.
# lambda, logs, cloudwatch, apigateway and iam: `saga verify` reads a deployment through them.
ServiceName = Literal[
    "cloudformation", "dynamodb", "dynamodbstreams", "sns", "sqs", "lambda", "logs", "cloudwatch", "apigateway", "iam"
]

# Error codes AWS answers for a failure that the same request may not meet again.
TRANSIENT_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "InternalServerError",
        "InternalFailure",
        "ServiceUnavailable",
        "TransactionConflictException",
    }
)


@dataclass(frozen=True)
class AwsCallBudget:
    """Per-call limits for botocore: each attempt is bounded, and so is the number of attempts."""

    connect_timeout: float = 1.0
    read_timeout: float = 2.0
    max_attempts: int = 3

    def worst_case_seconds(self) -> float:
        """Upper bound of one logical call, including botocore's own backoff between attempts
        (standard mode: at most 20 s cap, but base 2**attempt * random <= 2**(attempts-1))."""
        backoff = sum(min(2.0**attempt, 20.0) for attempt in range(self.max_attempts - 1))
        return self.max_attempts * (self.connect_timeout + self.read_timeout) + backoff


_creating = threading.Lock()


@cache
def session() -> botocore.session.Session:
    # One session per process: it caches the service models, so clients after the first are cheap.
    # botocore's session reads the same environment, config files and credential chain as boto3's.
    return botocore.session.get_session()


@overload
def client(
    service: Literal["cloudformation"],
    region: str,
    endpoint_url: str | None,
    budget: AwsCallBudget | None = None,
    *,
    from_session: botocore.session.Session | None = None,
) -> CloudFormationClient: ...
@overload
def client(
    service: Literal["dynamodb"],
    region: str,
    endpoint_url: str | None,
    budget: AwsCallBudget | None = None,
    *,
    from_session: botocore.session.Session | None = None,
) -> DynamoDBClient: ...
@overload
def client(
    service: Literal["dynamodbstreams"],
    region: str,
    endpoint_url: str | None,
    budget: AwsCallBudget | None = None,
    *,
    from_session: botocore.session.Session | None = None,
) -> DynamoDBStreamsClient: ...
@overload
def client(
    service: Literal["sns"],
    region: str,
    endpoint_url: str | None,
    budget: AwsCallBudget | None = None,
    *,
    from_session: botocore.session.Session | None = None,
) -> SNSClient: ...
@overload
def client(
    service: Literal["sqs"],
    region: str,
    endpoint_url: str | None,
    budget: AwsCallBudget | None = None,
    *,
    from_session: botocore.session.Session | None = None,
) -> SQSClient: ...
@overload
def client(
    service: Literal["lambda"],
    region: str,
    endpoint_url: str | None,
    budget: AwsCallBudget | None = None,
    *,
    from_session: botocore.session.Session | None = None,
) -> LambdaClient: ...
@overload
def client(
    service: Literal["logs"],
    region: str,
    endpoint_url: str | None,
    budget: AwsCallBudget | None = None,
    *,
    from_session: botocore.session.Session | None = None,
) -> CloudWatchLogsClient: ...
@overload
def client(
    service: Literal["cloudwatch"],
    region: str,
    endpoint_url: str | None,
    budget: AwsCallBudget | None = None,
    *,
    from_session: botocore.session.Session | None = None,
) -> CloudWatchClient: ...
@overload
def client(
    service: Literal["apigateway"],
    region: str,
    endpoint_url: str | None,
    budget: AwsCallBudget | None = None,
    *,
    from_session: botocore.session.Session | None = None,
) -> APIGatewayClient: ...
@overload
def client(
    service: Literal["iam"],
    region: str,
    endpoint_url: str | None,
    budget: AwsCallBudget | None = None,
    *,
    from_session: botocore.session.Session | None = None,
) -> IAMClient: ...
def client(
    service: ServiceName,
    region: str,
    endpoint_url: str | None,
    budget: AwsCallBudget | None = None,
    *,
    from_session: botocore.session.Session | None = None,
) -> BaseClient:
    """A botocore client for `service`, typed for it (the overloads above: botocore's `create_client`
    returns a plain BaseClient). `from_session`: a session other than the process's shared one."""
    budget = budget or AwsCallBudget()
    config = Config(
        connect_timeout=budget.connect_timeout,
        read_timeout=budget.read_timeout,
        retries={"mode": "standard", "total_max_attempts": budget.max_attempts},
        max_pool_connections=50,
    )
    with _creating:  # creating clients from one session is not thread-safe; using them is
        return (from_session or session()).create_client(
            service, region_name=region, endpoint_url=endpoint_url, config=config
        )


def credentials() -> Credentials | None:
    """The process's AWS credentials (refreshable where the chain makes them so), from the shared session."""
    return session().get_credentials()


def is_transient(error: BaseException) -> bool:
    """True for an AWS call that failed in a way a retry of the whole request may clear: botocore's
    own retries ran out on a timeout (reading or connecting), a dropped or refused connection, throttling or
    an AWS-side 5xx. A refused certificate or proxy is not: that is the deployment's to fix, not a retry's."""
    if isinstance(error, HTTPClientError | EndpointConnectionError | ConnectTimeoutError):
        return True
    if isinstance(error, ClientError):
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        return error.response.get("Error", {}).get("Code") in TRANSIENT_CODES or status >= 500
    return False
