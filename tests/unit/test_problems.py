"""The one place errors become HTTP: an AWS call that failed transiently is 503 `retryable`, a bug 500."""

from __future__ import annotations

import json

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from botocore.exceptions import ClientError, ReadTimeoutError

from saga.local.apigw import LambdaContextStub, proxy_event
from shared import problems


def answer_when_the_route_raises(error: Exception) -> tuple[int, dict]:
    app = APIGatewayRestResolver()
    problems.install(app)

    @app.get("/boom")
    def boom() -> dict:
        raise error

    result = app.resolve(proxy_event("GET", "/boom", {}, None), LambdaContextStub("t"))  # type: ignore[arg-type]
    return int(result["statusCode"]), json.loads(result["body"])


def client_error(code: str, status: int) -> ClientError:
    return ClientError({"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "PutItem")


@pytest.mark.parametrize(
    "error",
    [
        ReadTimeoutError(endpoint_url="https://dynamodb"),
        client_error("ThrottlingException", 400),
        client_error("ProvisionedThroughputExceededException", 400),
        client_error("InternalServerError", 500),
    ],
    ids=["read-timeout", "throttling", "throughput-exceeded", "internal-server-error"],
)
def test_an_aws_call_that_failed_transiently_is_503_retryable(error):
    status, problem = answer_when_the_route_raises(error)
    assert (status, problem["retryable"]) == (503, True)
    assert problem["type"].endswith("dependency-unavailable")


@pytest.mark.parametrize(
    "error", [client_error("ValidationException", 400), KeyError("bug")], ids=["validation-exception", "a-bug"]
)
def test_anything_else_unexpected_is_500_without_its_message(error):
    status, problem = answer_when_the_route_raises(error)
    assert status == 500
    assert "bug" not in problem["detail"]
