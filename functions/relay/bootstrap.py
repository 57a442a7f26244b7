"""Composition root of the relay and the sweeper. Two functions share it: what only the sweeper uses
(the sweeper, its lease) is imported when the sweeper is built, so the stream relay's cold start does not
pay for it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics

from functions.relay.outbox_store import DynamoOutboxStore
from functions.relay.publisher import EventPublisher, SnsPublisher
from functions.relay.service import OutboxRelay
from functions.relay.settings import SWEEPER_TIMEOUT_SECONDS, RelaySettings
from functions.relay.stream import StreamRelay
from shared import aws
from shared.clock import utc_now
from shared.entry_points import Handler
from shared.keys import sweeper_lease_key

if TYPE_CHECKING:
    from functions.relay.sweeper import OutboxSweeper, SweepLimits
    from shared.lease import Leased


def sns_publisher(settings: RelaySettings) -> SnsPublisher:
    return SnsPublisher(aws.client("sns", settings.region, settings.aws_endpoint_url), settings.events_topic_arn)


def _relay(
    settings: RelaySettings, metrics: Metrics, clock: Callable[[], datetime], publisher: EventPublisher | None = None
) -> tuple[OutboxRelay, DynamoOutboxStore]:
    store = DynamoOutboxStore(
        aws.client("dynamodb", settings.region, settings.aws_endpoint_url), settings.loans_table_name
    )
    publisher = publisher or sns_publisher(settings)
    return OutboxRelay(publisher, store, metrics, clock), store


def build_stream_handler(settings: RelaySettings, metrics: Metrics, publisher: EventPublisher | None = None) -> Handler:
    relay, _ = _relay(settings, metrics, utc_now, publisher)
    return StreamRelay(relay).handle


def sweep_limits(settings: RelaySettings) -> SweepLimits:
    from functions.relay.sweeper import SweepLimits

    return SweepLimits(**settings.group("sweep_"), shards=settings.changes_index_shards)


def build_sweeper(
    settings: RelaySettings,
    metrics: Metrics,
    clock: Callable[[], datetime] = utc_now,
    publisher: EventPublisher | None = None,
) -> OutboxSweeper:
    from functions.relay.sweeper import DynamoSweepStore, OutboxSweeper

    relay, _ = _relay(settings, metrics, clock, publisher)
    store = DynamoSweepStore(
        aws.client("dynamodb", settings.region, settings.aws_endpoint_url), settings.loans_table_name
    )
    return OutboxSweeper(relay, store, metrics, clock, sweep_limits(settings))


def build_sweeper_lease(
    settings: RelaySettings, metrics: Metrics, clock: Callable[[], datetime] = utc_now, lane: int = 0
) -> Leased:
    """One sweep of a lane at a time: the lane's lease is an item of the loans table, the table it sweeps."""
    from shared.lease import CLOCK_SKEW_MARGIN, DynamoLease, Leased

    client = aws.client("dynamodb", settings.region, settings.aws_endpoint_url)
    store = DynamoLease(client, settings.loans_table_name, sweeper_lease_key(lane))
    duration = timedelta(seconds=SWEEPER_TIMEOUT_SECONDS) + CLOCK_SKEW_MARGIN
    return Leased(store, f"sweeper lane {lane}", duration, metrics, clock)


def sweeper_lane(event: dict[str, Any], lanes: int) -> int:
    """The lane a scheduled run sweeps: its schedule's input names it (infra/event_sources.py); an event
    without one (a one-lane sweeper's, the local runtime's) is lane 0's. Anything but one of the `lanes`
    is refused before the run takes a lease or reads anything."""
    if not isinstance(event, dict):  # a direct invocation's payload may be any JSON: `null`, a list
        raise ValueError(f"a sweeper run's input is a JSON object, not {type(event).__name__}")
    lane = event.get("lane", 0)
    if isinstance(lane, bool) or not isinstance(lane, int):
        raise ValueError(f"a sweeper lane is an integer, not {lane!r}")
    if not 0 <= lane < lanes:
        raise ValueError(f"no lane {lane} among the sweeper's {lanes} lanes")
    return lane


def build_sweep_handler(settings: RelaySettings, metrics: Metrics) -> Handler:
    """The sweeper's Lambda handler: each run sweeps the lane its schedule names, under that lane's lease
    (a run that finds it held does nothing), answering its report."""
    sweeper = build_sweeper(settings, metrics)
    logger = Logger()  # the function's (the entry's shell made it first); its keys are every line's
    leases: dict[int, Leased] = {}

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        lane = sweeper_lane(event, settings.sweep_lanes)
        logger.append_keys(sweeper_lane=lane)  # every line of the run names its lane (a silent one is the missing)
        if lane not in leases:
            leases[lane] = build_sweeper_lease(settings, metrics, lane=lane)
        report = leases[lane].run(lambda: sweeper.sweep(lane))
        return {"leaseHeld": True} if report is None else asdict(report)

    return handle
