"""Road 2 applies only what loans-api committed (D15): an event the consumer would apply is confirmed
against loans-api's ledger and the ledger's event is applied; a message loans-api did not commit is
rejected and changes nothing; a no-op costs what it always cost (no ledger read, no write)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, cast

import pytest
from aws_lambda_powertools import Metrics
from hypothesis import given, settings
from hypothesis import strategies as st

from functions.consumer import bootstrap
from functions.consumer.service import EventConsumer, EventRejected, confirmed
from functions.consumer.settings import ConsumerSettings
from functions.loans_api import domain
from shared import metric_names as names
from shared.applier import EventApplier, Outcome
from shared.control_record import ControlRecord, RecordHead, new_control_record
from shared.events import LoanEvent
from shared.loans_client import TransientLoansError
from shared.topology import CONSUMER, EVENTS_QUEUE_SOURCE

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class CountingRecords:
    """Control Records with a CAS on `version`, counting every read and write."""

    def __init__(self, *records: ControlRecord) -> None:
        self.records = {r.journeyId: r for r in records}
        self.reads = 0
        self.writes = 0

    def get(self, journey_id: str) -> ControlRecord | None:
        self.reads += 1
        return self.records.get(journey_id)

    def heads(self, journey_ids: list[str]) -> dict[str, RecordHead]:
        self.reads += 1
        return {
            j: RecordHead(j, self.records[j].version, self.records[j].lastAppliedSeq)
            for j in journey_ids
            if j in self.records
        }

    def replace(self, record: ControlRecord, expected_version: int) -> bool:
        self.writes += 1
        if self.records[record.journeyId].version != expected_version:
            return False
        self.records[record.journeyId] = record
        return True


class CountingLedger:
    """loans-api's ledger: the newest event per journey, counting reads; `failure` is raised instead."""

    def __init__(self, *events: LoanEvent) -> None:
        self.last = {e.journeyId: e for e in events}
        self.reads = 0
        self.failure: Exception | None = None

    def latest_event(self, journey_id: str) -> LoanEvent | None:
        self.reads += 1
        if self.failure is not None:
            raise self.failure
        return self.last.get(journey_id)


class RecordingMetrics:
    def __init__(self) -> None:
        self.names: list[str] = []

    def add_metric(self, name: str, unit: Any, value: float) -> None:
        self.names.append(name)


def journey_events() -> list[LoanEvent]:
    """A real journey's events from loans-api's pure domain: simulate, accept, disburse."""
    ledger = domain.Ledger("j1")
    events = []
    for step in ("simulate", "accept", "disburse"):
        snap = ledger.snapshot
        if step == "simulate":
            change = domain.create_simulation(ledger, Decimal(5000), 12, NOW)
        elif step == "accept":
            assert snap.simulation is not None
            change = domain.create_acceptance(ledger, snap.simulation.simulationId, NOW)
        else:
            assert snap.acceptance is not None
            change = domain.create_disbursement(ledger, snap.acceptance.acceptanceId, NOW)
        events.append(change.event)
        ledger = change.ledger_after
    return events


SIMULATED, ACCEPTED, DISBURSED = journey_events()


def system(record: ControlRecord, *ledger: LoanEvent) -> tuple[EventConsumer, CountingRecords, CountingLedger, Any]:
    records, truth, metrics = CountingRecords(record), CountingLedger(*ledger), RecordingMetrics()
    consumer = EventConsumer(EventApplier(records, clock=lambda: NOW), records, truth, cast(Metrics, metrics))
    return consumer, records, truth, metrics


def fresh() -> ControlRecord:
    return new_control_record("j1", "c1", NOW)


def forged(event: LoanEvent, **changes: Any) -> str:
    return event.model_copy(update=changes).model_dump_json()


def test_a_matching_event_is_confirmed_by_one_ledger_read_and_applied_by_the_outbox_road():
    # Given a record that has not applied the simulation loans-api committed
    consumer, records, ledger, metrics = system(fresh(), SIMULATED)
    # When the simulation's message arrives
    outcome = consumer.consume(SIMULATED.model_dump_json())
    # Then one ledger read confirmed it and the record shows it, applied by road 2
    assert (outcome, ledger.reads) == (Outcome.APPLIED, 1)
    record = records.records["j1"]
    assert (record.currentState, record.lastAppliedEventId) == ("simulated", SIMULATED.eventId)
    assert record.appliedBy[-1].road == "outbox"
    assert metrics.names == [names.EVENTS_APPLIED]


def test_forged_content_at_the_ledgers_seq_is_rejected_and_changes_nothing():
    # Given loans-api's ledger at the simulation (seq 1), and a message with its seq and id that
    # claims a disbursement (another journey's event rewritten to name this one)
    consumer, records, _, metrics = system(fresh(), SIMULATED)
    body = forged(DISBURSED, seq=SIMULATED.seq, eventId=SIMULATED.eventId, journeyId="j1")
    # When it arrives, Then it is rejected, naming what differs, and the record is untouched
    with pytest.raises(EventRejected, match=r"content differs from what loans-api committed at seq 1"):
        consumer.consume(body)
    assert records.records["j1"] == fresh()
    assert records.writes == 0
    assert metrics.names == [names.EVENTS_REJECTED]


def test_a_different_event_id_at_the_ledgers_seq_is_rejected():
    consumer, records, _, _ = system(fresh(), SIMULATED)
    with pytest.raises(EventRejected, match=r"eventId differs"):
        consumer.consume(forged(SIMULATED, eventId="01900000-0000-7000-8000-000000000000"))
    assert records.writes == 0


@pytest.mark.parametrize("seq", [2, 10**9])
def test_a_seq_beyond_the_ledger_is_rejected_and_the_journey_is_not_wedged(seq: int):
    # Given loans-api's ledger at seq 1, When a message claims seq 2 or 10^9
    consumer, records, _, metrics = system(fresh(), SIMULATED)
    with pytest.raises(EventRejected, match=rf"seq {seq} is beyond loans-api's ledger for journey j1 \(at seq 1\)"):
        consumer.consume(forged(SIMULATED, seq=seq))
    # Then the record keeps its seq (the next real event still applies)
    assert records.records["j1"].lastAppliedSeq == 0
    assert consumer.consume(SIMULATED.model_dump_json()) is Outcome.APPLIED
    assert metrics.names == [names.EVENTS_REJECTED, names.EVENTS_APPLIED]


def test_an_event_for_a_journey_loans_api_never_saw_is_rejected():
    consumer, records, _, _ = system(fresh())
    with pytest.raises(EventRejected, match=r"loans-api has no ledger for journey j1"):
        consumer.consume(SIMULATED.model_dump_json())
    assert records.writes == 0


def test_an_older_message_with_a_newer_ledger_applies_the_ledgers_event_not_the_message():
    # Given a record that applied nothing while loans-api's ledger is at the disbursement (seq 3)
    consumer, records, ledger, _ = system(fresh(), DISBURSED)
    # When the (older) simulation's message arrives
    assert consumer.consume(SIMULATED.model_dump_json()) is Outcome.APPLIED
    # Then the record shows the ledger's newest event (the truth), not the message's
    record = records.records["j1"]
    assert (record.currentState, record.lastAppliedSeq, record.lastAppliedEventId) == (
        "disbursed",
        DISBURSED.seq,
        DISBURSED.eventId,
    )
    assert record.loan_view() == DISBURSED.snapshot
    # And the accept's message, now older than the record, is a no-op without another read
    assert consumer.consume(ACCEPTED.model_dump_json()) is Outcome.NOOP
    assert ledger.reads == 1


def test_an_older_forged_message_with_a_newer_ledger_applies_only_the_truth():
    # Given the ledger at the acceptance (seq 2), and a message at seq 1 that claims a disbursement
    consumer, records, _, _ = system(fresh(), ACCEPTED)
    consumer.consume(forged(DISBURSED, seq=1, journeyId="j1"))
    # Then the record holds the acceptance loans-api committed, never the message's disbursement
    record = records.records["j1"]
    assert (record.currentState, record.disbursement) == ("accepted", None)
    assert record.loan_view() == ACCEPTED.snapshot


def test_a_transient_ledger_failure_fails_the_message_for_a_retry_and_is_not_a_rejection():
    # Given loans-api that cannot answer now
    consumer, records, ledger, metrics = system(fresh(), SIMULATED)
    ledger.failure = TransientLoansError("loans-api answered 503")
    # When the message arrives, Then it fails as transient (retried by SQS), not rejected
    with pytest.raises(TransientLoansError):
        consumer.consume(SIMULATED.model_dump_json())
    assert (records.writes, metrics.names) == (0, [names.EVENTS_FAILED])
    # And once loans-api answers, the redelivery applies it
    ledger.failure = None
    assert consumer.consume(SIMULATED.model_dump_json()) is Outcome.APPLIED


def test_a_noop_costs_no_ledger_read_and_no_write_beyond_the_batchs_one_read():
    # Given a record that already applied the acceptance, read once for the batch
    consumer, records, ledger, metrics = system(fresh(), ACCEPTED)
    consumer.consume(ACCEPTED.model_dump_json())
    reads, writes = records.reads, records.writes
    bodies = [SIMULATED.model_dump_json(), ACCEPTED.model_dump_json()] * 5
    batch = consumer.prefetch([*bodies, forged(DISBURSED, seq=2, journeyId="j1")])
    ledger.reads = 0
    # When the batch's duplicates (and a forged one the record is already past) are consumed
    outcomes = [consumer.consume(body, batch) for body in [*bodies, forged(DISBURSED, seq=2, journeyId="j1")]]
    # Then every one is a no-op: the batch's one read, no ledger read, no write
    assert set(outcomes) == {Outcome.NOOP}
    assert (records.reads - reads, records.writes - writes, ledger.reads) == (1, 0, 0)
    assert metrics.names[-len(outcomes) :] == [names.EVENTS_DEDUPLICATED] * len(outcomes)


@settings(max_examples=200, deadline=None)
@given(
    ledger_at=st.sampled_from([None, SIMULATED, ACCEPTED, DISBURSED]),
    claim=st.sampled_from([SIMULATED, ACCEPTED, DISBURSED]),
    seq=st.integers(1, 5),
    same_id=st.booleans(),
)
def test_what_is_applied_is_always_an_event_loans_api_committed(ledger_at, claim, seq, same_id):
    # Given any message (real, re-numbered or re-identified) and any ledger position
    message = claim.model_copy(update={"seq": seq, **({} if same_id else {"eventId": "forged"})})
    try:
        applied = confirmed(message, ledger_at)
    except EventRejected:
        # Then a rejection is only ever for a message the ledger does not hold as such
        assert ledger_at is None or ledger_at.seq < seq or (ledger_at.seq == seq and ledger_at != message)
        return
    # Then what is applied is the ledger's newest event, never the message (unless it is that event)
    assert applied is ledger_at


def test_a_batch_of_ledger_reads_all_timing_out_fits_the_consumers_timeout():
    # Given the consumer's settings, When every message of a full batch needs a ledger read and every
    # read runs out both its timeouts, Then the batch still ends before the function's timeout (with
    # a margin for the batch's DynamoDB calls), so a loans-api outage fails messages, not the function
    defaults = ConsumerSettings(journeys_table_name="t", loans_api_url="http://loans")
    assert EVENTS_QUEUE_SOURCE.batch_size * bootstrap.ledger_read_seconds(defaults) <= CONSUMER.timeout_seconds - 5


class HistoryRecords(CountingRecords):
    """CountingRecords remembering each successful write's (seq, road, version)."""

    def __init__(self, *records: ControlRecord) -> None:
        super().__init__(*records)
        self.history: list[tuple[int, str, int]] = []

    def replace(self, record: ControlRecord, expected_version: int) -> bool:
        done = super().replace(record, expected_version)
        if done:
            self.history.append((record.lastAppliedSeq, record.appliedBy[-1].road, record.version))
        return done


@settings(max_examples=300, deadline=None)
@given(
    messages=st.lists(st.sampled_from([SIMULATED, ACCEPTED, DISBURSED]), min_size=1, max_size=6),
    road1=st.lists(st.tuples(st.integers(0, 6), st.sampled_from([SIMULATED, ACCEPTED, DISBURSED])), max_size=3),
)
def test_a_batch_whose_heads_go_stale_never_applies_an_event_twice_nor_takes_the_record_back(messages, road1):
    # Given a batch of road 2's messages (any order, duplicates, the same body twice), its heads read, and
    # road 1 applying events of the same journey between any two of the batch's applies
    records = HistoryRecords(fresh())
    truth, metrics = CountingLedger(DISBURSED), RecordingMetrics()
    applier = EventApplier(records, clock=lambda: NOW)
    consumer = EventConsumer(applier, records, truth, cast(Metrics, metrics))
    bodies = [message.model_dump_json() for message in messages]
    batch = consumer.prefetch(bodies)
    # When the batch is consumed
    for index, body in enumerate(bodies):
        for _, event in (step for step in road1 if step[0] == index):
            applier.apply(event, "reply")
        consumer.consume(body, batch)
    # Then every write took the record one version and at least one seq further (no event applied twice, no
    # regression from a stale head or a stale copy), and the record ends at the ledger's newest
    seqs, versions = [seq for seq, _, _ in records.history], [version for _, _, version in records.history]
    assert seqs == sorted(set(seqs)), f"writes at seqs {seqs}: {records.history}"
    assert versions == list(range(1, len(versions) + 1)), f"versions {versions}: {records.history}"
    assert records.records["j1"].lastAppliedSeq == DISBURSED.seq, records.history
