"""The loan journey as data: states, agent commands, transitions. Pure: no I/O, no logging.

The same table answers two questions:
- may the agent issue this command now (`is_allowed`, `allowed_commands`)?
- may an event move a Control Record from one state to another (`can_reach`)? Events are projected
  from snapshots and may skip states (out of order, lost replies), so the gate is reachability.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from shared.events import LoanState

Command = Literal["simulate", "accept", "disburse", "cancel"]

STATES: tuple[LoanState, ...] = ("created", "simulated", "accepted", "disbursed", "cancelled")
COMMANDS: tuple[Command, ...] = ("simulate", "accept", "disburse", "cancel")
TERMINAL_STATES: frozenset[LoanState] = frozenset({"disbursed", "cancelled"})

# (state, command) -> state after the command. Absent pairs are illegal.
TRANSITIONS: dict[tuple[LoanState, Command], LoanState] = {
    ("created", "simulate"): "simulated",
    ("created", "cancel"): "cancelled",
    ("simulated", "simulate"): "simulated",
    ("simulated", "accept"): "accepted",
    ("simulated", "cancel"): "cancelled",
    ("accepted", "simulate"): "simulated",
    ("accepted", "disburse"): "disbursed",
    ("accepted", "cancel"): "cancelled",
}

# A command whose effect already stands is answered with the record, not refused: an agent that
# re-calls a tool after a lost reply must not be told it did something wrong. Simulate is never
# settled: each simulate is a new quote.
SETTLED_BY: dict[Command, LoanState] = {"accept": "accepted", "disburse": "disbursed", "cancel": "cancelled"}


def is_terminal(state: LoanState) -> bool:
    return state in TERMINAL_STATES


def is_allowed(state: LoanState, command: Command) -> bool:
    return (state, command) in TRANSITIONS


def is_settled(state: LoanState, command: Command) -> bool:
    """True when `state` is exactly what `command` would have produced (a repeat)."""
    return SETTLED_BY.get(command) == state


def allowed_commands(state: LoanState) -> tuple[Command, ...]:
    return tuple(command for command in COMMANDS if is_allowed(state, command))


@cache
def reachable_from(state: LoanState) -> frozenset[LoanState]:
    """States reachable from `state` in one or more commands (compensations happen inside a command:
    re-simulating from `accepted` cancels the acceptance and lands on `simulated`)."""
    seen: set[LoanState] = set()
    frontier = [state]
    while frontier:
        current = frontier.pop()
        for nxt in (t for (s, _), t in TRANSITIONS.items() if s == current):
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    return frozenset(seen)


def can_reach(current: LoanState, target: LoanState) -> bool:
    """May an event move a record from `current` to `target`? Staying put is always legal for a
    live state (a newer snapshot of the same state, e.g. a re-simulation)."""
    if is_terminal(current):
        return False
    return target == current or target in reachable_from(current)
