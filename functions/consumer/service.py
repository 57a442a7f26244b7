"""Road 2's second half: apply an outbox event from the queue through the same applier as road 1.
Nearly every event is already applied (a no-op, decided on the batch's one read). A message is a
claim, not a fact (D15): one the applier would act on is confirmed against loans-api's ledger first,
and what the ledger says is applied, never the message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from shared import metric_names as names
from shared.applier import EventApplier, Outcome, already_applied
from shared.control_record import ControlRecord, RecordHead
from shared.errors import JourneyNotFound
from shared.events import LoanEvent, UnreadableEvent, parse_event

logger = Logger(child=True)

_METRIC = {
    Outcome.APPLIED: names.EVENTS_APPLIED,
    Outcome.NOOP: names.EVENTS_DEDUPLICATED,
    Outcome.SKIPPED: names.EVENTS_SKIPPED,
}


class RecordReader(Protocol):
    def heads(self, journey_ids: list[str]) -> dict[str, RecordHead]:
        """The stale check's fields of several records at once, strongly consistent (absent ones are
        left out): a projection, the whole record is read only for an event that applies."""
        ...

    def get(self, journey_id: str) -> ControlRecord | None:
        """A whole record, strongly consistent."""
        ...


class Ledger(Protocol):
    """Port: loans-api's ledger (shared/loans_ledger.py's LoansLedger over signed HTTP)."""

    def latest_event(self, journey_id: str) -> LoanEvent | None:
        """The journey's newest committed event, None if it has none; TransientLoansError when
        loans-api cannot answer now."""
        ...


class MalformedEvent(Exception):
    """The message is not an event this consumer can apply (not JSON, not the shared schema, or an
    event type it does not know); it is retried and then lands in the DLQ, where `saga dlq list`
    gives the same reason. Nothing is lost and nothing else in the batch is blocked."""


class EventRejected(Exception):
    """The message is not what loans-api committed (forged content, a seq beyond the ledger, an edited
    redrive): nothing is applied; it is retried (the same answer each time) and set aside in the DLQ,
    where `saga dlq list` gives the same reason."""


def confirmed(claim: LoanEvent, ledger_last: LoanEvent | None) -> LoanEvent:
    """The event to apply for a message claiming `claim`, given the ledger's newest event: the ledger's
    own when it is at or past the claim and agrees with it; EventRejected otherwise. Pure.

    At the claim's seq the whole event must be the ledger's (id, type, time, snapshot). Past it, the
    ledger's newest event is the truth the claim is an older step of: applying it is what applying the
    claim would eventually lead to, and no part of the message is used."""
    if ledger_last is None:
        raise EventRejected(
            f"loans-api has no ledger for journey {claim.journeyId}: the message claims seq {claim.seq}"
        )
    if ledger_last.seq < claim.seq:
        raise EventRejected(
            f"seq {claim.seq} is beyond loans-api's ledger for journey {claim.journeyId} (at seq {ledger_last.seq})"
        )
    if ledger_last.seq == claim.seq and ledger_last.model_dump(mode="json") != claim.model_dump(mode="json"):
        what = "eventId" if ledger_last.eventId != claim.eventId else "content"
        raise EventRejected(
            f"the message's {what} differs from what loans-api committed at seq {claim.seq} of journey "
            f"{claim.journeyId} (eventId {ledger_last.eventId})"
        )
    return ledger_last


@dataclass
class Batch:
    """What one batch of messages shares: each body read (and validated) once, the heads of its
    journeys' records read in one call, the whole records read or written since, and the ledger
    answers (one read per journey per batch, however many claims: a ledger that moves within the batch
    is caught on the message's next receive)."""

    claims: dict[str, LoanEvent | UnreadableEvent] = field(default_factory=dict)
    heads: dict[str, RecordHead] = field(default_factory=dict)
    records: dict[str, ControlRecord] = field(default_factory=dict)
    ledgers: dict[str, LoanEvent | None] = field(default_factory=dict)


class EventConsumer:
    def __init__(self, applier: EventApplier, store: RecordReader, ledger: Ledger, metrics: Metrics) -> None:
        self._applier = applier
        self._store = store
        self._ledger = ledger
        self._metrics = metrics

    def prefetch(self, bodies: list[str]) -> Batch:
        """A batch's messages, each read once, and the heads of the Control Records they are about, in
        one read (most events are duplicates that need nothing else)."""
        batch = Batch()
        for body in bodies:
            batch.claims[body] = _read_claim(body)
        journeys = [claim.journeyId for claim in batch.claims.values() if isinstance(claim, LoanEvent)]
        if journeys:
            batch.heads = self._store.heads(journeys)
        return batch

    def consume(self, body: str, batch: Batch | None = None) -> Outcome:
        """Apply one message body. Raises for a message that must be retried (and, after its
        receives, land in the DLQ): malformed (MalformedEvent), not what loans-api committed
        (EventRejected), about a journey that does not exist, or loans-api unreachable. `batch` is what
        `prefetch` read for the message's batch; it is kept up to date as events apply."""
        batch = batch or Batch()
        claim = batch.claims[body] if body in batch.claims else _read_claim(body)
        if isinstance(claim, UnreadableEvent):
            self._count(names.EVENTS_FAILED)
            raise MalformedEvent(claim.reason)
        try:
            event, outcome, version = self._consume(claim, batch)
        except EventRejected:
            self._count(names.EVENTS_REJECTED)
            raise
        except Exception:
            self._count(names.EVENTS_FAILED)
            raise
        self._count(_METRIC[outcome])
        log = logger.warning if outcome is Outcome.SKIPPED else logger.info
        log(
            "event consumed",
            extra={
                "event_id": claim.eventId,
                "journey_id": claim.journeyId,
                "seq": claim.seq,
                "applied_seq": event.seq,
                "outcome": outcome.value,
                "version": version,
            },
        )
        return outcome

    def _consume(self, claim: LoanEvent, batch: Batch) -> tuple[LoanEvent, Outcome, int]:
        journey_id = claim.journeyId
        record = batch.records.get(journey_id)
        seen: ControlRecord | RecordHead | None = record or batch.heads.get(journey_id)
        if seen is None:
            seen = record = batch.records[journey_id] = self._read(journey_id)
        if already_applied(seen, claim):
            return claim, Outcome.NOOP, seen.version  # as cheap as ever: no ledger read, no write
        event = confirmed(claim, self._newest(journey_id, batch.ledgers))
        decision = self._applier.apply(event, "outbox", current=record, confirm_noop=False)
        batch.records[journey_id] = decision.record
        return event, decision.outcome, decision.record.version

    def _newest(self, journey_id: str, ledgers: dict[str, LoanEvent | None]) -> LoanEvent | None:
        if journey_id not in ledgers:
            ledgers[journey_id] = self._ledger.latest_event(journey_id)
        return ledgers[journey_id]

    def _read(self, journey_id: str) -> ControlRecord:
        record = self._store.get(journey_id)
        if record is None:
            raise JourneyNotFound(journey_id)
        return record

    def _count(self, name: str) -> None:
        self._metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


def _read_claim(body: str) -> LoanEvent | UnreadableEvent:
    try:
        return parse_event(body)
    except UnreadableEvent as error:
        return error
