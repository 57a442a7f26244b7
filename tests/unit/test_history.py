"""The statuses `GET /journeys/{id}` derives from a journey's history (functions/loans_api/history.py) are the
ones loans-api used to store: a model of the old items (one per simulation and acceptance, its status updated
in the command's transaction: a new quote supersedes the active one and cancels an active acceptance, a cancel
cancels both) runs beside the domain, and for any sequence of commands, and any window of the newest events,
the derived lists equal the model's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from functions.loans_api import domain, history
from functions.loans_api.domain import Change, Ledger
from shared.errors import DomainError
from shared.events import AcceptanceSummary, SimulationSummary

COMMANDS = st.lists(st.sampled_from(["simulate", "accept", "disburse", "cancel"]), max_size=40)


def _id_of(entity: SimulationSummary | AcceptanceSummary | None) -> str | None:
    if isinstance(entity, SimulationSummary):
        return entity.simulationId
    return None if entity is None else entity.acceptanceId


class OldItems:
    """The old layout's domain items, changed exactly as the old transactions changed them."""

    def __init__(self) -> None:
        self.simulations: dict[str, dict[str, Any]] = {}
        self.acceptances: dict[str, dict[str, Any]] = {}

    def record(self, change: Change) -> None:
        before, after = change.ledger_before.snapshot, change.event.snapshot
        when = change.event.occurredAt.isoformat()

        def end(items: dict[str, dict[str, Any]], entity: str | None, status: str) -> None:
            if entity is not None:
                assert items[entity]["status"] == domain.ACTIVE  # the old update's condition
                items[entity].update(status=status, updatedAt=when)

        if change.event.type == "SimulationCreated":
            assert after.simulation is not None
            end(self.simulations, _id_of(before.simulation), domain.SUPERSEDED)
            end(self.acceptances, _id_of(before.acceptance), domain.CANCELLED)
            body = domain.simulation_body(after.journeyId, after.simulation.model_dump(mode="json"), domain.ACTIVE)
            self.simulations[after.simulation.simulationId] = {**body, "createdAt": when}
        elif change.event.type == "AcceptanceCreated":
            assert after.acceptance is not None
            body = domain.acceptance_body(after.journeyId, after.acceptance.model_dump(mode="json"), domain.ACTIVE)
            self.acceptances[after.acceptance.acceptanceId] = {**body, "createdAt": when}
        elif change.event.type == "JourneyCancelled":
            end(self.acceptances, _id_of(before.acceptance), domain.CANCELLED)
            end(self.simulations, _id_of(before.simulation), domain.CANCELLED)


def _created(entries: list[history.Entry]) -> list[tuple[str, str]]:
    """(eventId, the id of the quote or acceptance it created) of every creating event."""
    found = []
    for entry in entries:
        snapshot = entry.event.snapshot
        if entry.event.type == "SimulationCreated" and snapshot.simulation is not None:
            found.append((entry.event.eventId, snapshot.simulation.simulationId))
        if entry.event.type == "AcceptanceCreated" and snapshot.acceptance is not None:
            found.append((entry.event.eventId, snapshot.acceptance.acceptanceId))
    return found


def _run(commands: list[str]) -> tuple[Ledger, list[history.Entry], OldItems]:
    """The commands on one journey through the domain (the illegal ones refused, as loans-api would)."""
    ledger, entries, old = Ledger("j-1"), list[history.Entry](), OldItems()
    now = datetime(2026, 12, 1, tzinfo=UTC)
    for n, name in enumerate(commands):
        at = now + timedelta(seconds=n)
        snapshot = ledger.snapshot
        try:
            if name == "simulate":
                change = domain.create_simulation(ledger, Decimal(1000 + n), 12, at, limit=20)
            elif name == "accept":
                change = domain.create_acceptance(
                    ledger, snapshot.simulation.simulationId if snapshot.simulation else "x", at
                )
            elif name == "disburse":
                chosen = snapshot.acceptance.acceptanceId if snapshot.acceptance else "x"
                change = domain.create_disbursement(ledger, chosen, at)
            else:
                change = domain.cancel_journey(ledger, at)
        except DomainError:
            continue
        old.record(change)
        entries.insert(0, history.Entry(change.event, "PENDING"))
        ledger = change.ledger_after
    return ledger, entries, old


@settings(max_examples=300, deadline=None)
@given(commands=COMMANDS)
def test_the_derived_statuses_are_the_ones_the_old_items_held(commands):
    # Given any sequence of commands on one journey, and the old layout's items beside it
    _, entries, old = _run(commands)
    # When the statuses are derived from the whole history
    simulations, acceptances = history.statuses(list(reversed(entries)))
    # Then every quote and acceptance has the status (and updatedAt) its old item had, in creation order
    assert simulations == list(old.simulations.values())
    assert acceptances == list(old.acceptances.values())


@settings(max_examples=300, deadline=None)
@given(commands=COMMANDS, window=st.integers(min_value=1, max_value=60), page=st.integers(min_value=1, max_value=6))
def test_any_window_of_the_newest_events_lists_the_newest_of_each_kind_with_their_old_statuses(commands, window, page):
    # Given a journey, a smaller page (so that short histories reach it) and a window of its newest events
    ledger, entries, old = _run(commands)
    if ledger.last_event is None:
        return
    newest = entries[:window]
    with patch.object(history, "HISTORY_PAGE", page):
        # When the truth is derived from the window alone
        truth = history.truth(ledger.last_event, newest)
        enough = history.is_enough(ledger.last_event, newest)
        whole = history.truth(ledger.last_event, entries)
    # Then what it lists is the newest of each kind the window holds, each with its old status
    in_window = {e.event.eventId for e in newest}
    created = {change_id: event_id for event_id, change_id in _created(entries)}
    simulations = [s for s in old.simulations.values() if created[s["simulationId"]] in in_window]
    acceptances = [a for a in old.acceptances.values() if created[a["acceptanceId"]] in in_window]
    assert truth.simulations == simulations[-page:]
    assert truth.acceptances == acceptances[-page:]
    # And `olderOmitted` names every kind of which the journey has more than it lists: exactly those when
    # the window reaches its first event, and (conservatively) every kind when it does not, since nothing
    # read says what the older events were (the item's counts are exact only if counting began at seq 1)
    more = {
        "simulations": len(old.simulations) > len(truth.simulations),
        "acceptances": len(old.acceptances) > len(truth.acceptances),
        "events": len(entries) > len(truth.events),
    }
    if len(newest) == len(entries):
        assert sorted(truth.olderOmitted) == sorted(name for name, is_more in more.items() if is_more)
    else:
        assert sorted(truth.olderOmitted) == sorted(more)
    # And a window that holds enough (`is_enough`) lists what the whole history would
    if enough:
        assert (truth.simulations, truth.acceptances, truth.events) == (
            whole.simulations,
            whole.acceptances,
            whole.events,
        )
        assert truth.olderOmitted == whole.olderOmitted


@settings(max_examples=200, deadline=None)
@given(commands=COMMANDS, hole=st.integers(min_value=0, max_value=60))
def test_a_window_with_a_hole_lists_only_what_follows_the_hole_and_names_every_kind_omitted(commands, hole):
    # Given a journey whose event `hole` (counted from the newest) is missing from the table (an old-layout
    # event expired under its TTL, out of order)
    ledger, entries, _ = _run(commands)
    if ledger.last_event is None or hole >= len(entries):
        return
    window = entries[:hole] + entries[hole + 1 :]
    # When the truth is derived from the window
    truth = history.truth(ledger.last_event, window)
    # Then it is what the events newer than the hole alone say (no older event's status is guessed), and
    # every kind is named omitted
    newer = history.truth(ledger.last_event, entries[:hole])
    assert (truth.simulations, truth.acceptances, truth.events) == (newer.simulations, newer.acceptances, newer.events)
    assert sorted(truth.olderOmitted) == ["acceptances", "events", "simulations"]


@settings(max_examples=200, deadline=None)
@given(commands=COMMANDS, later=st.integers(min_value=1, max_value=5))
def test_events_committed_after_the_journey_item_was_read_are_left_to_the_next_read(commands, later):
    # Given a journey's item read at one event, and `later` commands committed before its events are queried
    _, entries, _ = _run(commands)
    if later >= len(entries):
        return
    item_event = entries[later].event
    # When the truth is derived from that item and a window that already holds the later events
    truth = history.truth(item_event, entries)
    # Then it is the truth at the item's event: the later events neither break the window nor are listed
    assert truth == history.truth(item_event, entries[later:])


def test_the_disbursement_is_read_from_the_journey_item():
    # Given a disbursed journey
    ledger, _, old = _run(["simulate", "accept", "disburse"])
    assert ledger.last_event is not None
    # Then its payment names the acceptance, with the amount of its quote
    paid = history.disbursement(ledger.last_event)
    assert paid is not None
    [acceptance] = old.acceptances.values()
    assert (paid["acceptanceId"], paid["amount"], paid["status"]) == (
        acceptance["acceptanceId"],
        "1000.00",
        "DISBURSED",
    )
