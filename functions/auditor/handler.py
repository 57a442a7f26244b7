"""Lambda entry of the scheduled audit (an EventBridge schedule)."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.auditor import bootstrap
from functions.auditor.service import ScheduledAudit
from functions.auditor.settings import AuditorSettings
from shared import aws
from shared.tracing import LazyTracer

logger = Logger()
tracer = LazyTracer()
metrics = Metrics()


@cache  # built lazily, once per container
def _audit() -> ScheduledAudit:
    settings = AuditorSettings.from_env(os.environ)
    client = aws.client("dynamodb", settings.region, settings.aws_endpoint_url)
    return bootstrap.build_scheduled(settings, metrics, client)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    report = _audit().run()
    return {"audited": report.audited, "outOfSync": len(report.outOfSync), "withinGrace": len(report.withinGrace)}
