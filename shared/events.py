"""The one event schema every road shares: loans-api writes it, the relay publishes it, the
orchestrator (road 1) and the consumer (road 2) apply it."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer

LoanState = Literal["created", "simulated", "accepted", "disbursed", "cancelled"]
EventType = Literal[
    "SimulationCreated",
    "AcceptanceCreated",
    "LoanDisbursed",
    "JourneyCancelled",
]


def _two_places(value: Decimal) -> str:
    return f"{value:.2f}"


def _four_places(value: Decimal) -> str:
    return f"{value:.4f}"


# Money travels as a decimal string with 2 places, never as a float.
Money = Annotated[Decimal, PlainSerializer(_two_places, return_type=str)]
# Rates travel as a decimal-string fraction with 4 places ("0.0790").
Rate = Annotated[Decimal, PlainSerializer(_four_places, return_type=str)]


class Message(BaseModel):
    """Base of every message: immutable, strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class SimulationSummary(Message):
    simulationId: str
    amount: Money
    termMonths: int
    annualRate: Rate
    monthlyPayment: Money
    totalRepayable: Money


class AcceptanceSummary(Message):
    acceptanceId: str
    simulationId: str


class DisbursementSummary(Message):
    disbursementId: str
    amount: Money


class LoanSnapshot(Message):
    """The journey's loan state right after an event, as the system of record sees it."""

    journeyId: str
    state: LoanState
    simulation: SimulationSummary | None = None
    acceptance: AcceptanceSummary | None = None
    disbursement: DisbursementSummary | None = None


class LoanEvent(Message):
    """An outbox event. `eventId` is a UUIDv7 minted before the transaction, so the reply (road 1)
    and the outbox (road 2) carry the same id; `seq` is the per-journey sequence."""

    eventId: str
    journeyId: str
    seq: Annotated[int, Field(ge=1)]
    type: EventType
    occurredAt: datetime
    snapshot: LoanSnapshot
