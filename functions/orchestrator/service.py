"""The saga's command service (D9, D13). Each agent command is ONE loans-api command, committed in
one transaction: loans-api's ledger alone orders a journey's commands and decides what happens
(including compensations). The orchestrator decides only what the agent may ask for, and its
Control Record changes only by applying the events loans-api answers with (road 1; road 2 brings
the same events through the outbox). It knows nothing of HTTP, retries or DynamoDB."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Protocol

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from functions.orchestrator import keys
from functions.orchestrator.loans_gateway import Committed, LoansGateway
from functions.orchestrator.views import actions, render_json
from shared import backoff, state_machine
from shared import metric_names as names
from shared.applier import EventApplier
from shared.control_record import ControlRecord, new_control_record
from shared.errors import BusinessRuleViolated, IllegalTransition, JourneyNotFound, LedgerMoved, StoreContention
from shared.idempotency import Answer, Receipt
from shared.state_machine import Command

logger = Logger(child=True)


class JourneyStore(Protocol):
    def get(self, journey_id: str) -> ControlRecord | None: ...

    def replace(self, record: ControlRecord, expected_version: int) -> bool: ...

    def create(self, record: ControlRecord, receipt: Receipt | None, expires_at: int) -> Receipt | None: ...


@dataclass(frozen=True)
class AgentKey:
    """The agent's own Idempotency-Key, scoped to the operation, with the request's fingerprint."""

    scope: str
    request_hash: str


# Sends one loans-api command decided on `record`; returns what it committed (or had committed).
Send = Callable[[ControlRecord], Committed]
# A command is decided at most this often in one request (each time on a record caught up with a ledger
# that moved): beyond that the journey is too busy, and the agent is told to retry.
MAX_DECISIONS = 6


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
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        self._store = store
        self._loans = loans
        self._applier = applier
        self._metrics = metrics
        self._clock = clock
        self._new_journey_id = new_journey_id
        self._receipt_ttl = receipt_ttl_seconds
        self._pause = pause

    # -- queries ------------------------------------------------------------------------------

    def get(self, journey_id: str) -> ControlRecord:
        record = self._store.get(journey_id)
        if record is None:
            raise JourneyNotFound(journey_id)
        return record

    # -- commands -----------------------------------------------------------------------------

    def create(self, customer_id: str, agent_key: AgentKey | None) -> Answer:
        now = self._clock()
        record = new_control_record(self._new_journey_id(), customer_id, now)
        body = render_json(record)
        receipt = None if agent_key is None else Receipt(agent_key.scope, agent_key.request_hash, 201, body)
        existing = self._store.create(record, receipt, int(now.timestamp()) + self._receipt_ttl)
        if existing is not None and agent_key is not None:
            replay = existing.replay_for(agent_key.request_hash)
            self._count_replay()
            return Answer(replay.status, replay.body, replayed=True)
        logger.info("journey created", extra={"journey_id": record.journeyId})
        return Answer(201, body)

    def simulate(self, journey_id: str, amount: Decimal, term_months: int, agent_key: AgentKey | None) -> Answer:
        """With the agent's key, loans-api's receipt of that key answers a repeat before any effect,
        wherever the journey stands now; so the Control Record's state is not consulted first."""
        nonce = keys.new_nonce() if agent_key is None else keys.nonce_from_agent_key(agent_key.scope)
        return self._run(
            journey_id,
            "simulate",
            lambda record: self._loans.create_simulation(record, nonce, amount, term_months),
            gate=agent_key is None,
            redecide=True,
        )

    def accept(self, journey_id: str) -> Answer:
        """Accepts the quote the record shows. If the journey moved since (another quote, a cancel), it
        is not re-decided: the agent is told what stands, and accepts again if it wants the new quote."""
        return self._run(journey_id, "accept", self._loans.create_acceptance)

    def disburse(self, journey_id: str) -> Answer:
        """Disburses the acceptance the record shows; loans-api disburses a journey once, ever."""
        return self._run(journey_id, "disburse", self._loans.create_disbursement)

    def cancel(self, journey_id: str) -> Answer:
        """loans-api cancels the journey and whatever is active in it, in one transaction; every
        caller uses the journey's one cancel key, so concurrent and repeated cancels are one effect."""
        return self._run(journey_id, "cancel", self._loans.cancel_journey, redecide=True)

    # -- the one shape of every loans-backed command -------------------------------------------

    def _run(self, journey_id: str, command: Command, send: Send, gate: bool = True, redecide: bool = False) -> Answer:
        """Send the command decided on the record; apply what loans-api committed. Each attempt carries
        the ledger position it was decided on: if the ledger moved, nothing was committed; the record
        catches up, and a command whose meaning does not depend on what moved (`redecide`: simulate,
        cancel) is decided again on the fresh record, under the same key, after a short random pause
        (concurrent deciders spread out instead of colliding again)."""
        record = self.get(journey_id)
        if gate:
            record = self._gate(record, command)
            if state_machine.is_settled(record.currentState, command):
                return self._answer(record, replayed=True)
        for decision in range(MAX_DECISIONS):
            try:
                committed = send(record)
            except (LedgerMoved, BusinessRuleViolated) as error:
                # loans-api's ledger refused it: the journey moved (another command, a late commit, a
                # record behind the truth). Catch up; then decide again, or say what is legal now.
                record = self._catch_up(record)
                if state_machine.is_settled(record.currentState, command):
                    return self._answer(record, replayed=True)
                if (
                    isinstance(error, LedgerMoved)
                    and redecide
                    and state_machine.is_allowed(record.currentState, command)
                ):
                    self._pause(backoff.after_lost_race(decision + 1))
                    continue
                raise IllegalTransition(_refusal(error, command, record), actions(record)) from error
            record = self._applier.apply(committed.event, "reply", current=record).record
            if committed.replayed:
                # A receipt answers with the event it recorded, which may be older than the ledger
                # (the acceptance it recorded may have been cancelled since): answer with the truth.
                record = self._catch_up(record)
                if command in state_machine.SETTLED_BY and not state_machine.is_settled(record.currentState, command):
                    raise IllegalTransition(
                        f"this '{command}' was done earlier and has been undone since (the journey is "
                        f"{record.currentState} now); availableActions lists what is legal now",
                        actions(record),
                    )
            logger.info(
                "event applied by reply",
                extra={
                    "journey_id": journey_id,
                    "command": command,
                    "event_type": committed.event.type,
                    "seq": committed.event.seq,
                    "replayed": committed.replayed,
                },
            )
            return self._answer(record, committed.by_earlier_request)
        raise StoreContention(f"journey {journey_id} kept changing while '{command}' was decided; retrying is safe")

    def _gate(self, record: ControlRecord, command: Command) -> ControlRecord:
        """The record to decide `command` on. A terminal record is final (its state came from the
        ledger and can never change), so its answer stands; a live record may be behind loans-api
        (replies lost, road 2 not there yet): before refusing, or before answering a repeat as
        settled, catch up with the truth."""
        if state_machine.is_terminal(record.currentState):
            fresh = record
        elif state_machine.is_allowed(record.currentState, command) and not state_machine.is_settled(
            record.currentState, command
        ):
            return record
        else:
            fresh = self._catch_up(record)
        if state_machine.is_allowed(fresh.currentState, command) or state_machine.is_settled(
            fresh.currentState, command
        ):
            return fresh
        raise IllegalTransition(f"'{command}' is not allowed while the journey is {fresh.currentState}", actions(fresh))

    def _catch_up(self, record: ControlRecord) -> ControlRecord:
        """The record brought up to loans-api's ledger by applying its newest event."""
        latest = self._loans.latest_event(record.journeyId)
        if latest is None:
            return self.get(record.journeyId)
        decision = self._applier.apply(latest, "catch-up", current=record)
        logger.info(
            "caught up with loans-api",
            extra={"journey_id": record.journeyId, "seq": latest.seq, "outcome": decision.outcome.value},
        )
        return decision.record

    def _answer(self, record: ControlRecord, replayed: bool) -> Answer:
        if replayed:
            self._count_replay()
        return Answer(200, render_json(record), replayed=replayed)

    def _count_replay(self) -> None:
        self._metrics.add_metric(name=names.IDEMPOTENT_REPLAYS, unit=MetricUnit.Count, value=1)


def _refusal(error: LedgerMoved | BusinessRuleViolated, command: Command, record: ControlRecord) -> str:
    if isinstance(error, BusinessRuleViolated):
        return error.detail
    return (
        f"the journey changed since '{command}' was decided: it is {record.currentState} now, and nothing was done; "
        "availableActions lists what is legal now (read the journey to see what changed)"
    )
