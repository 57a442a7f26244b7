"""Road 2's first half: publish outbox events and mark them NOTIFIED (D6). The stream's relay and the
sweeper (functions/relay/sweeper.py, D7) both publish through it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from functions.relay.outbox_store import OutboxStore, UnreadableItem
from functions.relay.publisher import EventPublisher
from shared import metric_names as names
from shared.events import LoanEvent

logger = Logger(child=True)

# How many NOTIFIED marks are in flight at once: one UpdateItem per event (DynamoDB has no conditional
# batch write), so a batch's marks overlap their round trips instead of queueing behind each other.
MARK_CONCURRENCY = 8


class OutboxRelay:
    """Publish, then mark. A crash between the two republishes later: at-least-once by design, and
    harmless because the consumer's apply is idempotent."""

    def __init__(
        self,
        publisher: EventPublisher,
        store: OutboxStore,
        metrics: Metrics,
        clock: Callable[[], datetime],
    ) -> None:
        self._publisher = publisher
        self._store = store
        self._metrics = metrics
        self._clock = clock
        # One pool for the relay's life, made here (its threads start at the first marks): made at the first
        # batch, two batches marked at once each made one, and one was left behind with its threads.
        self._marking = ThreadPoolExecutor(max_workers=MARK_CONCURRENCY, thread_name_prefix="mark")

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
        if not self._store.mark_notified(event, now):
            logger.info("outbox item already marked", extra={"event_id": event.eventId})

    def mark_all(self, events: Sequence[LoanEvent]) -> dict[str, Exception]:
        """Mark `events` NOTIFIED, MARK_CONCURRENCY at a time, each still conditioned on PENDING (one
        marked meanwhile is left as it is); returns {eventId: error} for those whose mark failed (still
        PENDING: the caller has them retried)."""
        if len(events) < 2:
            return self._marked_one_by_one(events)
        marks = {event.eventId: self._marking.submit(self.mark, event) for event in events}
        failed = {event_id: mark.exception() for event_id, mark in marks.items()}
        return {event_id: error for event_id, error in failed.items() if isinstance(error, Exception)}

    def _marked_one_by_one(self, events: Sequence[LoanEvent]) -> dict[str, Exception]:
        failed: dict[str, Exception] = {}
        for event in events:
            try:
                self.mark(event)
            except Exception as error:  # reported, as a failed mark in the pool is
                failed[event.eventId] = error
        return failed

    def count_unreadable(self, items: Sequence[UnreadableItem]) -> None:
        """Skip what cannot be read, and say so: the metric (alarmed; zero included, so the alarm sees
        data while all is well) and one log line per item. The item stays PENDING, so nothing is
        lost; retrying it would only hold up what comes after it."""
        for item in items:
            logger.error("unreadable outbox item skipped", extra={"pk": item.pk, "sk": item.sk, "reason": item.reason})
        self._metrics.add_metric(name=names.UNREADABLE_OUTBOX_ITEMS, unit=MetricUnit.Count, value=len(items))
