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
from functions.orchestrator.refusals import (
    NAMED,
    names_current,
    refusal,
    refuse_if_illegal,
    stale,
    still_means,
    undone,
)
from functions.orchestrator.views import render_json
from shared import aws, backoff, state_machine
from shared import metric_names as names
from shared.applier import EventApplier, Outcome
from shared.control_record import ControlRecord, new_control_record
from shared.errors import (
    BusinessRuleViolated,
    DomainError,
    InvalidRequest,
    JourneyNeedsRepair,
    JourneyNotFound,
    LedgerMoved,
    OutcomeUnknown,
    StoreContention,
    UpstreamUnavailable,
)
from shared.events import LoanEvent, LoanSnapshot
from shared.idempotency import Answer, key_reused
from shared.state_machine import Command

logger = Logger(child=True)


class JourneyStore(Protocol):
    def get(self, journey_id: str) -> ControlRecord | None: ...

    def replace(self, record: ControlRecord, expected_version: int) -> bool: ...

    def create(self, record: ControlRecord) -> ControlRecord | None: ...

    def listed(
        self, listing: str, limit: int, after: ControlRecord | None
    ) -> tuple[list[ControlRecord], str | None]: ...


@dataclass(frozen=True)
class AgentKey:
    """The agent's own Idempotency-Key, scoped to the operation, with the request's fingerprint."""

    scope: str
    request_hash: str


@dataclass(frozen=True)
class JourneyPage:
    """One page of a customer's journeys, newest first, and the journeyId the next page starts after
    (None: this is the last page)."""

    records: list[ControlRecord]
    next_after: str | None


class NotListed(Exception):
    """A page was asked to start after a journey that is not in the caller's list (no page gave that cursor)."""


# What an accept or a disburse names (the simulationId, the acceptanceId), read when the service asks
# for it: after the command's state check, so an illegal command is 409 whatever its body (InvalidRequest
# when the body is not what the operation takes).
Named = Callable[[], str]
# A cancel's body, checked the same way (it takes `{}` or nothing).
Checked = Callable[[], object]


# Sends one loans-api command decided on a record, naming what the agent named (the simulationId or
# acceptanceId; empty for simulate and cancel), for the agent request it belongs to (its origin, the same
# for every attempt and decision of one request); returns what loans-api committed (or had committed).
Send = Callable[[ControlRecord, str, str], Committed]
# A command is decided at most this often in one request (each time on a record caught up with a ledger
# that moved): beyond that the journey is too busy, and the agent is told to retry.
MAX_DECISIONS = 6
# What a failure of a simulate sent without an Idempotency-Key says: its repeat is a new quote.
KEYLESS_SIMULATE = (
    "this simulate carried no Idempotency-Key, so a quote may have been made: repeating it as it is may price a "
    "second quote (the newest supersedes the previous one; nothing is accepted or paid without being named). "
    "Read the journey (getJourney) first: if its `simulation` has your amount and term, it was made. To make a "
    "simulate safe to repeat, send it with an Idempotency-Key and repeat it with the same key"
)


class JourneyService:
    def __init__(
        self,
        store: JourneyStore,
        loans: LoansGateway,
        applier: EventApplier,
        metrics: Metrics,
        clock: Callable[[], datetime],
        new_journey_id: Callable[[], str],
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        self._store = store
        self._loans = loans
        self._applier = applier
        self._metrics = metrics
        self._clock = clock
        self._new_journey_id = new_journey_id
        self._pause = pause

    # -- queries ------------------------------------------------------------------------------

    def get(self, journey_id: str) -> ControlRecord:
        record = self._store.get(journey_id)
        if record is None:
            raise JourneyNotFound(journey_id)
        return record

    def journeys_of(self, caller: str, customer_id: str, limit: int, after: str | None) -> JourneyPage:
        """The journeys `caller` created for `customer_id`, newest first: up to `limit` from the journey
        after `after` (a journeyId from the previous page; None: the newest). The index sorts by creation
        time, so `after` is read for its own: NotListed when it is not one of this list's journeys (a cursor
        no page of this caller and customer gave: it names no place in the list, and says nothing of others)."""
        listing = keys.listing(caller, customer_id)
        start = None if after is None else self._store.get(after)
        if after is not None and (start is None or start.listing != listing):
            raise NotListed(after)
        return JourneyPage(*self._store.listed(listing, limit, start))

    # -- commands -----------------------------------------------------------------------------

    def create(self, customer_id: str, agent_key: AgentKey | None, caller: str = keys.ANONYMOUS) -> Answer:
        """A new journey for `customer_id`, listed for `caller` (journeys_of). With the agent's key, the
        journeyId is derived from the key's scope (keys.journey_of) and the record carries the request's
        fingerprint: ONE conditional write, and a repeat of the key finds the journey it made, for the
        journey's life (docs/ARCHITECTURE.md D2). Without one, a random UUIDv7."""
        now = self._clock()
        journey_id = self._new_journey_id() if agent_key is None else keys.journey_of(agent_key.scope)
        fingerprint = None if agent_key is None else keys.create_hash(agent_key.request_hash)
        listing = keys.listing(caller, customer_id)
        record = new_control_record(journey_id, customer_id, now, listing, fingerprint)
        existing = self._store.create(record)
        if existing is None:
            logger.info("journey created", extra={"journey_id": journey_id})
            return Answer(201, render_json(record))
        if agent_key is None:  # a random id already taken: nothing was written, a new attempt draws another
            raise StoreContention(f"journey id {journey_id} was already taken; retrying is safe")
        if existing.createHash != fingerprint:
            raise key_reused()
        self._count_replay()
        return Answer(201, render_json(self._created_as_it_stands(existing)), replayed=True)

    def simulate(self, journey_id: str, amount: Decimal, term_months: int, agent_key: AgentKey | None) -> Answer:
        """With the agent's key, loans-api's receipt of that key answers a repeat before any effect,
        wherever the journey stands now; so the Control Record's state is not consulted first."""
        nonce = keys.new_nonce() if agent_key is None else keys.nonce_from_agent_key(agent_key.scope)
        try:
            return self._run(
                journey_id,
                "simulate",
                lambda record, _, origin: self._loans.create_simulation(record, nonce, amount, term_months, origin),
                gate=agent_key is None,
            )
        except DomainError as error:
            if agent_key is not None or not isinstance(error, UpstreamUnavailable | StoreContention):
                raise
            cause = error.detail.split(";")[0]
            raise type(error)(f"{cause}; {KEYLESS_SIMULATE}") from error
        except Exception as error:
            if agent_key is not None:
                raise
            if aws.is_transient(error):
                raise UpstreamUnavailable(
                    f"a storage call failed after its retries ({type(error).__name__}); {KEYLESS_SIMULATE}"
                ) from error
            logger.exception("unexpected error in a simulate without an Idempotency-Key")
            raise OutcomeUnknown(f"an unexpected error occurred; {KEYLESS_SIMULATE}") from error

    def accept(self, journey_id: str, simulation_id: Named) -> Answer:
        """Accepts exactly the quote the agent names, if loans-api's ledger says it is the journey's
        current one; a quote re-priced meanwhile is never accepted in the agent's name (409
        stale-simulation with the current quote)."""
        return self._run(journey_id, "accept", self._loans.create_acceptance, named=simulation_id)

    def disburse(self, journey_id: str, acceptance_id: Named) -> Answer:
        """Pays exactly the acceptance the agent names (its quote's amount), if it is the journey's current
        one; loans-api disburses a journey once, ever."""
        return self._run(journey_id, "disburse", self._loans.create_disbursement, named=acceptance_id)

    def cancel(self, journey_id: str, body: Checked) -> Answer:
        """loans-api cancels the journey and whatever is active in it, in one transaction; every
        caller uses the journey's one cancel key, so concurrent and repeated cancels are one effect."""

        def checked() -> str:
            body()
            return ""

        return self._run(
            journey_id, "cancel", lambda record, _, origin: self._loans.cancel_journey(record, origin), named=checked
        )

    # -- the one shape of every loans-backed command -------------------------------------------

    def _run(
        self, journey_id: str, command: Command, send: Send, gate: bool = True, named: Named | None = None
    ) -> Answer:
        """Send the command decided on the record; apply what loans-api committed. The agent's request is
        one `origin` for loans-api, whatever is retried. Each attempt carries the ledger position it was
        decided on: if the ledger moved, nothing was committed; the record catches up, and the command is
        decided again on the fresh record if it still means the same there (simulate and cancel always
        do; accept and disburse while what they name is still current), under the same key, after a
        short random pause (concurrent deciders spread out instead of colliding again)."""
        origin = keys.new_nonce()
        record = self.get(journey_id)
        if gate:
            record = self._gate(record, command)
        # Read the body only now: an illegal command is 409 whatever it names. A body refused on a record that
        # looked legal is checked against the truth first (the record may be behind: cancelled, re-priced).
        try:
            target = "" if named is None else named()
        except InvalidRequest:
            if gate and not state_machine.is_terminal(record.currentState):
                refuse_if_illegal(self._catch_up(record), command)
            raise
        if gate and state_machine.is_settled(record.currentState, command):
            return self._settled(record, command, target)
        for decision in range(MAX_DECISIONS):
            try:
                committed = send(record, target, origin)
            except (LedgerMoved, BusinessRuleViolated) as error:
                # loans-api's ledger refused it: the journey moved (another command, a late commit, a
                # record behind the truth). Catch up; then decide again, or say what is legal now.
                record = self._catch_up(record)
                if state_machine.is_settled(record.currentState, command):
                    return self._settled(record, command, target)
                if isinstance(error, LedgerMoved) and still_means(record, command, target):
                    if decision + 1 < MAX_DECISIONS:  # no pause after the last: nothing follows it
                        self._pause(backoff.after_lost_race(decision + 1))
                    continue
                raise refusal(error, command, record, target) from error
            record = self._applier.apply(committed.event, "reply", current=record).record
            if committed.replayed:
                record = self._command_as_it_stands(record, command, target)
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

    # -- what a replay answers (D2): the journey as it stands now, not as the receipt recorded it -----

    def _created_as_it_stands(self, record: ControlRecord) -> ControlRecord:
        """A repeated createJourney: the journey its key made, as it stands now (its `availableActions` legal
        now, not when it was created). A live record may be behind loans-api (replies lost, road 2 not there
        yet): it catches up first."""
        return record if state_machine.is_terminal(record.currentState) else self._catch_up(record)

    def _command_as_it_stands(self, record: ControlRecord, command: Command, target: str) -> ControlRecord:
        """A command loans-api answered from its receipt (shared/idempotency.py `Receipt.replay_for`): the
        receipt's event may be older than the ledger (the acceptance it recorded may have been cancelled
        since), so the answer is the record caught up with the truth; 409 when what the command did was
        undone since, or what it named was replaced. Sent with `Idempotent-Replayed: true` only when an
        earlier request made the receipt (LoansGateway's `by_earlier_request`)."""
        record = self._catch_up(record)
        if command in state_machine.SETTLED_BY and not state_machine.is_settled(record.currentState, command):
            raise undone(command, record, target)
        if not names_current(record, command, target):
            raise stale(command, record, target, "it was replaced since")
        return record

    def _gate(self, record: ControlRecord, command: Command) -> ControlRecord:
        """The record to decide `command` on. A live record may be behind loans-api (replies lost, road 2
        not there yet): before refusing, or before answering a repeat as settled, catch up with the truth.
        A terminal record too, though loans-api never leaves a terminal state: the one ledger read is what
        tells a record that is ahead of the ledger (a journeys table restored from a newer backup than the
        loans table, a forged record) from loans-api's own end, so the agent is never told a journey is
        cancelled or disbursed, or final, that loans-api holds live (journey-needs-repair instead)."""
        if state_machine.is_allowed(record.currentState, command) and not state_machine.is_settled(
            record.currentState, command
        ):
            return record
        fresh = self._catch_up(record)
        refuse_if_illegal(fresh, command)
        return fresh

    def _catch_up(self, record: ControlRecord) -> ControlRecord:
        """The record brought up to loans-api's ledger by applying its newest event. A record ahead of the
        ledger (it only grows, and is read strongly consistent) claims what loans-api never committed: no
        command decided on it can ever pass loans-api's ledger check, so the agent is told an operator
        must repair it, not to retry (D15)."""
        latest = self._loans.latest_event(record.journeyId)
        if (0 if latest is None else latest.seq) < record.lastAppliedSeq:
            raise self._needs_repair(record, latest)
        if latest is None:
            return self.get(record.journeyId)
        decision = self._applier.apply(latest, "catch-up", current=record)
        logger.info(
            "caught up with loans-api",
            extra={"journey_id": record.journeyId, "seq": latest.seq, "outcome": decision.outcome.value},
        )
        if decision.outcome is Outcome.SKIPPED or (
            decision.record.lastAppliedSeq == latest.seq and not _holds(decision.record, latest)
        ):
            # At the ledger's seq but not what it says (written by something other than an event), or a record
            # the ledger's state cannot be reached from: no catch-up moves it, no command decided on it means
            # what loans-api holds.
            raise self._needs_repair(decision.record, latest)
        return decision.record

    def _needs_repair(self, record: ControlRecord, latest: LoanEvent | None) -> JourneyNeedsRepair:
        journey_id = record.journeyId
        if latest is None:
            ledger = "has no ledger of it"
        elif latest.seq < record.lastAppliedSeq:
            ledger = f"is at seq {latest.seq}"
        else:
            ledger = f"says {latest.snapshot.state} at seq {latest.seq}"
        logger.error(
            "journey needs repair: its Control Record is ahead of loans-api's ledger or diverged from it",
            extra={"journey_id": journey_id, "seq": record.lastAppliedSeq, "ledger_seq": latest and latest.seq},
        )
        self._metrics.add_metric(name=names.JOURNEYS_NEEDING_REPAIR, unit=MetricUnit.Count, value=1)
        return JourneyNeedsRepair(
            f"journey {journey_id} cannot take commands: its record says {record.currentState} at seq "
            f"{record.lastAppliedSeq}, but loans-api (the system of record) {ledger}, so loans-api refuses every "
            "command decided on it, however often it is repeated; nothing was done. Do not retry: an operator must "
            f"repair the journey (`saga audit --repair --rebuild --journey {journey_id}` re-projects it from "
            "loans-api's ledger), then read it again (getJourney)"
        )

    def _settled(self, record: ControlRecord, command: Command, target: str) -> Answer:
        """The answer to a command whose effect already stands: the record (a repeat), unless the agent
        named something else than what stands (another quote accepted, another acceptance paid)."""
        if names_current(record, command, target):
            return self._answer(record, replayed=True)
        raise stale(command, record, target, f"the journey is {record.currentState} with another {NAMED[command]}")

    def _answer(self, record: ControlRecord, replayed: bool) -> Answer:
        if replayed:
            self._count_replay()
        return Answer(200, render_json(record), replayed=replayed)

    def _count_replay(self) -> None:
        self._metrics.add_metric(name=names.IDEMPOTENT_REPLAYS, unit=MetricUnit.Count, value=1)


def _holds(record: ControlRecord, event: LoanEvent) -> bool:
    """Does `record`, at `event`'s seq, say what the event's snapshot says: its state and the quote, acceptance and
    disbursement it holds (the fields the audit judges, functions/auditor/audit.py JourneyView)?"""
    view, truth = record.loan_view(), event.snapshot

    def ids(snapshot: LoanSnapshot) -> tuple[str | None, ...]:
        return (
            snapshot.simulation.simulationId if snapshot.simulation else None,
            snapshot.acceptance.acceptanceId if snapshot.acceptance else None,
            snapshot.disbursement.disbursementId if snapshot.disbursement else None,
        )

    return view.state == truth.state and ids(view) == ids(truth)
