"""loans-api's composition root: the only place that knows which adapters back which ports."""

from __future__ import annotations

from aws_lambda_powertools import Metrics

from functions.loans_api.api import create_app
from functions.loans_api.service import LoansService
from functions.loans_api.settings import LoansSettings
from functions.loans_api.store import DynamoLoanStore
from shared import aws
from shared.clock import utc_now
from shared.entry_points import Handler
from shared.guards import guarded


def build_service(settings: LoansSettings, metrics: Metrics) -> LoansService:
    dynamodb = aws.client("dynamodb", settings.region, settings.aws_endpoint_url)
    store = DynamoLoanStore(dynamodb, settings.loans_table_name, settings.changes_index_shards)
    return LoansService(
        store,
        metrics,
        clock=utc_now,
        receipt_ttl_seconds=settings.receipt_ttl_seconds,
        max_simulations=settings.max_simulations_per_journey,
    )


def build(settings: LoansSettings, metrics: Metrics) -> Handler:
    """An API Gateway proxy handler for loans-api (the resolver behind the body-size guard)."""
    return guarded(create_app(build_service(settings, metrics)))
