"""The one place errors become HTTP: an AWS call that failed transiently is 503 `retryable`, a bug 500."""

from __future__ import annotations

import json
import logging

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from saga.local.apigw import LambdaContextStub, proxy_event
from shared import errors, problems


def answer_when_the_route_raises(error: Exception) -> tuple[int, dict]:
    app = APIGatewayRestResolver()
    problems.install(app)

    @app.get("/boom")
    def boom() -> dict:
        raise error

    result = app.resolve(proxy_event("GET", "/boom", {}, None), LambdaContextStub("t"))  # type: ignore[arg-type]
    return int(result["statusCode"]), json.loads(result["body"])


def client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code},
            "ResponseMetadata": {
                "RequestId": "r-1",
                "HostId": "",
                "HTTPStatusCode": status,
                "HTTPHeaders": {},
                "RetryAttempts": 0,
            },
        },
        "PutItem",
    )


@pytest.mark.parametrize(
    "error",
    [
        ReadTimeoutError(endpoint_url="https://dynamodb"),
        # (a loaded machine's moto server was seen to time out a connect: the soak's keyless simulates got a 500)
        ConnectTimeoutError(endpoint_url="https://dynamodb"),
        EndpointConnectionError(endpoint_url="https://dynamodb"),
        client_error("ThrottlingException", 400),
        client_error("ProvisionedThroughputExceededException", 400),
        client_error("InternalServerError", 500),
    ],
    ids=[
        "read-timeout",
        "connect-timeout",
        "connection-refused",
        "throttling",
        "throughput-exceeded",
        "internal-server-error",
    ],
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


def test_a_broken_invariant_is_500_not_retryable_and_logged_as_an_error(caplog):
    # Given a route that finds its own state contradicting itself
    error = errors.InvariantBroken("journey j is simulated and holds no simulation")
    # When it raises
    with caplog.at_level(logging.INFO, logger=problems.logger.name):
        status, problem = answer_when_the_route_raises(error)
    # Then the agent is told not to repeat it, and an operator finds it at ERROR with its stack
    assert (status, problem["retryable"], problem["type"].rsplit(":", 1)[-1]) == (500, False, "invariant-broken")
    logged = [r for r in caplog.records if r.getMessage() == "domain error"]
    assert [(r.levelno, r.exc_info is not None) for r in logged] == [(logging.ERROR, True)]


def test_a_refused_command_is_logged_at_info_only(caplog):
    with caplog.at_level(logging.INFO, logger=problems.logger.name):
        status, _ = answer_when_the_route_raises(errors.BusinessRuleViolated("already disbursed"))
    assert status == 409
    assert [r.levelno for r in caplog.records if r.getMessage() == "domain error"] == [logging.INFO]


def test_a_dependency_that_did_not_answer_in_time_is_a_warning_without_a_stack(caplog):
    # A 503 is the caller's to retry, not an operator's bug: no stack trace in the logs for every timeout
    with caplog.at_level(logging.INFO, logger=problems.logger.name):
        status, problem = answer_when_the_route_raises(errors.UpstreamUnavailable("loans-api did not answer"))
    assert (status, problem["retryable"]) == (503, True)
    logged = [r for r in caplog.records if r.getMessage() == "domain error"]
    assert [(r.levelno, r.exc_info is None) for r in logged] == [(logging.WARNING, True)]
