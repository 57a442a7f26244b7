"""loans-api's business rules, pure: given the journey's loan item (its ledger) and a command, the change
to commit (or a DomainError). No I/O: the store turns a Change into one DynamoDB transaction of three
items (D1): the journey's loan item, the receipt, the event. The event is also the journey's history;
nothing else is written, and no older item changes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from functions.loans_api import pricing
from shared import event_ids
from shared.errors import BusinessRuleViolated, SimulationLimitReached
from shared.events import (
    AcceptanceSummary,
    DisbursementSummary,
    EventType,
    LoanEvent,
    LoanSnapshot,
    SimulationSummary,
)

# Time-ordered UUIDv7, used for entity and event ids.
new_id = event_ids.new_id


@dataclass(frozen=True)
class Ledger:
    """The journey's running truth: the last event committed for it (None before the first command).
    Its `seq` orders every command of the journey; its snapshot says where the journey stands."""

    journey_id: str
    last_event: LoanEvent | None = None

    @property
    def seq(self) -> int:
        return 0 if self.last_event is None else self.last_event.seq

    @property
    def snapshot(self) -> LoanSnapshot:
        if self.last_event is None:
            return LoanSnapshot(journeyId=self.journey_id, state="created", simulationCount=0)
        return self.last_event.snapshot

    @property
    def simulations_had(self) -> int:
        """Quotes the journey has had. Events written before quotes were counted say nothing: every event
        is at most one quote, so `seq` bounds it (the cap then holds, if early)."""
        counted = self.snapshot.simulationCount
        return self.seq if counted is None else counted


@dataclass(frozen=True)
class Requirements:
    """What a command was decided on, checked again by its transaction on the journey's loan item (D14),
    beside the item's `seq` (D1) and "never disbursed, not cancelled" (every command): the quote it names
    is the active one (`simulation_id`), no acceptance is active (`no_acceptance`), the acceptance it
    names is the active one (`acceptance_id`), the journey has had fewer quotes than the cap
    (`quotes_below`, when its quotes are counted: an uncounted journey is bounded by `seq`)."""

    simulation_id: str | None = None
    no_acceptance: bool = False
    acceptance_id: str | None = None
    quotes_below: int | None = None

    def hold_on(self, ledger: Ledger) -> bool:
        """Whether the journey item `ledger` (as stored, never disbursed) still meets them: what the
        transaction's conditions decide, in Python (the in-memory store's check)."""
        snapshot = ledger.snapshot
        if ledger.last_event is not None and snapshot.state in ("disbursed", "cancelled"):
            return False
        active, acceptance = snapshot.simulation, snapshot.acceptance
        return (
            (self.simulation_id is None or (active is not None and active.simulationId == self.simulation_id))
            and (not self.no_acceptance or acceptance is None)
            and (
                self.acceptance_id is None or (acceptance is not None and acceptance.acceptanceId == self.acceptance_id)
            )
            and (
                self.quotes_below is None
                or snapshot.simulationCount is None
                or snapshot.simulationCount < self.quotes_below
            )
        )


@dataclass(frozen=True)
class Change:
    """Everything one command commits atomically, plus the response it answers with."""

    ledger_before: Ledger
    event: LoanEvent
    status_code: int
    response: dict[str, Any]
    requires: Requirements = Requirements()
    # What the command cancelled that was active (an acceptance a re-simulation replaced, what a cancel
    # ended): the Compensations metric.
    compensations: int = 0

    @property
    def ledger_after(self) -> Ledger:
        return Ledger(self.event.journeyId, self.event)


ACTIVE, SUPERSEDED, CANCELLED = "ACTIVE", "SUPERSEDED", "CANCELLED"
# The quote cap: quotes one journey may have (loans-api's setting `max_simulations_per_journey`
# defaults to it): it bounds the journey's history, and so every read of it. `create_simulation` refuses
# a quote past it, and its transaction holds it (`Requirements.quotes_below`).
QUOTE_CAP = 100


def _event(ledger: Ledger, event_type: EventType, snapshot: LoanSnapshot, now: datetime) -> LoanEvent:
    return LoanEvent(
        eventId=new_id(),
        journeyId=ledger.journey_id,
        seq=ledger.seq + 1,
        type=event_type,
        occurredAt=now,
        snapshot=snapshot,
    )


def _require_open(ledger: Ledger) -> None:
    state = ledger.snapshot.state
    if state in ("disbursed", "cancelled"):
        raise BusinessRuleViolated(f"journey {ledger.journey_id} is {state}: no further changes")


def _with_event(body: dict[str, Any], event: LoanEvent) -> dict[str, Any]:
    return {**body, "eventId": event.eventId, "seq": event.seq, "event": event.model_dump(mode="json")}


def create_simulation(
    ledger: Ledger, amount: Decimal, term_months: int, now: datetime, limit: int = QUOTE_CAP
) -> Change:
    """Price a loan and make it the active simulation: the previous one is superseded and an active
    acceptance is cancelled by the same event (the compensation lives inside the command, so no other
    command of the journey can land between the two; their statuses follow from the history). A
    journey has at most `limit` quotes: its history (and every read of it) stays bounded."""
    _require_open(ledger)
    had = ledger.simulations_had
    if had >= limit:
        raise SimulationLimitReached(
            f"journey {ledger.journey_id} has had {had} quotes, the most one journey may have ({limit}): accept "
            "the current one, or cancel"
        )
    quote = pricing.quote(amount, term_months)
    simulation = SimulationSummary(
        simulationId=new_id(),
        amount=amount,
        termMonths=term_months,
        annualRate=quote.annual_rate,
        monthlyPayment=quote.monthly_payment,
        totalRepayable=quote.total_repayable,
    )
    snapshot = ledger.snapshot.model_copy(
        update={
            "state": "simulated",
            "simulation": simulation,
            "acceptance": None,
            "simulationCount": had + 1,
            "simulationsLeft": limit - had - 1,
        }
    )
    event = _event(ledger, "SimulationCreated", snapshot, now)
    body = simulation_body(ledger.journey_id, simulation.model_dump(mode="json"), ACTIVE)
    acceptance = ledger.snapshot.acceptance
    body["cancelledAcceptanceId"] = None if acceptance is None else acceptance.acceptanceId
    counted = ledger.snapshot.simulationCount is not None
    requires = Requirements(quotes_below=limit if counted else None)
    return Change(ledger, event, 201, _with_event(body, event), requires, compensations=int(acceptance is not None))


def cancel_journey(ledger: Ledger, now: datetime) -> Change:
    """Cancel the journey: its item says `cancelled` (it is created if the journey had no command yet),
    which cancels the active acceptance and simulation (their statuses follow from the history). Every
    later write for the journey is refused by `_require_open` and by the transaction's condition."""
    if ledger.snapshot.state == "disbursed":
        raise BusinessRuleViolated(f"journey {ledger.journey_id} was disbursed: it cannot be cancelled")
    _require_open(ledger)
    simulation = ledger.snapshot.simulation
    snapshot = ledger.snapshot.model_copy(update={"state": "cancelled", "simulation": None, "acceptance": None})
    event = _event(ledger, "JourneyCancelled", snapshot, now)
    acceptance = ledger.snapshot.acceptance
    body = {
        "journeyId": ledger.journey_id,
        "state": "cancelled",
        "cancelledSimulationId": None if simulation is None else simulation.simulationId,
        "cancelledAcceptanceId": None if acceptance is None else acceptance.acceptanceId,
    }
    ended = int(simulation is not None) + int(acceptance is not None)
    return Change(ledger, event, 200, _with_event(body, event), compensations=ended)


def create_acceptance(ledger: Ledger, simulation_id: str, now: datetime) -> Change:
    _require_open(ledger)
    active = ledger.snapshot.simulation
    if active is None or active.simulationId != simulation_id:
        raise BusinessRuleViolated(
            f"simulation {simulation_id} is not the active simulation of journey {ledger.journey_id}"
        )
    if ledger.snapshot.acceptance is not None:
        raise BusinessRuleViolated(f"journey {ledger.journey_id} already has an active acceptance")
    acceptance = AcceptanceSummary(acceptanceId=new_id(), simulationId=simulation_id)
    snapshot = ledger.snapshot.model_copy(update={"state": "accepted", "acceptance": acceptance})
    event = _event(ledger, "AcceptanceCreated", snapshot, now)
    body = acceptance_body(ledger.journey_id, acceptance.model_dump(mode="json"), ACTIVE)
    requires = Requirements(simulation_id=simulation_id, no_acceptance=True)
    return Change(ledger, event, 201, _with_event(body, event), requires)


def create_disbursement(ledger: Ledger, acceptance_id: str, now: datetime) -> Change:
    if ledger.snapshot.disbursement is not None:
        raise BusinessRuleViolated(f"journey {ledger.journey_id} was already disbursed: one disbursement, ever")
    _require_open(ledger)
    active = ledger.snapshot.acceptance
    simulation = ledger.snapshot.simulation
    if active is None or active.acceptanceId != acceptance_id or simulation is None:
        raise BusinessRuleViolated(
            f"acceptance {acceptance_id} is not the active acceptance of journey {ledger.journey_id}"
        )
    disbursement = DisbursementSummary(disbursementId=new_id(), amount=simulation.amount)
    snapshot = ledger.snapshot.model_copy(update={"state": "disbursed", "disbursement": disbursement})
    event = _event(ledger, "LoanDisbursed", snapshot, now)
    body = {
        "disbursementId": disbursement.disbursementId,
        "journeyId": ledger.journey_id,
        "acceptanceId": acceptance_id,
        "amount": disbursement.model_dump(mode="json")["amount"],
    }
    return Change(ledger, event, 201, _with_event(body, event), Requirements(acceptance_id=acceptance_id))


def simulation_body(journey_id: str, simulation: dict[str, Any], status: str) -> dict[str, Any]:
    fields = ("simulationId", "amount", "termMonths", "annualRate", "monthlyPayment", "totalRepayable")
    return {"journeyId": journey_id, **{name: simulation[name] for name in fields}, "status": status}


def acceptance_body(journey_id: str, acceptance: dict[str, Any], status: str) -> dict[str, Any]:
    return {
        "acceptanceId": acceptance["acceptanceId"],
        "journeyId": journey_id,
        "simulationId": acceptance["simulationId"],
        "status": status,
    }
