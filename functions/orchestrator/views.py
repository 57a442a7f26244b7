"""How a Control Record is shown to the agent: the stored fields plus HATEOAS `availableActions`."""

from __future__ import annotations

import json
from typing import Any

from shared import state_machine
from shared.control_record import ControlRecord
from shared.state_machine import Command


def journey_href(journey_id: str) -> str:
    return f"/journeys/{journey_id}"


# Each command's operation in the orchestrator's OpenAPI document, and the schema of its body (None:
# no body). tests/integration/test_agent_contract.py checks both against the served document.
OPERATIONS: dict[Command, tuple[str, str | None]] = {
    "simulate": ("simulateLoan", "SimulateRequest"),
    "accept": ("acceptSimulation", None),
    "disburse": ("disburseLoan", None),
    "cancel": ("cancelJourney", None),
}
SCHEMAS = "#/components/schemas/"


def action_view(action: state_machine.Action) -> dict[str, Any]:
    """A link as the agent sees it (ActionView): the command, its operationId and body schema."""
    operation_id, schema = OPERATIONS[action.name]
    view: dict[str, Any] = {"name": action.name, "operationId": operation_id, "method": action.method}
    view["href"] = action.href
    if schema is not None:
        view["requestSchema"] = SCHEMAS + schema
    return view


def actions(record: ControlRecord) -> list[dict[str, Any]]:
    links = state_machine.available_actions(record.currentState, journey_href(record.journeyId))
    return [action_view(action) for action in links]


def render(record: ControlRecord) -> dict[str, Any]:
    return {**record.model_dump(mode="json"), "availableActions": actions(record)}


def render_json(record: ControlRecord) -> str:
    return json.dumps(render(record), separators=(",", ":"))
