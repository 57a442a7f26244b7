"""Composition root of the relay and the sweeper."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from aws_lambda_powertools import Metrics

from functions.relay.outbox_store import DynamoOutboxStore
from functions.relay.publisher import EventPublisher, SnsPublisher
from functions.relay.service import OutboxRelay, OutboxSweeper
from functions.relay.settings import SWEEPER_TIMEOUT_SECONDS, RelaySettings
from functions.relay.stream import StreamRelay
from shared import aws
from shared.clock import utc_now
from shared.entry_points import Handler
from shared.lease import CLOCK_SKEW_MARGIN, DynamoLease, Leased
from shared.outbox import SWEEPER_LEASE_KEY


def sns_publisher(settings: RelaySettings) -> SnsPublisher:
    return SnsPublisher(aws.client("sns", settings.region, settings.aws_endpoint_url), settings.events_topic_arn)


def _relay(
    settings: RelaySettings, metrics: Metrics, clock: Callable[[], datetime], publisher: EventPublisher | None = None
) -> tuple[OutboxRelay, DynamoOutboxStore]:
    store = DynamoOutboxStore(
        aws.client("dynamodb", settings.region, settings.aws_endpoint_url),
        settings.loans_table_name,
        settings.pending_shards,
    )
    publisher = publisher or sns_publisher(settings)
    return OutboxRelay(publisher, store, metrics, clock, settings.notified_ttl_seconds), store


def build_stream_handler(settings: RelaySettings, metrics: Metrics, publisher: EventPublisher | None = None) -> Handler:
    relay, _ = _relay(settings, metrics, utc_now, publisher)
    return StreamRelay(relay).handle


def build_sweeper(settings: RelaySettings, metrics: Metrics, clock: Callable[[], datetime] = utc_now) -> OutboxSweeper:
    relay, store = _relay(settings, metrics, clock)
    return OutboxSweeper(relay, store, metrics, clock, settings.sweep_threshold_seconds, settings.sweep_max_per_run)


def build_sweeper_lease(settings: RelaySettings, metrics: Metrics, clock: Callable[[], datetime] = utc_now) -> Leased:
    """One sweep at a time: the lease is an item of the loans table, the table the sweeper sweeps."""
    client = aws.client("dynamodb", settings.region, settings.aws_endpoint_url)
    store = DynamoLease(client, settings.loans_table_name, SWEEPER_LEASE_KEY)
    duration = timedelta(seconds=SWEEPER_TIMEOUT_SECONDS) + CLOCK_SKEW_MARGIN
    return Leased(store, "sweeper", duration, metrics, clock)
