"""loans-api's ledger read, `GET /journeys/{id}/ledger`: the one read that says where a journey stands
in the system of record. The orchestrator's catch-up and the consumer's confirmation (D15) both use it,
so both see the truth the same way and neither reads loans-api's table (D11)."""

from __future__ import annotations

from pydantic import ValidationError

from shared.errors import UpstreamRejected
from shared.events import LoanEvent
from shared.loans_client import LoansClient, LoansReply, LoansRequest

LEDGER_ROUTE = "GET /journeys/{id}/ledger"
# loans-api's own answer for a journey it has had no command for (shared/problems.py): only this 404 means
# "no ledger"; any other (no such route: a stage or base path deployed wrong) says nothing about the journey.
_NOT_FOUND_TYPE = "urn:loan-saga:problem:not-found"


def ledger_path(journey_id: str) -> str:
    return f"/journeys/{journey_id}/ledger"


class LoansLedger:
    """The ledger read over a LoansClient (TransientLoansError passes through: the caller decides
    whether to retry)."""

    def __init__(self, client: LoansClient) -> None:
        self._client = client

    def latest_event(self, journey_id: str) -> LoanEvent | None:
        """The newest event of loans-api's ledger for the journey (applying it brings a Control
        Record up to the truth), or None while the journey has had no command. One read."""
        reply = self._client.send(LoansRequest("GET", ledger_path(journey_id)))
        if reply.status == 404 and isinstance(reply.body, dict) and reply.body.get("type") == _NOT_FOUND_TYPE:
            return None
        require_success(reply, LEDGER_ROUTE)
        return event_in(reply, LEDGER_ROUTE, "lastEvent")


def event_in(reply: LoansReply, what: str, field: str) -> LoanEvent:
    """The event in `field` of loans-api's answer to `what`; UpstreamRejected when there is none."""
    try:
        return LoanEvent.model_validate(reply.body[field])
    except (KeyError, ValidationError) as error:
        raise UpstreamRejected(f"loans-api answered {what} without a valid event") from error


def require_success(reply: LoansReply, what: str) -> None:
    """UpstreamRejected unless loans-api answered `what` with a 2xx."""
    if not 200 <= reply.status < 300:
        detail = reply.body.get("detail", "") if isinstance(reply.body, dict) else ""
        raise UpstreamRejected(f"loans-api refused {what} with {reply.status}: {detail}")
