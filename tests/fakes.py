"""In-memory doubles of the two services' storage ports (cosmicpython's Fake* style), and a whole
system built on them: the real loans-api handler and the real orchestrator service, with the real
retry decorator between them, over a wire that can lose replies, hold attempts back for a late
commit, or let another command land between two attempts. No sockets, no moto: every interleaving
is deterministic, so a race is a unit test. The audit's ports have their fakes here too."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest

from functions.auditor.audit import Truth
from functions.auditor.service import AuditState, AuditStateConflict, EventFacts, Ledgers
from functions.loans_api import bootstrap as loans_bootstrap
from functions.loans_api import history
from functions.loans_api.domain import Change, Ledger
from functions.loans_api.models import JourneyTruth
from functions.loans_api.service import CommitOutcome, CommitStatus
from functions.loans_api.settings import LoansSettings
from functions.orchestrator import bootstrap as orchestrator_bootstrap
from functions.orchestrator import keys
from functions.orchestrator.deadline import RequestDeadline
from functions.orchestrator.service import AgentKey
from functions.orchestrator.settings import OrchestratorSettings
from saga.local.apigw import DEFAULT_CALLER
from shared.applier import EventApplier
from shared.clock import utc_now
from shared.control_record import ControlRecord
from shared.errors import UpstreamUnavailable
from shared.events import LoanEvent
from shared.idempotency import Answer, Receipt, fingerprint
from shared.lease import Lease, may_take
from tests.support import quiet_metrics
from tools.inprocess import InProcessHttp


class FakeLoanStore:
    """loans-api's LoanStore with DynamoDB's transaction semantics: one commit is all or nothing, its
    three items checked in the order the adapter's transaction checks them (the receipt; the journey's
    item: its seq, its disbursement mark, what the command was decided on). The events are the history:
    every status is derived from them (functions/loans_api/history.py), as the adapter's reads do."""

    def __init__(self) -> None:
        self.ledgers: dict[str, LoanEvent] = {}
        self.disbursed: set[str] = set()  # journeys whose item carries the disbursement mark
        self.receipts: dict[str, Receipt] = {}
        self.events: list[LoanEvent] = []

    def read_ledger(self, journey_id: str) -> Ledger:
        return Ledger(journey_id, self.ledgers.get(journey_id))

    def get_receipt(self, key: str) -> Receipt | None:
        return self.receipts.get(key)

    def commit(self, change: Change, receipt: Receipt, expires_at: int) -> CommitOutcome:
        if receipt.key in self.receipts:
            return CommitOutcome(CommitStatus.REPLAY, self.receipts[receipt.key])
        journey_id = change.event.journeyId
        current = self.read_ledger(journey_id)
        if current.seq != change.ledger_before.seq:
            return CommitOutcome(CommitStatus.CONFLICT)
        if current.seq and (journey_id in self.disbursed or not change.requires.hold_on(current)):
            return CommitOutcome(CommitStatus.VIOLATED)
        self.receipts[receipt.key] = receipt
        self.ledgers[journey_id] = change.event
        if change.event.snapshot.disbursement is not None:
            self.disbursed.add(journey_id)
        self.events.append(change.event)
        return CommitOutcome(CommitStatus.COMMITTED)

    def history(self, journey_id: str) -> list[history.Entry]:
        """The journey's events, newest first, as the table's event items hold them."""
        return [history.Entry(e, "PENDING") for e in reversed(self.events) if e.journeyId == journey_id]

    def read_journey(self, journey_id: str) -> JourneyTruth | None:
        last = self.ledgers.get(journey_id)
        return None if last is None else history.truth(last, self.history(journey_id))

    # -- what the invariants look at: statuses derived from the whole history ----------------

    def simulations(self, journey_id: str) -> list[dict[str, Any]]:
        return history.statuses(list(reversed(self.history(journey_id))))[0]

    def acceptances(self, journey_id: str) -> list[dict[str, Any]]:
        return history.statuses(list(reversed(self.history(journey_id))))[1]

    def disbursement(self, journey_id: str) -> dict[str, Any] | None:
        last = self.ledgers.get(journey_id)
        return None if last is None else history.disbursement(last)

    def statuses(self, journey_id: str, kind: str) -> list[str]:
        """The statuses of the journey's simulations, acceptances or disbursement (`kind`: SIMULATION#,
        ACCEPTANCE#, DISBURSEMENT), oldest first."""
        if kind == "DISBURSEMENT":
            paid = self.disbursement(journey_id)
            return [] if paid is None else [paid["status"]]
        items = self.simulations(journey_id) if kind == "SIMULATION#" else self.acceptances(journey_id)
        return [item["status"] for item in items]


class FakeJourneyStore:
    """The orchestrator's JourneyStore: Control Records with a CAS on `version`, created by a conditional put."""

    def __init__(self) -> None:
        self.records: dict[str, ControlRecord] = {}
        self.versions: dict[str, list[int]] = {}

    def get(self, journey_id: str) -> ControlRecord | None:
        return self.records.get(journey_id)

    def replace(self, record: ControlRecord, expected_version: int) -> bool:
        current = self.records.get(record.journeyId)
        if current is None or current.version != expected_version:
            return False
        self.records[record.journeyId] = record
        self.versions[record.journeyId].append(record.version)
        return True

    def listed(self, listing: str, limit: int, after: ControlRecord | None) -> tuple[list[ControlRecord], str | None]:
        """As the customer index lists them: by creation time then journeyId, descending, after `after`."""

        def place(record: ControlRecord) -> tuple[datetime, str]:
            return record.createdAt, record.journeyId

        listed = sorted((r for r in self.records.values() if r.listing == listing), key=place, reverse=True)
        found = [r.journeyId for r in listed if after is None or place(r) < place(after)]
        return [self.records[j] for j in found[:limit]], found[limit - 1] if len(found) > limit else None

    def create(self, record: ControlRecord) -> ControlRecord | None:
        if record.journeyId in self.records:
            return self.records[record.journeyId]
        self.records[record.journeyId] = record
        self.versions[record.journeyId] = [record.version]
        return None


@dataclass
class FakeSystem:
    """Both services on fakes. `wire` is the hop between them (faults, held attempts, interleaving
    callables); `sleeps` records the retry schedule instead of sleeping."""

    loans_store: FakeLoanStore = field(default_factory=FakeLoanStore)
    journeys: FakeJourneyStore = field(default_factory=FakeJourneyStore)
    sleeps: list[float] = field(default_factory=list)
    max_simulations: int | None = None  # loans-api's cap; None: the deployed one (functions/loans_api/settings.py)

    def __post_init__(self) -> None:
        # Each service as its composition root builds it, from its deployed settings' defaults, on the fakes.
        cap = {} if self.max_simulations is None else {"max_simulations_per_journey": self.max_simulations}
        loans_settings = LoansSettings.model_validate({"loans_table_name": "loans", **cap})
        loans_ports = loans_bootstrap.Ports(store=self.loans_store)
        self.wire = InProcessHttp(loans_bootstrap.build(loans_settings, quiet_metrics("loans-api"), loans_ports))
        self.deadline = RequestDeadline()  # never started: unlimited, unless a test starts it
        self.ports = orchestrator_bootstrap.Ports(
            store=self.journeys,
            http=self.wire,
            sleep=self.sleeps.append,
            pause=lambda _: None,
            new_journey_id=lambda: f"j{len(self.journeys.records) + 1}",
        )
        self.settings = OrchestratorSettings(journeys_table_name="journeys", loans_api_url="http://loans-api.invalid")
        self.service = orchestrator_bootstrap.build_service(
            self.settings, quiet_metrics("orchestrator"), self.deadline, self.ports
        )

    def new_journey(self) -> str:
        return str(json.loads(self.service.create("c-1", None).body)["journeyId"])

    def record(self, journey_id: str) -> ControlRecord:
        return self.service.get(journey_id)

    def truth(self, journey_id: str) -> LoanEvent | None:
        return self.loans_store.ledgers.get(journey_id)

    def road_two(self) -> None:
        """The outbox road, drained: every committed event applied through the same applier."""
        applier = EventApplier(self.journeys, clock=utc_now)
        for event in list(self.loans_store.events):
            applier.apply(event, "outbox", confirm_noop=False)

    def assert_invariants(self, journey_id: str) -> None:
        """What must hold after every step (not only once drained)."""
        record = self.record(journey_id)
        simulations = self.loans_store.statuses(journey_id, "SIMULATION#")
        acceptances = self.loans_store.statuses(journey_id, "ACCEPTANCE#")
        if record.currentState == "cancelled":
            assert "ACTIVE" not in simulations + acceptances, "a cancelled record hides something ACTIVE"
        assert simulations.count("ACTIVE") <= 1
        assert acceptances.count("ACTIVE") <= 1
        assert len(self.loans_store.statuses(journey_id, "DISBURSEMENT")) <= 1
        versions = self.journeys.versions[journey_id]
        assert versions == sorted(versions), "a version went back"

    def assert_converged(self, journey_id: str) -> None:
        """Once drained: the Control Record says exactly what loans-api's ledger says."""
        self.road_two()
        truth = self.truth(journey_id)
        record = self.record(journey_id)
        if truth is None:
            assert record.currentState == "created"
            return
        assert record.loan_view() == truth.snapshot
        assert record.lastAppliedSeq == truth.seq


def agent_key(journey_id: str, key: str, body: dict[str, Any]) -> AgentKey:
    """The AgentKey the API makes of an agent's Idempotency-Key on simulate."""
    scope = keys.agent_scope(DEFAULT_CALLER, "simulateLoan", journey_id, key)
    return AgentKey(scope=scope, request_hash=fingerprint("simulateLoan", journey_id, body))


def simulate(system: FakeSystem, journey: str, amount: int = 10000, key: str | None = None) -> Answer:
    """The agent simulates `amount` over 36 months, with its own Idempotency-Key `key` if given."""
    body = {"amount": Decimal(amount), "termMonths": 36}
    return system.service.simulate(journey, Decimal(amount), 36, None if key is None else agent_key(journey, key, body))


def current_id(system: FakeSystem, journey: str, part: str) -> str:
    """The id of the record's `part` (simulation, acceptance), as an agent that just read it would name it."""
    held = getattr(system.record(journey), part)
    return "no-such-id" if held is None else str(getattr(held, part + "Id"))


def accept(system: FakeSystem, journey: str, simulation_id: str | None = None) -> Answer:
    """The agent accepts `simulation_id`, by default the quote its record shows now."""
    named = simulation_id or current_id(system, journey, "simulation")
    return system.service.accept(journey, lambda: named)


def disburse(system: FakeSystem, journey: str, acceptance_id: str | None = None) -> Answer:
    """The agent disburses `acceptance_id`, by default the acceptance its record shows now."""
    named = acceptance_id or current_id(system, journey, "acceptance")
    return system.service.disburse(journey, lambda: named)


def cancel(system: FakeSystem, journey: str) -> Answer:
    return system.service.cancel(journey, lambda: None)


def every_reply_lost(system: FakeSystem, command: Callable[[], Any]) -> None:
    """`command` commits at loans-api, but the replies of all its attempts are lost: the agent gets a 503."""
    system.wire.persistent_fault = "lose"
    with pytest.raises(UpstreamUnavailable):
        command()
    system.wire.persistent_fault = None


def abandon_a_simulate(system: FakeSystem, journey: str, amount: int = 10000) -> None:
    """A simulate whose five attempts are all held back (each may commit later): the agent gets 503."""
    system.wire.faults = ["hold"] * system.settings.retry_attempts
    with pytest.raises(UpstreamUnavailable):
        simulate(system, journey, amount)


def state_of(result: Answer) -> str:
    return str(json.loads(result.body)["currentState"])


def _created_record(journey_id: str) -> dict[str, Any]:
    """A Control Record as the orchestrator shows a new journey (every field its schema requires)."""
    from datetime import UTC, datetime

    from functions.orchestrator.views import render
    from shared.control_record import new_control_record

    return render(new_control_record(journey_id, "c-1", datetime(2026, 12, 1, tzinfo=UTC)))


class FakeOrchestratorApi:
    """The MCP server's port to the orchestrator (saga.orchestrator_api.OrchestratorApi), scripted: `replies`
    answer in order (an exception is raised instead of answered), then `default`; every request is kept."""

    def __init__(self, document: dict[str, Any], default: Any = None) -> None:
        from saga.orchestrator_api import ApiReply

        self.document = document
        self.default = default if default is not None else ApiReply(200, _created_record("j1"))
        self.replies: list[Any] = []
        self.requests: list[Any] = []

    def send(self, request: Any) -> Any:
        from saga.orchestrator_api import DOCUMENT_PATH, ApiReply

        if request.path == DOCUMENT_PATH:
            return ApiReply(200, self.document)
        self.requests.append(request)
        reply = self.replies.pop(0) if self.replies else self.default
        if isinstance(reply, Exception):
            raise reply
        return reply


class InProcessOrchestrator:
    """The real orchestrator app over FakeSystem, behind an in-process wire that can lose replies
    (tools.inprocess), as the MCP server's HTTP adapter reaches it. `requests` keeps what went out."""

    def __init__(self) -> None:
        self.system = FakeSystem()
        handler = orchestrator_bootstrap.build(self.system.settings, quiet_metrics("orchestrator"), self.system.ports)
        self.wire = InProcessHttp(handler, "orchestrator")
        self.requests: list[tuple[str, str, dict[str, str]]] = []

    def request(self, method: str, url: str, body: bytes | None = None, headers: Any = None, **kwargs: Any) -> Any:
        self.requests.append((method, url, dict(headers or {})))
        return self.wire.request(method, url, body=body, headers=headers, **kwargs)


class FakeLease:
    """The lease in memory, decided by `may_take` (for unit tests of what runs under it)."""

    def __init__(self, current: Lease | None = None) -> None:
        self.current = current

    def take(self, holder: str, now: datetime, until: datetime) -> bool:
        if not may_take(self.current, holder, now):
            return False
        self.current = Lease(holder, until)
        return True

    def release(self, holder: str, now: datetime) -> None:
        if self.current is not None and self.current.holder == holder:
            self.current = Lease(holder, now)


class FakeTruths:
    """The audit's TruthReader: loans-api's ledgers (each journey's newest event) and event items, in memory."""

    def __init__(self) -> None:
        self.events: dict[str, list[LoanEvent]] = {}

    def commit(self, event: LoanEvent) -> None:
        self.events.setdefault(event.journeyId, []).append(event)

    def seq(self, journey_id: str) -> int:
        """Where the journey's ledger stands (0: no ledger)."""
        events = self.events.get(journey_id)
        return events[-1].seq if events else 0

    def ledgers(self, journey_ids: list[str]) -> Ledgers:
        found = Ledgers()
        for journey_id in dict.fromkeys(journey_ids):
            if self.events.get(journey_id):
                found.truths[journey_id] = Truth(journey_id, self.events[journey_id][-1])
        return found

    def event(self, journey_id: str, seq: int) -> EventFacts | None:
        for event in self.events.get(journey_id, []):
            if event.seq == seq:
                return EventFacts(event, "NOTIFIED", event.occurredAt)
        return None


class FakeControlRecords(FakeJourneyStore):
    """The Control Records the audit compares, and the store its repairs are applied through."""

    def get_many(self, journey_ids: list[str]) -> dict[str, ControlRecord]:
        return {j: self.records[j] for j in journey_ids if j in self.records}


class FakeRecordRebuilder:
    """The audit's RecordRebuilder: the record replaced on its judged version only while `ledger_seq` (loans-api's
    ledger, 0 for none) still says the seq it was rebuilt from, both checked at once as the transaction does."""

    def __init__(self, records: FakeJourneyStore, ledger_seq: Callable[[str], int]) -> None:
        self._records = records
        self._ledger_seq = ledger_seq

    def rebuild(self, record: ControlRecord, judged_version: int, ledger_seq: int) -> bool:
        if self._ledger_seq(record.journeyId) != ledger_seq:
            return False
        return self._records.replace(record, expected_version=judged_version)


class FakeAuditState:
    """The scheduled audit's state item: saved only over the version it was read at."""

    def __init__(self) -> None:
        self.state = AuditState()

    def get(self) -> AuditState:
        return self.state

    def put(self, state: AuditState, read: AuditState) -> None:
        if read.version != self.state.version:
            raise AuditStateConflict(f"the audit state moved past version {read.version}")
        self.state = dataclasses.replace(state, version=read.version + 1)
