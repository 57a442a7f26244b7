"""The saga's command service (D9): checks legality on the Control Record, runs compensations in
reverse order, calls loans-api through the gateway, and applies each returned event at once (road 1)
through the shared applier. It knows nothing of HTTP, retries or DynamoDB."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from functions.orchestrator import keys
from functions.orchestrator.loans_gateway import LoansGateway
from functions.orchestrator.views import actions, render_json
from shared import metric_names as names
from shared import state_machine
from shared.applier import EventApplier
from shared.control_record import ControlRecord, new_control_record
from shared.errors import BusinessRuleViolated, IllegalTransition, JourneyNotFound, StoreContention
from shared.events import LoanEvent
from shared.idempotency import Receipt
from shared.state_machine import Command

logger = Logger(child=True)


class JourneyStore(Protocol):
    def get(self, journey_id: str) -> ControlRecord | None: ...

    def replace(self, record: ControlRecord, expected_version: int) -> bool: ...

    def create(self, record: ControlRecord, receipt: Receipt | None, expires_at: int) -> Receipt | None: ...

    def get_receipt(self, key: str) -> Receipt | None: ...

    def put_receipt(self, receipt: Receipt, expires_at: int) -> Receipt: ...


@dataclass(frozen=True)
class AgentKey:
    """The agent's own Idempotency-Key, scoped to the operation, with the request's fingerprint."""

    scope: str
    request_hash: str


@dataclass(frozen=True)
class Result:
    status: int
    body: str
    replayed: bool = False


class JourneyService:
    def __init__(
        self,
        store: JourneyStore,
        loans: LoansGateway,
        applier: EventApplier,
        metrics: Metrics,
        clock: Callable[[], datetime],
        new_journey_id: Callable[[], str],
        receipt_ttl_seconds: int,
    ) -> None:
        self._store = store
        self._loans = loans
        self._applier = applier
        self._metrics = metrics
        self._clock = clock
        self._new_journey_id = new_journey_id
        self._receipt_ttl = receipt_ttl_seconds

    # -- queries ------------------------------------------------------------------------------

    def get(self, journey_id: str) -> ControlRecord:
        record = self._store.get(journey_id)
        if record is None:
            raise JourneyNotFound(journey_id)
        return record

    # -- commands -----------------------------------------------------------------------------

    def create(self, customer_id: str, agent_key: AgentKey | None) -> Result:
        now = self._clock()
        record = new_control_record(self._new_journey_id(), customer_id, now)
        body = render_json(record)
        receipt = None if agent_key is None else Receipt(agent_key.scope, agent_key.request_hash, 201, body)
        existing = self._store.create(record, receipt, self._expiry(now))
        if existing is not None and agent_key is not None:
            return self._replay(existing.replay_for(agent_key.request_hash))
        logger.info("journey created", extra={"journey_id": record.journeyId})
        return Result(201, body)

    def simulate(self, journey_id: str, amount: Decimal, term_months: int, agent_key: AgentKey | None) -> Result:
        if agent_key is not None:
            receipt = self._store.get_receipt(agent_key.scope)
            if receipt is not None:
                return self._replay(receipt.replay_for(agent_key.request_hash))
        record = self._require(journey_id, "simulate")
        record = self._compensate_acceptance(record)
        nonce = keys.new_nonce() if agent_key is None else keys.nonce_from_agent_key(agent_key.scope)
        record = self._step(record, lambda: self._loans.create_simulation(journey_id, nonce, amount, term_months))
        body = render_json(record)
        if agent_key is not None:
            stored = self._store.put_receipt(
                Receipt(agent_key.scope, agent_key.request_hash, 200, body), self._expiry(self._clock())
            )
            if stored.body != body:
                return self._replay(stored.replay_for(agent_key.request_hash))
        return Result(200, body)

    def accept(self, journey_id: str) -> Result:
        record = self.get(journey_id)
        if state_machine.is_settled(record.currentState, "accept"):
            return self._settled(record)
        record = self._require(journey_id, "accept", record)
        simulation = record.simulation
        if simulation is None:  # a simulated record always holds its simulation
            raise StoreContention(f"journey {journey_id} is simulated without a simulation; retry")
        record = self._step(record, lambda: self._loans.create_acceptance(journey_id, simulation.simulationId))
        return Result(200, render_json(record))

    def disburse(self, journey_id: str) -> Result:
        record = self.get(journey_id)
        if state_machine.is_settled(record.currentState, "disburse"):
            return self._settled(record)
        record = self._require(journey_id, "disburse", record)
        acceptance = record.acceptance
        if acceptance is None:
            raise StoreContention(f"journey {journey_id} is accepted without an acceptance; retry")
        record = self._step(record, lambda: self._loans.create_disbursement(journey_id, acceptance.acceptanceId))
        self._metrics.add_metric(name=names.DISBURSEMENTS, unit=MetricUnit.Count, value=1)
        return Result(200, render_json(record))

    def cancel(self, journey_id: str) -> Result:
        """Compensations in reverse order: the acceptance, then the simulation, then the record.

        What to compensate is read from loans-api's truth, not from the record: the record may be
        behind (a reply lost on every attempt, the backstop not there yet), and cancelling only what
        the record knows would leave a committed simulation active behind a cancelled journey."""
        record = self.get(journey_id)
        if state_machine.is_settled(record.currentState, "cancel"):
            return self._settled(record)
        record = self._require(journey_id, "cancel", record)
        truth = self._loans.journey_truth(journey_id)
        if truth is not None:
            if truth.get("disbursement") is not None:
                raise IllegalTransition(f"journey {journey_id} was disbursed: it cannot be cancelled", [])
            acceptance_id = _active(truth.get("acceptances", []), "acceptanceId")
            if acceptance_id is not None:
                record = self._step(
                    record, lambda: self._loans.cancel_acceptance(journey_id, acceptance_id), compensation=True
                )
            simulation_id = _active(truth.get("simulations", []), "simulationId")
            if simulation_id is not None:
                record = self._step(
                    record, lambda: self._loans.cancel_simulation(journey_id, simulation_id), compensation=True
                )
        if record.currentState != "cancelled":
            record = self._mark_cancelled(record)
        logger.info("journey cancelled", extra={"journey_id": journey_id})
        return Result(200, render_json(record))

    # -- steps --------------------------------------------------------------------------------

    def _compensate_acceptance(self, record: ControlRecord) -> ControlRecord:
        acceptance = record.acceptance
        if record.currentState != "accepted" or acceptance is None:
            return record
        return self._step(
            record, lambda: self._loans.cancel_acceptance(record.journeyId, acceptance.acceptanceId), compensation=True
        )

    def _step(
        self, record: ControlRecord, command: Callable[[], LoanEvent], compensation: bool = False
    ) -> ControlRecord:
        """Run one loans-api command and apply the event it answers with (road 1)."""
        try:
            event = command()
        except BusinessRuleViolated as error:
            # loans-api's truth moved under us (a concurrent command): tell the agent what is legal now.
            current = self.get(record.journeyId)
            raise IllegalTransition(error.detail, actions(current)) from error
        decision = self._applier.apply(event, current=record)
        if compensation:
            self._metrics.add_metric(name=names.COMPENSATIONS, unit=MetricUnit.Count, value=1)
        logger.info(
            "event applied by reply",
            extra={
                "journey_id": record.journeyId,
                "event_type": event.type,
                "seq": event.seq,
                "outcome": decision.outcome.value,
            },
        )
        return decision.record

    def _mark_cancelled(self, record: ControlRecord) -> ControlRecord:
        for _ in range(10):
            if record.currentState == "cancelled":
                return record
            now = self._clock()
            cancelled = record.model_copy(
                update={
                    "currentState": "cancelled",
                    "version": record.version + 1,
                    "updatedAt": now,
                    "stateEnteredAt": now,
                }
            )
            if self._store.replace(cancelled, expected_version=record.version):
                return cancelled
            record = self._require(record.journeyId, "cancel")
        raise StoreContention(f"journey {record.journeyId} kept changing while being cancelled; retry")

    # -- helpers ------------------------------------------------------------------------------

    def _require(self, journey_id: str, command: Command, record: ControlRecord | None = None) -> ControlRecord:
        record = record or self.get(journey_id)
        if not state_machine.is_allowed(record.currentState, command):
            raise IllegalTransition(
                f"'{command}' is not allowed while the journey is {record.currentState}", actions(record)
            )
        return record

    def _settled(self, record: ControlRecord) -> Result:
        return Result(200, render_json(record), replayed=True)

    def _replay(self, receipt: Receipt) -> Result:
        self._metrics.add_metric(name=names.IDEMPOTENT_REPLAYS, unit=MetricUnit.Count, value=1)
        return Result(receipt.status, receipt.body, replayed=True)

    def _expiry(self, now: datetime) -> int:
        return int(now.timestamp()) + self._receipt_ttl


def _active(entities: list[dict[str, Any]], id_field: str) -> str | None:
    """The id of the ACTIVE entity among loans-api's simulations or acceptances, if any."""
    return next((str(e[id_field]) for e in entities if e.get("status") == "ACTIVE"), None)
