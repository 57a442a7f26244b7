"""Composition root of the relay and the sweeper. Two functions share it: what only the sweeper uses
(the sweeper, its lease) is imported when the sweeper is built, so the stream relay's cold start does not
pay for it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from aws_lambda_powertools import Metrics

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

    return SweepLimits(
        threshold_seconds=settings.sweep_threshold_seconds,
        margin_seconds=settings.sweep_margin_seconds,
        max_republished=settings.sweep_max_per_run,
        max_entries_per_partition=settings.sweep_max_entries_per_partition,
        max_revisits=settings.sweep_max_revisits,
        budget_seconds=settings.sweep_budget_seconds,
        initial_lookback_seconds=settings.sweep_initial_lookback_seconds,
        shards=settings.changes_index_shards,
        lanes=settings.sweep_lanes,
    )


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
