"""Road 2's second half: apply an outbox event from the queue through the same applier as road 1.
Nearly every event is already applied (a no-op); stale and out-of-order events converge."""

from __future__ import annotations

from typing import Protocol

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from shared import metric_names as names
from shared.applier import EventApplier, Outcome
from shared.control_record import ControlRecord
from shared.events import UnreadableEvent, parse_event

logger = Logger(child=True)

_METRIC = {
    Outcome.APPLIED: names.EVENTS_APPLIED,
    Outcome.NOOP: names.EVENTS_DEDUPLICATED,
    Outcome.SKIPPED: names.EVENTS_SKIPPED,
}


class RecordReader(Protocol):
    def get_many(self, journey_ids: list[str]) -> dict[str, ControlRecord]:
        """Strongly consistent reads of several records at once (absent ones are left out)."""
        ...


class MalformedEvent(Exception):
    """The message is not an event this consumer can apply (not JSON, not the shared schema, or an
    event type it does not know); it is retried and then lands in the DLQ, where `saga dlq list`
    gives the same reason. Nothing is lost and nothing else in the batch is blocked."""


class EventConsumer:
    def __init__(self, applier: EventApplier, store: RecordReader, metrics: Metrics) -> None:
        self._applier = applier
        self._store = store
        self._metrics = metrics

    def prefetch(self, bodies: list[str]) -> dict[str, ControlRecord]:
        """The Control Records a batch's events are about, in one read (most events are duplicates
        that need nothing else)."""
        journeys = []
        for body in bodies:
            try:
                journeys.append(parse_event(body).journeyId)
            except UnreadableEvent:
                continue
        return self._store.get_many(journeys) if journeys else {}

    def consume(self, body: str, known: dict[str, ControlRecord] | None = None) -> Outcome:
        """Apply one message body. Raises for a message that must be retried (and, after its
        receives, land in the DLQ): malformed, or about a journey that does not exist. `known`
        holds records already read for this batch; it is kept up to date as events apply."""
        try:
            event = parse_event(body)
        except UnreadableEvent as error:
            self._metrics.add_metric(name=names.EVENTS_FAILED, unit=MetricUnit.Count, value=1)
            raise MalformedEvent(error.reason) from error
        known = {} if known is None else known
        try:
            decision = self._applier.apply(event, "outbox", current=known.get(event.journeyId), confirm_noop=False)
            known[event.journeyId] = decision.record
        except Exception:
            self._metrics.add_metric(name=names.EVENTS_FAILED, unit=MetricUnit.Count, value=1)
            raise
        self._metrics.add_metric(name=_METRIC[decision.outcome], unit=MetricUnit.Count, value=1)
        log = logger.warning if decision.outcome is Outcome.SKIPPED else logger.info
        log(
            "event consumed",
            extra={
                "event_id": event.eventId,
                "journey_id": event.journeyId,
                "seq": event.seq,
                "outcome": decision.outcome.value,
                "version": decision.record.version,
            },
        )
        return decision.outcome
