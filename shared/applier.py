"""The convergent applier (D5), shared by road 1 (the orchestrator applying loans-api's reply) and
road 2 (the consumer applying the outbox event). Safe to run twice, in any order, any number of
times: the decision is pure (`decide`), the write is a compare-and-swap on `version`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from shared import state_machine
from shared.control_record import TRAIL_LENGTH, Application, ControlRecord, RecordHead, Road
from shared.errors import JourneyNotFound, StoreContention
from shared.events import LoanEvent, LoanSnapshot


class Outcome(StrEnum):
    APPLIED = "applied"  # the record moved to the event's snapshot (or advanced its seq if terminal)
    NOOP = "noop"  # already applied: seq <= lastAppliedSeq
    SKIPPED = "skipped"  # the derived transition is illegal; the record is left alone


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    record: ControlRecord  # the record to write when APPLIED, else the record as read


def already_applied(record: ControlRecord | RecordHead, event: LoanEvent) -> bool:
    """True when applying `event` to `record` is a no-op (D5): the record is at or past its seq. The
    record's head is enough to tell."""
    return event.seq <= record.lastAppliedSeq


def decide(record: ControlRecord, event: LoanEvent, now: datetime, road: Road) -> Decision:
    """What applying `event`, brought by `road`, to `record` means. Pure."""
    if already_applied(record, event):
        return Decision(Outcome.NOOP, record)
    bookkeeping = _bookkeeping(record, event.seq, event.eventId, now, road)
    if state_machine.is_terminal(record.currentState):
        # Terminal states are never left, but the record still tracks the truth's sequence.
        return Decision(Outcome.APPLIED, record.model_copy(update=bookkeeping))
    target = event.snapshot.state
    if not state_machine.can_reach(record.currentState, target):
        return Decision(Outcome.SKIPPED, record)
    return Decision(Outcome.APPLIED, record.model_copy(update=_projection(record, event.snapshot, now, bookkeeping)))


def rebuild(record: ControlRecord, truth: LoanEvent | None, now: datetime) -> Decision:
    """The record re-projected from loans-api's newest event (`truth`; None when loans-api has no ledger of
    the journey: the journey before any command, `created` at seq 0), whatever the record says: an
    operator's repair of a record that is ahead of the ledger or diverged from it (`saga audit --repair
    --rebuild`), where `decide` would call the event a no-op or a terminal record would not move. Never used
    by a road, and written only while the ledger is still at `truth` (functions/auditor/service.py), so it
    never takes a record back from what loans-api holds. NOOP when the record already shows exactly the
    truth; otherwise APPLIED with version + 1 and a `rebuild` entry in the trail. Pure."""
    if shows(record, truth):
        return Decision(Outcome.NOOP, record)
    seq, event_id, snapshot = _truth_of(record.journeyId, truth)
    bookkeeping = _bookkeeping(record, seq, event_id, now, "rebuild")
    return Decision(Outcome.APPLIED, record.model_copy(update=_projection(record, snapshot, now, bookkeeping)))


def before_any_command(journey_id: str) -> LoanSnapshot:
    """The journey as loans-api sees it before its first command: no ledger, nothing committed."""
    return LoanSnapshot(journeyId=journey_id, state="created")


def shows(record: ControlRecord, truth: LoanEvent | None) -> bool:
    """True when `record` holds exactly what `truth` says (None: loans-api has no ledger of the journey):
    its seq, its event and its loan state."""
    seq, event_id, snapshot = _truth_of(record.journeyId, truth)
    return record.lastAppliedSeq == seq and record.lastAppliedEventId == event_id and record.loan_view() == snapshot


def _truth_of(journey_id: str, truth: LoanEvent | None) -> tuple[int, str | None, LoanSnapshot]:
    if truth is None:
        return 0, None, before_any_command(journey_id)
    return truth.seq, truth.eventId, truth.snapshot


def _bookkeeping(record: ControlRecord, seq: int, event_id: str | None, now: datetime, road: Road) -> dict[str, object]:
    version = record.version + 1
    trail = [*record.appliedBy, Application(seq=seq, road=road, at=now, version=version)]
    return {
        "version": version,
        "lastAppliedSeq": seq,
        "lastAppliedEventId": event_id,
        "updatedAt": now,
        "appliedBy": trail[-TRAIL_LENGTH:],
    }


def _projection(
    record: ControlRecord, snapshot: LoanSnapshot, now: datetime, bookkeeping: dict[str, object]
) -> dict[str, object]:
    target = snapshot.state
    return {
        **bookkeeping,
        "currentState": target,
        "simulation": snapshot.simulation,
        "acceptance": snapshot.acceptance,
        "disbursement": snapshot.disbursement,
        "simulationCount": snapshot.simulationCount,
        "simulationsLeft": snapshot.simulationsLeft,
        "stateEnteredAt": record.stateEnteredAt if target == record.currentState else now,
    }


class ControlRecordStore(Protocol):
    """Port: where Control Records live."""

    def get(self, journey_id: str) -> ControlRecord | None:
        """Strongly consistent read."""
        ...

    def replace(self, record: ControlRecord, expected_version: int) -> bool:
        """Write `record` if the stored version is still `expected_version`; False if it moved."""
        ...


class EventApplier:
    """Applies events through the pure decision with a CAS write; CAS losers re-read and retry."""

    def __init__(
        self,
        store: ControlRecordStore,
        clock: Callable[[], datetime],
        max_attempts: int = 10,
    ) -> None:
        self._store = store
        self._clock = clock
        self._max_attempts = max_attempts

    def apply(
        self, event: LoanEvent, road: Road, current: ControlRecord | None = None, confirm_noop: bool = True
    ) -> Decision:
        """Apply `event`, brought by `road` (recorded in the record's trail when it changes the record);
        returns what happened and the record as it now stands. `current` saves
        the first read when the caller just read the record (a stale one only loses the CAS). With
        `confirm_noop`, a no-op decided on the caller's copy is re-read so the answer is the freshest
        record (road 1 returns it to the agent); road 2 needs no answer and skips that read."""
        for _ in range(self._max_attempts):
            supplied, current = current, None
            record = supplied or self._store.get(event.journeyId)
            if record is None:
                raise JourneyNotFound(event.journeyId)
            decision = decide(record, event, self._clock(), road)
            if decision.outcome is not Outcome.APPLIED:
                if supplied is not None and confirm_noop:
                    continue  # answer with the freshest record, not the caller's copy
                return decision
            if self._store.replace(decision.record, expected_version=record.version):
                return decision
        raise StoreContention(f"journey {event.journeyId}: {self._max_attempts} CAS attempts lost")
