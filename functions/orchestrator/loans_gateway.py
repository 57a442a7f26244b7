"""The saga's commands to loans-api, typed: each returns the event loans-api committed (or had
committed: a replay carries the same event). 4xx answers become domain errors here."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from functions.orchestrator import keys
from functions.orchestrator.loans_client import LoansClient, LoansReply, LoansRequest
from shared.errors import BusinessRuleViolated, UpstreamRejected
from shared.events import LoanEvent


class LoansGateway:
    def __init__(self, client: LoansClient) -> None:
        self._client = client

    def create_simulation(self, journey_id: str, nonce: str, amount: Decimal, term_months: int) -> LoanEvent:
        # A JSON number: float's shortest repr of a 2-place amount up to 100000 is that amount exactly.
        body = {"journeyId": journey_id, "amount": float(amount), "termMonths": term_months}
        return self._command("/simulations", body, keys.simulation(journey_id, nonce))

    def cancel_simulation(self, journey_id: str, simulation_id: str) -> LoanEvent:
        return self._command(
            f"/simulations/{simulation_id}/cancel", None, keys.simulation_cancel(journey_id, simulation_id)
        )

    def create_acceptance(self, journey_id: str, simulation_id: str) -> LoanEvent:
        body = {"journeyId": journey_id, "simulationId": simulation_id}
        return self._command("/acceptances", body, keys.acceptance(journey_id, simulation_id))

    def cancel_acceptance(self, journey_id: str, acceptance_id: str) -> LoanEvent:
        return self._command(
            f"/acceptances/{acceptance_id}/cancel", None, keys.acceptance_cancel(journey_id, acceptance_id)
        )

    def create_disbursement(self, journey_id: str, acceptance_id: str) -> LoanEvent:
        body = {"journeyId": journey_id, "acceptanceId": acceptance_id}
        return self._command("/disbursements", body, keys.disbursement(journey_id))

    def journey_truth(self, journey_id: str) -> dict[str, Any] | None:
        """loans-api's view of the journey, or None when it has no loan activity."""
        reply = self._client.send(LoansRequest("GET", f"/journeys/{journey_id}"))
        if reply.status == 404:
            return None
        _require_success(reply, "GET /journeys")
        return reply.body

    def _command(self, path: str, body: dict[str, Any] | None, key: str) -> LoanEvent:
        reply = self._client.send(LoansRequest("POST", path, body, key))
        if reply.status == 409:
            raise BusinessRuleViolated(str(reply.body.get("detail", "loans-api refused the command")))
        _require_success(reply, f"POST {path}")
        try:
            return LoanEvent.model_validate(reply.body["event"])
        except (KeyError, ValidationError) as error:
            raise UpstreamRejected(f"loans-api answered POST {path} without a valid event") from error


def _require_success(reply: LoansReply, what: str) -> None:
    if not 200 <= reply.status < 300:
        detail = reply.body.get("detail", "") if isinstance(reply.body, dict) else ""
        raise UpstreamRejected(f"loans-api refused {what} with {reply.status}: {detail}")
