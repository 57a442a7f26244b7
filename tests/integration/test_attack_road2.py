"""Adversary's tests for road 2's confirmation against the ledger (D15): each names a defect found by attack and
fails until it is fixed."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from functions.auditor.audit import Kind
from functions.auditor.service import EventFacts, JourneyAuditor, Ledgers
from functions.auditor.store import DynamoRecordRebuilder, DynamoTruthReader
from shared.applier import EventApplier
from shared.control_store import DynamoControlRecordStore, control_item
from shared.events import LoanEvent
from tests.integration.test_audit import journey, simulate_at_loans_api
from tests.support import json_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from mypy_boto3_dynamodb import DynamoDBClient

LATER = timedelta(seconds=120)


class RacingTruths:
    """loans-api's truth as the audit reads it, with `race` run once just before the audit reads the newest
    event's outbox status (its last read before the rebuild): an agent's command committing meanwhile."""

    def __init__(self, inner: DynamoTruthReader, race: Callable[[], None]) -> None:
        self._inner = inner
        self._race = race
        self._reads = 0

    def ledgers(self, journey_ids: list[str]) -> Ledgers:
        return self._inner.ledgers(journey_ids)

    def event(self, journey_id: str, seq: int) -> EventFacts | None:
        self._reads += 1
        if self._reads == 1:
            self._race()
        return self._inner.event(journey_id, seq)


def test_a_rebuild_never_takes_a_record_back_from_an_event_committed_while_it_ran(
    dynamodb: DynamoDBClient, resources, loans_api
):
    records = DynamoControlRecordStore(dynamodb, resources.journeys_table)
    # Given a record at loans-api's simulation (seq 1) whose simulationId was overwritten (diverged)
    journey(dynamodb, resources, "j-race")
    simulated = simulate_at_loans_api(loans_api, "j-race")
    EventApplier(records, clock=lambda: simulated.occurredAt).apply(simulated, "reply")
    record = records.get("j-race")
    assert record is not None
    assert record.simulation is not None
    forged = record.simulation.model_copy(update={"simulationId": "forged"})
    dynamodb.put_item(
        TableName=resources.journeys_table, Item=control_item(record.model_copy(update={"simulation": forged}))
    )
    moment = simulated.occurredAt + LATER
    accepted: list[LoanEvent] = []

    def agent_accepts() -> None:
        # The agent's accept commits at loans-api (seq 2), and road 1 applies loans-api's reply to the
        # record: the record is now exactly the truth.
        reply = loans_api.post(
            "/acceptances",
            {"journeyId": "j-race", "simulationId": simulated.snapshot.simulation.simulationId},  # type: ignore[union-attr]
            key="j-race-accept",
        )
        assert reply.status == 201, reply.body
        event = LoanEvent.model_validate(json_of(reply)["event"])
        EventApplier(records, clock=lambda: moment).apply(event, "reply")
        accepted.append(event)

    truths = RacingTruths(DynamoTruthReader(dynamodb, resources.loans_table), agent_accepts)
    rebuilds = DynamoRecordRebuilder(dynamodb, resources.journeys_table, resources.loans_table)
    applier = EventApplier(records, clock=lambda: moment)
    auditor = JourneyAuditor(truths, records, applier, rebuilds, lambda: moment, 60)
    # When the operator's rebuild runs (it judged the record diverged at seq 1) while the accept lands
    report = auditor.audit(["j-race"], repair=True, rebuild=True)
    # Then the record keeps the accept loans-api committed: a rebuild decided on seq 1 must not write
    # seq 1 over a record a road has moved since (its CAS re-reads the record and re-decides on the
    # truth it read before, so it takes the record back to 'simulated' behind loans-api's 'accepted')
    [event] = accepted
    after = records.get("j-race")
    assert after is not None
    assert (after.currentState, after.lastAppliedSeq) == ("accepted", event.seq), report.rebuilt
    assert all(f.kind is not Kind.BEHIND for f in report.outOfSync)


def test_a_record_ahead_of_a_journey_loans_api_never_saw_is_reported_and_rebuilt_to_before_any_command(
    dynamodb: DynamoDBClient, resources
):
    records = DynamoControlRecordStore(dynamodb, resources.journeys_table)
    # Given a record that says disbursed at seq 1 (a forged event applied before D15's check, or a restore
    # of the journeys table from another environment) for a journey loans-api has no ledger of
    journey(dynamodb, resources, "j-ghost")
    record = records.get("j-ghost")
    assert record is not None
    dynamodb.put_item(
        TableName=resources.journeys_table,
        Item=control_item(record.model_copy(update={"currentState": "disbursed", "lastAppliedSeq": 1})),
    )
    moment = record.createdAt + LATER
    auditor = JourneyAuditor(
        DynamoTruthReader(dynamodb, resources.loans_table),
        records,
        EventApplier(records, clock=lambda: moment),
        DynamoRecordRebuilder(dynamodb, resources.journeys_table, resources.loans_table),
        lambda: moment,
        60,
    )
    # When the operator audits that journey by name, Then it is audited and listed with its own finding
    report = auditor.audit(["j-ghost"])
    assert report.audited == 1, report.to_json()
    [finding] = report.outOfSync
    assert (finding.journeyId, finding.kind, finding.recordSeq, finding.truthSeq) == ("j-ghost", Kind.NO_LEDGER, 1, 0)
    assert finding.repair.endswith("saga audit --repair --rebuild --journey j-ghost"), finding.repair
    # When the operator rebuilds it, Then it is the journey before any command, as loans-api sees it
    report = auditor.audit(["j-ghost"], repair=True, rebuild=True)
    assert [(r.stateBefore, r.stateAfter, r.seqBefore, r.seqAfter) for r in report.rebuilt] == [
        ("disbursed", "created", 1, 0)
    ]
    assert report.outOfSync == []
    after = records.get("j-ghost")
    assert after is not None
    assert (after.currentState, after.lastAppliedSeq, after.version) == ("created", 0, record.version + 1)
