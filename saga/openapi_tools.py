"""Tools from an OpenAPI document: one per operation, with the operation's own description and an input
schema made of its parameters and its JSON body, `$ref`s resolved. Pure: no I/O, so the MCP server
(saga/mcp_server.py) derives everything from the document the orchestrator serves, and a renamed
parameter or a new body field reaches the model without a change here."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

# The argument a write tool takes for the operation's Idempotency-Key header (header names are
# case-insensitive; the document spells it as the API framework does).
KEY_HEADER = "idempotency-key"
KEY_ARGUMENT = "idempotencyKey"
_METHODS = ("get", "put", "post", "delete", "patch")
_PATH_PARAMETER = re.compile(r"\{([^}/]+)\}")


class InvalidArguments(ValueError):
    """The tool call's arguments cannot make a request (a path parameter missing, an unknown name)."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        super().__init__("; ".join(f"{error['field']}: {error['message']}" for error in errors))
        self.errors = errors


@dataclass(frozen=True)
class HttpCall:
    """What one tool call sends: the path with its parameters filled in, the JSON body, the headers
    (without the Idempotency-Key, which the caller adds: it owns the key across retries)."""

    method: str
    path: str
    body: dict[str, Any] | None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Operation:
    """One operation of the document, as a tool."""

    operation_id: str
    method: str  # upper case
    path: str  # the template, e.g. /journeys/{journey_id}/simulate
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    path_parameters: tuple[str, ...]
    query_parameters: tuple[str, ...]
    header_parameters: tuple[str, ...]  # besides the Idempotency-Key
    body_properties: tuple[str, ...]
    has_body: bool
    takes_key: bool  # the operation declares an Idempotency-Key header

    def request(self, arguments: Mapping[str, Any]) -> HttpCall:
        """The HTTP call for these tool arguments. Values are checked only as far as building the URL
        needs; the API validates the rest and answers a problem document."""
        known = {*self.path_parameters, *self.query_parameters, *self.header_parameters, *self.body_properties}
        if self.takes_key:
            known.add(KEY_ARGUMENT)
        errors = [{"field": name, "message": "unknown argument"} for name in arguments if name not in known]
        path = self.path
        for name in self.path_parameters:
            value = arguments.get(name)
            if not isinstance(value, str) or not value:
                errors.append({"field": name, "message": "required: a non-empty string"})
                continue
            if not _spelled_in_utf8(value):
                errors.append({"field": name, "message": _NOT_UNICODE})
                continue
            path = path.replace("{" + name + "}", quote(value, safe=""))
        errors += [
            {"field": name, "message": _NOT_UNICODE}
            for name in (*self.query_parameters, *self.header_parameters)
            if not _spelled_in_utf8(str(arguments.get(name, "")))
        ]
        if self.takes_key and not isinstance(arguments.get(KEY_ARGUMENT, ""), str):
            errors.append({"field": KEY_ARGUMENT, "message": "must be a string"})
        if errors:
            raise InvalidArguments(errors)
        query = "&".join(
            f"{quote(name, safe='')}={quote(str(arguments[name]), safe='')}"
            for name in self.query_parameters
            if arguments.get(name) is not None
        )
        headers = {name: str(arguments[name]) for name in self.header_parameters if arguments.get(name) is not None}
        body = {name: arguments[name] for name in self.body_properties if name in arguments} if self.has_body else None
        return HttpCall(self.method, path + (f"?{query}" if query else ""), body, headers)

    def path_arguments(self, href: str) -> dict[str, str] | None:
        """The path parameters `href` fills in, if it is a path of this operation; else None."""
        pattern = "^" + _PATH_PARAMETER.sub(lambda m: f"(?P<{_group(m.group(1))}>[^/]+)", _escape_path(self.path))
        match = re.match(pattern + "$", href.split("?", maxsplit=1)[0])
        if match is None:
            return None
        return {name: match.group(_group(name)) for name in self.path_parameters}


# A JSON string may hold a lone surrogate ("\ud800"), which no URL or header can carry (UTF-8 has no
# spelling for it): the argument is refused in words, not by the encoder's exception.
_NOT_UNICODE = "must be valid Unicode text (it holds a lone surrogate, which UTF-8 cannot spell)"


def _spelled_in_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _group(name: str) -> str:
    """A regex group name for a parameter name (which may hold characters a group name may not)."""
    return "p" + "".join(ch if ch.isalnum() else f"_{ord(ch)}_" for ch in name)


def _escape_path(path: str) -> str:
    """re.escape, but leaving the {parameter} placeholders intact for the substitution."""
    return "".join(part if part.startswith("{") else re.escape(part) for part in re.split(r"(\{[^}/]+\})", path))


def resolve(schema: Any, document: Mapping[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """`schema` with every local `$ref` replaced by what it points to (siblings of a `$ref` kept, as
    OpenAPI 3.1 allows). A cycle is left as an open object: tool schemas must be self-contained."""
    if isinstance(schema, list):
        return [resolve(item, document, seen) for item in schema]
    if not isinstance(schema, dict):
        return schema
    reference = schema.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/"):
        if reference in seen:
            return {"type": "object"}
        target: Any = document
        for part in reference[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        resolved = resolve(target, document, (*seen, reference))
        siblings = {key: resolve(value, document, seen) for key, value in schema.items() if key != "$ref"}
        return {**resolved, **siblings}
    return {key: resolve(value, document, seen) for key, value in schema.items()}


def operations(document: Mapping[str, Any], exclude: Iterable[str] = ()) -> list[Operation]:
    """Every operation of the document with an operationId, but those in `exclude`, in document order."""
    excluded = set(exclude)
    found = []
    for path, item in document.get("paths", {}).items():
        shared_parameters = item.get("parameters", [])
        for method in _METHODS:
            spec = item.get(method)
            if not isinstance(spec, dict) or not spec.get("operationId") or spec["operationId"] in excluded:
                continue
            found.append(_operation(document, path, method, spec, [*shared_parameters, *spec.get("parameters", [])]))
    return found


def _operation(
    document: Mapping[str, Any], path: str, method: str, spec: Mapping[str, Any], raw_parameters: list[Any]
) -> Operation:
    properties: dict[str, Any] = {}
    required: list[str] = []
    kinds: dict[str, list[str]] = {"path": [], "query": [], "header": []}
    takes_key = False
    for parameter in (resolve(p, document) for p in raw_parameters):
        where, name = parameter.get("in"), parameter.get("name", "")
        if where == "header" and name.lower() == KEY_HEADER:
            takes_key = True
            properties[KEY_ARGUMENT] = _optional(_described(parameter))
            continue
        if where not in kinds:
            continue  # cookies: not something a tool sets
        kinds[where].append(name)
        properties[name] = _described(parameter) if where == "path" else _optional(_described(parameter))
        if parameter.get("required") or where == "path":
            required.append(name)
    request_body = resolve(spec.get("requestBody", {}), document)
    body_schema = _json_schema(request_body)
    body_properties: tuple[str, ...] = ()
    if body_schema is not None:
        body_properties = tuple(body_schema.get("properties", {}))
        clashes = set(body_properties) & set(properties)
        if clashes:
            raise ValueError(f"{spec['operationId']}: body fields {sorted(clashes)} clash with its parameters")
        properties.update(body_schema.get("properties", {}))
        if request_body.get("required"):
            required.extend(body_schema.get("required", []))
    input_schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        input_schema["required"] = required
    return Operation(
        operation_id=spec["operationId"],
        method=method.upper(),
        path=path,
        title=spec.get("summary") or spec["operationId"],
        description="\n\n".join(part for part in (spec.get("summary"), spec.get("description")) if part),
        input_schema=input_schema,
        output_schema=_success_schema(document, spec),
        path_parameters=tuple(kinds["path"]),
        query_parameters=tuple(kinds["query"]),
        header_parameters=tuple(kinds["header"]),
        body_properties=body_properties,
        has_body=body_schema is not None,
        takes_key=takes_key,
    )


def _json_schema(content_holder: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON body schema of a request body or response whose `$ref`s are resolved."""
    schema = content_holder.get("content", {}).get("application/json", {}).get("schema")
    return schema if isinstance(schema, dict) else None


def _success_schema(document: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON schema of the operation's 2xx answer, when it is an object (an MCP output schema must be)."""
    for status, response in sorted(spec.get("responses", {}).items()):
        if str(status).startswith("2"):
            schema = _json_schema(resolve(response, document))
            if schema is not None and schema.get("type") == "object":
                return schema
    return None


def problem_schema(document: Mapping[str, Any]) -> dict[str, Any]:
    """The schema of the document's problem documents (the first `application/problem+json` response),
    open to extension members (RFC 9457 allows them); any object when it declares none."""
    specs = (spec for item in document.get("paths", {}).values() for spec in item.values() if isinstance(spec, dict))
    for spec in specs:
        for response in spec.get("responses", {}).values():
            content = resolve(response, document).get("content", {}).get("application/problem+json", {})
            if isinstance(content.get("schema"), dict):
                return {key: value for key, value in content["schema"].items() if key != "additionalProperties"}
    return {"type": "object"}


def _described(parameter: Mapping[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = copy.deepcopy(parameter.get("schema", {}))
    if parameter.get("description") and "description" not in schema:
        schema["description"] = parameter["description"]
    return schema


def _optional(schema: dict[str, Any]) -> dict[str, Any]:
    """An optional argument's schema without the `null` alternative a framework adds for `X | None`:
    leaving the argument out says the same, and models handle one type better than a union."""
    alternatives = schema.get("anyOf")
    if isinstance(alternatives, list):
        kept = [alternative for alternative in alternatives if alternative != {"type": "null"}]
        if len(kept) == 1:
            rest = {key: value for key, value in schema.items() if key != "anyOf"}
            return {**kept[0], **rest}
    return schema
