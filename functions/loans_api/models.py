"""loans-api's request and response bodies."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

from pydantic import Field

from functions.loans_api import pricing
from shared.events import Message

JOURNEY_ID_PATTERN = r"^[A-Za-z0-9-]{1,64}$"
ENTITY_ID_PATTERN = r"^[A-Za-z0-9-]{1,64}$"

JourneyId = Annotated[str, Field(pattern=JOURNEY_ID_PATTERN, description="The journey's id.")]
Amount = Annotated[
    Decimal,
    Field(ge=pricing.MIN_AMOUNT, le=pricing.MAX_AMOUNT, decimal_places=2,
          description="Principal, 500..100000, at most 2 decimal places."),
]
TermMonths = Annotated[
    int,
    Field(strict=True, ge=pricing.MIN_TERM_MONTHS, le=pricing.MAX_TERM_MONTHS, description="Term in months, 3..120."),
]


class SimulationRequest(Message):
    journeyId: JourneyId
    amount: Amount
    termMonths: TermMonths


class AcceptanceRequest(Message):
    journeyId: JourneyId
    simulationId: Annotated[str, Field(pattern=ENTITY_ID_PATTERN)]


class DisbursementRequest(Message):
    journeyId: JourneyId
    acceptanceId: Annotated[str, Field(pattern=ENTITY_ID_PATTERN)]


class JourneyTruthResponse(Message):
    journeyId: str
    seq: int
    state: str
    simulations: list[dict[str, Any]]
    acceptances: list[dict[str, Any]]
    disbursement: dict[str, Any] | None
    events: list[dict[str, Any]]
