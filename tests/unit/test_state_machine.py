"""The journey's state machine, stated as the rules of the loan journey (docs/API.md, D9) rather than as a copy
of shared/state_machine.py's table: which command is legal where, where it leads, what is final, and
which states an event may move a Control Record to."""

from datetime import UTC, datetime

import pytest

from functions.orchestrator import views
from shared import state_machine as sm
from shared.control_record import ControlRecord, new_control_record
from shared.events import LoanState

LIVE = ("created", "simulated", "accepted")
FINAL = ("disbursed", "cancelled")


def legal_in(command: sm.Command) -> set[str]:
    return {state for state in sm.STATES if sm.is_allowed(state, command)}


def test_the_journey_has_three_live_states_and_two_final_ones():
    assert set(sm.STATES) == {*LIVE, *FINAL}
    assert [state for state in sm.STATES if sm.is_terminal(state)] == list(FINAL)


@pytest.mark.parametrize(
    ("command", "legal", "leads_to"),
    [
        ("simulate", set(LIVE), "simulated"),  # a quote, a new quote, or a new quote that undoes the acceptance
        ("accept", {"simulated"}, "accepted"),  # only a quote can be accepted
        ("disburse", {"accepted"}, "disbursed"),  # only an accepted quote is paid out
        ("cancel", set(LIVE), "cancelled"),  # anything not final can be cancelled
    ],
    ids=["simulate", "accept", "disburse", "cancel"],
)
def test_each_command_is_legal_only_in_its_states_and_leads_to_its_one_state(command, legal, leads_to):
    assert legal_in(command) == legal
    assert {sm.TRANSITIONS[(state, command)] for state in legal} == {leads_to}


@pytest.mark.parametrize("state", FINAL)
def test_a_final_state_allows_no_command_and_offers_no_action(state):
    assert not any(sm.is_allowed(state, command) for command in sm.COMMANDS)
    assert sm.allowed_commands(state) == ()
    assert views.actions(record_in(state)) == []


@pytest.mark.parametrize(
    ("state", "names"),
    [
        ("created", ["simulate", "cancel"]),
        ("simulated", ["simulate", "accept", "cancel"]),
        ("accepted", ["simulate", "disburse", "cancel"]),
    ],
    ids=["created", "simulated", "accepted"],
)
def test_the_available_actions_of_a_live_state_are_its_legal_commands_as_post_links(state, names):
    assert list(sm.allowed_commands(state)) == names
    actions = views.actions(record_in(state))
    assert [a["name"] for a in actions] == names
    wrong = [a for a in actions if (a["method"], a["href"]) != ("POST", f"/journeys/j1/{a['name']}")]
    assert not wrong, f"links not a POST to the journey's command: {wrong}"


def record_in(state: LoanState) -> ControlRecord:
    """A record of journey j1 in `state` (what it holds besides does not matter to its links)."""
    created = new_control_record("j1", "c1", datetime(2026, 1, 1, tzinfo=UTC), "listing")
    return created.model_copy(update={"currentState": state})


@pytest.mark.parametrize(
    ("current", "target", "legal"),
    [
        ("created", "accepted", True),  # events skipped (reply lost, backstop late): still forward
        ("created", "disbursed", True),
        ("simulated", "simulated", True),  # a re-simulation
        ("accepted", "simulated", True),  # acceptance compensated
        ("accepted", "cancelled", True),
        ("simulated", "created", False),  # nothing leads back to created
        ("accepted", "created", False),
        ("cancelled", "simulated", False),  # a final record never moves again
        ("disbursed", "cancelled", False),
        ("disbursed", "disbursed", False),
    ],
)
def test_an_event_may_move_a_record_only_to_a_state_its_commands_can_reach(current, target, legal):
    assert sm.can_reach(current, target) is legal


@pytest.mark.parametrize(
    ("state", "command", "settled"),
    [
        ("disbursed", "disburse", True),  # a repeat after a lost reply is answered, not refused
        ("accepted", "accept", True),
        ("cancelled", "cancel", True),
        ("simulated", "simulate", False),  # each simulate is a new quote
        ("accepted", "disburse", False),
        ("cancelled", "disburse", False),
    ],
)
def test_a_command_is_settled_only_by_the_state_it_produces(state, command, settled):
    assert sm.is_settled(state, command) is settled
