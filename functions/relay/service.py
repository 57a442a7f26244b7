"""Road 2's first half: publish outbox events and mark them NOTIFIED (D6), and the sweeper that
republishes what the stream missed and measures the outbox's age (D7)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from functions.relay.outbox_store import OutboxStore, UnreadableItem
from functions.relay.publisher import EventPublisher
from shared import metric_names as names
from shared.events import LoanEvent

logger = Logger(child=True)


class OutboxRelay:
    """Publish, then mark. A crash between the two republishes later: at-least-once by design, and
    harmless because the consumer's apply is idempotent."""

    def __init__(
        self,
        publisher: EventPublisher,
        store: OutboxStore,
        metrics: Metrics,
        clock: Callable[[], datetime],
        notified_ttl_seconds: int,
    ) -> None:
        self._publisher = publisher
        self._store = store
        self._metrics = metrics
        self._clock = clock
        self._notified_ttl = notified_ttl_seconds

    def publish(self, events: Sequence[LoanEvent]) -> dict[str, str]:
        """Publish `events`; returns {eventId: reason} for those that failed (not marked)."""
        if not events:
            return {}
        failed = self._publisher.publish(events)
        now = self._clock()
        for event in events:
            if event.eventId in failed:
                logger.warning("publish failed", extra={"event_id": event.eventId, "reason": failed[event.eventId]})
                continue
            age_ms = max(0.0, (now - event.occurredAt).total_seconds() * 1000)
            self._metrics.add_metric(name=names.OUTBOX_AGE_AT_PUBLISH_MS, unit=MetricUnit.Milliseconds, value=age_ms)
        published = len(events) - len(failed)
        self._metrics.add_metric(name=names.EVENTS_PUBLISHED, unit=MetricUnit.Count, value=published)
        if failed:
            self._metrics.add_metric(name=names.PUBLISH_FAILURES, unit=MetricUnit.Count, value=len(failed))
        return failed

    def mark(self, event: LoanEvent) -> None:
        now = self._clock()
        if not self._store.mark_notified(event, now, int(now.timestamp()) + self._notified_ttl):
            logger.info("outbox item already marked", extra={"event_id": event.eventId})

    def count_unreadable(self, items: Sequence[UnreadableItem]) -> None:
        """Skip what cannot be read, and say so: the metric (alarmed; zero included, so the alarm sees
        data while all is well) and one log line per item. The item stays PENDING, so nothing is
        lost; retrying it would only hold up what comes after it."""
        for item in items:
            logger.error("unreadable outbox item skipped", extra={"pk": item.pk, "sk": item.sk, "reason": item.reason})
        self._metrics.add_metric(name=names.UNREADABLE_OUTBOX_ITEMS, unit=MetricUnit.Count, value=len(items))


@dataclass(frozen=True)
class SweepReport:
    pending: int
    oldest_age_seconds: float
    republished: int
    failed: int
    unreadable: int = 0


class OutboxSweeper:
    """Finds PENDING events older than the threshold (stream outage, relay bug, records past the
    stream's 24 h retention) and sends them through the relay again. Bounded work per run."""

    def __init__(
        self,
        relay: OutboxRelay,
        store: OutboxStore,
        metrics: Metrics,
        clock: Callable[[], datetime],
        threshold_seconds: float,
        max_per_run: int,
    ) -> None:
        self._relay = relay
        self._store = store
        self._metrics = metrics
        self._clock = clock
        self._threshold = threshold_seconds
        self._max_per_run = max_per_run

    def sweep(self) -> SweepReport:
        now = self._clock()
        page = self._store.oldest_pending(self._max_per_run)
        pending = self._store.count_pending()
        # An unreadable item is still pending (and never leaves by itself): it counts in the age too.
        oldest = page.oldest_occurred_at()
        # An event committed while this sweep runs is younger than `now`: its age is 0, not negative.
        oldest_age = 0.0 if oldest is None else max(0.0, (now - oldest).total_seconds())
        self._metrics.add_metric(name=names.PENDING_OUTBOX_COUNT, unit=MetricUnit.Count, value=pending)
        self._metrics.add_metric(
            name=names.OLDEST_PENDING_OUTBOX_AGE_SECONDS, unit=MetricUnit.Seconds, value=oldest_age
        )
        self._relay.count_unreadable(page.unreadable)
        stale = [p.event for p in page.events if (now - p.event.occurredAt).total_seconds() >= self._threshold]
        failed = self._relay.publish(stale)
        for event in stale:
            if event.eventId not in failed:
                self._relay.mark(event)
        report = SweepReport(pending, oldest_age, len(stale) - len(failed), len(failed), len(page.unreadable))
        if stale:
            logger.warning("republished stale outbox events", extra=report.__dict__)
        return report
