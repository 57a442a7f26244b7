"""loans-api's business rules, pure: given the journey's ledger and a command, the change to commit
(or a DomainError). No I/O: the store turns a Change into one DynamoDB transaction."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from uuid6 import uuid7

from functions.loans_api import pricing
from shared.errors import BusinessRuleViolated, SimulationLimitReached
from shared.events import (
    AcceptanceSummary,
    DisbursementSummary,
    EventType,
    LoanEvent,
    LoanSnapshot,
    SimulationSummary,
)

EntityKind = Literal["SIMULATION", "ACCEPTANCE", "DISBURSEMENT"]


def new_id() -> str:
    """Time-ordered UUIDv7, used for entity and event ids."""
    return str(uuid7())


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
class EntityWrite:
    """A domain item to create (`status` given, must not exist) or a status change guarded on
    the item still being ACTIVE."""

    kind: EntityKind
    entity_id: str
    status: str
    attributes: dict[str, Any] = field(default_factory=dict)
    create: bool = True

    @property
    def is_compensation(self) -> bool:
        return not self.create and self.status == CANCELLED


@dataclass(frozen=True)
class Change:
    """Everything one command commits atomically, plus the response it answers with."""

    ledger_before: Ledger
    event: LoanEvent
    writes: tuple[EntityWrite, ...]
    status_code: int
    response: dict[str, Any]

    @property
    def ledger_after(self) -> Ledger:
        return Ledger(self.event.journeyId, self.event)

    @property
    def compensations(self) -> int:
        return sum(1 for write in self.writes if write.is_compensation)


ACTIVE, SUPERSEDED, CANCELLED = "ACTIVE", "SUPERSEDED", "CANCELLED"
# Quotes one journey may have (loans-api's setting `max_simulations_per_journey` defaults to it): it
# bounds the journey's history, and so every read of it.
MAX_SIMULATIONS = 100


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


def _cancel_active_acceptance(ledger: Ledger) -> list[EntityWrite]:
    acceptance = ledger.snapshot.acceptance
    return [] if acceptance is None else [EntityWrite("ACCEPTANCE", acceptance.acceptanceId, CANCELLED, create=False)]


def create_simulation(
    ledger: Ledger, amount: Decimal, term_months: int, now: datetime, limit: int = MAX_SIMULATIONS
) -> Change:
    """Price a loan and make it the active simulation. In the same transaction the previous
    simulation is superseded and an active acceptance is cancelled (the compensation lives inside
    the command, so no other command of the journey can land between the two). A journey has at
    most `limit` quotes: its history (and every read of it) stays bounded."""
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
    writes = [EntityWrite("SIMULATION", simulation.simulationId, ACTIVE, simulation.model_dump(mode="json"))]
    previous = ledger.snapshot.simulation
    if previous is not None:
        writes.append(EntityWrite("SIMULATION", previous.simulationId, SUPERSEDED, create=False))
    writes += _cancel_active_acceptance(ledger)
    body = simulation_body(ledger.journey_id, simulation.model_dump(mode="json"), ACTIVE)
    acceptance = ledger.snapshot.acceptance
    body["cancelledAcceptanceId"] = None if acceptance is None else acceptance.acceptanceId
    return Change(ledger, event, tuple(writes), 201, _with_event(body, event))


def cancel_journey(ledger: Ledger, now: datetime) -> Change:
    """Cancel the journey: the ledger says `cancelled` (it is created if the journey had no command
    yet), and the active acceptance and simulation are cancelled, all in one transaction. Every
    later write for the journey is refused by `_require_open`."""
    if ledger.snapshot.state == "disbursed":
        raise BusinessRuleViolated(f"journey {ledger.journey_id} was disbursed: it cannot be cancelled")
    _require_open(ledger)
    writes = _cancel_active_acceptance(ledger)
    simulation = ledger.snapshot.simulation
    if simulation is not None:
        writes.append(EntityWrite("SIMULATION", simulation.simulationId, CANCELLED, create=False))
    snapshot = ledger.snapshot.model_copy(update={"state": "cancelled", "simulation": None, "acceptance": None})
    event = _event(ledger, "JourneyCancelled", snapshot, now)
    acceptance = ledger.snapshot.acceptance
    body = {
        "journeyId": ledger.journey_id,
        "state": "cancelled",
        "cancelledSimulationId": None if simulation is None else simulation.simulationId,
        "cancelledAcceptanceId": None if acceptance is None else acceptance.acceptanceId,
    }
    return Change(ledger, event, tuple(writes), 200, _with_event(body, event))


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
    writes = (EntityWrite("ACCEPTANCE", acceptance.acceptanceId, ACTIVE, acceptance.model_dump(mode="json")),)
    body = acceptance_body(ledger.journey_id, acceptance.model_dump(mode="json"), ACTIVE)
    return Change(ledger, event, writes, 201, _with_event(body, event))


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
    writes = (EntityWrite("DISBURSEMENT", disbursement.disbursementId, "DISBURSED", body),)
    return Change(ledger, event, writes, 201, _with_event(body, event))


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
