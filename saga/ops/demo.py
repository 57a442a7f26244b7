"""The scripted agent of `saga demo`, and the OpenAPI documents it (and `saga openapi`) reads."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from saga import bedrock_export
from saga.ops.target import Http, Target, Unreachable


def openapi_document(target: Target, api: str = "orchestrator", fmt: str = "openapi") -> dict[str, Any]:
    """The OpenAPI document `api` serves (3.1), or with fmt "bedrock" its export for an Amazon Bedrock
    Agents action group (3.0.0; saga/bedrock_export.py says what changes)."""
    base = target.api_url if api == "orchestrator" else target.loans_api_url
    status_code, document = Http(target).call("GET", f"{base}/openapi.json")
    if status_code != 200 or not isinstance(document, dict):
        raise Unreachable(f"{api} answered {status_code} for /openapi.json: {str(document)[:300]}")
    return bedrock_export.export(document) if fmt == "bedrock" else document


def example_body(document: dict[str, Any], reference: str, choose: dict[str, Any] | None = None) -> dict[str, Any]:
    """A body for the schema at `reference` ("#/components/schemas/X") in `document`: each required
    property from `choose` when given, else the schema's first example, else its minimum."""
    schema: Any = document
    for part in reference.removeprefix("#/").split("/"):
        schema = schema[part]
    body = {}
    for name in schema.get("required", []):
        prop = schema["properties"][name]
        if choose and name in choose:
            body[name] = choose[name]
        elif prop.get("examples"):
            body[name] = prop["examples"][0]
        else:
            body[name] = prop.get("minimum", "x")
    return body


def follow_links(
    target: Target,
    plan: list[tuple[str, dict[str, Any] | None]],
    say: Callable[[str], None],
    customer: str = "demo-customer",
) -> dict[str, Any]:
    """A generic agent: knows only `POST /journeys` and the OpenAPI document. It calls the link whose
    `operationId` the plan names, building the body from the link's `requestSchema` (the plan may
    choose values), until the plan ends or the journey no longer offers the next operation."""
    http = Http(target)
    document = openapi_document(target)
    key = {"Idempotency-Key": str(uuid.uuid4())}
    status_code, record = http.call("POST", f"{target.api_url}/journeys", {"customerId": customer}, key)
    if status_code != 201:
        raise Unreachable(f"createJourney answered {status_code}: {str(record)[:300]}")
    say(f"POST /journeys -> {status_code}: journey {record['journeyId']} is {record['currentState']}")
    for operation_id, choose in plan:
        link = next((a for a in record["availableActions"] if a["operationId"] == operation_id), None)
        if link is None:
            offered = [a["operationId"] for a in record["availableActions"]]
            say(f"'{operation_id}' is not offered now; available: {offered}")
            break
        # A link that carries its exact body (accept names the quote, disburse the acceptance) is followed as it
        # is; simulate's body is built from its schema.
        if "body" in link:
            body = link["body"]
        else:
            body = example_body(document, link["requestSchema"], choose) if "requestSchema" in link else None
        status_code, record = http.call(link["method"], target.api_url + link["href"], body)
        if status_code >= 400:
            raise Unreachable(f"{operation_id} answered {status_code}: {str(record)[:300]}")
        detail = ""
        if record.get("simulation"):
            s = record["simulation"]
            detail = f" ({s['amount']} over {s['termMonths']} months at {s['annualRate']}: {s['monthlyPayment']}/month)"
        say(f"{link['method']} {link['href']} -> {status_code}: {record['currentState']} v{record['version']}{detail}")
    say(f"next: {[a['operationId'] for a in record['availableActions']] or 'nothing (terminal)'}")
    return dict(record)


def demo(target: Target, say: Callable[[str], None]) -> dict[str, Any]:
    """A scripted agent walks a journey using only the links in availableActions and the OpenAPI
    document: it quotes twice (the schema's example amount, then one it chooses), accepts, disburses."""
    plan: list[tuple[str, dict[str, Any] | None]] = [
        ("simulateLoan", None),
        ("simulateLoan", {"amount": 8000, "termMonths": 24}),
        ("acceptSimulation", None),
        ("disburseLoan", None),
    ]
    return follow_links(target, plan, say)
