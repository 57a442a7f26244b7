"""Lambda entry of the consumer (SQS event source with ReportBatchItemFailures)."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

# Before anything imports pydantic: Powertools' batch utility imports its parser's event models (a tenth
# of a second or more of a cold start, never used here) when it finds pydantic already loaded.
import aws_lambda_powertools.utilities.batch  # noqa: F401
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.consumer import bootstrap
from functions.consumer.settings import ConsumerSettings
from shared.entry_points import Handler
from shared.tracing import LazyTracer

logger = Logger()
tracer = LazyTracer()
metrics = Metrics()


@cache  # built lazily, once per container
def _handler() -> Handler:
    return bootstrap.build(ConsumerSettings.from_env(os.environ), metrics)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return _handler()(event, context)
