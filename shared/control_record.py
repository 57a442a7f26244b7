"""The Control Record: the saga's state as the orchestrator keeps it (D9)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import Field, WithJsonSchema, field_serializer
from pydantic.json_schema import SkipJsonSchema

from shared.events import (
    AcceptanceSummary,
    DisbursementSummary,
    LoanSnapshot,
    LoanState,
    Message,
    SimulationSummary,
)

# `rebuild`: an operator re-projected the record from loans-api's ledger (`saga audit --repair --rebuild`).
Road = Literal["reply", "outbox", "catch-up", "repair", "rebuild"]
# The newest applications a Control Record keeps: which road applied the newest event, and the one before.
# The record is written on every event, and an item over 1 KB bills two write units a write: with two
# entries of the longest road, the largest loan fields and a customerId of 128 ASCII characters the item stays
# under 1 KB whatever the journey's history (tests/unit/test_applier.py holds it there; six entries passed
# 1 KB). The API bounds customerId in bytes (functions/orchestrator/models.py CUSTOMER_ID_BYTES): 128 characters
# of up to four bytes each would take it past 1 KB.
# The journey's whole history is loans-api's (its events, `saga journey show`), not the record's.
TRAIL_LENGTH = 2


class Application(Message):
    """One event applied to the record: which road brought it, when, and the version it made. No-ops
    are not recorded (they write nothing)."""

    seq: int
    road: Road
    at: datetime
    version: int


class ControlRecord(Message):
    """Current state, monotonic `version` (the compare-and-swap token) and the last event applied.
    `availableActions` is not stored: it is derived from `currentState` when the record is shown."""

    journeyId: str
    customerId: str
    currentState: LoanState
    version: Annotated[int, Field(ge=0)]
    lastAppliedSeq: Annotated[int, Field(ge=0)] = 0
    lastAppliedEventId: str | None = None
    simulation: SimulationSummary | None = None
    acceptance: AcceptanceSummary | None = None
    disbursement: DisbursementSummary | None = None
    simulationCount: int | None = Field(
        default=None, ge=0, description="How many quotes this journey has had; null until the first quote."
    )
    simulationsLeft: int | None = Field(
        default=None,
        ge=0,
        description="How many more quotes (simulateLoan) this journey may have; null until the first quote.",
    )
    createdAt: Annotated[datetime, WithJsonSchema({"type": "string", "format": "date-time"})]  # see _sortable
    updatedAt: datetime
    stateEnteredAt: datetime
    appliedBy: list[Application] = Field(
        default_factory=list,
        description="The newest changes to this record (the last two): which event (seq), brought by which road "
        "(the reply of loans-api, the outbox, a catch-up read, an operator's repair or rebuild), when, and the "
        "version it made.",
    )
    # Where the journey is listed (shared/keys.py CUSTOMER_INDEX): its creator's id and its customer's,
    # set at creation and carried unchanged by every later write. Stored, never shown: no dump includes it
    # and no schema declares it (the store writes it itself).
    listing: SkipJsonSchema[str | None] = Field(default=None, exclude=True)
    # The fingerprint of the keyed createJourney that made the journey (functions/orchestrator/keys.py
    # create_hash; None for a journey created without a key): a repeat of that key with another body is
    # told so. Stored and carried like `listing`, never shown.
    createHash: SkipJsonSchema[str | None] = Field(default=None, exclude=True)

    @field_serializer("createdAt", when_used="json")
    def _sortable(self, created_at: datetime) -> str:
        """In UTC, always with its microseconds: one width, so the stored string sorts as the time does (the
        customer index's sort key, shared/keys.py CUSTOMER_INDEX). pydantic's own form drops a zero fraction,
        and `...:00Z` sorts after `...:00.000001Z`."""
        return created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def loan_view(self) -> LoanSnapshot:
        """The record's loan fields in the shape of a snapshot, to compare with the truth."""
        return LoanSnapshot(
            journeyId=self.journeyId,
            state=self.currentState,
            simulation=self.simulation,
            acceptance=self.acceptance,
            disbursement=self.disbursement,
            simulationCount=self.simulationCount,
            simulationsLeft=self.simulationsLeft,
        )


@dataclass(frozen=True)
class RecordHead:
    """What the stale check (D5: an event at or below `lastAppliedSeq` is a no-op) reads of a Control
    Record: road 2 reads only this for a batch, and the whole record only for an event that applies."""

    journeyId: str
    version: int
    lastAppliedSeq: int


def new_control_record(
    journey_id: str, customer_id: str, now: datetime, listing: str | None = None, create_hash: str | None = None
) -> ControlRecord:
    return ControlRecord(
        journeyId=journey_id,
        customerId=customer_id,
        listing=listing,
        createHash=create_hash,
        currentState="created",
        version=0,
        createdAt=now,
        updatedAt=now,
        stateEnteredAt=now,
    )


class ActionView(Message):
    """A HATEOAS link as the agent receives it, in a Control Record and in a 409 problem: enough to
    make the call with nothing but the API's OpenAPI document."""

    name: str = Field(description="The command: simulate, accept, disburse or cancel.")
    operationId: str = Field(description="The operation in the OpenAPI document that this link calls.")
    method: str = Field(description="The HTTP method to use (always POST).")
    href: str = Field(description="The path to call, relative to the API's base URL.")
    body: Annotated[
        dict[str, Any] | None,
        WithJsonSchema(
            {
                "type": "object",
                "description": "Present when the journey fixes the call's body: send exactly this JSON body "
                "(acceptSimulation names the quote shown in `simulation`, disburseLoan the acceptance shown in "
                "`acceptance`, cancelJourney takes `{}`). Absent (simulateLoan): build the body from "
                "`requestSchema`.",
            }
        ),
    ] = None
    requestSchema: Annotated[
        str | None,
        WithJsonSchema(
            {
                "type": "string",
                "description": "Present when the call takes a JSON body: a reference to its schema in the "
                "OpenAPI document (e.g. `#/components/schemas/SimulateRequest`). Absent: send no body.",
            }
        ),
    ] = None
