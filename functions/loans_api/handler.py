"""Lambda entry for loans-api: Powertools decorators around the app built once per container."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.loans_api import bootstrap
from functions.loans_api.settings import LoansSettings
from shared.entry_points import Handler
from shared.tracing import LazyTracer

logger = Logger()
tracer = LazyTracer()
metrics = Metrics()


@cache  # built lazily, once per container
def _app() -> Handler:
    return bootstrap.build(LoansSettings.from_env(os.environ), metrics)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return _app()(event, context)
