"""The audit on moto: Control Records against loans-api's ledgers, repairs through the applier, and the
scheduled run that reads only what changed since the last one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from functions.auditor import bootstrap as auditor_bootstrap
from functions.auditor.audit import Kind
from functions.auditor.service import JourneyAuditor
from functions.auditor.settings import AuditorSettings
from functions.auditor.store import DynamoAuditState, DynamoRecordRebuilder, DynamoTruthReader
from saga.ops.journeys import audit_text
from shared import event_ids
from shared.applier import EventApplier
from shared.control_record import ControlRecord, new_control_record
from shared.control_store import DynamoControlRecordStore, control_item
from shared.events import LoanEvent
from tests.support import json_of, quiet_metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

LATER = timedelta(seconds=120)


@pytest.fixture
def settings(resources) -> AuditorSettings:
    return AuditorSettings(
        aws_endpoint_url=resources.endpoint_url,
        loans_table_name=resources.loans_table,
        journeys_table_name=resources.journeys_table,
        grace_seconds=60,
    )


@pytest.fixture
def records(dynamodb: DynamoDBClient, resources) -> DynamoControlRecordStore:
    return DynamoControlRecordStore(dynamodb, resources.journeys_table)


def auditor_at(dynamodb: DynamoDBClient, settings, moment: datetime):
    auditor, changes = auditor_bootstrap.build_auditor(dynamodb, dynamodb, settings, clock=lambda: moment)
    return auditor, changes


def journey(dynamodb: DynamoDBClient, resources, journey_id: str, state: str = "created") -> None:
    """A Control Record as the orchestrator creates it (written directly: the orchestrator is not under test)."""
    record = new_control_record(journey_id, "c-1", datetime.now(UTC)).model_copy(update={"currentState": state})
    dynamodb.put_item(TableName=resources.journeys_table, Item=control_item(record))


def simulate_at_loans_api(loans_api, journey_id: str, amount: int = 5000) -> LoanEvent:
    """A simulation written straight to loans-api: its event reaches no road (no relay, no consumer)."""
    reply = loans_api.post(
        "/simulations", {"journeyId": journey_id, "amount": amount, "termMonths": 12}, key=f"{journey_id}-{amount}"
    )
    assert reply.status == 201, reply.body
    return LoanEvent.model_validate(json_of(reply)["event"])


def test_a_record_behind_the_truth_is_listed_with_its_road_and_its_repair(
    dynamodb: DynamoDBClient, resources, loans_api, settings
):
    # Given a journey whose simulation loans-api committed, and whose record never heard of it
    journey(dynamodb, resources, "j-behind")
    event = simulate_at_loans_api(loans_api, "j-behind")
    # When the audit runs past the grace period
    auditor, _ = auditor_at(dynamodb, settings, event.occurredAt + LATER)
    report = auditor.audit(["j-behind"])
    # Then the journey is listed: behind by one event, since that event, road 2 never published it
    [finding] = report.outOfSync
    assert (finding.journeyId, finding.kind, finding.recordSeq, finding.truthSeq) == ("j-behind", Kind.BEHIND, 0, 1)
    assert "state: record 'created' != loans-api 'simulated'" in finding.differences
    assert finding.outOfSyncSince == event.occurredAt
    assert finding.ageSeconds == pytest.approx(120, abs=0.01)
    assert "PENDING" in finding.expectedRoad
    assert (finding.repairable, finding.repair) == (True, "saga audit --repair --journey j-behind")
    assert report.oldest_age_seconds == finding.ageSeconds


def test_a_record_behind_within_the_grace_period_is_not_listed_but_noted_within_grace(
    dynamodb: DynamoDBClient, resources, loans_api, settings
):
    journey(dynamodb, resources, "j-fresh")
    event = simulate_at_loans_api(loans_api, "j-fresh")
    auditor, _ = auditor_at(dynamodb, settings, event.occurredAt + timedelta(seconds=5))
    report = auditor.audit(["j-fresh"])
    assert (report.outOfSync, report.withinGrace) == ([], ["j-fresh"])


def test_repair_applies_the_newest_event_through_the_applier_and_then_all_agree(
    dynamodb: DynamoDBClient, resources, loans_api, settings, records
):
    # Given a record two events behind (a simulation, then a re-simulation)
    journey(dynamodb, resources, "j-repair")
    simulate_at_loans_api(loans_api, "j-repair", 5000)
    newest = simulate_at_loans_api(loans_api, "j-repair", 6000)
    auditor, _ = auditor_at(dynamodb, settings, newest.occurredAt + LATER)
    # When the audit repairs
    report = auditor.audit(["j-repair"], repair=True)
    # Then the record holds the newest event's snapshot, and nothing is listed
    assert (report.repaired, report.outOfSync) == (["j-repair"], [])
    record = records.get("j-repair")
    assert record is not None
    assert (record.currentState, record.lastAppliedSeq, record.lastAppliedEventId) == ("simulated", 2, newest.eventId)
    assert record.simulation == newest.snapshot.simulation
    # And a second audit finds nothing, and a second repair changes nothing
    assert auditor.audit(["j-repair"], repair=True).to_json()["agree"] is True
    assert records.get("j-repair") == record


def test_a_terminal_record_against_an_active_simulation_is_listed_but_never_repaired(
    dynamodb: DynamoDBClient, resources, loans_api, settings, records
):
    # Given the race of the issue: the record says cancelled, loans-api holds an ACTIVE simulation
    journey(dynamodb, resources, "j-race", state="cancelled")
    event = simulate_at_loans_api(loans_api, "j-race")
    auditor, _ = auditor_at(dynamodb, settings, event.occurredAt + LATER)
    # When the audit is asked to repair
    report = auditor.audit(["j-race"], repair=True)
    # Then it is listed, explained, and left alone: applying the event cannot make the two agree
    [finding] = report.outOfSync
    assert finding.repairable is False
    assert finding.repair.startswith("no mechanical repair: after the newest event the record would still differ")
    assert report.repaired == []
    record = records.get("j-race")
    assert record is not None
    assert (record.currentState, record.version) == ("cancelled", 0)


def test_a_journey_loans_api_holds_without_a_control_record_is_listed(dynamodb: DynamoDBClient, loans_api, settings):
    event = simulate_at_loans_api(loans_api, "j-orphan")
    auditor, _ = auditor_at(dynamodb, settings, event.occurredAt + LATER)
    [finding] = auditor.audit(["j-orphan"]).outOfSync
    assert (finding.kind, finding.repairable, finding.recordSeq) == (Kind.NO_CONTROL_RECORD, False, None)


def test_a_record_that_agrees_is_not_listed(dynamodb: DynamoDBClient, resources, loans_api, settings, records):
    journey(dynamodb, resources, "j-ok")
    event = simulate_at_loans_api(loans_api, "j-ok")
    EventApplier(records, clock=lambda: event.occurredAt).apply(event, "outbox")
    auditor, changes = auditor_at(dynamodb, settings, event.occurredAt + LATER)
    report = auditor.audit(changes.all_journeys())
    assert (report.audited, report.outOfSync, report.withinGrace) == (1, [], [])


def test_the_changes_index_returns_only_journeys_changed_in_the_window(
    dynamodb: DynamoDBClient, resources, loans_api, settings
):
    first = simulate_at_loans_api(loans_api, "j-early")
    second = simulate_at_loans_api(loans_api, "j-late")
    _, changes = auditor_at(dynamodb, settings, datetime.now(UTC))
    minted = {event.eventId: event_ids.time_of(event.eventId) for event in (first, second)}
    start_first, start_second = minted[first.eventId], minted[second.eventId]
    assert start_first is not None
    assert start_second is not None
    end = start_second + timedelta(seconds=1)
    window = changes.changed_between(event_ids.lower_bound(start_second), end, limit=100)
    assert [c.journey_id for c in window] == ["j-late"]
    everything = changes.changed_between(event_ids.lower_bound(start_first), end, limit=100)
    assert [c.journey_id for c in everything] == ["j-early", "j-late"]
    assert [c.journey_id for c in changes.changed_between(first.eventId, end, limit=100)] == ["j-late"]
    assert changes.changed_between(event_ids.lower_bound(start_first), start_first, limit=100) == []


def test_the_scheduled_audit_measures_remembers_and_reads_only_what_changed(
    dynamodb: DynamoDBClient, resources, loans_api, settings
):
    # Given a journey out of sync, changed within the first run's look-back
    journey(dynamodb, resources, "j-sched")
    event = simulate_at_loans_api(loans_api, "j-sched")
    moment = [event.occurredAt + LATER]
    metrics = quiet_metrics("auditor")
    metrics.clear_metrics()
    scheduled = auditor_bootstrap.build_scheduled(settings, metrics, dynamodb, clock=lambda: moment[0])
    # When the scheduled audit runs
    report = scheduled.run()
    # Then it found it and measured it
    assert [f.journeyId for f in report.outOfSync] == ["j-sched"]
    assert metrics.metric_set["JourneysOutOfSync"]["Value"] == [1]
    assert metrics.metric_set["OldestOutOfSyncAgeSeconds"]["Value"] == [pytest.approx(120, abs=0.01)]
    state = DynamoAuditState(dynamodb, resources.journeys_table).get()
    assert (state.checked_until, state.suspects, state.resume_after) == (moment[0], ("j-sched",), None)
    # When it runs again an hour later, nothing new having changed
    moment[0] += timedelta(hours=1)
    metrics.clear_metrics()
    report = scheduled.run()
    # Then it still reports the journey (it remembers it) and reads nothing else
    assert [f.journeyId for f in report.outOfSync] == ["j-sched"]
    assert report.audited == 1
    assert metrics.metric_set["OldestOutOfSyncAgeSeconds"]["Value"] == [pytest.approx(3720, abs=0.01)]
    # When an operator repairs it, the next run reports zero, and forgets it
    auditor, _ = auditor_at(dynamodb, settings, moment[0])
    assert auditor.audit(["j-sched"], repair=True).repaired == ["j-sched"]
    moment[0] += timedelta(minutes=5)
    metrics.clear_metrics()
    assert scheduled.run().outOfSync == []
    assert metrics.metric_set["JourneysOutOfSync"]["Value"] == [0]
    assert DynamoAuditState(dynamodb, resources.journeys_table).get().suspects == ()


def test_a_capped_run_goes_on_from_the_last_change_it_read(dynamodb: DynamoDBClient, resources, loans_api, settings):
    # Given two journeys changed, and a run that may read one change only
    for journey_id in ("j-first", "j-second"):
        journey(dynamodb, resources, journey_id)
        simulate_at_loans_api(loans_api, journey_id)
    # (the rolling sweep of the Control Records off: it would find both journeys' records at once)
    capped = settings.model_copy(update={"max_changes_per_run": 1, "grace_seconds": 3600, "records_swept_per_run": 0})
    moment = datetime.now(UTC) + LATER
    scheduled = auditor_bootstrap.build_scheduled(capped, quiet_metrics("auditor"), dynamodb, clock=lambda: moment)
    # When it runs twice
    first, second = scheduled.run(), scheduled.run()
    # Then each run read the next change, and the suspect carried along was audited again
    assert first.withinGrace == ["j-first"]
    assert second.withinGrace == ["j-first", "j-second"]


def test_repair_leaves_a_journey_within_the_grace_period_to_the_roads(
    dynamodb: DynamoDBClient, resources, loans_api, settings, records
):
    journey(dynamodb, resources, "j-young")
    event = simulate_at_loans_api(loans_api, "j-young")
    auditor, _ = auditor_at(dynamodb, settings, event.occurredAt + timedelta(seconds=5))
    report = auditor.audit(["j-young"], repair=True)
    assert (report.repaired, report.withinGrace) == ([], ["j-young"])
    record = records.get("j-young")
    assert record is not None
    assert record.version == 0


def forge_ahead(dynamodb: DynamoDBClient, resources, records, journey_id: str, seq: int = 10**9) -> None:
    """A record made ahead of loans-api: a forged lastAppliedSeq written straight to the journeys table (a
    forged event applied before road 2 confirmed, or a restore of one table alone)."""
    record = records.get(journey_id)
    assert record is not None
    dynamodb.put_item(
        TableName=resources.journeys_table, Item=control_item(record.model_copy(update={"lastAppliedSeq": seq}))
    )


def ahead_of_its_simulation(dynamodb: DynamoDBClient, resources, loans_api, records, journey_id: str) -> LoanEvent:
    """A journey simulated at loans-api whose record applied the simulation, then was forged ahead (seq
    10^9: every real event is a no-op to it); loans-api's event."""
    journey(dynamodb, resources, journey_id)
    event = simulate_at_loans_api(loans_api, journey_id)
    EventApplier(records, clock=lambda: event.occurredAt).apply(event, "reply")
    forge_ahead(dynamodb, resources, records, journey_id)
    return event


def test_a_record_ahead_of_loans_api_is_listed_with_the_rebuild_and_plain_repair_leaves_it(
    dynamodb: DynamoDBClient, resources, loans_api, settings, records
):
    # Given a record at the simulation, then forged ahead (seq 10^9: every real event is a no-op to it)
    event = ahead_of_its_simulation(dynamodb, resources, loans_api, records, "j-ahead")
    auditor, _ = auditor_at(dynamodb, settings, event.occurredAt + LATER)
    # When the audit repairs, Then it lists the record as ahead, names the rebuild, and repairs nothing
    report = auditor.audit(["j-ahead"], repair=True)
    [finding] = report.outOfSync
    assert (finding.kind, finding.repairable) == (Kind.AHEAD, False)
    assert finding.repair.endswith("saga audit --repair --rebuild --journey j-ahead")
    assert (report.repaired, report.rebuilt) == ([], [])
    assert records.get("j-ahead").lastAppliedSeq == 10**9


def test_a_rebuild_re_projects_a_record_ahead_from_the_ledger_and_says_what_changed(
    dynamodb: DynamoDBClient, resources, loans_api, settings, records
):
    # Given a record at the simulation forged ahead
    event = ahead_of_its_simulation(dynamodb, resources, loans_api, records, "j-rebuild")
    before = records.get("j-rebuild")
    assert before is not None
    auditor, _ = auditor_at(dynamodb, settings, event.occurredAt + LATER)
    # When the audit repairs with a rebuild
    report = auditor.audit(["j-rebuild"], repair=True, rebuild=True)
    # Then the record is back at the ledger (CAS on version, a trail entry 'rebuild') and all agree
    assert report.outOfSync == []
    [rebuilt] = [r.to_json() for r in report.rebuilt]
    assert rebuilt == {"journeyId": "j-rebuild", "stateBefore": "simulated", "stateAfter": "simulated",
                       "seqBefore": 10**9, "seqAfter": event.seq, "version": before.version + 1}  # fmt: skip
    after = records.get("j-rebuild")
    assert after is not None
    assert (after.lastAppliedSeq, after.lastAppliedEventId, after.version) == (1, event.eventId, before.version + 1)
    assert after.appliedBy[-1].road == "rebuild"
    # And a second rebuild changes nothing
    assert auditor.audit(["j-rebuild"], repair=True, rebuild=True).rebuilt == []
    assert records.get("j-rebuild") == after


@pytest.mark.parametrize("moved", ["record", "ledger"])
def test_a_rebuild_whose_journey_moved_after_its_judgement_is_reported_not_rebuilt_and_changes_nothing(
    dynamodb: DynamoDBClient, resources, loans_api, settings, records, moved
):
    # Given a record forged ahead, and between the audit's judgement and its rebuild's write either a write
    # to the record or a command committed at loans-api (its reply not applied yet)
    event = ahead_of_its_simulation(dynamodb, resources, loans_api, records, "j-moved")
    real = DynamoRecordRebuilder(dynamodb, settings.journeys_table_name, settings.loans_table_name)

    class MovedFirst:
        def rebuild(self, record: ControlRecord, judged_version: int, ledger_seq: int) -> bool:
            if moved == "record":
                judged = records.get("j-moved")
                assert judged is not None
                assert records.replace(judged.model_copy(update={"version": judged.version + 1}), judged.version)
            else:
                simulate_at_loans_api(loans_api, "j-moved", 7000)
            return real.rebuild(record, judged_version, ledger_seq)

    moment = event.occurredAt + LATER
    auditor = JourneyAuditor(DynamoTruthReader(dynamodb, settings.loans_table_name), records,
                             EventApplier(records, clock=lambda: moment), MovedFirst(), lambda: moment,
                             settings.grace_seconds)  # fmt: skip
    # When the audit repairs with a rebuild
    report = auditor.audit(["j-moved"], repair=True, rebuild=True).to_json()
    # Then the rebuild was not made, the report says so (and `saga audit` prints why), and nothing was rebuilt
    assert (report["rebuilt"], report["notRebuilt"]) == ([], ["j-moved"])
    text = audit_text({**report, "scope": "1 journey(s) named", "graceSeconds": 0, "unknown": []})
    why = (
        "not rebuilt j-moved: the journey moved since it was audited (its record or loans-api's ledger); audit it again"
    )
    assert why in text.splitlines(), text
    assert records.get("j-moved").lastAppliedSeq == 10**9


def test_a_rebuild_racing_a_disburse_between_the_audits_two_reads_never_takes_the_record_back(
    dynamodb: DynamoDBClient, resources, loans_api, settings, records
):
    # Given the journey: accepted, its record agreeing with loans-api (seq 2)
    journey(dynamodb, resources, "j-issue")
    simulated = simulate_at_loans_api(loans_api, "j-issue")
    quote = simulated.snapshot.simulation
    assert quote is not None
    reply = loans_api.post("/acceptances", {"journeyId": "j-issue", "simulationId": quote.simulationId}, key="j-acc")
    accepted = LoanEvent.model_validate(json_of(reply)["event"])
    moment = accepted.occurredAt + LATER
    applier = EventApplier(records, clock=lambda: moment)
    applier.apply(accepted, "reply")
    disbursed: list[LoanEvent] = []

    def agent_disburses() -> None:
        # The agent's disburse commits at loans-api (seq 3) and road 1 applies loans-api's reply
        acceptance = accepted.snapshot.acceptance
        assert acceptance is not None
        body = {"journeyId": "j-issue", "acceptanceId": acceptance.acceptanceId}
        event = LoanEvent.model_validate(json_of(loans_api.post("/disbursements", body, key="j-pay"))["event"])
        applier.apply(event, "reply")
        disbursed.append(event)

    class HeldBetweenTheReads:
        """The audit's two first reads (records, ledgers: whichever comes first) with the disburse between."""

        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> Any:
            read = getattr(self._inner, name)
            if name not in ("get_many", "ledgers") or disbursed:
                return read

            def first_read(journey_ids: list[str]) -> Any:
                found = read(journey_ids)
                agent_disburses()
                return found

            return first_read

    truths = HeldBetweenTheReads(DynamoTruthReader(dynamodb, settings.loans_table_name))
    rebuilds = DynamoRecordRebuilder(dynamodb, settings.journeys_table_name, settings.loans_table_name)
    auditor = JourneyAuditor(truths, HeldBetweenTheReads(records), applier, rebuilds, lambda: moment, 0)
    # When the operator runs `saga audit --grace 0 --repair --rebuild --journey j-issue` meanwhile
    report = auditor.audit(["j-issue"], repair=True, rebuild=True)
    # Then the record stays disbursed at seq 3, nothing was rebuilt, and all agree
    after = records.get("j-issue")
    assert after is not None
    assert (after.currentState, after.lastAppliedSeq) == ("disbursed", 3), report.to_json()
    assert (report.rebuilt, report.outOfSync) == ([], []), report.to_json()


def test_a_rebuild_moves_a_terminal_record_the_applier_would_never_move(
    dynamodb: DynamoDBClient, resources, loans_api, settings, records
):
    # Given the record says disbursed (written by something other than an event), loans-api a simulation
    journey(dynamodb, resources, "j-terminal", state="disbursed")
    event = simulate_at_loans_api(loans_api, "j-terminal")
    auditor, _ = auditor_at(dynamodb, settings, event.occurredAt + LATER)
    # When the audit repairs with a rebuild
    report = auditor.audit(["j-terminal"], repair=True, rebuild=True)
    # Then the record shows loans-api's simulation
    assert [(r.stateBefore, r.stateAfter, r.seqBefore, r.seqAfter) for r in report.rebuilt] == [
        ("disbursed", "simulated", 0, 1)
    ]
    assert report.outOfSync == []


def test_the_scheduled_audit_never_rebuilds_and_keeps_reporting_a_record_ahead(
    dynamodb: DynamoDBClient, resources, loans_api, settings, records
):
    # Given a record forged ahead of loans-api
    journey(dynamodb, resources, "j-alarm")
    event = simulate_at_loans_api(loans_api, "j-alarm")
    EventApplier(records, clock=lambda: event.occurredAt).apply(event, "reply")
    forge_ahead(dynamodb, resources, records, "j-alarm")
    moment = [event.occurredAt + LATER]
    metrics = quiet_metrics("auditor")
    metrics.clear_metrics()
    scheduled = auditor_bootstrap.build_scheduled(settings, metrics, dynamodb, clock=lambda: moment[0])
    # When the scheduled audit runs twice
    for _ in range(2):
        report = scheduled.run()
        # Then each run reports it out of sync (its alarm keeps firing) and writes nothing to it
        assert [(f.journeyId, f.kind) for f in report.outOfSync] == [("j-alarm", Kind.AHEAD)]
        assert metrics.metric_set["JourneysOutOfSync"]["Value"] == [1]
        assert records.get("j-alarm").lastAppliedSeq == 10**9
        moment[0] += timedelta(minutes=5)
        metrics.clear_metrics()


def test_the_scheduled_audit_sweeps_the_control_records_and_reports_a_journey_loans_api_never_saw(
    dynamodb: DynamoDBClient, resources, settings, records
):
    # Given a record claiming simulated at seq 3 of a journey loans-api has no ledger (nor any change) of
    journey(dynamodb, resources, "j-restored")
    record = records.get("j-restored")
    assert record is not None
    claimed = record.model_copy(update={"currentState": "simulated", "lastAppliedSeq": 3})
    dynamodb.put_item(TableName=resources.journeys_table, Item=control_item(claimed))
    metrics = quiet_metrics("auditor")
    metrics.clear_metrics()
    scheduled = auditor_bootstrap.build_scheduled(settings, metrics, dynamodb, clock=lambda: record.updatedAt + LATER)
    # When the scheduled audit runs
    report = scheduled.run()
    # Then its sweep of the Control Records found it, reported with its own finding, and measured
    assert [(f.journeyId, f.kind) for f in report.outOfSync] == [("j-restored", Kind.NO_LEDGER)], report.to_json()
    assert metrics.metric_set["JourneysOutOfSync"]["Value"] == [1]
    assert records.get("j-restored") == claimed


def test_the_sweep_pages_through_the_control_records_from_where_the_last_page_stopped(
    dynamodb: DynamoDBClient, resources, settings
):
    # Given two Control Records (and the items of other kinds a journeys table holds)
    for journey_id in ("j-a", "j-b"):
        journey(dynamodb, resources, journey_id)
    _, changes = auditor_at(dynamodb, settings, datetime.now(UTC))
    # When the sweep reads the table one item a page, each page from where the last one stopped
    pages, start = [], None
    for _ in range(10):  # (a hang guard: the table holds two items)
        found, start = changes.records_page(start, 1)
        pages.append(found)
        if start is None:
            break
    # Then it read each record once, and said where the table ends
    assert start is None, pages
    assert sorted(j for page in pages for j in page) == ["j-a", "j-b"], pages
    assert all(len(page) <= 1 for page in pages), pages


def test_the_scheduled_sweep_goes_on_across_runs_from_the_cursor_in_its_state_item(
    dynamodb: DynamoDBClient, resources, settings, records
):
    # Given two records claiming progress for journeys loans-api never saw, and a sweep of one item a run
    # (the journeys table also holds the audit's own state item, read by the sweep like any other)
    for journey_id in ("j-r1", "j-r2"):
        journey(dynamodb, resources, journey_id)
        record = records.get(journey_id)
        assert record is not None
        claimed = record.model_copy(update={"currentState": "simulated", "lastAppliedSeq": 3})
        dynamodb.put_item(TableName=resources.journeys_table, Item=control_item(claimed))
    one_a_run = settings.model_copy(update={"records_swept_per_run": 1})
    moment = [claimed.updatedAt + LATER]
    scheduled = auditor_bootstrap.build_scheduled(
        one_a_run, quiet_metrics("auditor"), dynamodb, clock=lambda: moment[0]
    )
    # When the scheduled audit runs until it has read the whole table (a hang guard: it holds a few items)
    seen: set[str] = set()
    for _ in range(10):
        seen |= {f.journeyId for f in scheduled.run().outOfSync}
        moment[0] += timedelta(minutes=5)
        if seen == {"j-r1", "j-r2"}:
            break
    # Then each run went on from the item the last one stopped at, so both were found
    assert seen == {"j-r1", "j-r2"}, seen
