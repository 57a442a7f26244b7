"""Does a Control Record agree with loans-api's truth, and if not, how, since when, which road should
have brought it, and is the fix mechanical? Pure: data in, a verdict out; no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from shared.applier import Outcome, before_any_command, decide
from shared.control_record import ControlRecord
from shared.events import LoanEvent, LoanSnapshot

ROAD_1 = "road 1 (the orchestrator applies loans-api's reply)"
ROAD_2 = "road 2 (outbox -> relay -> SNS -> SQS -> consumer)"


@dataclass(frozen=True)
class JourneyView:
    """The fields on which the record and the truth must agree."""

    state: str
    seq: int
    simulation_id: str | None
    acceptance_id: str | None
    disbursement_id: str | None

    @classmethod
    def of_snapshot(cls, snapshot: LoanSnapshot, seq: int) -> JourneyView:
        return cls(
            state=snapshot.state,
            seq=seq,
            simulation_id=snapshot.simulation.simulationId if snapshot.simulation else None,
            acceptance_id=snapshot.acceptance.acceptanceId if snapshot.acceptance else None,
            disbursement_id=snapshot.disbursement.disbursementId if snapshot.disbursement else None,
        )

    @classmethod
    def of_record(cls, record: ControlRecord) -> JourneyView:
        return cls.of_snapshot(record.loan_view(), record.lastAppliedSeq)


def differences(record: JourneyView, truth: JourneyView) -> list[str]:
    """What differs, one line per field, in the order an operator reads them."""
    pairs = {
        "state": (record.state, truth.state),
        "seq": (record.seq, truth.seq),
        "simulationId": (record.simulation_id, truth.simulation_id),
        "acceptanceId": (record.acceptance_id, truth.acceptance_id),
        "disbursementId": (record.disbursement_id, truth.disbursement_id),
    }
    return [
        f"{name}: record {mine!r} != loans-api {theirs!r}" for name, (mine, theirs) in pairs.items() if mine != theirs
    ]


@dataclass(frozen=True)
class Truth:
    """What loans-api's ledger says about one journey: its newest event, which the ledger keeps whole (so
    it never expires, and it is what a repair applies); its seq, the snapshot after it and when follow."""

    journey_id: str
    last_event: LoanEvent

    @property
    def seq(self) -> int:
        return self.last_event.seq

    @property
    def snapshot(self) -> LoanSnapshot:
        return self.last_event.snapshot

    @property
    def updated_at(self) -> datetime:
        return self.last_event.occurredAt


@dataclass(frozen=True)
class Evidence:
    """What is read only for a journey that disagrees: the newest event (what a repair applies), its
    outbox status (how far road 2 got), and when the first event the record lacks was committed."""

    newest_event: LoanEvent | None = None
    newest_status: str | None = None
    first_missing_at: datetime | None = None


class Kind(StrEnum):
    BEHIND = "behind"  # the record has not applied events loans-api committed
    DIVERGED = "diverged"  # same seq, other content: changed by something other than an event
    AHEAD = "ahead"  # the record claims events loans-api does not have
    # The record claims progress (a state, a seq) for a journey loans-api has no ledger of: it never
    # committed a command for it (a journeys table restored from elsewhere, a forged event applied).
    NO_LEDGER = "no-ledger"
    NO_CONTROL_RECORD = "no-control-record"  # loans-api holds a journey the orchestrator never created


@dataclass(frozen=True)
class Finding:
    journeyId: str
    kind: Kind
    differences: list[str]
    recordSeq: int | None
    truthSeq: int
    outOfSyncSince: datetime
    ageSeconds: float
    expectedRoad: str
    repairable: bool
    repair: str  # the command that repairs it, or why there is none

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "kind": self.kind.value, "outOfSyncSince": self.outOfSyncSince.isoformat()}


def repair_command(journey_id: str) -> str:
    return f"saga audit --repair --journey {journey_id}"


def rebuild_command(journey_id: str) -> str:
    return f"saga audit --repair --rebuild --journey {journey_id}"


def judge(
    journey_id: str, record: ControlRecord | None, truth: Truth | None, evidence: Evidence, now: datetime
) -> Finding | None:
    """None when the record agrees with the truth (None: loans-api has no ledger of the journey, which
    agrees only with a record no command has reached); otherwise what differs and what to do about it.
    Judge a record read before its truth: the ledger only grows, so it is then at least as new as any
    event the record applied, and a record ahead of it claims what loans-api never committed."""
    if record is None:
        if truth is None:
            return None  # neither side knows it
        since = truth.updated_at
        return Finding(
            journeyId=journey_id,
            kind=Kind.NO_CONTROL_RECORD,
            differences=["no Control Record"],
            recordSeq=None,
            truthSeq=truth.seq,
            outOfSyncSince=since,
            ageSeconds=_age(since, now),
            expectedRoad="none: the orchestrator creates the record (POST /journeys) before any loans-api command",
            repairable=False,
            repair="no mechanical repair: loans-api was called for a journey the orchestrator never created",
        )
    truth_seq = 0 if truth is None else truth.seq
    truth_view = JourneyView.of_snapshot(before_any_command(journey_id) if truth is None else truth.snapshot, truth_seq)
    found = differences(JourneyView.of_record(record), truth_view)
    if not found:
        return None
    if truth is None:
        kind = Kind.NO_LEDGER
        since = record.updatedAt
        road = "none: loans-api never committed a command for this journey (the record was written by something else)"
        repairable, repair = (
            False,
            (
                "no mechanical repair: loans-api has no ledger of this journey, so no event explains the record; to "
                f"re-project it as loans-api sees it (created, seq 0): {rebuild_command(journey_id)}"
            ),
        )
    elif record.lastAppliedSeq < truth.seq:
        kind = Kind.BEHIND
        since = evidence.first_missing_at or truth.updated_at
        road = _road_for(evidence)
        repairable, repair = _repair(record, truth_view, evidence, now)
    else:
        kind = Kind.AHEAD if record.lastAppliedSeq > truth.seq else Kind.DIVERGED
        since = max(t for t in (truth.updated_at, record.updatedAt) if t is not None)
        road = "none: no event of loans-api explains this record (it was written by something else)"
        repairable, repair = _repair(record, truth_view, evidence, now)
    return Finding(
        journeyId=journey_id,
        kind=kind,
        differences=found,
        recordSeq=record.lastAppliedSeq,
        truthSeq=truth_seq,
        outOfSyncSince=since,
        ageSeconds=_age(since, now),
        expectedRoad=road,
        repairable=repairable,
        repair=repair,
    )


def _road_for(evidence: Evidence) -> str:
    if evidence.newest_status == "PENDING":
        return f"{ROAD_1}, else {ROAD_2}: the outbox event is still PENDING (see `saga status`, the relay)"
    if evidence.newest_status == "NOTIFIED":
        return f"{ROAD_1}, else {ROAD_2}: published, not applied (see `saga dlq list`, the consumer)"
    return f"{ROAD_1}, else {ROAD_2}"


def _repair(record: ControlRecord, truth: JourneyView, evidence: Evidence, now: datetime) -> tuple[bool, str]:
    """Mechanical only when applying loans-api's newest event through the applier brings the record
    exactly to the truth; the decision is the applier's own, so a repair can never make things worse."""
    event = evidence.newest_event
    if event is None:
        return False, "no mechanical repair: loans-api's newest event is not readable (expired or malformed)"
    # Otherwise an operator may re-project the record from the ledger (a rebuild, never automatic).
    rebuild = f"; to re-project the record from loans-api's ledger: {rebuild_command(record.journeyId)}"
    decision = decide(record, event, now, "repair")
    if decision.outcome is Outcome.NOOP:
        return False, (
            f"no mechanical repair: the applier would leave the record alone (noop: the record is at seq "
            f"{record.lastAppliedSeq}, at or past loans-api's {event.seq}){rebuild}"
        )
    if decision.outcome is not Outcome.APPLIED:
        return False, (
            f"no mechanical repair: the applier would leave the record alone ({decision.outcome.value}:"
            f" {record.currentState} -> {event.snapshot.state} is not a transition it makes){rebuild}"
        )
    left = differences(JourneyView.of_record(decision.record), truth)
    if left:
        return False, (
            f"no mechanical repair: after the newest event the record would still differ ({'; '.join(left)}){rebuild}"
        )
    return True, repair_command(record.journeyId)


def _age(since: datetime, now: datetime) -> float:
    return round(max(0.0, (now - since).total_seconds()), 3)


@dataclass(frozen=True)
class Rebuilt:
    """What a rebuild changed in one record: state and seq before and after, the version it made."""

    journeyId: str
    stateBefore: str
    stateAfter: str
    seqBefore: int
    seqAfter: int
    version: int

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class AuditReport:
    """One audit: how many journeys were compared, which disagree past the grace period (listed),
    which disagree within it (the roads may still bring them), and what a repair or rebuild did."""

    audited: int = 0
    outOfSync: list[Finding] = field(default_factory=list)
    withinGrace: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    rebuilt: list[Rebuilt] = field(default_factory=list)
    # Rebuilds not made: the record moved between its judgement and the rebuild's compare-and-swap.
    notRebuilt: list[str] = field(default_factory=list)

    @property
    def oldest_age_seconds(self) -> float:
        return max((f.ageSeconds for f in self.outOfSync), default=0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "audited": self.audited,
            "agree": not self.outOfSync,
            "outOfSync": [f.to_json() for f in self.outOfSync],
            "oldestOutOfSyncAgeSeconds": self.oldest_age_seconds,
            "withinGrace": self.withinGrace,
            "repaired": self.repaired,
            "rebuilt": [r.to_json() for r in self.rebuilt],
            "notRebuilt": self.notRebuilt,
            "unreadable": self.unreadable,
        }
