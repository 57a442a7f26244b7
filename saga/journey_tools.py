"""What an MCP tool call does, without MCP's transport: the orchestrator's operations as tools (from
its OpenAPI document, saga/openapi_tools.py), a call's request and key, and its answer: the Control
Record plus one line of guidance, or a problem document. Synchronous; `saga.mcp_server` serves it.

Every result's structured content (`ToolOutcome.structured`, the tool's output schema `result_schema`)
holds all the text says: the guidance line, the record or the problem, whether repeating is safe, and the
key the call used. A client that hands the model only `structuredContent` (pydantic-ai) and one that
hands it only the text read the same answer."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
import mcp_types as types

from saga.openapi_tools import KEY_ARGUMENT, InvalidArguments, Operation, operations, problem_schema
from saga.orchestrator_api import ApiReply, ApiRequest, ApiUnreachable, OrchestratorApi, TransportRetry
from shared.idempotency import HEADER as KEY_HEADER
from shared.problems import problem_body

EXCLUDED_OPERATIONS = ("health",)
GET_OPERATION = "getJourney"
LIST_OPERATION = "listJourneys"

# What the document cannot say: how a call changes the world (MCP tool annotations, hints a client
# uses to decide what needs a human's confirmation). Read-only is derived from GET for any operation.
_CLOSED_WORLD = {"open_world_hint": False}
ANNOTATIONS: dict[str, dict[str, Any]] = {
    "createJourney": {"destructive_hint": False, "idempotent_hint": False},
    # Supersedes the current quote and cancels an acceptance in the same step.
    "simulateLoan": {"destructive_hint": True, "idempotent_hint": False},
    "acceptSimulation": {"destructive_hint": False, "idempotent_hint": True},
    # Moves money, once per journey, ever: a client should ask before calling it.
    "disburseLoan": {"destructive_hint": True, "idempotent_hint": True},
    "cancelJourney": {"destructive_hint": True, "idempotent_hint": True},
}
# What a tool's `record` holds when it is not one journey's Control Record.
_MEANING = {
    LIST_OPERATION: ("On success: a page of the customer's journeys (`journeys`, newest first; `nextCursor` when "
                     "older ones follow).",),
}  # fmt: skip
CONFIRM = {"disburseLoan": "Irreversible: it moves money. Confirm with the user before calling it."}


@dataclass(frozen=True)
class ToolOutcome:
    """A tool call's answer: the JSON document (a Control Record, or a problem), the guidance line."""

    document: dict[str, Any]
    guidance: str
    is_error: bool
    status: int | None = None
    replayed: bool = False
    idempotency_key: str | None = None

    def structured(self) -> dict[str, Any]:
        """The result as one JSON object (a tool's `structuredContent`, conforming to `result_schema`)."""
        content: dict[str, Any] = {"guidance": self.guidance, "idempotentReplayed": self.replayed}
        if self.status is not None:
            content["httpStatus"] = self.status
        if self.is_error:
            content["problem"] = self.document
            content["retryable"] = self.document.get("retryable") is True
        else:
            content["record"] = self.document
        if self.idempotency_key:
            content[KEY_ARGUMENT] = self.idempotency_key
        return content


def result_schema(
    record: Mapping[str, Any] | None,
    problem_document: Mapping[str, Any],
    meaning: str = "On success: the journey's Control Record.",
) -> dict[str, Any]:
    """The output schema of a tool whose success answers `record` (a JSON schema; any object if None):
    `ToolOutcome.structured`, a record on success and a problem on error, both with the guidance.
    `meaning` describes what `record` holds (listJourneys: a page of journeys)."""
    return {
        "type": "object",
        "properties": {
            "guidance": {
                "type": "string",
                "description": "What this result means and what to call next, with the arguments to send.",
            },
            "record": {
                **(record or {"type": "object"}),
                "description": meaning,
            },
            "problem": {**problem_document, "description": "On error: the RFC 9457 problem document."},
            "retryable": {
                "type": "boolean",
                "description": "On error: true when repeating the same call (same idempotencyKey) is safe and may "
                "succeed; false when it cannot, and the input or the action must change.",
            },
            KEY_ARGUMENT: {
                "type": "string",
                "description": "The Idempotency-Key this call used: pass it again to repeat the call safely.",
            },
            "idempotentReplayed": {
                "type": "boolean",
                "description": "True when this answer is an earlier call's: nothing changed.",
            },
            "httpStatus": {"type": "integer", "description": "The API's HTTP status."},
        },
        "required": ["guidance", "idempotentReplayed"],
    }


def problem(status: int, slug: str, title: str, detail: str, retryable: bool, **extensions: Any) -> dict[str, Any]:
    """A problem document of the same shape (and type URNs) as the APIs' own."""
    return json.loads(problem_body(status, slug, title, detail, retryable, **extensions))  # type: ignore[no-any-return]


class JourneyTools:
    """The orchestrator's operations as tools: list them, call one, read a journey."""

    def __init__(
        self,
        api: OrchestratorApi,
        document: Mapping[str, Any],
        retry: TransportRetry | None = None,
        new_key: Callable[[], str] = lambda: f"mcp-{uuid.uuid4()}",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._api = api
        self._operations = {op.operation_id: op for op in operations(document, exclude=EXCLUDED_OPERATIONS)}
        self._problem_schema = problem_schema(document)
        self._retry = retry or TransportRetry()
        self._new_key = new_key
        self._sleep = sleep
        self.journeys: dict[str, str] = {}  # journeyId -> its last known state, for resources/list

    @property
    def operations(self) -> list[Operation]:
        """The operations served as tools (every one of the document's but `health`)."""
        return list(self._operations.values())

    def tools(self) -> list[types.Tool]:
        """The MCP tool of each operation, with its schemas, hints and guidance."""
        return [self._tool(op) for op in self._operations.values()]

    def _tool(self, op: Operation) -> types.Tool:
        hints: dict[str, Any] = {"read_only_hint": True} if op.method == "GET" else ANNOTATIONS.get(op.operation_id, {})
        description = op.description
        if op.operation_id in CONFIRM:
            description = f"{CONFIRM[op.operation_id]}\n\n{description}"
        if op.takes_key:
            description += (
                f"\n\nOptional `{KEY_ARGUMENT}`: repeat a call with the same value and it changes nothing; "
                "without one, this server makes one per call (its result names it)."
            )
        return types.Tool(
            name=op.operation_id,
            title=op.title,
            description=description,
            input_schema=op.input_schema,
            output_schema=result_schema(op.output_schema, self._problem_schema, *_MEANING.get(op.operation_id, ())),
            annotations=types.ToolAnnotations(title=op.title, **{**_CLOSED_WORLD, **hints}),
        )

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Call one tool; every failure is an outcome with a problem document, never an exception."""
        op = self._operations.get(name)
        if op is None:
            known = ", ".join(self._operations)
            document = problem(404, "unknown-tool", "Unknown tool", f"no tool {name!r}; the tools: {known}", False)
            return ToolOutcome(document, f"error: no tool {name!r}; call one of: {known}", True, 404)
        try:
            call = op.request(arguments)
        except InvalidArguments as error:
            document = problem(
                422, "invalid-arguments", "Invalid tool arguments", str(error), False, errors=error.errors
            )
            return ToolOutcome(document, f"error (not retryable): fix the arguments: {error}", True, 422)
        key = None
        headers = dict(call.headers)
        if op.takes_key:
            key = str(arguments.get(KEY_ARGUMENT) or self._new_key())
            headers[KEY_HEADER] = key
        request = ApiRequest(call.method, call.path, call.body, headers)
        try:
            reply = self._send(request, retry_safe=op.method == "GET" or op.takes_key or self._idempotent(op))
        except ApiUnreachable as error:
            again = f"repeat the same call with {KEY_ARGUMENT}={key!r}" if key else "repeat the same call"
            extensions = {KEY_ARGUMENT: key} if key else {}
            document = problem(
                503,
                "orchestrator-unreachable",
                "The orchestrator did not answer",
                f"{error} (after {self._retry.attempts} attempts; the call may or may not have taken effect)",
                True,
                **extensions,
            )
            return ToolOutcome(document, f"error (retryable): no answer; {again}: it is safe", True, 503, False, key)
        return self._outcome(op, reply, key)

    def read_journey(self, journey_id: str) -> ToolOutcome:
        """The journey's Control Record, as the get operation answers it."""
        op = self._operations.get(GET_OPERATION)
        if op is None or len(op.path_parameters) != 1:
            document = problem(501, "no-get-operation", "Cannot read journeys", "the API has no getJourney", False)
            return ToolOutcome(document, "error: the API document has no getJourney operation", True, 501)
        return self.call(GET_OPERATION, {op.path_parameters[0]: journey_id})

    def _idempotent(self, op: Operation) -> bool:
        return bool(ANNOTATIONS.get(op.operation_id, {}).get("idempotent_hint"))

    def _send(self, request: ApiRequest, retry_safe: bool) -> ApiReply:
        return self._retry.send(self._api, request, self._sleep) if retry_safe else self._api.send(request)

    def _outcome(self, op: Operation, reply: ApiReply, key: str | None) -> ToolOutcome:
        body = reply.body
        # What is passed on must be what the tool's output schema says (a client validates it): a 2xx that
        # is not the operation's record, or an error that is not a problem document, becomes a problem.
        if 200 <= reply.status < 300 and _conforms(body, op.output_schema):
            listed = body.get("journeys")
            records = listed if isinstance(listed, list) else [body]
            for record in records:
                if isinstance(record, Mapping) and isinstance(record.get("journeyId"), str):
                    self.journeys[record["journeyId"]] = str(record.get("currentState"))
            lines = [self._list_guidance(body) if isinstance(listed, list) else self._record_guidance(body)]
            if reply.replayed:
                lines.insert(0, "replayed: this call had already been made; nothing changed.")
            if key:
                lines.append(f"{KEY_ARGUMENT} used: {key}")
            return ToolOutcome(body, " ".join(lines), False, reply.status, reply.replayed, key)
        document = body if _conforms(body, self._problem_schema) else _as_problem(reply)
        return ToolOutcome(document, self._problem_guidance(document, key), True, reply.status, reply.replayed, key)

    def _record_guidance(self, record: Mapping[str, Any]) -> str:
        state = record.get("currentState")
        actions = self.next_actions(record.get("availableActions") or [])
        if not actions:
            return f"journey {record.get('journeyId')} is {state}; no action is legal now (the journey is final)."
        return f"journey {record.get('journeyId')} is {state}; next legal actions: {actions}."

    def _list_guidance(self, page: Mapping[str, Any]) -> str:
        """A page of listJourneys: each journey's state and next actions, newest first, and how to page on."""
        records = [record for record in page.get("journeys") or [] if isinstance(record, Mapping)]
        if not records:
            said = "no journeys found for this customer (only journeys you created are listed)."
        else:
            said = f"{len(records)} journey(s), newest first: " + " | ".join(
                self._record_guidance(record) for record in records
            )
        if page.get("nextCursor"):
            said += f" Older journeys follow: call listJourneys again with cursor={page['nextCursor']!r}."
        return said

    def _problem_guidance(self, document: Mapping[str, Any], key: str | None) -> str:
        said = f"error {document.get('status')} ({document.get('title')}): {document.get('detail')}"
        if document.get("retryable"):
            again = f" with {KEY_ARGUMENT}={key!r}" if key else ""
            return f"{said}. Retryable: repeat the same call{again}."
        if "availableActions" in document:
            actions = self.next_actions(document.get("availableActions") or [])
            return f"{said}. Not retryable; legal now: {actions or 'nothing (the journey is final)'}."
        if str(document.get("type", "")).endswith(":journey-needs-repair"):
            # No command on this journey can be decided, a repeat or another one, until an operator repairs it.
            return (
                f"{said}. Not retryable, and no other call on this journey helps now: stop, report it to an operator."
            )
        if (
            int(document.get("status") or 0) >= 500
        ):  # the system's fault (a journey to repair is answered above): not the input's
            return f"{said}. Not retryable: no call will succeed until an operator acts on the detail; tell the user."
        return f"{said}. Not retryable: change the input or take another action."

    def next_actions(self, available: Iterable[Any]) -> str:
        """`availableActions` as tool calls, with the exact body a link carries as arguments:
        `accept -> acceptSimulation(journeyId='...', simulationId='...')`."""
        described = []
        for action in available:
            if not isinstance(action, Mapping):
                continue
            op, arguments = self._operation_for(action)
            name = action.get("name") or action.get("operationId")
            if op is None:
                described.append(f"{name} ({action.get('method')} {action.get('href')})")
                continue
            body = action.get("body")
            if isinstance(body, Mapping):
                arguments = {**arguments, **{k: v for k, v in body.items() if k in op.body_properties}}
            spelled = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
            described.append(f"{name} -> {op.operation_id}({spelled})")
        return "; ".join(described)

    def _operation_for(self, action: Mapping[str, Any]) -> tuple[Operation | None, dict[str, str]]:
        """The operation a link points to: by its operationId when it names one, else by method and href."""
        href = str(action.get("href", ""))
        candidates = [self._operations[action["operationId"]]] if action.get("operationId") in self._operations else []
        candidates += [op for op in self._operations.values() if op.method == str(action.get("method", "")).upper()]
        for op in candidates:
            arguments = op.path_arguments(href)
            if arguments is not None:
                return op, arguments
        return None, {}


def _conforms(body: Any, schema: Mapping[str, Any] | None) -> bool:
    """Is `body` a JSON object valid against `schema` (any object when there is none)?"""
    if not isinstance(body, dict):
        return False
    return schema is None or jsonschema.Draft202012Validator(schema).is_valid(body)


def _as_problem(reply: ApiReply) -> dict[str, Any]:
    """An answer that is not a problem document (API Gateway's own errors: 403 on a bad signature, 429
    when throttled, 504 when the function timed out), as one."""
    body = reply.body
    detail = body.get("message") if isinstance(body, dict) else None
    # A 2xx that is not what the operation answers is not a success to act on: the call may have taken
    # effect, so it is as retryable as the gateway errors (keys make repeats safe).
    retryable = reply.status in (429, 502, 503, 504) or 200 <= reply.status < 300
    return problem(
        reply.status,
        "gateway",
        f"The API answered {reply.status}",
        str(detail or body or "no body")[:500],
        retryable,
    )
