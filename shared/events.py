"""The one event schema every road shares: loans-api writes it, the relay publishes it, the
orchestrator (road 1) and the consumer (road 2) apply it."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, ValidationError

LoanState = Literal["created", "simulated", "accepted", "disbursed", "cancelled"]
EventType = Literal[
    "SimulationCreated",
    "AcceptanceCreated",
    "LoanDisbursed",
    "JourneyCancelled",
]
KNOWN_EVENT_TYPES: frozenset[str] = frozenset(get_args(EventType))


def _two_places(value: Decimal) -> str:
    return f"{value:.2f}"


def _four_places(value: Decimal) -> str:
    return f"{value:.4f}"


# Money travels as a decimal string with 2 places, never as a float.
Money = Annotated[Decimal, PlainSerializer(_two_places, return_type=str)]
# Rates travel as a decimal-string fraction with 4 places ("0.0790").
Rate = Annotated[Decimal, PlainSerializer(_four_places, return_type=str)]


class Message(BaseModel):
    """Base of every message: immutable, strict about unknown fields. Each model's validator is built at its
    first use, not at import (`defer_build`): a function's init imports every message its modules name, and a
    container uses a few of them (a model built into another's schema, or used once, is built then)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class WireMessage(BaseModel):
    """Base of the event schema, read off the wire (outbox items, queue messages, replies): a tolerant
    reader. A newer writer may add fields; every reader ignores what it does not know, so one added
    field cannot make every new event poison for the relay and the consumer. An unknown event *type*
    is still refused (see `parse_event`): a reader cannot apply what it does not understand. Built at
    first use, as `Message` is."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)


class SimulationSummary(WireMessage):
    simulationId: str
    amount: Money
    termMonths: int
    annualRate: Rate
    monthlyPayment: Money
    totalRepayable: Money


class AcceptanceSummary(WireMessage):
    acceptanceId: str
    simulationId: str


class DisbursementSummary(WireMessage):
    disbursementId: str
    amount: Money


class LoanSnapshot(WireMessage):
    """The journey's loan state right after an event, as the system of record sees it."""

    journeyId: str
    state: LoanState
    simulation: SimulationSummary | None = None
    acceptance: AcceptanceSummary | None = None
    disbursement: DisbursementSummary | None = None
    # How many quotes the journey has had, and how many more it may have (loans-api's cap, as of its newest
    # quote); None in events written before they were counted.
    simulationCount: int | None = Field(default=None, ge=0)
    simulationsLeft: int | None = Field(default=None, ge=0)


class LoanEvent(WireMessage):
    """An outbox event. `eventId` is a UUIDv7 minted before the transaction, so the reply (road 1)
    and the outbox (road 2) carry the same id; `seq` is the per-journey sequence."""

    eventId: str
    journeyId: str
    seq: Annotated[int, Field(ge=1)]
    type: EventType
    occurredAt: datetime
    snapshot: LoanSnapshot


class UnreadableEvent(ValueError):
    """A message that is not an event this reader can apply; `reason` says why, in an operator's words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


UNKNOWN_EVENT_TYPE = "unknown event type"


def parse_event(body: str | bytes) -> LoanEvent:
    """A loan event from a JSON message body, or UnreadableEvent with the reason: "not JSON", "unknown
    event type 'X'" (a newer writer's event: nothing is lost, redrive it once the reader knows it),
    or "not a loan event (...)"."""
    try:
        return LoanEvent.model_validate_json(body)
    except ValidationError as error:
        raise UnreadableEvent(why_unreadable(error)) from error


def why_unreadable(error: ValidationError) -> str:
    """An operator's reason for a failed event validation."""
    errors = error.errors(include_url=False)
    if any(e["type"] == "json_invalid" for e in errors):
        return "not JSON"
    for e in errors:
        if e["loc"] == ("type",) and e["type"] == "literal_error":
            return f"{UNKNOWN_EVENT_TYPE} {e['input']!r}"
    fields = sorted({".".join(str(part) for part in e["loc"]) or "(message)" for e in errors})
    return f"not a loan event ({len(errors)} schema errors: {', '.join(fields)})"
