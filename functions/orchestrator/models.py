"""The orchestrator's request and response bodies, described for an agent reading the OpenAPI."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from shared.control_record import ActionView, ControlRecord
from shared.events import Message
from shared.loan_terms import Amount, EntityId, TermMonths

# The Control Record carries the customerId on every write and stays under 1 KB (one write unit a write)
# only if the id does: 128 bytes, not 128 characters (128 four-byte ones are 512 bytes).
CUSTOMER_ID_BYTES = 128


def _within_bytes(customer_id: str) -> str:
    if len(customer_id.encode("utf-8", errors="surrogatepass")) > CUSTOMER_ID_BYTES:
        raise ValueError(f"must be at most {CUSTOMER_ID_BYTES} bytes in UTF-8 (an accented letter takes 2)")
    return customer_id


class CreateJourneyRequest(Message):
    customerId: Annotated[
        str,
        Field(
            min_length=1,
            max_length=CUSTOMER_ID_BYTES,
            description=f"Your customer's id, as your systems know it: at most {CUSTOMER_ID_BYTES} bytes in UTF-8.",
        ),
        AfterValidator(_within_bytes),  # after the length in characters: a long id is refused before it is encoded
    ]


class SimulateRequest(Message):
    amount: Amount
    termMonths: TermMonths


class AcceptRequest(Message):
    simulationId: Annotated[
        EntityId,
        Field(description="The quote the customer accepts: the `simulationId` of the record's `simulation`."),
    ]


class DisburseRequest(Message):
    acceptanceId: Annotated[
        EntityId,
        Field(description="The acceptance to pay out: the `acceptanceId` of the record's `acceptance`."),
    ]


class CancelRequest(Message):
    """No fields: send `{}` or no body."""


class ControlRecordView(ControlRecord):
    """The journey as the agent sees it. `availableActions` lists every command that is legal now;
    follow only those links. `version` grows by one with every change."""

    availableActions: list[ActionView]


class JourneyList(Message):
    """A customer's journeys that you created, newest first."""

    journeys: list[ControlRecordView] = Field(
        description="The journeys, newest first, each as getJourney answers it (follow its availableActions)."
    )
    nextCursor: str | None = Field(
        default=None,
        description="Present when older journeys follow: call listJourneys again with the same customerId and "
        "`cursor` set to this value. Absent: this is the last page.",
    )
