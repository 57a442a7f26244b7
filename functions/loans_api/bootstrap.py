"""loans-api's composition root: the only place that knows which adapters back which ports."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from aws_lambda_powertools import Metrics

from functions.loans_api.api import create_app
from functions.loans_api.service import LoansService, LoanStore
from functions.loans_api.settings import LoansSettings
from functions.loans_api.store import DynamoLoanStore
from shared import aws
from shared.clock import utc_now
from shared.entry_points import Handler
from shared.guards import guarded


@dataclass(frozen=True)
class Ports:
    """What the composition root makes for itself unless it is given it: the loans table's store, and the
    pause before deciding a command again after a lost race. The tests pass fakes (tests/fakes.py)."""

    store: LoanStore | None = None
    sleep: Callable[[float], None] = time.sleep


def build_service(settings: LoansSettings, metrics: Metrics, ports: Ports = Ports()) -> LoansService:
    store = ports.store or DynamoLoanStore(
        aws.client("dynamodb", settings.region, settings.aws_endpoint_url),
        settings.loans_table_name,
        settings.changes_index_shards,
    )
    return LoansService(
        store,
        metrics,
        clock=utc_now,
        receipt_ttl_seconds=settings.receipt_ttl_seconds,
        max_simulations=settings.max_simulations_per_journey,
        sleep=ports.sleep,
    )


def build(settings: LoansSettings, metrics: Metrics, ports: Ports = Ports()) -> Handler:
    """An API Gateway proxy handler for loans-api (the resolver behind the body-size guard)."""
    return guarded(create_app(build_service(settings, metrics, ports)))
