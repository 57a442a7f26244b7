"""The Control Record: the saga's state as the orchestrator keeps it (D9)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field, WithJsonSchema

from shared.events import (
    AcceptanceSummary,
    DisbursementSummary,
    LoanSnapshot,
    LoanState,
    Message,
    SimulationSummary,
)


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
    createdAt: datetime
    updatedAt: datetime
    stateEnteredAt: datetime

    def loan_view(self) -> LoanSnapshot:
        """The record's loan fields in the shape of a snapshot, to compare with the truth."""
        return LoanSnapshot(
            journeyId=self.journeyId,
            state=self.currentState,
            simulation=self.simulation,
            acceptance=self.acceptance,
            disbursement=self.disbursement,
        )


def new_control_record(journey_id: str, customer_id: str, now: datetime) -> ControlRecord:
    return ControlRecord(
        journeyId=journey_id,
        customerId=customer_id,
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
