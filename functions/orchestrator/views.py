"""How a Control Record is shown to the agent: the stored fields plus HATEOAS `availableActions`."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from shared import state_machine
from shared.control_record import ControlRecord


def journey_href(journey_id: str) -> str:
    return f"/journeys/{journey_id}"


def actions(record: ControlRecord) -> list[dict[str, Any]]:
    return [
        asdict(action)
        for action in state_machine.available_actions(record.currentState, journey_href(record.journeyId))
    ]


def render(record: ControlRecord) -> dict[str, Any]:
    return {**record.model_dump(mode="json"), "availableActions": actions(record)}


def render_json(record: ControlRecord) -> str:
    return json.dumps(render(record), separators=(",", ":"))
