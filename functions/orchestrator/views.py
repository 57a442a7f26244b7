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
    "accept": ("acceptSimulation", "AcceptRequest"),
    "disburse": ("disburseLoan", "DisburseRequest"),
    "cancel": ("cancelJourney", "CancelRequest"),
}
SCHEMAS = "#/components/schemas/"


def fixed_body(record: ControlRecord, command: Command) -> dict[str, Any] | None:
    """The exact body a command takes on this record: accept names the record's quote, disburse its
    acceptance, cancel takes `{}`; None where the agent chooses what to send (simulate)."""
    if command == "accept" and record.simulation is not None:
        return {"simulationId": record.simulation.simulationId}
    if command == "disburse" and record.acceptance is not None:
        return {"acceptanceId": record.acceptance.acceptanceId}
    return {} if command == "cancel" else None


def actions(record: ControlRecord) -> list[dict[str, Any]]:
    """`availableActions`, of a record and of a 409 alike (the record caught up with loans-api first:
    functions/orchestrator/refusals.py): the record's legal next commands (`state_machine.TRANSITIONS`) as
    links, each with the exact body to send where the journey fixes it; simulate is left out once the
    journey has had all its quotes."""
    views = []
    for command in state_machine.allowed_commands(record.currentState):
        if command == "simulate" and record.simulationsLeft == 0:
            continue
        operation_id, schema = OPERATIONS[command]
        href = f"{journey_href(record.journeyId)}/{command}"
        view: dict[str, Any] = {"name": command, "operationId": operation_id, "method": "POST", "href": href}
        if schema is not None:
            view["requestSchema"] = SCHEMAS + schema
        body = fixed_body(record, command)
        if body is not None:
            view["body"] = body
        views.append(view)
    return views


def render(record: ControlRecord) -> dict[str, Any]:
    return {**record.model_dump(mode="json"), "availableActions": actions(record)}


def render_json(record: ControlRecord) -> str:
    return json.dumps(render(record), separators=(",", ":"))
