"""Road 2's first half: publish outbox events and mark them NOTIFIED (D6). The stream's relay and the
sweeper (functions/relay/sweeper.py, D7) both publish through it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from functions.relay.outbox_store import Key, OutboxStore, StoredEvent, UnreadableItem
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
    ) -> None:
        self._publisher = publisher
        self._store = store
        self._metrics = metrics
        self._clock = clock

    def read(self, keys: Sequence[Key]) -> tuple[dict[Key, dict[str, Any]], set[Key]]:
        """The committed items at `keys` (strongly consistent), and the keys left unread (to retry), each
        logged. A key with no item (never committed, or archived) is logged: it has nothing to publish."""
        found, unread = self._store.read(keys)
        for (pk, sk), reason in unread.items():
            logger.warning("outbox item unread", extra={"pk": pk, "sk": sk, "reason": reason})
        for pk, sk in (key for key in keys if key not in found and key not in unread):
            logger.warning("no outbox item at the key: nothing published", extra={"pk": pk, "sk": sk})
        return found, set(unread)

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

    def mark_all(self, stored: Sequence[StoredEvent]) -> dict[str, str]:
        """Mark `stored` NOTIFIED (BatchWriteItem puts of their items as read, D6); returns {eventId: why}
        for those whose mark failed, each logged (still PENDING: the caller has them retried)."""
        if not stored:
            return {}
        failed = self._store.mark_notified(stored, self._clock())
        for event_id, reason in failed.items():
            logger.warning("mark failed", extra={"event_id": event_id, "reason": reason})
        return failed

    def count_unreadable(self, items: Sequence[UnreadableItem]) -> None:
        """Skip what cannot be read, and say so: the metric (alarmed; zero included, so the alarm sees
        data while all is well) and one log line per item. The item stays PENDING, so nothing is
        lost; retrying it would only hold up what comes after it."""
        for item in items:
            logger.error("unreadable outbox item skipped", extra={"pk": item.pk, "sk": item.sk, "reason": item.reason})
        self._metrics.add_metric(name=names.UNREADABLE_OUTBOX_ITEMS, unit=MetricUnit.Count, value=len(items))
