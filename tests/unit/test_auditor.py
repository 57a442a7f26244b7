"""The audit on its ports (functions/auditor/service.py), with the fakes of tests/fakes.py: what it lists,
what it repairs, and that a scheduled run saves its state only over the state it read."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from functions.auditor import bootstrap as auditor_bootstrap
from functions.auditor.audit import Kind, Truth
from functions.auditor.service import AuditState, Change, JourneyAuditor, Ledgers, ScheduledAudit, SweepKey
from functions.auditor.settings import AuditorSettings
from functions.loans_api import domain
from shared.applier import EventApplier
from shared.control_record import new_control_record
from shared.events import LoanEvent
from tests.fakes import FakeAuditState, FakeControlRecords, FakeRecordRebuilder, FakeTruths
from tests.support import quiet_metrics

COMMITTED = datetime(2026, 1, 1, tzinfo=UTC)
GRACE = 60.0
# A scheduled run's limits as deployed.
LIMITS = auditor_bootstrap.audit_limits(AuditorSettings(loans_table_name="loans", journeys_table_name="journeys"))


def simulated_and_accepted(journey_id: str) -> list[LoanEvent]:
    """Two events loans-api committed for `journey_id`: a quote, then its acceptance."""
    simulated = domain.create_simulation(domain.Ledger(journey_id), Decimal(5000), 12, COMMITTED)
    quote = simulated.event.snapshot.simulation
    assert quote is not None
    accepted = domain.create_acceptance(simulated.ledger_after, quote.simulationId, COMMITTED)
    return [simulated.event, accepted.event]


def auditor_at(now: datetime, truths: FakeTruths, records: FakeControlRecords) -> JourneyAuditor:
    applier = EventApplier(records, clock=lambda: now)
    return JourneyAuditor(truths, records, applier, FakeRecordRebuilder(records, truths.seq), lambda: now, GRACE)


def behind(journey_id: str) -> tuple[FakeTruths, FakeControlRecords]:
    """A journey whose record applied loans-api's first event and missed its second."""
    truths, records = FakeTruths(), FakeControlRecords()
    records.create(new_control_record(journey_id, "c1", COMMITTED))
    first, second = simulated_and_accepted(journey_id)
    EventApplier(records, clock=lambda: COMMITTED).apply(first, "reply")
    truths.commit(first)
    truths.commit(second)
    return truths, records


def test_a_truth_is_its_newest_event():
    # Given loans-api's newest event of a journey, Then what the audit compares follows from it alone
    newest = simulated_and_accepted("j1")[-1]
    truth = Truth("j1", newest)
    assert (truth.seq, truth.snapshot, truth.updated_at) == (newest.seq, newest.snapshot, newest.occurredAt)


def test_a_record_behind_past_the_grace_period_is_listed_and_repaired_with_the_newest_event():
    # Given a record one event behind loans-api, audited after the grace period
    truths, records = behind("j1")
    later = COMMITTED + timedelta(seconds=2 * GRACE)
    # When it is audited, Then it is listed as behind, repairable
    [finding] = auditor_at(later, truths, records).audit(["j1"]).outOfSync
    assert (finding.journeyId, finding.kind, finding.repairable) == ("j1", Kind.BEHIND, True)
    # When it is audited with repair, Then the newest event is applied and nothing is left out of sync
    report = auditor_at(later, truths, records).audit(["j1"], repair=True)
    assert (report.repaired, report.outOfSync) == (["j1"], [])
    assert records.records["j1"].lastAppliedSeq == truths.events["j1"][-1].seq


def test_a_record_behind_within_the_grace_period_is_only_remembered():
    # Given a record one event behind, audited before the roads have had their grace period
    truths, records = behind("j1")
    soon = COMMITTED + timedelta(seconds=GRACE / 2)
    # When it is audited with repair, Then it is neither listed nor repaired, only kept as a suspect
    report = auditor_at(soon, truths, records).audit(["j1"], repair=True)
    assert (report.outOfSync, report.repaired, report.withinGrace) == ([], [], ["j1"])


class NoChanges:
    def changed_between(self, after: str, end: datetime, limit: int) -> list[Change]:
        return []

    def all_journeys(self) -> Iterator[str]:
        return iter(())

    def records_page(self, start: SweepKey | None, limit: int) -> tuple[list[str], SweepKey | None]:
        return [], None


class SweptRecords(NoChanges):
    """No change in loans-api's index; the Control Records paged in journey order, `limit` at a time."""

    def __init__(self, records: FakeControlRecords) -> None:
        self._records = records
        self.starts: list[SweepKey | None] = []

    def records_page(self, start: SweepKey | None, limit: int) -> tuple[list[str], SweepKey | None]:
        self.starts.append(start)
        ids = sorted(self._records.records)
        after = [j for j in ids if start is None or j > start[0]][:limit]
        more = after and after[-1] != ids[-1]
        return after, (after[-1], "CONTROL") if more else None


def test_a_scheduled_run_saves_its_state_only_over_the_state_it_read():
    # Given a suspect the last run remembered, and another run saving the state while this one runs
    truths, records = behind("j1")
    later = COMMITTED + timedelta(seconds=2 * GRACE)
    state = FakeAuditState()
    state.put(AuditState(checked_until=COMMITTED, suspects=("j1",)), read=state.get())

    class Racing(FakeTruths):
        def ledgers(self, journey_ids: list[str]) -> Ledgers:
            state.put(AuditState(checked_until=later), read=state.get())  # the other run saves meanwhile
            return truths.ledgers(journey_ids)

    auditor = auditor_at(later, Racing(), records)
    run = ScheduledAudit(auditor, NoChanges(), state, quiet_metrics("auditor"), lambda: later, LIMITS)
    # When the run ends, Then it reports the suspect, and the other run's state stands (version 2, not 3)
    [finding] = run.run().outOfSync
    assert finding.journeyId == "j1"
    assert (state.state.version, state.state.suspects) == (2, ())


def test_the_scheduled_run_sweeps_the_control_records_and_reports_one_loans_api_never_saw():
    # Given three journeys loans-api never saw: two new (agree), one whose record claims simulated at seq 3
    truths, records = FakeTruths(), FakeControlRecords()
    for journey_id in ("j1", "j2", "j3"):
        records.create(new_control_record(journey_id, "c1", COMMITTED))
    records.records["j2"] = records.records["j2"].model_copy(update={"currentState": "simulated", "lastAppliedSeq": 3})
    later = COMMITTED + timedelta(seconds=2 * GRACE)
    state, sweep = FakeAuditState(), SweptRecords(records)
    limits = dataclasses.replace(LIMITS, records_swept_per_run=2)
    run = ScheduledAudit(
        auditor_at(later, truths, records), sweep, state, quiet_metrics("auditor"), lambda: later, limits
    )
    # When it runs (a page of two records), Then it reports the record ahead with its own finding
    [finding] = run.run().outOfSync
    assert (finding.journeyId, finding.kind, finding.recordSeq, finding.truthSeq) == ("j2", Kind.NO_LEDGER, 3, 0)
    assert finding.repair.endswith("saga audit --repair --rebuild --journey j2"), finding.repair
    # And the next run goes on after the page it read (and remembers the suspect), then starts over
    report = run.run()
    assert (sweep.starts, [f.journeyId for f in report.outOfSync]) == ([None, ("j2", "CONTROL")], ["j2"])
    run.run()
    assert sweep.starts[-1] is None
    # And it repairs nothing: the record still claims seq 3
    assert records.records["j2"].lastAppliedSeq == 3
