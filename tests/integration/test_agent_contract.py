"""The agent's contract: OpenAPI documents worth generating tools from, the Bedrock Agents
export, links that name their operation and body schema, and Idempotency-Keys that belong to their
caller."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from openapi_spec_validator.validation import OpenAPIV30SpecValidator, OpenAPIV31SpecValidator

from saga import bedrock_export
from shared.idempotency import ORIGIN_HEADER
from shared.loan_terms import ID_PATTERN
from tests.support import ApiClient, json_of

if TYPE_CHECKING:
    pass

OPERATIONS = ("get", "put", "post", "delete", "patch")


def served(api: ApiClient) -> dict[str, Any]:
    response = api.get("/openapi.json")
    assert response.status == 200
    return dict(json_of(response))


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(p, m, op) for p, item in document["paths"].items() for m, op in item.items() if m in OPERATIONS]


def schemas_anywhere(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [found for item in node for found in schemas_anywhere(item)]
    if not isinstance(node, dict):
        return []
    return [node, *(found for value in node.values() for found in schemas_anywhere(value))]


@pytest.fixture(params=["orchestrator", "loans-api"])
def document(request, orchestrator: ApiClient, loans_api: ApiClient) -> dict[str, Any]:
    return served(orchestrator if request.param == "orchestrator" else loans_api)


def test_the_served_documents_are_valid_openapi_31_worth_generating_tools_from(document):
    validate(document, cls=OpenAPIV31SpecValidator)
    text = json.dumps(document)
    assert "{journey_id}" not in text
    for path, method, operation in operations(document):
        assert operation.get("operationId"), (path, method)
        assert operation.get("description"), (path, method)
        assert {"500"} <= set(operation["responses"]), (path, method)
        assert operation["responses"]["405"]["headers"]["Allow"]
        if method == "post":
            [success] = [r for status, r in operation["responses"].items() if status.startswith("2")]
            assert "Idempotent-Replayed" in success["headers"]
            assert "$ref" in success["content"]["application/json"]["schema"], (path, "success body is typed")
        for parameter in operation.get("parameters", []):
            if parameter["name"].lower() == "idempotency-key":
                assert parameter["schema"]["type"] == "string"
                assert "anyOf" not in parameter["schema"]
    # Every component schema is referenced by something
    referenced = {s["$ref"].rsplit("/", 1)[-1] for s in schemas_anywhere(document) if "$ref" in s}
    assert set(document["components"]["schemas"]) == referenced
    problem = document["components"]["schemas"]["ProblemDetails"]["properties"]
    assert problem["availableActions"]["items"] == {"$ref": "#/components/schemas/ActionView"}


def test_loans_api_replies_document_the_event_they_carry(loans_api):
    document = served(loans_api)
    simulation = document["components"]["schemas"]["SimulationResponse"]
    assert simulation["properties"]["event"] == {
        "$ref": "#/components/schemas/LoanEvent",
        "description": simulation["properties"]["event"]["description"],
    }


@pytest.mark.parametrize("amount", [500, 1234.56, 2500.5, 99999.99, 100000, 0.07 * 10000])
def test_a_standard_validator_accepts_every_valid_amount(orchestrator, amount):
    # Python's jsonschema with binary floats refused 1234.56 under `multipleOf: 0.01`
    schema = served(orchestrator)["components"]["schemas"]["SimulateRequest"]
    Draft202012Validator(schema).validate({"amount": amount, "termMonths": 36})


def test_the_bedrock_export_is_within_bedrocks_openapi_30_subset(orchestrator):
    # Given the served document, exported for a Bedrock Agents action group
    exported = bedrock_export.export(served(orchestrator))
    # Then it is valid OpenAPI 3.0.0, with no 3.1-only constructs left
    assert exported["openapi"] == "3.0.0"
    validate(exported, cls=OpenAPIV30SpecValidator)
    for schema in schemas_anywhere(exported):
        assert {"type": "null"} not in schema.get("anyOf", []) + schema.get("oneOf", [])
        assert not isinstance(schema.get("type"), list)
        assert "const" not in schema
        assert not isinstance(schema.get("examples"), list)
    ops = operations(exported)
    # Every operation is a tool with an id and a description; health is not a tool; no enum on parameters
    assert {op["operationId"] for _, _, op in ops} == {
        "createJourney",
        "listJourneys",
        "getJourney",
        "simulateLoan",
        "acceptSimulation",
        "disburseLoan",
        "cancelJourney",
    }
    for _, _, op in ops:
        assert op["description"]
        assert all("enum" not in parameter["schema"] for parameter in op.get("parameters", []))
    # What cannot be undone (moving money, ending the journey) asks the user first, and nothing else does
    confirmed = {op["operationId"] for _, _, op in ops if op.get("x-requireConfirmation") == "ENABLED"}
    assert confirmed == {"disburseLoan", "cancelJourney"}
    # and no operation asks the model for an Idempotency-Key: the executor derives it
    assert all(parameter["in"] != "header" for _, _, op in ops for parameter in op.get("parameters", []))
    # Nullable fields of the Control Record survive as 3.0 `nullable`
    record = exported["components"]["schemas"]["ControlRecordView"]["properties"]
    assert record["simulation"] == {"allOf": [{"$ref": "#/components/schemas/SimulationSummary"}], "nullable": True}


def test_parameter_enums_move_into_the_description_in_the_bedrock_export():
    document = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/x": {
                "get": {
                    "operationId": "x",
                    "description": "d",
                    "parameters": [
                        {"name": "p", "in": "query", "description": "A mode.", "schema": {"enum": ["a", "b"]}}
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    [parameter] = bedrock_export.export(document)["paths"]["/x"]["get"]["parameters"]
    assert parameter == {"name": "p", "in": "query", "description": "A mode. One of: a, b.", "schema": {}}


def test_every_link_names_an_operation_of_the_document_at_its_path_and_its_body_schema(orchestrator):
    # Given the served document, and the links of one journey in each live state (created, simulated, accepted)
    document = served(orchestrator)
    by_id = {op["operationId"]: (path, method, op) for path, method, op in operations(document)}
    record = json_of(orchestrator.post("/journeys", {"customerId": "c"}, key=str(uuid.uuid4())))
    journey_id = record["journeyId"]
    links = list(record["availableActions"])
    for command in ("simulate", "accept"):
        [link] = [link for link in record["availableActions"] if link["name"] == command]
        record = json_of(orchestrator.post(link["href"], link.get("body", {"amount": 10000, "termMonths": 36})))
        links += record["availableActions"]
    assert {link["name"] for link in links} == {"simulate", "accept", "disburse", "cancel"}
    # Then each link's operationId is the operation its method and href reach, and its body schema resolves
    for link in links:
        path, method, operation = by_id[link["operationId"]]
        assert method == link["method"].lower()
        assert path.replace("{journeyId}", journey_id) == link["href"]
        body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        assert link.get("requestSchema") == (body["$ref"] if body else None)
        # and the exact body it carries (all but simulate's, which the agent chooses) is valid against it
        assert ("body" in link) is (link["name"] != "simulate")


def test_loans_api_documents_the_origin_request_id_it_accepts(loans_api):
    # Given loans-api's served document, Then every write declares the Origin-Request-Id it accepts (an id), so a
    # client generated from it, or a fuzzer, never sends one the 400 origin-request-id-invalid refuses
    document = served(loans_api)
    for path in ("/simulations", "/acceptances", "/disbursements"):
        parameters = document["paths"][path]["post"]["parameters"]
        [origin] = [p for p in parameters if p["name"].lower() == ORIGIN_HEADER.lower()]
        # JSON Schema's `pattern` applies to strings wherever it stands, beside the anyOf of string and null too
        assert origin["schema"]["pattern"] == ID_PATTERN, origin["schema"]
