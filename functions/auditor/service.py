"""The audit: compare Control Records with loans-api's truth, list what disagrees past a grace period,
and repair what is mechanical through the same applier both roads use. The scheduled run reads only
journeys changed since the last run (plus those it still suspects), so its cost follows the traffic,
not the size of the tables."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import islice
from typing import Protocol

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from functions.auditor.audit import AuditReport, Evidence, Finding, Rebuilt, Truth, judge
from shared import event_ids
from shared import metric_names as names
from shared.applier import EventApplier, Outcome
from shared.applier import rebuild as re_project
from shared.control_record import ControlRecord
from shared.events import LoanEvent

logger = Logger(child=True)

CHUNK = 100  # journeys compared per round trip (BatchGetItem's limit)


# -- ports: what the audit reads and writes, as it needs it (functions/auditor/store.py: on DynamoDB;
# tests/fakes.py: in memory) -----------------------------------------------------------------------


@dataclass(frozen=True)
class EventFacts:
    """An event item as the audit needs it: the event (None if unreadable), its outbox status, when."""

    event: LoanEvent | None
    status: str | None
    occurred_at: datetime | None


@dataclass(frozen=True, order=True)
class Change:
    """One event in the changes index: its UUIDv7 id (so: when) and its journey."""

    event_id: str
    journey_id: str


@dataclass
class Ledgers:
    truths: dict[str, Truth] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)


class TruthReader(Protocol):
    def ledgers(self, journey_ids: list[str]) -> Ledgers: ...

    def event(self, journey_id: str, seq: int) -> EventFacts | None: ...


# Where a page of the Control Records starts: the (pk, sk) of the last item the previous page read.
SweepKey = tuple[str, str]


class ChangeFinder(Protocol):
    def changed_between(self, after: str, end: datetime, limit: int) -> list[Change]: ...

    def all_journeys(self) -> Iterator[str]: ...

    def records_page(self, start: SweepKey | None, limit: int) -> tuple[list[str], SweepKey | None]:
        """The journeys of the Control Records in the next `limit` items of the journeys table after
        `start` (None: its beginning), and where the page after starts (None: the table's end)."""
        ...


class ControlRecords(Protocol):
    """The Control Records the audit compares (the applier writes its repairs through its own store)."""

    def get(self, journey_id: str) -> ControlRecord | None: ...

    def get_many(self, journey_ids: list[str]) -> dict[str, ControlRecord]: ...


@dataclass(frozen=True)
class AuditState:
    """Where the last scheduled run stopped, and the journeys it must look at again (they disagreed,
    within the grace period or past it) until they agree."""

    checked_until: datetime | None = None
    suspects: tuple[str, ...] = ()
    # Set when a run was capped: the next run goes on right after this eventId.
    resume_after: str | None = None
    # How many runs have saved it: a run saves only over the version it read (0: none yet).
    version: int = 0
    # Where the sweep of the Control Records goes on (None: from the beginning of the journeys table).
    sweep_from: SweepKey | None = None


class AuditStateConflict(Exception):
    """Another run saved the state since this run read it: this run's state is not saved over it."""


class AuditStateStore(Protocol):
    """The scheduled audit's memory between runs."""

    def get(self) -> AuditState: ...

    def put(self, state: AuditState, read: AuditState) -> None:
        """Save `state` over `read`, the state this run started from; AuditStateConflict if it moved."""
        ...


class RecordRebuilder(Protocol):
    """Where a rebuild is written: the record and loans-api's ledger checked in one atomic write."""

    def rebuild(self, record: ControlRecord, judged_version: int, ledger_seq: int) -> bool:
        """Write `record` if the stored record is still at `judged_version` and loans-api's ledger still at
        `ledger_seq` (0: no ledger); False, writing nothing, if either moved."""
        ...


class JourneyAuditor:
    def __init__(
        self,
        truths: TruthReader,
        records: ControlRecords,
        applier: EventApplier,
        rebuilds: RecordRebuilder,
        clock: Callable[[], datetime],
        grace_seconds: float,
    ) -> None:
        self._truths = truths
        self._records = records
        self._applier = applier
        self._rebuilds = rebuilds
        self._clock = clock
        self._grace = grace_seconds

    def audit(self, journey_ids: Iterable[str], repair: bool = False, rebuild: bool = False) -> AuditReport:
        """Compare every journey in `journey_ids`; with `repair`, apply loans-api's newest event to each
        record out of sync past the grace period whose fix is mechanical, then judge it again (the report
        says what it is now). With `rebuild` too (an operator's explicit choice, never the scheduled
        audit's), a record out of sync that no repair fixes (ahead of loans-api, diverged, terminal
        against the truth, or of a journey loans-api has no ledger of) is re-projected from loans-api's
        ledger as it stands when the rebuild is written."""
        report = AuditReport()
        for chunk in _chunks(journey_ids, CHUNK):
            self._audit_chunk(list(dict.fromkeys(chunk)), repair, rebuild and repair, report)
        return report

    def _audit_chunk(self, journey_ids: list[str], repair: bool, rebuild: bool, report: AuditReport) -> None:
        # The records first, the ledgers second: a ledger only grows, so one read after the record is at
        # least as new as every event the record applied; a command landing between the two reads makes
        # the record look behind (which the applier mends), never ahead (which a rebuild would take back).
        records = self._records.get_many(journey_ids)
        ledgers = self._truths.ledgers(journey_ids)
        report.unreadable += ledgers.unreadable
        for journey_id in journey_ids:
            record, truth = records.get(journey_id), ledgers.truths.get(journey_id)
            if journey_id in ledgers.unreadable or (record is None and truth is None):
                continue  # unreadable (listed as such), or neither side knows it
            report.audited += 1
            finding = self._judge(journey_id, record, truth)
            # Within the grace period the roads may still deliver: only what is overdue is repaired.
            overdue = finding is not None and finding.ageSeconds >= self._grace
            if finding is not None and overdue and repair and finding.repairable and truth is not None:
                finding = self._repair(finding, truth, report)
            elif finding is not None and overdue and rebuild and record is not None:
                finding = self._rebuild(finding, record, truth, report)
            if finding is None:
                continue
            if finding.ageSeconds >= self._grace:
                report.outOfSync.append(finding)
            else:
                report.withinGrace.append(journey_id)

    def _judge(self, journey_id: str, record: ControlRecord | None, truth: Truth | None) -> Finding | None:
        now = self._clock()
        if judge(journey_id, record, truth, Evidence(), now) is None:
            return None  # agreement needs no more reads; a disagreement gets its evidence
        return judge(journey_id, record, truth, self._evidence(record, truth), now)

    def _judge_again(self, journey_id: str, finding: Finding) -> Finding | None:
        """The journey judged on a fresh pair after a repair or rebuild (the record first, the ledger
        second, as `_audit_chunk`), so a command that landed meanwhile is not reported as the record ahead."""
        record = self._records.get(journey_id)
        ledgers = self._truths.ledgers([journey_id])
        if journey_id in ledgers.unreadable:
            return finding
        return self._judge(journey_id, record, ledgers.truths.get(journey_id))

    def _evidence(self, record: ControlRecord | None, truth: Truth | None) -> Evidence:
        if truth is None:
            return Evidence()
        newest = self._truths.event(truth.journey_id, truth.seq)
        first_missing = None
        if record is not None and record.lastAppliedSeq < truth.seq - 1:
            first_missing = self._truths.event(truth.journey_id, record.lastAppliedSeq + 1)
        elif record is not None and record.lastAppliedSeq == truth.seq - 1:
            first_missing = newest
        return Evidence(
            newest_event=truth.last_event,
            newest_status=newest.status if newest else None,
            first_missing_at=first_missing.occurred_at if first_missing else None,
        )

    def _repair(self, finding: Finding, truth: Truth, report: AuditReport) -> Finding | None:
        """loans-api's newest event applied through the applier: its own decision, so the record never
        goes back (a no-op if a road got there first)."""
        event = truth.last_event
        decision = self._applier.apply(event, "repair", confirm_noop=False)
        logger.warning(
            "repaired a Control Record with loans-api's newest event",
            extra={
                "journey_id": finding.journeyId,
                "event_id": event.eventId,
                "seq": event.seq,
                "outcome": decision.outcome.value,
                "version": decision.record.version,
            },
        )
        if decision.outcome is Outcome.APPLIED:
            report.repaired.append(finding.journeyId)
        return self._judge_again(finding.journeyId, finding)

    def _rebuild(
        self, finding: Finding, record: ControlRecord, truth: Truth | None, report: AuditReport
    ) -> Finding | None:
        """The judged record re-projected from the truth it was judged on, written only if neither moved
        since (`RecordRebuilder`): what it writes is loans-api's ledger as it stands at that instant, so it
        never lowers a seq, leaves a terminal state or offers an action loans-api holds otherwise."""
        decision = re_project(record, None if truth is None else truth.last_event, self._clock())
        if decision.outcome is not Outcome.APPLIED:
            return self._judge_again(finding.journeyId, finding)
        ledger_seq = 0 if truth is None else truth.seq
        if not self._rebuilds.rebuild(decision.record, judged_version=record.version, ledger_seq=ledger_seq):
            report.notRebuilt.append(finding.journeyId)
            logger.warning(
                "not rebuilt: the journey moved since it was audited (its record or loans-api's ledger); "
                "audit it again",
                extra={"journey_id": finding.journeyId, "version": record.version, "ledger_seq": ledger_seq},
            )
        else:
            rebuilt = Rebuilt(
                journeyId=finding.journeyId,
                stateBefore=record.currentState,
                stateAfter=decision.record.currentState,
                seqBefore=record.lastAppliedSeq,
                seqAfter=decision.record.lastAppliedSeq,
                version=decision.record.version,
            )
            report.rebuilt.append(rebuilt)
            logger.warning("rebuilt a Control Record from loans-api's ledger", extra=rebuilt.to_json())
        return self._judge_again(finding.journeyId, finding)


@dataclass(frozen=True)
class AuditLimits:
    """What bounds one scheduled run (functions/auditor/settings.py sizes each)."""

    initial_lookback_seconds: float
    late_commit_margin_seconds: float
    max_changes_per_run: int
    max_suspects: int
    records_swept_per_run: int = 0


class ScheduledAudit:
    """One scheduled run: the journeys changed since the last run (minus a margin for late commits)
    and the ones still suspected, compared; the findings logged and measured; the state saved."""

    def __init__(
        self,
        auditor: JourneyAuditor,
        changes: ChangeFinder,
        state: AuditStateStore,
        metrics: Metrics,
        clock: Callable[[], datetime],
        limits: AuditLimits,
    ) -> None:
        self._auditor = auditor
        self._changes = changes
        self._state = state
        self._metrics = metrics
        self._clock = clock
        self._lookback = timedelta(seconds=limits.initial_lookback_seconds)
        # An eventId is minted before its transaction commits, and the index is eventually
        # consistent: an event can appear after a run covered its id's time. Each run re-reads this
        # much of the previous window, so such an event is seen by the next run.
        self._margin = timedelta(seconds=limits.late_commit_margin_seconds)
        self._max_changes = limits.max_changes_per_run
        self._max_suspects = limits.max_suspects
        # A record loans-api has no change of (a journeys table restored from elsewhere, a forged event
        # applied) is in no index of loans-api's: each run also audits the next page of the Control Records,
        # so the whole table is audited every (its items / this) runs.
        self._sweep = limits.records_swept_per_run

    def run(self) -> AuditReport:
        now = self._clock()
        state = self._state.get()
        if state.resume_after is not None:
            after = state.resume_after
        else:
            start = (state.checked_until - self._margin) if state.checked_until else now - self._lookback
            after = event_ids.lower_bound(start)
        changes = self._changes.changed_between(after, now, self._max_changes)
        swept, sweep_next = self._changes.records_page(state.sweep_from, self._sweep) if self._sweep else ([], None)
        report = self._auditor.audit(dict.fromkeys([*state.suspects, *(c.journey_id for c in changes), *swept]))
        suspects = [f.journeyId for f in report.outOfSync] + report.withinGrace
        if len(suspects) > self._max_suspects:
            logger.error(
                "more journeys out of sync than the audit remembers: run `saga audit` for all of them",
                extra={"count": len(suspects), "remembered": self._max_suspects},
            )
        if len(changes) >= self._max_changes:  # capped: the next run goes on right after the last change read
            logger.warning("audit capped: more changes than one run reads", extra={"read": len(changes)})
            remembered = tuple(suspects[: self._max_suspects])
            next_state = AuditState(state.checked_until, remembered, changes[-1].event_id, sweep_from=sweep_next)
        else:
            next_state = AuditState(now, tuple(suspects[: self._max_suspects]), sweep_from=sweep_next)
        try:
            self._state.put(next_state, read=state)
        except AuditStateConflict:  # (the lease keeps runs apart; this is the write's own guard)
            logger.warning("another audit saved its state during this run: this run's is dropped")
        self._measure(report)
        return report

    def _measure(self, report: AuditReport) -> None:
        self._metrics.add_metric(name=names.JOURNEYS_AUDITED, unit=MetricUnit.Count, value=report.audited)
        self._metrics.add_metric(name=names.JOURNEYS_OUT_OF_SYNC, unit=MetricUnit.Count, value=len(report.outOfSync))
        self._metrics.add_metric(
            name=names.OLDEST_OUT_OF_SYNC_AGE_SECONDS, unit=MetricUnit.Seconds, value=report.oldest_age_seconds
        )
        for finding in report.outOfSync:
            logger.warning("journey out of sync", extra=finding.to_json())
        if report.unreadable:
            logger.error("unreadable ledgers", extra={"journey_ids": report.unreadable})
        logger.info(
            "audit done",
            extra={
                "audited": report.audited,
                "out_of_sync": len(report.outOfSync),
                "within_grace": len(report.withinGrace),
            },
        )


def _chunks(items: Iterable[str], size: int) -> Iterator[list[str]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk
