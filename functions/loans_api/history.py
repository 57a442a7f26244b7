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
DISBURSED = "DISBURSED"


@dataclass(frozen=True)
class Entry:
    """One event of the history as stored: the event and its outbox status (PENDING / NOTIFIED)."""

    event: LoanEvent
    status: str


def unbroken(last: LoanEvent, newest: list[Entry]) -> list[Entry]:
    """The run of `newest` (newest first) that follows on from the journey's item without a hole: event i
    is seq `last.seq - i`. An event missing from the table (an old-layout event expired under its TTL, in
    no order DynamoDB promises) hides what it ended, so no event older than it can say its own status."""
    run: list[Entry] = []
    for entry in newest:
        if entry.event.seq > last.seq:  # committed after the item was read: the next state's, not this one's
            continue
        if entry.event.seq != last.seq - len(run):
            break
        run.append(entry)
    return run


def is_enough(last: LoanEvent, newest: list[Entry]) -> bool:
    """Whether the window `newest` (newest first, unbroken from `last`) needs no further page: it reaches
    the journey's first event, or it holds more than a page of each kind (so each is named omitted)."""
    if reaches_start(last, newest):
        return True
    simulations = sum(1 for e in newest if e.event.type == "SimulationCreated")
    acceptances = sum(1 for e in newest if e.event.type == "AcceptanceCreated")
    return len(newest) > HISTORY_PAGE and simulations > HISTORY_PAGE and acceptances > HISTORY_PAGE


def reaches_start(last: LoanEvent, run: list[Entry]) -> bool:
    """Whether the unbroken `run` holds every event the journey has had (it reaches seq 1)."""
    return len(run) >= last.seq


def truth(last: LoanEvent, newest: list[Entry]) -> JourneyTruth:
    """`GET /journeys/{id}`'s answer from the journey item's event `last` and the window `newest`
    (its newest readable events, newest first), every status derived by `statuses` from the unbroken run
    from `last` (`unbroken`). `olderOmitted` names each kind the answer may not list whole: when the run
    reaches seq 1 the events are all there is, and a kind is named only if it has more than a page; when
    it does not (a hole, an unreadable event, or a history longer than the window), every kind is named,
    as nothing the window read says what the older events were (the item's `simulationCount` is exact only
    if counting began at seq 1, which no item records: D14)."""
    run = unbroken(last, newest)
    simulations, acceptances = statuses(list(reversed(run)))
    whole = reaches_start(last, run)
    older = [
        name
        for name, found in (("simulations", len(simulations)), ("acceptances", len(acceptances)), ("events", len(run)))
        if found > HISTORY_PAGE or not whole
    ]
    events = [
        {"eventId": e.event.eventId, "seq": e.event.seq, "type": e.event.type, "status": e.status}
        for e in reversed(run[:HISTORY_PAGE])
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
