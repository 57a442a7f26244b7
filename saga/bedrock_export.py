"""`saga openapi --format bedrock`: the orchestrator's OpenAPI document (3.1, shared/openapi.py) exported
for an Amazon Bedrock Agents action group (3.0.0, the subset Bedrock documents). Pure: a document in, a
document out."""

from __future__ import annotations

import copy
from typing import Any

from shared.idempotency import HEADER as KEY_HEADER
from shared.openapi import Document, operations, without_unused_schemas

# Operations that cannot be undone (disburse moves money, cancel ends the journey): an agent platform
# should ask its user before calling them.
CONFIRM_BEFORE = frozenset({"disburseLoan", "cancelJourney"})
# Operations that are not tools: an agent has no reason to call them.
NOT_TOOLS = frozenset({"health"})


def export(doc: Document) -> Document:
    """`doc` as Amazon Bedrock Agents accept an action group's schema: OpenAPI 3.0.0 with no 3.1-only
    construct (`anyOf` with `type: null` becomes `nullable`, `examples` becomes `example`, `const`
    becomes a one-value `enum`), no `enum` on parameters (it moves into the description), no
    operation that is not a tool (health), `x-requireConfirmation: ENABLED` on what cannot be undone,
    and no Idempotency-Key header: the action-group executor derives each action's key from what
    Bedrock sends (functions/orchestrator/bedrock.py), so the model never has to invent one."""
    out = copy.deepcopy(doc)
    out["openapi"] = "3.0.0"
    for key in ("jsonSchemaDialect", "webhooks"):
        out.pop(key, None)
    paths: dict[str, Any] = {}
    for path, item in out.get("paths", {}).items():
        kept = {m: op for m, op in item.items() if not (isinstance(op, dict) and op.get("operationId") in NOT_TOOLS)}
        if kept:
            paths[path] = kept
    out["paths"] = paths
    for _, operation in operations(out):
        operation["parameters"] = [
            parameter
            for parameter in operation.get("parameters", [])
            if not (parameter.get("in") == "header" and str(parameter.get("name", "")).lower() == KEY_HEADER.lower())
        ]
        if not operation["parameters"]:
            del operation["parameters"]
        for parameter in operation.get("parameters", []):
            schema = parameter.get("schema", {})
            if "enum" in schema:
                allowed = ", ".join(map(str, schema.pop("enum")))
                parameter["description"] = f"{parameter.get('description', '')} One of: {allowed}.".strip()
        if operation.get("operationId") in CONFIRM_BEFORE:
            operation["x-requireConfirmation"] = "ENABLED"
    return without_unused_schemas(_to_30(out))


def _to_30(node: Any) -> Any:
    """Rewrite 3.1 JSON Schema constructs into their 3.0 spelling, everywhere in the document."""
    if isinstance(node, list):
        return [_to_30(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _to_30(value) for key, value in node.items()}
    for combinator in ("anyOf", "oneOf"):
        options = node.get(combinator)
        if isinstance(options, list) and {"type": "null"} in options:
            rest = [option for option in options if option != {"type": "null"}]
            node.pop(combinator)
            single = rest[0] if len(rest) == 1 else {combinator: rest}
            # A $ref cannot have siblings in 3.0: wrap it so `nullable` applies.
            node.update({"allOf": [single]} if "$ref" in single else single)
            node["nullable"] = True
    if isinstance(node.get("type"), list):
        types = [t for t in node["type"] if t != "null"]
        if len(types) < len(node["type"]):
            node["nullable"] = True
        node["type"] = types[0]
    if isinstance(node.get("examples"), list):
        examples = node.pop("examples")
        if examples:
            node["example"] = examples[0]
    if "const" in node and not isinstance(node["const"], dict):
        node["enum"] = [node.pop("const")]
    return node
