"""The OpenAPI documents both APIs serve (3.1): the responses every operation declares, the route that
serves the document, and the request bodies it declares. (Their export for Amazon Bedrock Agents is the
CLI's: saga/bedrock_export.py.)"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel, ConfigDict, Field

from shared.idempotency import REPLAYED_HEADER
from shared.problems import PROBLEM_CONTENT_TYPE, ProblemDetails

Document = dict[str, Any]
SCHEMAS = "#/components/schemas/"

_REPLAYED = {
    "description": "`true` when nothing was changed by this call: an earlier request with the same Idempotency-Key "
    "(or a command whose effect already stands) made its effect. The orchestrator answers that request's status "
    "with the journey as it stands now (its `availableActions` are legal now); loans-api its recorded answer.",
    "schema": {"type": "string"},
}
_ALLOW = {"description": "The methods this path answers.", "schema": {"type": "string"}}


class Health(BaseModel):
    # What GET /health answers while the API is up (no docstring: it would become the schema's description).
    # Its validator is built when GET /openapi.json first asks for its schema, not at init.
    model_config = ConfigDict(defer_build=True)
    status: str = Field(description="`ok`.")


def success(description: str, model: Any) -> OpenAPIResponse:
    """An OpenAPI success response: JSON described by `model`."""
    return {"description": description, "content": {"application/json": {"model": model}}}


# Every operation can answer these: bad headers or JSON, wrong method, too large, not JSON, invalid,
# and (it is software) an unexpected error.
COMMON_ERRORS = (400, 405, 413, 415, 422, 500)


def problem_responses(*statuses: int) -> dict[int, OpenAPIResponse]:
    """OpenAPI `responses` entries for the given error statuses, plus the ones every operation has."""
    statuses = tuple(sorted({*statuses, *COMMON_ERRORS}))
    descriptions = {
        400: "Malformed JSON (or nested deeper than 32 levels), or a missing/invalid header. Fix the request.",
        404: "Not found.",
        405: "The path exists, but not for this method (see the Allow header).",
        409: "Not allowed in the current state (`illegal-transition`), or not on what the request names: the quote "
        "or acceptance it names is not the journey's current one (`stale-simulation`, `stale-acceptance`: the "
        "problem carries the current one and `availableActions`), or the journey has had all its quotes "
        "(`quotes-exhausted`). Nothing was done.",
        412: "The journey's ledger moved since the command was decided (Expected-Ledger-Seq); nothing was done.",
        413: "Body larger than 64 KiB.",
        415: "Body sent with a content type other than application/json.",
        422: "Invalid input, or an Idempotency-Key reused with a different body.",
        500: "An unexpected error. `retryable` true: repeating the same request (same Idempotency-Key) is safe; "
        "false: the service found its own state inconsistent, and repeating cannot help: `journey-needs-repair` "
        "when the journey's record claims more than loans-api's ledger holds (nothing was done; an operator must "
        "repair the journey, the detail says how).",
        502: "A dependency rejected the request unexpectedly.",
        503: "A dependency is unavailable; retrying the same request is safe.",
    }
    return {
        status: {
            "description": descriptions[status],
            "content": {PROBLEM_CONTENT_TYPE: {"model": ProblemDetails}},
        }
        for status in statuses
    }


# operationId -> (the model of a body the service validates itself, whether the body is required).
Bodies = Mapping[str, tuple[type[BaseModel], bool]]


def serve_openapi(app: APIGatewayRestResolver, title: str, description: str, bodies: Bodies | None = None) -> None:
    """Serve the app's OpenAPI 3.1 document (`document`) at GET /openapi.json."""

    @app.get("/openapi.json", include_in_schema=False)
    def openapi_document() -> Response[str]:
        body = json.dumps(document(app, title, description, bodies), separators=(",", ":"))
        return Response(status_code=200, content_type="application/json", body=body)


def document(app: APIGatewayRestResolver, title: str, description: str, bodies: Bodies | None = None) -> Document:
    """The app's OpenAPI 3.1 document, completed: the bodies a route validates itself (`bodies`: after
    its state check, so the framework does not see them), response headers declared (Idempotent-Replayed
    on every write's success, Allow on 405) and no schema that nothing references."""
    doc: Document = json.loads(app.get_openapi_json_schema(title=title, version="1.0.0", description=description))
    _declare_bodies(doc, bodies or {})
    for method, operation in operations(doc):
        for status, response in operation.get("responses", {}).items():
            if status == "405":
                response["headers"] = {"Allow": _ALLOW}
            elif method == "post" and status.startswith("2"):
                response["headers"] = {REPLAYED_HEADER: _REPLAYED}
    return without_unused_schemas(doc)


def _declare_bodies(doc: Document, bodies: Bodies) -> None:
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for _, operation in operations(doc):
        declared = bodies.get(operation.get("operationId", ""))
        if declared is None:
            continue
        model, required = declared
        schema = model.model_json_schema(ref_template=SCHEMAS + "{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
        operation["requestBody"] = {
            "required": required,
            "content": {"application/json": {"schema": {"$ref": SCHEMAS + model.__name__}}},
        }


def operations(doc: Document) -> list[tuple[str, dict[str, Any]]]:
    """Every operation of `doc`, with its method."""
    methods = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
    return [(m, op) for item in doc.get("paths", {}).values() for m, op in item.items() if m in methods]


def without_unused_schemas(doc: Document) -> Document:
    """`doc` keeping only the component schemas reachable from its paths."""
    schemas: dict[str, Any] = doc.get("components", {}).get("schemas", {})
    used: set[str] = set()
    frontier = [doc.get("paths", {})]
    while frontier:
        for name in _refs(frontier.pop()):
            if name not in used and name in schemas:
                used.add(name)
                frontier.append(schemas[name])
    if schemas:
        doc["components"]["schemas"] = {name: schema for name, schema in schemas.items() if name in used}
    return doc


def _refs(node: Any) -> list[str]:
    if isinstance(node, list):
        return [ref for item in node for ref in _refs(item)]
    if not isinstance(node, dict):
        return []
    found = [node["$ref"].removeprefix(SCHEMAS)] if isinstance(node.get("$ref"), str) else []
    return found + [ref for value in node.values() for ref in _refs(value)]
