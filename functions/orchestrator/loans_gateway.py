"""The saga's commands to loans-api, typed. Each agent command is exactly ONE loans-api command
(D13), retried under one key: it returns the event loans-api committed (or had committed: a replay
carries the same event). 4xx answers become domain errors here."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from functions.orchestrator import keys
from functions.orchestrator.loans_client import LoansClient, LoansReply, LoansRequest
from shared.errors import BusinessRuleViolated, IdempotencyKeyReused, UpstreamRejected
from shared.events import LoanEvent

# loans-api's problem type for a key sent with a different request (shared.problems).
_KEY_REUSED_TYPE = "urn:loan-saga:problem:idempotency-key-reused"


class LoansGateway:
    def __init__(self, client: LoansClient) -> None:
        self._client = client

    def create_simulation(self, journey_id: str, nonce: str, amount: Decimal, term_months: int) -> LoanEvent:
        """Price a loan; loans-api supersedes the active simulation and cancels an active acceptance
        in the same transaction."""
        # A JSON number: float's shortest repr of a 2-place amount up to 100000 is that amount exactly.
        body = {"journeyId": journey_id, "amount": float(amount), "termMonths": term_months}
        return self._command("/simulations", body, keys.simulation(journey_id, nonce))

    def create_acceptance(self, journey_id: str, simulation_id: str) -> LoanEvent:
        body = {"journeyId": journey_id, "simulationId": simulation_id}
        return self._command("/acceptances", body, keys.acceptance(journey_id, simulation_id))

    def create_disbursement(self, journey_id: str, acceptance_id: str) -> LoanEvent:
        body = {"journeyId": journey_id, "acceptanceId": acceptance_id}
        return self._command("/disbursements", body, keys.disbursement(journey_id))

    def cancel_journey(self, journey_id: str) -> LoanEvent:
        """Cancel the journey and whatever is active in it, in one transaction."""
        return self._command(f"/journeys/{journey_id}/cancel", None, keys.cancellation(journey_id))

    def latest_event(self, journey_id: str) -> LoanEvent | None:
        """The newest event of loans-api's ledger for the journey (applying it brings a Control
        Record up to the truth), or None while the journey has had no command."""
        reply = self._client.send(LoansRequest("GET", f"/journeys/{journey_id}"))
        if reply.status == 404:
            return None
        _require_success(reply, "GET /journeys")
        return _event(reply, "GET /journeys", "lastEvent")

    def _command(self, path: str, body: dict[str, Any] | None, key: str) -> LoanEvent:
        reply = self._client.send(LoansRequest("POST", path, body, key))
        if reply.status == 409:
            raise BusinessRuleViolated(str(reply.body.get("detail", "loans-api refused the command")))
        if reply.status == 422 and reply.body.get("type") == _KEY_REUSED_TYPE:
            # Never echo the downstream key: it is ours, not the agent's.
            raise IdempotencyKeyReused("this Idempotency-Key was already used for a different request")
        _require_success(reply, f"POST {path}")
        return _event(reply, f"POST {path}", "event")


def _event(reply: LoansReply, what: str, field: str) -> LoanEvent:
    try:
        return LoanEvent.model_validate(reply.body[field])
    except (KeyError, ValidationError) as error:
        raise UpstreamRejected(f"loans-api answered {what} without a valid event") from error


def _require_success(reply: LoansReply, what: str) -> None:
    if not 200 <= reply.status < 300:
        detail = reply.body.get("detail", "") if isinstance(reply.body, dict) else ""
        raise UpstreamRejected(f"loans-api refused {what} with {reply.status}: {detail}")
