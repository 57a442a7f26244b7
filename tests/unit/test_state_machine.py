"""The journey's state machine: the full transition table, actions per state, reachability."""

import itertools

import pytest

from shared import state_machine as sm

EXPECTED = {
    ("created", "simulate"): "simulated",
    ("created", "cancel"): "cancelled",
    ("simulated", "simulate"): "simulated",
    ("simulated", "accept"): "accepted",
    ("simulated", "cancel"): "cancelled",
    ("accepted", "simulate"): "simulated",
    ("accepted", "disburse"): "disbursed",
    ("accepted", "cancel"): "cancelled",
}


@pytest.mark.parametrize(("state", "command"), list(itertools.product(sm.STATES, sm.COMMANDS)))
def test_every_state_and_command(state, command):
    expected = EXPECTED.get((state, command))
    assert sm.TRANSITIONS.get((state, command)) == expected
    assert sm.is_allowed(state, command) is (expected is not None)


@pytest.mark.parametrize(
    ("state", "names"),
    [
        ("created", ["simulate", "cancel"]),
        ("simulated", ["simulate", "accept", "cancel"]),
        ("accepted", ["simulate", "disburse", "cancel"]),
        ("disbursed", []),
        ("cancelled", []),
    ],
)
def test_available_actions_per_state(state, names):
    actions = sm.available_actions(state, "/journeys/j1")
    assert [a.name for a in actions] == names
    assert all(a.method == "POST" and a.href == f"/journeys/j1/{a.name}" for a in actions)


def test_disbursed_is_terminal_and_cancel_is_never_legal_there():
    assert sm.is_terminal("disbursed")
    assert not sm.is_allowed("disbursed", "cancel")
    assert not any(sm.can_reach("disbursed", s) for s in sm.STATES)


@pytest.mark.parametrize(
    ("current", "target", "legal"),
    [
        ("created", "accepted", True),  # events skipped (reply lost, backstop late): still forward
        ("simulated", "simulated", True),  # a re-simulation
        ("accepted", "simulated", True),  # acceptance compensated
        ("simulated", "created", False),
        ("cancelled", "simulated", False),
        ("disbursed", "disbursed", False),
    ],
)
def test_reachability_gates_derived_transitions(current, target, legal):
    assert sm.can_reach(current, target) is legal


def test_settled_commands_are_repeats_of_what_produced_the_state():
    assert sm.is_settled("disbursed", "disburse")
    assert sm.is_settled("accepted", "accept")
    assert sm.is_settled("cancelled", "cancel")
    assert not sm.is_settled("simulated", "simulate")
    assert not sm.is_settled("accepted", "disburse")
