"""Lambda entries of the relay (DynamoDB Streams) and of the sweeper (schedule)."""

from __future__ import annotations

import os
from dataclasses import asdict
from functools import cache
from typing import TYPE_CHECKING, Any

# Before anything imports pydantic: Powertools' batch utility imports its parser's event models (a tenth
# of a second or more of a cold start, never used here) when it finds pydantic already loaded.
import aws_lambda_powertools.utilities.batch  # noqa: F401
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
def _settings() -> RelaySettings:
    return RelaySettings.from_env(os.environ)


@cache
def _sweeper() -> OutboxSweeper:
    return bootstrap.build_sweeper(_settings(), metrics)


@cache
def _lease(lane: int) -> Leased:
    return bootstrap.build_sweeper_lease(_settings(), metrics, lane=lane)


def sweeper_lane(event: dict[str, Any], lanes: int) -> int:
    """The lane a scheduled run sweeps: its schedule's input names it (infra/event_sources.py); an event
    without one (a one-lane sweeper's, the local runtime's) is lane 0's. Anything but one of the `lanes`
    is refused before the run takes a lease or reads anything."""
    lane = event.get("lane", 0)
    if isinstance(lane, bool) or not isinstance(lane, int):
        raise ValueError(f"a sweeper lane is an integer, not {lane!r}")
    if not 0 <= lane < lanes:
        raise ValueError(f"no lane {lane} among the sweeper's {lanes} lanes")
    return lane


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return _stream_handler()(event, context)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def sweeper_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    lane = sweeper_lane(event, _settings().sweep_lanes)
    logger.append_keys(sweeper_lane=lane)  # every line of the run names its lane (a silent one is the missing)
    sweeper = _sweeper()
    report: SweepReport | None = _lease(lane).run(lambda: sweeper.sweep(lane))
    return {"leaseHeld": True} if report is None else asdict(report)
