"""Tools from an OpenAPI document (saga/openapi_tools.py): the input schema is the operation's
parameters and JSON body with `$ref`s resolved, whatever the parameters are called."""

from __future__ import annotations

import json
from typing import Any

import pytest

from saga.journey_tools import JourneyTools
from saga.openapi_tools import KEY_ARGUMENT, InvalidArguments, Operation, operations, resolve
from tests.fakes import FakeOrchestratorApi, InProcessOrchestrator


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    orchestrator = InProcessOrchestrator()
    served: dict[str, Any] = json.loads(orchestrator.wire.request("GET", "http://o.invalid/openapi.json").data)
    return served


def by_id(document: dict[str, Any]) -> dict[str, Operation]:
    return {op.operation_id: op for op in operations(document, exclude=["health"])}


def renamed(document: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """The document with a path parameter renamed everywhere (an older document spelled journeyId journey_id)."""
    text = json.dumps(document).replace("{" + old + "}", "{" + new + "}").replace(f'"{old}"', f'"{new}"')
    changed: dict[str, Any] = json.loads(text)
    return changed


def test_a_body_is_flattened_next_to_the_path_parameter_with_its_ref_resolved(document):
    # Given the orchestrator's document
    simulate = by_id(document)["simulateLoan"]
    (journey,) = simulate.path_parameters
    body_ref = document["paths"][simulate.path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    body = document["components"]["schemas"][body_ref["$ref"].rsplit("/", 1)[1]]
    # Then the input schema holds the body's own properties, the journey and the key, and nothing else
    properties = simulate.input_schema["properties"]
    assert set(properties) == {journey, KEY_ARGUMENT, *body["properties"]}
    assert {name: properties[name] for name in body["properties"]} == body["properties"]
    assert set(simulate.input_schema["required"]) == {journey, *body["required"]}
    assert simulate.input_schema["additionalProperties"] is False
    assert "$ref" not in json.dumps(simulate.input_schema)
    # and the key is a plain optional string (no null alternative)
    assert properties[KEY_ARGUMENT]["type"] == "string"
    assert KEY_ARGUMENT not in simulate.input_schema["required"]


def test_a_renamed_path_parameter_is_what_the_tool_takes(document):
    # Given the document with the journey parameter renamed
    (old,) = by_id(document)["cancelJourney"].path_parameters
    cancel = by_id(renamed(document, old, "journeyRef"))["cancelJourney"]
    # When the tool is called with the new name
    call = cancel.request({"journeyRef": "j-9"})
    # Then the path is filled in, and the old name is refused
    assert cancel.input_schema["required"] == ["journeyRef"]
    assert (call.method, call.path, call.body) == ("POST", "/journeys/j-9/cancel", {})
    with pytest.raises(InvalidArguments):
        cancel.request({old: "j-9"})


def test_a_link_becomes_a_tool_call_by_its_operation_id_or_its_path_and_an_unknown_one_stays_a_link(document):
    # Given a renamed document and a record whose links name their operation (operationId)
    (old,) = by_id(document)["acceptSimulation"].path_parameters
    api = FakeOrchestratorApi(renamed(document, old, "journeyRef"))
    tools = JourneyTools(api, api.document)
    links = [
        {"name": "accept", "method": "POST", "href": "/journeys/j-9/accept", "operationId": "acceptSimulation"},
        {"name": "cancel", "method": "POST", "href": "/journeys/j-9/cancel"},
        {"name": "teleport", "method": "POST", "href": "/elsewhere"},
    ]
    # When they are spelled for the model
    spelled = tools.next_actions(links)
    # Then each known link is a tool call with its arguments, and an unknown one is left as a link
    assert spelled == (
        "accept -> acceptSimulation(journeyRef='j-9'); cancel -> cancelJourney(journeyRef='j-9'); "
        "teleport (POST /elsewhere)"
    )


def test_refs_resolve_through_nesting_and_stop_at_a_cycle():
    # Given a document whose schemas refer to each other, one of them to itself
    document = {
        "components": {
            "schemas": {
                "Outer": {"type": "object", "properties": {"inner": {"$ref": "#/components/schemas/Inner"}}},
                "Inner": {"type": "object", "properties": {"again": {"$ref": "#/components/schemas/Inner"}}},
            }
        }
    }
    # When a reference to the outer one is resolved
    schema = resolve({"$ref": "#/components/schemas/Outer", "description": "kept"}, document)
    # Then it is self-contained, the sibling of the $ref is kept, and the cycle ends in an open object
    assert schema == {
        "type": "object",
        "description": "kept",
        "properties": {"inner": {"type": "object", "properties": {"again": {"type": "object"}}}},
    }
