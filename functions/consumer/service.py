"""Road 2's second half: apply an outbox event from the queue through the same applier as road 1.
Nearly every event is already applied (a no-op); stale and out-of-order events converge."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import ValidationError

from shared import metric_names as names
from shared.applier import EventApplier, Outcome
from shared.events import LoanEvent

logger = Logger(child=True)

_METRIC = {
    Outcome.APPLIED: names.EVENTS_APPLIED,
    Outcome.NOOP: names.EVENTS_DEDUPLICATED,
    Outcome.SKIPPED: names.EVENTS_SKIPPED,
}


class MalformedEvent(Exception):
    """The message is not an event of the shared schema; it will reach the DLQ."""


class EventConsumer:
    def __init__(self, applier: EventApplier, metrics: Metrics) -> None:
        self._applier = applier
        self._metrics = metrics

    def consume(self, body: str) -> Outcome:
        """Apply one message body. Raises for a message that must be retried (and, after its
        receives, land in the DLQ): malformed, or about a journey that does not exist."""
        try:
            event = LoanEvent.model_validate_json(body)
        except ValidationError as error:
            self._metrics.add_metric(name=names.EVENTS_FAILED, unit=MetricUnit.Count, value=1)
            raise MalformedEvent(f"not a loan event: {error.error_count()} schema errors") from error
        try:
            decision = self._applier.apply(event)
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
