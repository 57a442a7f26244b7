"""loans-api's command service: read the ledger, decide (pure), commit once, answer. Replays and
races are resolved by the transaction's own conditions, never by a lock."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any, Protocol

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from functions.loans_api import domain
from functions.loans_api.domain import Change, Ledger
from functions.loans_api.models import JourneyTruth
from shared import backoff
from shared import metric_names as names
from shared.errors import BusinessRuleViolated, DomainError, LedgerMoved, NotFound, StoreContention
from shared.events import LoanEvent
from shared.idempotency import Answer, Receipt, fingerprint

logger = Logger(child=True)


class CommitStatus(StrEnum):
    COMMITTED = "committed"
    REPLAY = "replay"  # the key's receipt already exists: answer with it
    CONFLICT = "conflict"  # the ledger moved since it was read: read again and retry
    VIOLATED = "violated"  # a domain condition failed: the command is no longer legal


@dataclass(frozen=True)
class CommitOutcome:
    status: CommitStatus
    receipt: Receipt | None = None


class LoanStore(Protocol):
    """The loans table, as the service reads it and commits to it (adapter: functions/loans_api/store.py)."""

    def read_ledger(self, journey_id: str) -> Ledger: ...

    def get_receipt(self, key: str) -> Receipt | None: ...

    def commit(self, change: Change, receipt: Receipt, expires_at: int) -> CommitOutcome: ...

    def read_journey(self, journey_id: str) -> JourneyTruth | None: ...


@dataclass(frozen=True)
class KeyedRequest:
    """A write and its Idempotency-Key. `body` is the VALIDATED request (its JSON form), so
    `10000`, `10000.0` and `1e4` fingerprint alike: the same request, whatever its spelling."""

    key: str
    method: str
    path: str
    body: Any
    # A precondition, not part of the request: the caller's view of the ledger (None: no precondition).
    # Not fingerprinted, so a repeat decided on a newer view is still the same request.
    expected_seq: int | None = None
    # The caller's id of the request this attempt belongs to (ORIGIN_HEADER): recorded in the receipt.
    origin: str | None = None

    @property
    def request_hash(self) -> str:
        return fingerprint(self.method, self.path, self.body)


class LoansService:
    def __init__(
        self,
        store: LoanStore,
        metrics: Metrics,
        clock: Callable[[], datetime],
        receipt_ttl_seconds: int,
        max_simulations: int = domain.QUOTE_CAP,
        max_conflict_retries: int = 8,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._store = store
        self._metrics = metrics
        self._clock = clock
        self._receipt_ttl = receipt_ttl_seconds
        self._max_simulations = max_simulations
        self._max_conflict_retries = max_conflict_retries
        self._sleep = sleep

    # -- commands ------------------------------------------------------------------------------

    def create_simulation(self, request: KeyedRequest, journey_id: str, amount: Decimal, term_months: int) -> Answer:
        return self._execute(
            request,
            journey_id,
            lambda ledger, now: domain.create_simulation(ledger, amount, term_months, now, self._max_simulations),
        )

    def create_acceptance(self, request: KeyedRequest, journey_id: str, simulation_id: str) -> Answer:
        return self._execute(
            request, journey_id, lambda ledger, now: domain.create_acceptance(ledger, simulation_id, now)
        )

    def create_disbursement(self, request: KeyedRequest, journey_id: str, acceptance_id: str) -> Answer:
        return self._execute(
            request, journey_id, lambda ledger, now: domain.create_disbursement(ledger, acceptance_id, now)
        )

    def cancel_journey(self, request: KeyedRequest, journey_id: str) -> Answer:
        return self._execute(request, journey_id, domain.cancel_journey)

    def ledger(self, journey_id: str) -> LoanEvent:
        """The newest event of the journey's ledger: one read, whatever the journey's history."""
        last = self._store.read_ledger(journey_id).last_event
        if last is None:
            raise NotFound(f"journey {journey_id} has no loan activity")
        return last

    def journey(self, journey_id: str) -> JourneyTruth:
        truth = self._store.read_journey(journey_id)
        if truth is None:
            raise NotFound(f"journey {journey_id} has no loan activity")
        return truth

    # -- the envelope ----------------------------------------------------------------------------

    def _execute(self, request: KeyedRequest, journey_id: str, decide: Callable[[Ledger, datetime], Change]) -> Answer:
        """Decide on the journey's ledger and commit with the key's receipt in the same transaction. A
        receipt that already exists answers instead (replay); a ledger that moved between the read and
        the commit means read and decide again (bounded). A ledger that is not where the caller decided
        the command (`expected_seq`) refuses it, after the replay check."""
        request_hash = request.request_hash
        for attempt in range(self._max_conflict_retries):
            now = self._clock()
            try:
                ledger = self._store.read_ledger(journey_id)
                if request.expected_seq is not None and ledger.seq != request.expected_seq:
                    raise LedgerMoved(
                        f"journey {journey_id} is at seq {ledger.seq}, not {request.expected_seq} as expected"
                    )
                change = decide(ledger, now)
            except DomainError as error:
                # A replay of a command that is no longer legal must still get its recorded answer.
                return self._replay_or_raise(request, request_hash, error)
            body = json.dumps(change.response, separators=(",", ":"))
            receipt = Receipt(request.key, request_hash, change.status_code, body, request.origin)
            expires_at = int(now.timestamp()) + self._receipt_ttl
            outcome = self._store.commit(change, receipt, expires_at)
            if outcome.status is CommitStatus.COMMITTED:
                self._metrics.add_metric(name=names.COMMANDS_COMMITTED, unit=MetricUnit.Count, value=1)
                if change.event.type == "LoanDisbursed":
                    self._metrics.add_metric(name=names.DISBURSEMENTS, unit=MetricUnit.Count, value=1)
                if change.compensations:
                    self._metrics.add_metric(
                        name=names.COMPENSATIONS, unit=MetricUnit.Count, value=change.compensations
                    )
                logger.info(
                    "command committed",
                    extra={
                        "event_type": change.event.type,
                        "journey_id": change.event.journeyId,
                        "seq": change.event.seq,
                        "event_id": change.event.eventId,
                    },
                )
                return Answer(change.status_code, body, replayed=False)
            if outcome.status is CommitStatus.REPLAY:
                if outcome.receipt is not None:
                    return self._replayed(outcome.receipt, request_hash)
                return self._replay_or_raise(request, request_hash, StoreContention("receipt vanished"))
            if outcome.status is CommitStatus.VIOLATED:
                return self._replay_or_raise(
                    request, request_hash, BusinessRuleViolated("the journey changed; the command is no longer legal")
                )
            if attempt + 1 < self._max_conflict_retries:  # no pause after the last: nothing follows it
                logger.info("ledger moved, deciding again", extra={"attempt": attempt + 1})
                self._sleep(backoff.after_lost_race(attempt + 1))
        raise StoreContention("too many concurrent changes to this journey; retrying is safe")

    def _replay_or_raise(self, request: KeyedRequest, request_hash: str, error: DomainError) -> Answer:
        receipt = self._store.get_receipt(request.key)
        if receipt is not None:
            return self._replayed(receipt, request_hash)
        raise error

    def _replayed(self, receipt: Receipt, request_hash: str) -> Answer:
        answer = receipt.replay_for(request_hash)
        self._metrics.add_metric(name=names.IDEMPOTENT_REPLAYS, unit=MetricUnit.Count, value=1)
        logger.info("idempotent replay", extra={"idempotency_key": receipt.key})
        return answer
