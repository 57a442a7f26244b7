"""A journey's history, pure: its events are the only record of its quotes and acceptances (D1). The
status of each (ACTIVE, SUPERSEDED, CANCELLED) is not stored anywhere: it follows from the events after
it, by the rules the commands apply (a new quote supersedes the active one and cancels an active
acceptance; a cancel cancels both). `GET /journeys/{id}` reads the newest events (a window) and the
journey's item, and this module turns them into its answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from functions.loans_api.domain import ACTIVE, CANCELLED, SUPERSEDED, acceptance_body, simulation_body
from functions.loans_api.models import JourneyTruth
from shared.events import LoanEvent

# What `GET /journeys/{id}` lists of each kind (simulations, acceptances, events): the newest this many.
HISTORY_PAGE = 50
# Events read per page, and pages at most: a journey has at most `max_simulations_per_journey` quotes
# (100 by default) and as many acceptances, plus its end, so 2 pages of 101 hold any default journey
# whole. A journey with a raised cap lists what the newest 202 events hold (`olderOmitted` says so).
WINDOW_PAGE = 2 * HISTORY_PAGE + 1
MAX_WINDOW_PAGES = 2
_TERMINAL = ("disbursed", "cancelled")
DISBURSED = "DISBURSED"


@dataclass(frozen=True)
class Entry:
    """One event of the history as stored: the event and its outbox status (PENDING / NOTIFIED)."""

    event: LoanEvent
    status: str


@dataclass(frozen=True)
class Totals:
    """How many of each kind the journey has had, from its item alone (None: not counted, an event
    written before quotes were counted). Every event is one quote, one acceptance or the journey's end."""

    events: int
    simulations: int | None
    acceptances: int | None

    @classmethod
    def of(cls, last: LoanEvent) -> Totals:
        quotes = last.snapshot.simulationCount
        if quotes is None:
            return cls(last.seq, None, None)
        ended = int(last.snapshot.state in _TERMINAL)
        return cls(last.seq, quotes, last.seq - quotes - ended)


def is_enough(last: LoanEvent, newest: list[Entry]) -> bool:
    """Whether the window `newest` (newest first) already holds the newest page of each kind and shows
    whether older ones exist, so no further page is read."""
    totals = Totals.of(last)
    if totals.simulations is None or totals.acceptances is None:
        return len(newest) >= totals.events
    simulations = sum(1 for e in newest if e.event.type == "SimulationCreated")
    acceptances = sum(1 for e in newest if e.event.type == "AcceptanceCreated")
    return (
        len(newest) > HISTORY_PAGE
        and (simulations > HISTORY_PAGE or simulations >= totals.simulations)
        and (acceptances > HISTORY_PAGE or acceptances >= totals.acceptances)
    ) or len(newest) >= totals.events


def truth(last: LoanEvent, newest: list[Entry]) -> JourneyTruth:
    """`GET /journeys/{id}`'s answer from the journey item's event `last` and the window `newest`
    (its newest events, newest first, contiguous from `last`), every status derived by `statuses`.
    `olderOmitted` names each kind the journey has more of than the answer lists."""
    simulations, acceptances = statuses(list(reversed(newest)))
    totals = Totals.of(last)
    complete = len(newest) >= totals.events
    older: list[str] = []
    for name, found, total in (
        ("simulations", len(simulations), totals.simulations),
        ("acceptances", len(acceptances), totals.acceptances),
        ("events", len(newest), totals.events),
    ):
        listed = min(found, HISTORY_PAGE)
        if (total is not None and total > listed) or (total is None and (found > listed or not complete)):
            older.append(name)
    events = [
        {"eventId": e.event.eventId, "seq": e.event.seq, "type": e.event.type, "status": e.status}
        for e in reversed(newest[:HISTORY_PAGE])
    ]
    return JourneyTruth.of(
        last,
        simulations=simulations[-HISTORY_PAGE:],
        acceptances=acceptances[-HISTORY_PAGE:],
        disbursement=disbursement(last),
        events=events,
        older_omitted=older,
    )


def statuses(oldest_first: list[Entry]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The simulations and acceptances the events created, oldest first, each with the status the later
    events gave it (`updatedAt`: when it left ACTIVE). A window that starts mid-history is exact for
    what it lists: only later events change a status, and the window holds all of them."""
    simulations: list[dict[str, Any]] = []
    acceptances: list[dict[str, Any]] = []

    def end(items: list[dict[str, Any]], status: str, when: str) -> None:
        for item in items:
            if item["status"] == ACTIVE:
                item.update(status=status, updatedAt=when)

    for entry in oldest_first:
        event = entry.event
        when = event.occurredAt.isoformat()
        snapshot = event.snapshot
        if event.type == "SimulationCreated" and snapshot.simulation is not None:
            end(simulations, SUPERSEDED, when)
            end(acceptances, CANCELLED, when)
            body = simulation_body(event.journeyId, snapshot.simulation.model_dump(mode="json"), ACTIVE)
            simulations.append({**body, "createdAt": when})
        elif event.type == "AcceptanceCreated" and snapshot.acceptance is not None:
            body = acceptance_body(event.journeyId, snapshot.acceptance.model_dump(mode="json"), ACTIVE)
            acceptances.append({**body, "createdAt": when})
        elif event.type == "JourneyCancelled":
            end(simulations, CANCELLED, when)
            end(acceptances, CANCELLED, when)
    return simulations, acceptances


def disbursement(last: LoanEvent) -> dict[str, Any] | None:
    """The journey's disbursement, from its item (a disbursed journey's newest event is its payment)."""
    snapshot = last.snapshot
    if snapshot.disbursement is None or snapshot.acceptance is None:
        return None
    paid = snapshot.disbursement.model_dump(mode="json")
    return {
        "disbursementId": paid["disbursementId"],
        "journeyId": last.journeyId,
        "acceptanceId": snapshot.acceptance.acceptanceId,
        "amount": paid["amount"],
        "status": DISBURSED,
        "createdAt": last.occurredAt.isoformat(),
    }
