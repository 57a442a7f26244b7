"""Lambda entry of the scheduled audit (an EventBridge schedule)."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.auditor import bootstrap
from functions.auditor.audit import AuditReport
from functions.auditor.service import ScheduledAudit
from functions.auditor.settings import AuditorSettings
from shared import aws
from shared.lease import Leased
from shared.tracing import LazyTracer

logger = Logger()
tracer = LazyTracer()
metrics = Metrics()


@cache  # built lazily, once per container
def _audit() -> tuple[ScheduledAudit, Leased]:
    settings = AuditorSettings.from_env(os.environ)
    client = aws.client("dynamodb", settings.region, settings.aws_endpoint_url)
    return bootstrap.build_scheduled(settings, metrics, client), bootstrap.build_audit_lease(settings, metrics, client)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    audit, lease = _audit()
    report: AuditReport | None = lease.run(audit.run)
    if report is None:
        return {"leaseHeld": True}
    return {"audited": report.audited, "outOfSync": len(report.outOfSync), "withinGrace": len(report.withinGrace)}
