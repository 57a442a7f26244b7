"""loans-api's request and response bodies."""

from __future__ import annotations

from typing import Any

from shared.events import LoanEvent, LoanState, Message
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


class JourneyTruthResponse(Message):
    journeyId: str
    seq: int
    state: LoanState
    simulations: list[dict[str, Any]]
    acceptances: list[dict[str, Any]]
    disbursement: dict[str, Any] | None
    events: list[dict[str, Any]]
    lastEvent: LoanEvent


class LedgerResponse(Message):
    journeyId: str
    seq: int
    state: LoanState
    lastEvent: LoanEvent
