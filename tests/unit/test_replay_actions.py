"""What a replay answers (D2): the recorded status with the journey as it stands now, so its
`availableActions` are legal now. For every agent route, a repeat after the journey moved on offers only
what loans-api would accept (its ledger is the judge), over HTTP, as an MCP tool and as a Bedrock action."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from functions.orchestrator import bedrock
from saga.local.apigw import LambdaContextStub
from saga.openapi_tools import KEY_ARGUMENT
from shared import state_machine
from tests.bedrock_events import action_event
from tests.fakes import InProcessOrchestrator
from tests.unit.test_mcp_server import tools_over

TERMS = {"amount": 10000, "termMonths": 36}
OTHER_TERMS = {"amount": 20000, "termMonths": 48}
BASE = "http://orchestrator.invalid"


class Agent:
    """An agent of the in-process orchestrator over HTTP, following the record's links."""

    def __init__(self, orchestrator: InProcessOrchestrator) -> None:
        self.orchestrator = orchestrator

    def post(self, path: str, body: Any, key: str | None = None) -> tuple[int, dict[str, Any], bool]:
        headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
        reply = self.orchestrator.request("POST", BASE + path, json.dumps(body).encode(), headers)
        return reply.status, json.loads(reply.data), reply.headers.get("Idempotent-Replayed") == "true"

    def follow(self, record: dict[str, Any], name: str, body: Any = None) -> dict[str, Any]:
        """Call the record's `name` link with its own body (or `body`); the new record."""
        [link] = [action for action in record["availableActions"] if action["name"] == name]
        status, answered, _ = self.post(link["href"], link.get("body", body))
        assert status == 200, f"{name} on {record['currentState']} answered {status}: {answered}"
        return answered


def legal_now(orchestrator: InProcessOrchestrator, journey_id: str) -> dict[str, Any]:
    """What loans-api would accept now, from its ledger: each command and the exact body it names."""
    truth = orchestrator.system.truth(journey_id)
    if truth is None:
        return {"simulate": None, "cancel": {}}
    snapshot = truth.snapshot
    legal: dict[str, Any] = {}
    for command in state_machine.allowed_commands(snapshot.state):
        if command == "accept":
            legal[command] = {"simulationId": snapshot.simulation.simulationId} if snapshot.simulation else "none"
        elif command == "disburse":
            legal[command] = {"acceptanceId": snapshot.acceptance.acceptanceId} if snapshot.acceptance else "none"
        elif command == "simulate" and snapshot.simulationsLeft != 0:
            legal[command] = None
        elif command == "cancel":
            legal[command] = {}
    return legal


def assert_offers_only_legal_actions(
    orchestrator: InProcessOrchestrator, journey_id: str, answered: dict[str, Any], route: str
) -> None:
    legal = legal_now(orchestrator, journey_id)
    offered = {action["name"]: action.get("body") for action in answered.get("availableActions", [])}
    illegal = {name: body for name, body in offered.items() if name not in legal or legal[name] != body}
    assert not illegal, f"the replay of {route} offers {illegal}; loans-api would accept only {legal}"
    if "currentState" in answered:  # a record, not a problem: the journey as it stands
        truth = orchestrator.system.truth(journey_id)
        assert answered["currentState"] == (truth.snapshot.state if truth else "created"), (
            f"the replay of {route} answers {answered['currentState']}, the ledger says {truth}"
        )


# How the journey moves on after the first call: each a list of (link to follow, body for simulate); from a
# new quote, so the moved journey names another quote and acceptance than the first call saw.
MOVES: dict[str, list[tuple[str, Any]]] = {
    "re-priced": [("simulate", OTHER_TERMS)],
    "accepted": [("simulate", OTHER_TERMS), ("accept", None)],
    "disbursed": [("simulate", OTHER_TERMS), ("accept", None), ("disburse", None)],
    "cancelled": [("cancel", None)],
}
# Each route, from a fresh journey: how to bring the journey there, and the call that is then repeated.
SETUP: dict[str, list[str]] = {
    "createJourney": [],
    "simulateLoan": [],
    "acceptSimulation": ["simulate"],
}
COMMAND = {"simulateLoan": "simulate", "acceptSimulation": "accept"}


# disburseLoan and cancelJourney leave the journey final: nothing moves it on after them, and their repeats
# answer the final record (tests/integration/test_orchestrator.py).
MOVED_ON = [(route, moved) for route in SETUP for moved in MOVES]


@pytest.mark.parametrize(("route", "moved"), MOVED_ON)
def test_a_replay_after_the_journey_moved_on_offers_only_actions_legal_now(route, moved):
    # Given a journey and one call of `route` (createJourney and simulate with an Idempotency-Key)
    orchestrator = InProcessOrchestrator()
    agent = Agent(orchestrator)
    status, record, _ = agent.post("/journeys", {"customerId": "c-1"}, key="create-1")
    assert status == 201, record
    journey_id = record["journeyId"]
    for name in SETUP[route]:
        record = agent.follow(record, name, TERMS)

    def repeat() -> tuple[int, dict[str, Any], bool]:
        if route == "createJourney":
            return agent.post("/journeys", {"customerId": "c-1"}, key="create-1")
        command = COMMAND[route]
        [link] = [action for action in first_record["availableActions"] if action["name"] == command]
        return agent.post(link["href"], link.get("body", TERMS), key="sim-1" if command == "simulate" else None)

    first_record = record
    if route != "createJourney":
        status, record, _ = repeat()
        assert status == 200, record
    # When the journey moves on, where it can
    for name, body in MOVES[moved]:
        record = agent.follow(record, name, body)
    # Then the same call again is a replay (or a refusal) whose actions are the ones legal now
    status, answered, replayed = repeat()
    assert status in (200, 201, 409), f"the replay of {route} answered {status}: {answered}"
    if status != 409:
        assert replayed, f"the repeat of {route} after {moved} was not a replay: {answered}"
        assert status == (201 if route == "createJourney" else 200)
    assert_offers_only_legal_actions(orchestrator, journey_id, answered, route)


@pytest.mark.parametrize("moved", list(MOVES))
def test_an_mcp_tool_and_a_bedrock_action_replayed_after_the_journey_moved_on_offer_only_actions_legal_now(moved):
    # Given a journey created and priced with keys, over MCP and as Bedrock actions (which answer the same
    # handler's records)
    orchestrator = InProcessOrchestrator()
    agent = Agent(orchestrator)
    tools = tools_over(orchestrator)
    created = tools.call("createJourney", {"customerId": "c-1", KEY_ARGUMENT: "mcp-create"})
    journey_id = created.document["journeyId"]
    priced = tools.call("simulateLoan", {"journeyId": journey_id, **TERMS, KEY_ARGUMENT: "mcp-sim"})
    assert not priced.is_error, priced.guidance

    def bedrock_invoke(event: dict[str, Any]) -> dict[str, Any]:
        proxy = bedrock.request(event, "arn:aws:bedrock:eu-west-1:111111111111:agent/A")
        reply = bedrock.response(event, orchestrator.wire.handler(proxy, LambdaContextStub("bedrock-executor")))
        answered: dict[str, Any] = json.loads(reply["response"]["responseBody"]["application/json"]["body"])
        return answered

    bedrock_create = action_event("/journeys", "POST", None, {"customerId": "c-2"})
    bedrock_journey = bedrock_invoke(bedrock_create)["journeyId"]
    bedrock_simulate = action_event("/journeys/{journeyId}/simulate", "POST", {"journeyId": bedrock_journey}, TERMS)
    bedrock_invoke(bedrock_simulate)
    # When each journey moves on
    for journey in (journey_id, bedrock_journey):
        record = json.loads(orchestrator.request("GET", f"{BASE}/journeys/{journey}").data)
        for name, body in MOVES[moved]:
            record = agent.follow(record, name, body)
    # Then each repeated call answers the journey as it stands, with only the actions legal now
    replays: list[tuple[str, str, Callable[[], dict[str, Any]]]] = [
        (
            "the MCP createJourney",
            journey_id,
            lambda: tools.call("createJourney", {"customerId": "c-1", KEY_ARGUMENT: "mcp-create"}).document,
        ),
        (
            "the MCP simulateLoan",
            journey_id,
            lambda: tools.call("simulateLoan", {"journeyId": journey_id, **TERMS, KEY_ARGUMENT: "mcp-sim"}).document,
        ),
        ("the Bedrock createJourney", bedrock_journey, lambda: bedrock_invoke(bedrock_create)),
        ("the Bedrock simulateLoan", bedrock_journey, lambda: bedrock_invoke(bedrock_simulate)),
    ]
    for route, journey, replay in replays:
        answered = replay()
        assert answered.get("journeyId") == journey, f"{route} replayed as {answered}"
        assert_offers_only_legal_actions(orchestrator, journey, answered, route)
