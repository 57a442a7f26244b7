"""Lambda entries for the orchestrator (API Gateway's, and Bedrock Agents' action-group executor):
Powertools decorators around the app built once per container."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.orchestrator import bootstrap
from functions.orchestrator.settings import OrchestratorSettings
from shared.entry_points import Handler
from shared.tracing import LazyTracer

logger = Logger()
tracer = LazyTracer()
metrics = Metrics()


@cache  # built lazily, once per container
def _app() -> Handler:
    return bootstrap.build(OrchestratorSettings.from_env(os.environ), metrics)


@cache
def _bedrock() -> Handler:
    return bootstrap.build_bedrock(OrchestratorSettings.from_env(os.environ), metrics)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return _app()(event, context)


@logger.inject_lambda_context(correlation_id_path="sessionId")
@tracer.capture_lambda_handler
@metrics.log_metrics
def bedrock_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Amazon Bedrock Agents' action-group executor: the same operations, in Bedrock's event format."""
    return _bedrock()(event, context)
