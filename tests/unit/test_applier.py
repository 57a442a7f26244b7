"""The convergent applier (D5): any permutation and duplication of a journey's events converges to
the state of the last event; versions only grow; stale events are no-ops."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.billing import KB, item_size
from functions.loans_api import domain
from functions.orchestrator import keys
from functions.orchestrator.models import CUSTOMER_ID_BYTES
from shared.applier import EventApplier, Outcome, decide, rebuild, shows
from shared.control_record import TRAIL_LENGTH, ControlRecord, Road, new_control_record
from shared.control_store import control_item
from shared.events import LoanEvent
from shared.idempotency import fingerprint
from shared.loan_terms import MAX_AMOUNT, MAX_TERM_MONTHS

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class FakeControlRecordStore:
    def __init__(self, record: ControlRecord) -> None:
        self.record = record
        self.versions = [record.version]

    def get(self, journey_id: str) -> ControlRecord | None:
        return self.record if journey_id == self.record.journeyId else None

    def replace(self, record: ControlRecord, expected_version: int) -> bool:
        if self.record.version != expected_version:
            return False
        self.record = record
        self.versions.append(record.version)
        return True


def history(choices: list[int]) -> list[LoanEvent]:
    """A legal event history of one journey, driven by `choices` through loans-api's pure domain."""
    ledger = domain.Ledger("j1")
    events: list[LoanEvent] = []

    def commit(change: domain.Change) -> None:
        nonlocal ledger
        events.append(change.event)
        ledger = change.ledger_after

    for choice in choices:
        snap = ledger.snapshot
        if snap.state in ("disbursed", "cancelled"):
            break
        if choice == 0 or snap.simulation is None:  # (re-)simulate, cancelling an acceptance in the same change
            commit(domain.create_simulation(ledger, Decimal(1000 + 100 * len(events)), 12, NOW))
        elif choice == 1 and snap.acceptance is None:
            commit(domain.create_acceptance(ledger, snap.simulation.simulationId, NOW))
        elif choice == 2 and snap.acceptance is not None:
            commit(domain.create_disbursement(ledger, snap.acceptance.acceptanceId, NOW))
        elif choice == 3:  # cancel the journey and whatever is active in it
            commit(domain.cancel_journey(ledger, NOW))
    return events


@st.composite
def deliveries(draw):
    events = history(draw(st.lists(st.integers(0, 3), min_size=1, max_size=12)))
    duplicated = events + draw(st.lists(st.sampled_from(events), max_size=len(events) * 2))
    return events, draw(st.permutations(duplicated))


@settings(max_examples=300, deadline=None)
@given(deliveries())
def test_any_order_and_any_duplication_converges_to_the_last_event(case):
    events, delivered = case
    store = FakeControlRecordStore(new_control_record("j1", "c1", NOW))
    applier = EventApplier(store, clock=lambda: NOW)
    for event in delivered:
        applier.apply(event, "outbox")
    last = events[-1]
    assert store.record.loan_view() == last.snapshot
    assert store.record.lastAppliedSeq == last.seq
    assert store.record.lastAppliedEventId == last.eventId
    assert store.versions == sorted(set(store.versions))


def test_a_stale_or_duplicate_event_is_a_noop():
    events = history([0, 1])
    record = new_control_record("j1", "c1", NOW)
    applied = decide(record, events[1], NOW, "reply")
    assert applied.outcome is Outcome.APPLIED
    for stale in events:
        assert decide(applied.record, stale, NOW, "outbox").outcome is Outcome.NOOP


def test_a_terminal_record_keeps_its_state_but_tracks_the_newer_seq():
    events = history([0, 3])
    cancelled = new_control_record("j1", "c1", NOW).model_copy(update={"currentState": "cancelled"})
    decision = decide(cancelled, events[0], NOW, "outbox")
    assert decision.outcome is Outcome.APPLIED
    assert decision.record.currentState == "cancelled"
    assert decision.record.lastAppliedSeq == 1


def test_an_event_whose_state_the_record_cannot_reach_is_skipped():
    events = history([0])
    record = new_control_record("j1", "c1", NOW).model_copy(update={"currentState": "accepted"})
    snapshot = events[0].snapshot.model_copy(update={"state": "created"})
    created_event = events[0].model_copy(update={"snapshot": snapshot})
    assert decide(record, created_event, NOW, "outbox").outcome is Outcome.SKIPPED


def test_a_lost_compare_and_swap_rereads_and_retries():
    events = history([0])
    store = FakeControlRecordStore(new_control_record("j1", "c1", NOW))
    stale = store.record
    store.replace(stale.model_copy(update={"version": 1, "customerId": "moved"}), expected_version=0)
    decision = EventApplier(store, clock=lambda: NOW).apply(events[0], "reply", current=stale)
    assert decision.outcome is Outcome.APPLIED
    assert store.record.version == 2
    assert store.record.customerId == "moved"


def test_the_record_keeps_which_road_applied_each_event_and_only_the_newest():
    # Given a long history applied alternately by the reply and the outbox, each event twice
    events = history([0] * 9)
    store = FakeControlRecordStore(new_control_record("j1", "c1", NOW))
    applier = EventApplier(store, clock=lambda: NOW)
    for index, event in enumerate(events):
        road: Road = "reply" if index % 2 == 0 else "outbox"
        applier.apply(event, road)
        applier.apply(event, "catch-up")  # the other road arrives later: a no-op, not recorded
    # Then the trail holds the newest changes, one per event, with the road and the version each made
    trail = store.record.appliedBy
    assert [entry.seq for entry in trail] == [e.seq for e in events][-TRAIL_LENGTH:]
    assert [entry.road for entry in trail] == ["reply" if i % 2 == 0 else "outbox" for i in range(9)][-TRAIL_LENGTH:]
    assert [entry.version for entry in trail] == [entry.seq for entry in trail]


@st.composite
def diverged_records(draw):
    """A journey's truth (loans-api's newest event) and a record in any state relative to it: behind,
    equal, ahead (a forged lastAppliedSeq), or projected from another journey's event (diverged)."""
    events = history(draw(st.lists(st.integers(0, 3), min_size=1, max_size=10)))
    truth = events[-1]
    record = new_control_record("j1", "c1", NOW)
    for event in events[: draw(st.integers(0, len(events)))]:
        record = decide(record, event, NOW, "outbox").record
    other = draw(st.sampled_from(events))
    tampering = draw(st.sampled_from(["none", "ahead", "diverged"]))
    if tampering == "ahead":
        record = record.model_copy(update={"lastAppliedSeq": truth.seq + draw(st.integers(1, 10**9))})
    elif tampering == "diverged":
        snapshot = other.snapshot
        loan = {"simulation": snapshot.simulation, "acceptance": snapshot.acceptance,
                "disbursement": snapshot.disbursement}  # fmt: skip
        record = record.model_copy(update={"currentState": snapshot.state, **loan})
    return record, truth


@settings(max_examples=300, deadline=None)
@given(diverged_records())
def test_a_rebuild_makes_any_record_show_exactly_the_truth_with_one_new_version(case):
    record, truth = case
    # When the record is rebuilt from loans-api's newest event
    decision = rebuild(record, truth, NOW)
    rebuilt = decision.record
    # Then it shows exactly the truth, whatever it said before (ahead, diverged, terminal or behind)
    assert shows(rebuilt, truth)
    assert (rebuilt.journeyId, rebuilt.customerId, rebuilt.createdAt) == (record.journeyId, record.customerId, NOW)
    if decision.outcome is Outcome.NOOP:
        # And it writes nothing only when the record already showed the truth
        assert shows(record, truth)
        assert rebuilt == record
    else:
        # Or it is one CAS step: version + 1, recorded in the trail as a rebuild
        assert decision.outcome is Outcome.APPLIED
        assert not shows(record, truth)
        assert rebuilt.version == record.version + 1
        assert (rebuilt.appliedBy[-1].road, rebuilt.appliedBy[-1].seq) == ("rebuild", truth.seq)
    # And a second rebuild changes nothing
    assert rebuild(rebuilt, truth, NOW).outcome is Outcome.NOOP


def test_a_rebuild_lowers_a_forged_seq_the_applier_would_call_every_real_event_a_noop():
    # Given a record with a forged lastAppliedSeq of 10^9 (every real event is a no-op to the applier)
    [truth] = history([0])
    record = new_control_record("j1", "c1", NOW).model_copy(update={"lastAppliedSeq": 10**9})
    assert (
        EventApplier(FakeControlRecordStore(record), clock=lambda: NOW).apply(truth, "repair").outcome is Outcome.NOOP
    )
    # When it is rebuilt from the truth, Then the record is back at the ledger's seq and state, one version on
    decision = rebuild(record, truth, NOW)
    assert decision.outcome is Outcome.APPLIED
    assert (decision.record.lastAppliedSeq, decision.record.currentState, decision.record.version) == (
        truth.seq,
        "simulated",
        1,
    )


def test_a_rebuild_of_a_journey_loans_api_has_no_ledger_of_takes_it_back_to_before_any_command():
    # Given a record claiming a quote and seq 3 for a journey loans-api never committed a command for
    [real] = history([0])
    created = new_control_record("j1", "c1", NOW)
    record = decide(created, real, NOW, "outbox").record.model_copy(update={"lastAppliedSeq": 3})
    # When it is rebuilt from no ledger at all
    decision = rebuild(record, None, NOW)
    # Then it is the journey before any command (created, seq 0, nothing held), one version on, trail saying so
    rebuilt = decision.record
    assert decision.outcome is Outcome.APPLIED
    assert rebuilt.loan_view() == created.loan_view()
    assert (rebuilt.lastAppliedSeq, rebuilt.lastAppliedEventId, rebuilt.version) == (0, None, record.version + 1)
    assert (rebuilt.appliedBy[-1].road, rebuilt.appliedBy[-1].seq) == ("rebuild", 0)
    assert (rebuilt.customerId, rebuilt.createdAt) == (record.customerId, record.createdAt)
    # And a new journey already shows it: nothing to rebuild
    assert shows(created, None)
    assert rebuild(created, None, NOW).outcome is Outcome.NOOP


CUSTOMER_ID_LENGTH = CUSTOMER_ID_BYTES


@pytest.mark.parametrize(
    "customer",
    [
        pytest.param("c" * CUSTOMER_ID_LENGTH, id="ascii"),
        # the API bounds the id in bytes (functions/orchestrator/models.py CUSTOMER_ID_BYTES): 64 two-byte
        # characters, 32 four-byte ones are the longest it admits
        pytest.param("é" * (CUSTOMER_ID_LENGTH // 2), id="two-byte-characters"),
        pytest.param("😀" * (CUSTOMER_ID_LENGTH // 4), id="four-byte-characters"),
    ],
)
def test_the_control_record_stays_under_1_kb_whatever_the_journeys_history(customer: str) -> None:
    # Given the longest history one journey may have, with the largest inputs: a customer id of 128
    # characters (in the record and in its listing), the cap of quotes (each of the largest amount over the
    # longest term) each accepted, then the disbursement; every event applied by the longest-named road,
    # twice (the second a no-op)
    ledger = domain.Ledger(domain.new_id())
    events: list[LoanEvent] = []
    for _ in range(domain.QUOTE_CAP):
        quoted = domain.create_simulation(ledger, MAX_AMOUNT, MAX_TERM_MONTHS, NOW)
        assert quoted.event.snapshot.simulation is not None
        accepted = domain.create_acceptance(quoted.ledger_after, quoted.event.snapshot.simulation.simulationId, NOW)
        events += [quoted.event, accepted.event]
        ledger = accepted.ledger_after
    assert ledger.snapshot.acceptance is not None
    events.append(domain.create_disbursement(ledger, ledger.snapshot.acceptance.acceptanceId, NOW).event)
    # listed as the orchestrator lists it (the customer index's key, stored with the record), created with an
    # agent key (the create's fingerprint, stored with the record too)
    listing = keys.listing("arn:aws:sts::111111111111:assumed-role/" + "r" * 64 + "/session", customer)
    create_hash = keys.create_hash(fingerprint("createJourney", "", {"customerId": customer}))
    store = FakeControlRecordStore(new_control_record(ledger.journey_id, customer, NOW, listing, create_hash))
    applier = EventApplier(store, clock=lambda: NOW)
    sizes = []
    for event in events:
        applier.apply(event, "catch-up")
        applier.apply(event, "catch-up")
        sizes.append(item_size(control_item(store.record)))
    # Then the record, as DynamoDB sizes the item (docs: CapacityUnitCalculations), stays under 1 KB
    # after every write: each costs one write unit, however long the history (what grows is loans-api's
    # history of the journey, not the record)
    assert store.record.currentState == "disbursed"
    assert len(store.record.appliedBy) == TRAIL_LENGTH
    assert max(sizes) < KB, f"the record reached {max(sizes)} bytes (after event {sizes.index(max(sizes)) + 1})"
