"""The operator's audit (`saga audit --grace 0 --repair --rebuild`) with any agent command, or road 2's apply,
landing between any two of its steps (a step: one call of its ports), on the real orchestrator and loans-api
over the fakes of tests/fakes.py. Whatever lands where, every write the audit makes holds (D5, D15):

* a rebuild writes exactly loans-api's ledger as it stands at the instant of the write (the journey before
  any command, `created` at seq 0, when loans-api has no ledger): never an older truth;
* no write lowers a record's `lastAppliedSeq` below loans-api's, or leaves a terminal state loans-api holds;
* a record the audit writes offers the actions loans-api allows, unless it is behind loans-api (the roads
  and the orchestrator's catch-up bring it);

and its report never calls a record that only a road or the agent moved meanwhile `ahead` or unknown to
loans-api, nor tries to rebuild it."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from functions.auditor.audit import AuditReport, Kind, Truth
from functions.auditor.service import EventFacts, JourneyAuditor, Ledgers
from shared import state_machine
from shared.applier import EventApplier, before_any_command
from shared.clock import utc_now
from shared.control_record import ControlRecord
from shared.errors import DomainError
from shared.events import LoanEvent
from tests.fakes import FakeSystem, accept, cancel, disburse, every_reply_lost, simulate

# The audit's steps for one journey are seven port calls or fewer (judge, evidence, repair or rebuild, judge
# again): each interleaving lands before one of them, or after the last.
STEPS = 8


class Interleaved:
    """Counts the audit's calls of its ports and runs `between` once, right before call number `at`."""

    def __init__(self, at: int, between: Callable[[], None]) -> None:
        self._at = at
        self._between = between
        self.calls = 0

    def step(self) -> None:
        if self.calls == self._at:
            self._between()
        self.calls += 1


class SteppedTruths:
    """loans-api's ledgers and events as the audit reads them (from the fake loans store), one step a call."""

    def __init__(self, system: FakeSystem, steps: Interleaved) -> None:
        self._loans = system.loans_store
        self._steps = steps

    def ledgers(self, journey_ids: list[str]) -> Ledgers:
        self._steps.step()
        found = Ledgers()
        for journey_id in journey_ids:
            if journey_id in self._loans.ledgers:
                found.truths[journey_id] = Truth(journey_id, self._loans.ledgers[journey_id])
        return found

    def event(self, journey_id: str, seq: int) -> EventFacts | None:
        self._steps.step()
        event = next((e for e in self._loans.events if (e.journeyId, e.seq) == (journey_id, seq)), None)
        return None if event is None else EventFacts(event, "NOTIFIED", event.occurredAt)


class SteppedRecords:
    """The Control Records as the audit reads and writes them (the orchestrator's fake store), one step a
    call; every write the audit makes is checked against loans-api's ledger at the instant it lands."""

    def __init__(self, system: FakeSystem, steps: Interleaved) -> None:
        self._system = system
        self._steps = steps
        self.writes: list[ControlRecord] = []

    def get(self, journey_id: str) -> ControlRecord | None:
        self._steps.step()
        return self._system.journeys.get(journey_id)

    def get_many(self, journey_ids: list[str]) -> dict[str, ControlRecord]:
        self._steps.step()
        return {j: r for j in journey_ids if (r := self._system.journeys.get(j)) is not None}

    def replace(self, record: ControlRecord, expected_version: int) -> bool:
        """The applier's write (a repair)."""
        self._steps.step()
        return self._write(record, expected_version)

    def rebuild(self, record: ControlRecord, judged_version: int, ledger_seq: int) -> bool:
        """The rebuild's write: on the judged version, while loans-api's ledger is at `ledger_seq` (0: none)."""
        self._steps.step()
        ledger = self._system.truth(record.journeyId)
        if (0 if ledger is None else ledger.seq) != ledger_seq:
            return False
        return self._write(record, judged_version)

    def _write(self, record: ControlRecord, expected_version: int) -> bool:
        before = self._system.journeys.get(record.journeyId)
        if not self._system.journeys.replace(record, expected_version):
            return False
        assert before is not None
        assert_a_sound_write(before, record, self._system.truth(record.journeyId))
        self.writes.append(record)
        return True


def assert_a_sound_write(before: ControlRecord, written: ControlRecord, ledger: LoanEvent | None) -> None:
    """What every write of the audit must hold, against loans-api's ledger at the instant of the write."""
    truth_seq = 0 if ledger is None else ledger.seq
    truth = before_any_command(written.journeyId) if ledger is None else ledger.snapshot
    seen = (
        f"record {before.currentState}@{before.lastAppliedSeq} -> {written.currentState}@{written.lastAppliedSeq} "
        f"(road {written.appliedBy[-1].road}) while loans-api is {truth.state}@{truth_seq}"
    )
    if written.appliedBy[-1].road == "rebuild":
        assert (written.lastAppliedSeq, written.loan_view()) == (truth_seq, truth), (
            f"a rebuild wrote an old truth: {seen}"
        )
    assert written.lastAppliedSeq >= min(before.lastAppliedSeq, truth_seq), f"a seq loans-api holds was lowered: {seen}"
    if state_machine.is_terminal(truth.state) and before.currentState == truth.state:
        assert written.currentState == truth.state, f"a terminal state loans-api holds was left: {seen}"
    if written.lastAppliedSeq >= truth_seq:
        offered = state_machine.allowed_commands(written.currentState)
        assert offered == state_machine.allowed_commands(truth.state), f"offers {offered} loans-api refuses: {seen}"


# -- the journeys as the operator finds them --------------------------------------------------------------


def agreeing_accepted(system: FakeSystem) -> str:
    """The issue's journey: accepted, record and ledger agree (the next command is the disburse)."""
    journey = system.new_journey()
    simulate(system, journey)
    accept(system, journey)
    return journey


def behind(system: FakeSystem) -> str:
    """Simulated at loans-api, every reply lost: the record says created (a repair's case)."""
    journey = system.new_journey()
    every_reply_lost(system, lambda: simulate(system, journey))
    return journey


def forged(system: FakeSystem, journey: str, **changes: Any) -> str:
    record = system.journeys.records[journey]
    system.journeys.records[journey] = record.model_copy(update=changes)
    return journey


def ahead(system: FakeSystem) -> str:
    """Simulated, then the record forged ahead of loans-api (seq 10^9: every real event a no-op to it)."""
    journey = system.new_journey()
    simulate(system, journey)
    return forged(system, journey, lastAppliedSeq=10**9)


def diverged(system: FakeSystem) -> str:
    """Simulated, then the record's quote overwritten: same seq as loans-api, other content."""
    journey = system.new_journey()
    simulate(system, journey)
    quote = system.record(journey).simulation
    assert quote is not None
    return forged(system, journey, simulation=quote.model_copy(update={"simulationId": "forged"}))


def unknown_to_loans_api(system: FakeSystem) -> str:
    """A record claiming simulated at seq 3 for a journey loans-api has no ledger of (a restored table)."""
    return forged(system, system.new_journey(), currentState="simulated", lastAppliedSeq=3)


JOURNEYS: dict[str, Callable[[FakeSystem], str]] = {
    "agreeing-accepted": agreeing_accepted,
    "behind": behind,
    "ahead": ahead,
    "diverged": diverged,
    "unknown-to-loans-api": unknown_to_loans_api,
}
# Whose record only the roads and the agent wrote: the audit must never call it ahead or unknown.
HONEST = ("agreeing-accepted", "behind")


# -- what lands between two steps --------------------------------------------------------------------------


def attempt(command: Callable[[], Any]) -> None:
    with contextlib.suppress(DomainError):  # refused, or it needs an operator: what matters is the audit's writes
        command()


def lost_simulate(system: FakeSystem, journey: str) -> None:
    """A re-simulate that commits at loans-api with every reply lost: the record is behind until road 2."""
    system.wire.persistent_fault = "lose"
    attempt(lambda: simulate(system, journey, 12000))
    system.wire.persistent_fault = None


ACTIONS: dict[str, Callable[[FakeSystem, str], None]] = {
    "simulate": lambda system, journey: attempt(lambda: simulate(system, journey, 9000)),
    "accept": lambda system, journey: attempt(lambda: accept(system, journey)),
    "disburse": lambda system, journey: attempt(lambda: disburse(system, journey)),
    "cancel": lambda system, journey: attempt(lambda: cancel(system, journey)),
    "simulate, replies lost": lost_simulate,
    "road 2": lambda system, _: system.road_two(),
}


def audit_with(system: FakeSystem, journey: str, steps: Interleaved) -> tuple[AuditReport, SteppedRecords]:
    """`saga audit --grace 0 --repair --rebuild --journey J` over the stepped ports."""
    records = SteppedRecords(system, steps)
    later = lambda: utc_now() + timedelta(seconds=1)  # noqa: E731
    applier = EventApplier(records, clock=later)
    auditor = JourneyAuditor(SteppedTruths(system, steps), records, applier, records, later, 0)
    return auditor.audit([journey], repair=True, rebuild=True), records


CASES = list(itertools.product(JOURNEYS, ACTIONS, range(STEPS)))


@pytest.mark.parametrize(("journey_kind", "action", "at"), CASES, ids=[f"{j}-{a}-step{s}" for j, a, s in CASES])
def test_no_command_landing_between_two_steps_of_the_audit_makes_its_repair_go_back(journey_kind, action, at):
    # Given a journey as the operator finds it
    system = FakeSystem()
    journey = JOURNEYS[journey_kind](system)
    steps = Interleaved(at, lambda: ACTIONS[action](system, journey))
    # When the operator's audit repairs and rebuilds it while the command lands before step `at`
    report, _ = audit_with(system, journey, steps)
    if steps.calls <= at:
        ACTIONS[action](system, journey)  # (the audit had fewer steps: the command lands after it)
    # Then every write it made was sound (checked as it landed), and an honest record is never reported
    # as ahead of loans-api or unknown to it
    if journey_kind in HONEST:
        wrong = [(f.kind, f.differences) for f in report.outOfSync if f.kind not in (Kind.BEHIND, Kind.DIVERGED)]
        assert wrong == [], f"an honest record reported as {wrong}"
        # (judged on a consistent pair, it never even looked like one a rebuild is for)
        assert (report.rebuilt, report.notRebuilt) == ([], []), f"a rebuild tried on an honest record: {report}"
        # And once road 2 has drained, the record is loans-api's truth
        system.assert_converged(journey)
