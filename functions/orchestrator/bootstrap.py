"""The orchestrator's composition root: adapters behind ports, the retry decorator around the loans
client (D8), and the applier shared with the consumer."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import cast

import boto3
import urllib3
from aws_lambda_powertools import Metrics
from uuid6 import uuid7

from functions.orchestrator.api import create_app
from functions.orchestrator.loans_client import HttpLoansClient, HttpRequester, SigV4Signer
from functions.orchestrator.loans_gateway import LoansGateway
from functions.orchestrator.retry import RetryingLoansClient, RetryPolicy
from functions.orchestrator.service import JourneyService
from functions.orchestrator.settings import OrchestratorSettings
from functions.orchestrator.store import DynamoJourneyStore
from shared import aws, problems
from shared.applier import EventApplier

# The orchestrator's own DynamoDB calls get a small budget so that, with the loans retry schedule,
# a request fits API Gateway's 29 s (tests/unit/test_retry.py computes the worst case).
DYNAMO_BUDGET = aws.AwsCallBudget(connect_timeout=0.2, read_timeout=0.4, max_attempts=2)


def utc_now() -> datetime:
    return datetime.now(UTC)


def retry_policy(settings: OrchestratorSettings) -> RetryPolicy:
    return RetryPolicy(
        attempts=settings.retry_attempts,
        base_delay=settings.retry_base_delay,
        multiplier=settings.retry_multiplier,
        max_jitter=settings.retry_max_jitter,
    )


def build_service(
    settings: OrchestratorSettings,
    metrics: Metrics,
    http: HttpRequester | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> JourneyService:
    dynamodb = aws.client("dynamodb", settings.region, settings.aws_endpoint_url, DYNAMO_BUDGET)
    store = DynamoJourneyStore(dynamodb, settings.journeys_table_name)
    signer = (
        SigV4Signer(boto3.session.Session().get_credentials, settings.region) if settings.sign_loans_requests else None
    )
    http_client = HttpLoansClient(
        settings.loans_api_url,
        http or cast(HttpRequester, urllib3.PoolManager(maxsize=20)),
        urllib3.Timeout(connect=settings.loans_connect_timeout, read=settings.loans_read_timeout),
        signer,
    )
    loans = LoansGateway(RetryingLoansClient(http_client, retry_policy(settings), sleep=sleep))
    return JourneyService(
        store=store,
        loans=loans,
        applier=EventApplier(store, clock=utc_now),
        metrics=metrics,
        clock=utc_now,
        new_journey_id=lambda: str(uuid7()),
        receipt_ttl_seconds=settings.receipt_ttl_seconds,
    )


def build(
    settings: OrchestratorSettings,
    metrics: Metrics,
    http: HttpRequester | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> problems.Handler:
    """An API Gateway proxy handler for the orchestrator."""
    return problems.guarded(create_app(build_service(settings, metrics, http, sleep)))
