"""Lambda entries of the relay (DynamoDB Streams) and of the sweeper (schedule)."""

from __future__ import annotations

import os
from dataclasses import asdict
from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.relay import bootstrap
from functions.relay.settings import RelaySettings
from shared.entry_points import Handler
from shared.tracing import LazyTracer

if TYPE_CHECKING:
    from functions.relay.sweeper import OutboxSweeper, SweepReport
    from shared.lease import Leased

logger = Logger()
tracer = LazyTracer()
metrics = Metrics()


@cache  # built lazily, once per container
def _stream_handler() -> Handler:
    return bootstrap.build_stream_handler(RelaySettings.from_env(os.environ), metrics)


@cache
def _sweeper() -> tuple[OutboxSweeper, Leased]:
    settings = RelaySettings.from_env(os.environ)
    return bootstrap.build_sweeper(settings, metrics), bootstrap.build_sweeper_lease(settings, metrics)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return _stream_handler()(event, context)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def sweeper_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    sweeper, lease = _sweeper()
    report: SweepReport | None = lease.run(sweeper.sweep)
    return {"leaseHeld": True} if report is None else asdict(report)
