"""loans-api's request and response bodies."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from shared.events import LoanEvent, LoanState, Message, Money, SimulationSummary, WireMessage
from shared.loan_terms import Amount, EntityId, TermMonths


class SimulationRequest(Message):
    journeyId: EntityId
    amount: Amount
    termMonths: TermMonths


class AcceptanceRequest(Message):
    journeyId: EntityId
    simulationId: EntityId


class DisbursementRequest(Message):
    journeyId: EntityId
    acceptanceId: EntityId


class JourneyTruth(Message):
    """Everything loans-api holds about one journey (`GET /journeys/{journeyId}`, read by the store).
    `lastEvent` is the ledger's newest event: where the journey stands (its snapshot's `state` and its
    `seq`, repeated at the top) and what any reader applies to catch up with the truth."""

    journeyId: str
    seq: int
    state: LoanState
    simulations: list[dict[str, Any]]
    acceptances: list[dict[str, Any]]
    disbursement: dict[str, Any] | None
    events: list[dict[str, Any]]
    lastEvent: LoanEvent
    olderOmitted: list[Literal["simulations", "acceptances", "events"]] = Field(
        default_factory=list,
        description="The lists that show only their newest entries (50): older ones exist and are left out, so "
        "the read costs the same however long the journey's history.",
    )

    @classmethod
    def of(
        cls,
        last_event: LoanEvent,
        simulations: list[dict[str, Any]],
        acceptances: list[dict[str, Any]],
        disbursement: dict[str, Any] | None,
        events: list[dict[str, Any]],
        older_omitted: list[str] | None = None,
    ) -> JourneyTruth:
        """The truth whose ledger stands at `last_event`."""
        return cls(
            journeyId=last_event.journeyId,
            seq=last_event.seq,
            state=last_event.snapshot.state,
            simulations=simulations,
            acceptances=acceptances,
            disbursement=disbursement,
            events=events,
            lastEvent=last_event,
            olderOmitted=older_omitted or [],
        )


# What the writes answer (201/200, and the same bytes on a replay). Each carries the event it committed
# (`event`, also `eventId` and `seq`): the orchestrator applies it to its Control Record (road 1).


class Committed(WireMessage):
    eventId: str = Field(description="The committed event's id (a UUIDv7); the outbox carries the same one.")
    seq: int = Field(description="The event's sequence number in the journey's ledger.")
    event: LoanEvent = Field(description="The event this command committed, with the journey's snapshot after it.")


class SimulationResponse(Committed, SimulationSummary):
    """The quote (the simulation as the event's snapshot holds it) with its status and the event."""

    journeyId: str
    status: Literal["ACTIVE"]
    cancelledAcceptanceId: str | None = Field(description="The acceptance this re-simulation cancelled, if any.")


class AcceptanceResponse(Committed):
    acceptanceId: str
    journeyId: str
    simulationId: str
    status: Literal["ACTIVE"]


class DisbursementResponse(Committed):
    disbursementId: str
    journeyId: str
    acceptanceId: str
    amount: Money


class CancellationResponse(Committed):
    journeyId: str
    state: Literal["cancelled"]
    cancelledSimulationId: str | None
    cancelledAcceptanceId: str | None


class LedgerResponse(Message):
    journeyId: str
    seq: int
    state: LoanState
    lastEvent: LoanEvent
