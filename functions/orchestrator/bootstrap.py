"""The orchestrator's composition root: adapters behind ports, the retry decorator around the loans
client (D8), the request deadline shared by every call of a request, and the applier shared with
the consumer."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import urllib3
from aws_lambda_powertools import Metrics

from functions.orchestrator import bedrock
from functions.orchestrator.api import create_app
from functions.orchestrator.deadline import APPLY_RESERVE_SECONDS, DYNAMO_BUDGET, RequestDeadline
from functions.orchestrator.loans_gateway import LoansGateway
from functions.orchestrator.retry import RetryingLoansClient, RetryPolicy
from functions.orchestrator.service import JourneyService, JourneyStore
from functions.orchestrator.settings import OrchestratorSettings
from functions.orchestrator.store import DynamoJourneyStore
from shared import aws
from shared.applier import EventApplier
from shared.clock import utc_now
from shared.entry_points import Handler
from shared.event_ids import new_id
from shared.guards import guarded
from shared.loans_client import HttpRequester, http_loans_client
from shared.problems import problem_body


def retry_policy(settings: OrchestratorSettings) -> RetryPolicy:
    return RetryPolicy(**settings.group("retry_"))


def loans_attempt_seconds(settings: OrchestratorSettings, first: bool = False) -> float:
    """The worst case of one attempt at loans-api, the first (which may meet a cold start) or a retry:
    connect and read timeouts both run out."""
    read = settings.loans_read_timeout if first else settings.loans_retry_read_timeout
    return settings.loans_connect_timeout + read


@dataclass(frozen=True)
class Ports:
    """What the composition root makes for itself unless it is given it: the journeys table's store, the
    HTTP loans-api is reached over, the retries' sleep, the pause after a lost race, the clock of the request's
    deadline, the journey ids. The tests pass fakes (tests/fakes.py), the in-process runs a wire."""

    store: JourneyStore | None = None
    http: HttpRequester | None = None
    sleep: Callable[[float], None] = time.sleep
    pause: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    new_journey_id: Callable[[], str] = new_id


def build_service(
    settings: OrchestratorSettings, metrics: Metrics, deadline: RequestDeadline, ports: Ports = Ports()
) -> JourneyService:
    store = ports.store
    if store is None:
        dynamodb = aws.client("dynamodb", settings.region, settings.aws_endpoint_url, DYNAMO_BUDGET)
        deadline.guard_botocore(dynamodb, DYNAMO_BUDGET.worst_case_seconds())
        store = DynamoJourneyStore(dynamodb, settings.journeys_table_name)
    # One connection pool; the first attempt and the retries each wait out a cold loans-api.
    requester = ports.http or cast(HttpRequester, urllib3.PoolManager(maxsize=20))
    connect = settings.loans_connect_timeout
    first = urllib3.Timeout(connect=connect, read=settings.loans_read_timeout)
    retries = urllib3.Timeout(connect=connect, read=settings.loans_retry_read_timeout)
    retrying = RetryingLoansClient(
        http_loans_client(settings, retries, pool_size=20, http=requester),
        retry_policy(settings),
        deadline,
        attempt_seconds=loans_attempt_seconds(settings),
        reserve_seconds=APPLY_RESERVE_SECONDS,
        sleep=ports.sleep,
        first=http_loans_client(settings, first, pool_size=20, http=requester),
        first_attempt_seconds=loans_attempt_seconds(settings, first=True),
    )
    return JourneyService(
        store=store,
        loans=LoansGateway(retrying),
        applier=EventApplier(store, clock=utc_now),
        metrics=metrics,
        clock=utc_now,
        new_journey_id=ports.new_journey_id,
        pause=ports.pause,
    )


def build(settings: OrchestratorSettings, metrics: Metrics, ports: Ports = Ports()) -> Handler:
    """An API Gateway proxy handler for the orchestrator. Each invocation starts the request's
    deadline from the Lambda context's remaining time."""
    deadline = RequestDeadline(ports.monotonic)
    app = guarded(create_app(build_service(settings, metrics, deadline, ports)))

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        deadline.start(context)
        return app(event, context)

    return handle


def build_bedrock(settings: OrchestratorSettings, metrics: Metrics, ports: Ports = Ports()) -> Handler:
    """A Bedrock Agents action-group executor: each action is the API Gateway request it stands for,
    answered by the orchestrator's own handler (`build`: the same resolver, keys, receipts, problems),
    in Bedrock's response format (functions/orchestrator/bedrock.py)."""
    api = build(settings, metrics, ports)

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        _, partition, _, region, account, *_ = str(context.invoked_function_arn).split(":")
        caller = bedrock.caller_arn(event, region, account, partition)
        try:
            proxy_event = bedrock.request(event, caller)
        except bedrock.NotAnActionEvent as error:
            body = problem_body(400, "not-an-action", "Not an action-group event", str(error), False)
            return bedrock.response(event, {"statusCode": 400, "body": body})
        except bedrock.UserNotBound as error:
            body = problem_body(403, "user-not-bound", "No end user named", str(error), False)
            return bedrock.response(event, {"statusCode": 403, "body": body})
        return bedrock.response(event, api(proxy_event, context))

    return handle
