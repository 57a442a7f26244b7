"""What the agent is told when a command is refused (D13, D14): a 409 problem whose `availableActions`
are those of the record caught up with loans-api (the service catches up before it refuses), with
`stale-simulation` / `stale-acceptance` when what the command names was replaced, and `quotes-exhausted`
when a journey has had all its quotes."""

from __future__ import annotations

from functions.orchestrator.views import actions
from shared import state_machine
from shared.control_record import ControlRecord
from shared.errors import (
    BusinessRuleViolated,
    IllegalTransition,
    LedgerMoved,
    QuotesExhausted,
    SimulationLimitReached,
    StaleAcceptance,
    StaleSimulation,
)
from shared.state_machine import Command

# What each command names (the Control Record's field that holds its current value), and the states in
# which naming another one is "stale" rather than plainly illegal.
NAMED: dict[Command, str] = {"accept": "simulation", "disburse": "acceptance"}
STALE_IN: dict[Command, tuple[str, ...]] = {"accept": ("simulated", "accepted"), "disburse": ("accepted", "disbursed")}


def current(record: ControlRecord, command: Command) -> str | None:
    """The id the record holds for what `command` names: its quote for accept, its acceptance for disburse."""
    if command == "accept":
        return None if record.simulation is None else record.simulation.simulationId
    if command == "disburse":
        return None if record.acceptance is None else record.acceptance.acceptanceId
    return None


def names_current(record: ControlRecord, command: Command, target: str) -> bool:
    """Does what the agent named (nothing, for simulate and cancel) stand in the record?"""
    return command not in NAMED or current(record, command) == target


def still_means(record: ControlRecord, command: Command, target: str) -> bool:
    """May the command be decided again on the caught-up record with the same meaning? Legal there, what
    it names still current, and (simulate) quotes left."""
    if not state_machine.is_allowed(record.currentState, command):
        return False
    if command == "simulate":
        return record.simulationsLeft != 0
    return names_current(record, command, target)


def stale(command: Command, record: ControlRecord, target: str, why: str) -> IllegalTransition:
    """`target`, which the agent named, is not what stands: the 409 shows what does."""
    kind = NAMED[command]
    standing = getattr(record, kind)
    detail = (
        f"{kind} {target} is not the journey's current {kind} ({why}); nothing was done. `{kind}` is the current "
        f"one: act on it (availableActions carries its body) only if the customer agreed to it"
    )
    error_type = StaleSimulation if command == "accept" else StaleAcceptance
    return error_type(detail, actions(record), {kind: None if standing is None else standing.model_dump(mode="json")})


def refusal(
    error: LedgerMoved | BusinessRuleViolated, command: Command, record: ControlRecord, target: str
) -> IllegalTransition:
    """What the agent is told when loans-api refused the command, decided on the caught-up record."""
    if record.currentState in STALE_IN.get(command, ()) and not names_current(record, command, target):
        return stale(command, record, target, f"the journey is {record.currentState}")
    if command == "simulate" and (isinstance(error, SimulationLimitReached) or record.simulationsLeft == 0):
        return QuotesExhausted(
            f"the journey has had all its quotes; accept the current one or cancel ({error.detail})", actions(record)
        )
    if isinstance(error, BusinessRuleViolated):
        return IllegalTransition(error.detail, actions(record))
    return IllegalTransition(
        f"the journey changed since '{command}' was decided: it is {record.currentState} now, and nothing was done; "
        "availableActions lists what is legal now (read the journey to see what changed)",
        actions(record),
    )


def refuse_if_illegal(record: ControlRecord, command: Command) -> None:
    """IllegalTransition with the record's actions unless `command` is legal there, or settled (a repeat)."""
    if not (
        state_machine.is_allowed(record.currentState, command) or state_machine.is_settled(record.currentState, command)
    ):
        raise IllegalTransition(
            f"'{command}' is not allowed while the journey is {record.currentState}", actions(record)
        )


def undone(command: Command, record: ControlRecord, target: str) -> IllegalTransition:
    """A repeat of a command whose effect was undone since (a cancelled acceptance, say)."""
    if record.currentState in STALE_IN.get(command, ()):
        return stale(command, record, target, f"the earlier {command} of it was undone since")
    return IllegalTransition(
        f"this '{command}' was done earlier and has been undone since (the journey is {record.currentState} now); "
        "availableActions lists what is legal now",
        actions(record),
    )
