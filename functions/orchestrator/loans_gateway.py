"""The saga's commands to loans-api, typed. Each agent command is exactly ONE loans-api command
(D13), retried under one key, sent with the ledger position of the Control Record it was decided on (a
precondition loans-api checks after the key's receipt: an attempt abandoned here cannot commit after
later commands) and with the id of the agent request it belongs to (so a replay tells this request's own
lost attempt from an earlier request's). 4xx answers become domain errors here."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeVar

from functions.orchestrator import keys
from shared.control_record import ControlRecord
from shared.errors import (
    BusinessRuleViolated,
    IdempotencyKeyReused,
    InvariantBroken,
    LedgerMoved,
    SimulationLimitReached,
)
from shared.events import LoanEvent
from shared.loans_client import LoansClient, LoansReply, LoansRequest
from shared.loans_ledger import LoansLedger, event_in, require_success

# loans-api's problem type for a key sent with a different request (shared.problems).
_KEY_REUSED_TYPE = "urn:loan-saga:problem:idempotency-key-reused"
_QUOTES_EXHAUSTED_TYPE = "urn:loan-saga:problem:quotes-exhausted"
_Part = TypeVar("_Part")


@dataclass(frozen=True)
class Committed:
    """What loans-api committed for a command. `replayed`: answered from the key's receipt, so the
    event may be older than the ledger; `by_earlier_request`: the receipt was made by another request
    (the agent's own repeat, a concurrent request), not by an attempt of this one whose reply was lost."""

    event: LoanEvent
    replayed: bool
    by_earlier_request: bool


class LoansGateway:
    def __init__(self, client: LoansClient) -> None:
        self._client = client
        self._ledger = LoansLedger(client)

    def create_simulation(
        self, record: ControlRecord, nonce: str, amount: Decimal, term_months: int, origin: str
    ) -> Committed:
        """Price a loan; loans-api supersedes the active simulation and cancels an active acceptance
        in the same transaction."""
        journey_id = record.journeyId
        # A JSON number: float's shortest repr of a 2-place amount up to 100000 is that amount exactly.
        body = {"journeyId": journey_id, "amount": float(amount), "termMonths": term_months}
        return self._command("/simulations", body, keys.simulation(journey_id, nonce), record, origin)

    def create_acceptance(self, record: ControlRecord, simulation_id: str, origin: str) -> Committed:
        """Accept the quote the agent named; loans-api refuses it unless it is the journey's active one."""
        body = {"journeyId": record.journeyId, "simulationId": simulation_id}
        return self._command("/acceptances", body, keys.acceptance(record.journeyId, simulation_id), record, origin)

    def create_disbursement(self, record: ControlRecord, acceptance_id: str, origin: str) -> Committed:
        """Disburse the acceptance the agent named; loans-api refuses it unless it is the active one, and
        disburses a journey once, ever."""
        body = {"journeyId": record.journeyId, "acceptanceId": acceptance_id}
        key = keys.disbursement(record.journeyId, acceptance_id)
        return self._command("/disbursements", body, key, record, origin)

    def cancel_journey(self, record: ControlRecord, origin: str) -> Committed:
        """Cancel the journey and whatever is active in it, in one transaction."""
        journey_id = record.journeyId
        return self._command(f"/journeys/{journey_id}/cancel", None, keys.cancellation(journey_id), record, origin)

    def latest_event(self, journey_id: str) -> LoanEvent | None:
        """The newest event of loans-api's ledger for the journey (applying it brings a Control
        Record up to the truth), or None while the journey has had no command. One read."""
        return self._ledger.latest_event(journey_id)

    def _command(
        self, path: str, body: dict[str, Any] | None, key: str, decided_on: ControlRecord, origin: str
    ) -> Committed:
        reply = self._client.send(LoansRequest("POST", path, body, key, decided_on.lastAppliedSeq, origin))
        if reply.status == 409:
            detail = str(reply.body.get("detail", "loans-api refused the command"))
            if reply.body.get("type") == _QUOTES_EXHAUSTED_TYPE:
                raise SimulationLimitReached(detail)
            raise BusinessRuleViolated(detail)
        if reply.status == 412:
            raise LedgerMoved(str(reply.body.get("detail", "the journey moved")))
        if reply.status == 422 and reply.body.get("type") == _KEY_REUSED_TYPE:
            # Never echo the downstream key: it is ours, not the agent's.
            raise IdempotencyKeyReused("this Idempotency-Key was already used for a different request")
        require_success(reply, f"POST {path}")
        event = event_in(reply, f"POST {path}", "event")
        return Committed(event, reply.replayed, by_earlier_request=_by_earlier_request(reply, origin))


def _by_earlier_request(reply: LoansReply, origin: str) -> bool:
    """Was a replay made by another request than this one (the agent's own repeat, a concurrent request)?
    The receipt records the request that committed it; one that records none was made before the
    orchestrator sent its request's id (or by another caller), so never by this request."""
    return reply.replayed and reply.origin != origin


def _held(part: _Part | None, record: ControlRecord, name: str) -> _Part:
    """The `name` a record's state promises it holds (a simulated record its simulation, an accepted one
    its acceptance); a record without it breaks the applier's invariant."""
    if part is None:
        raise InvariantBroken(f"journey {record.journeyId} is {record.currentState} and holds no {name}")
    return part
