"""`saga mcp`: an MCP server in front of the orchestrator API, so any agent runtime takes the journey's
commands as tools with no glue.

The tools are generated at startup from the orchestrator's own OpenAPI document (saga/openapi_tools.py),
never from a copy of it. Results are the Control Record plus one line of guidance; errors are tool
errors carrying the API's problem document. A write tool that declares an Idempotency-Key takes an
optional `idempotencyKey`; without one the server makes one per tool call and keeps it for its own
transport retries, so a retried call never doubles an effect. Operations without the header (accept,
disburse, cancel) are idempotent by nature: a repeat answers the record with `Idempotent-Replayed`.

Layers: `OrchestratorApi` is the port to the HTTP API (`HttpOrchestratorApi`, urllib3, optionally
SigV4-signed for a deployed stack); `JourneyTools` is what a tool call does (synchronous, no MCP types
but the results); `create_server` maps MCP requests onto it; `build` is the composition root.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import anyio
import mcp_types as types
import urllib3
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from functions.orchestrator.loans_client import HttpRequester, JsonHttpEndpoint, SigV4Signer
from saga.openapi_tools import KEY_ARGUMENT, InvalidArguments, Operation, operations
from shared.idempotency import HEADER as KEY_HEADER
from shared.idempotency import REPLAYED_HEADER
from shared.problems import problem_body

logger = logging.getLogger("saga.mcp")

DOCUMENT_PATH = "/openapi.json"
EXCLUDED_OPERATIONS = ("health",)
GET_OPERATION = "getJourney"
RESOURCE_TEMPLATE = "journey://{journeyId}"
RESOURCE_SCHEME = "journey://"
SERVER_NAME = "loan-saga"

INSTRUCTIONS = """Tools drive a loan journey on the loan-saga orchestrator: createJourney, then simulateLoan,
acceptSimulation, disburseLoan (or cancelJourney). Every result is the journey's Control Record; its first
line says which tools are legal next and with which arguments. Errors are problem documents: when
`retryable` is true, repeat the same call with the same idempotencyKey; on 409, pick one of its
`availableActions`. disburseLoan moves money and cannot be undone: confirm with the user first."""

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
CONFIRM = {"disburseLoan": "Irreversible: it moves money. Confirm with the user before calling it."}


# -- the port to the orchestrator's HTTP API -----------------------------------------------------


@dataclass(frozen=True)
class ApiRequest:
    method: str
    path: str
    body: dict[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ApiReply:
    status: int
    body: Any  # the JSON answer, or the text of one that is not JSON
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def replayed(self) -> bool:
        return str(self.headers.get(REPLAYED_HEADER, self.headers.get(REPLAYED_HEADER.lower(), ""))).lower() == "true"


class ApiUnreachable(Exception):
    """The request may or may not have reached the API (refused, reset, timed out): retry it, with its key."""


class OrchestratorApi(Protocol):
    def send(self, request: ApiRequest) -> ApiReply:
        """One attempt; ApiUnreachable when the transport failed."""
        ...


class HttpOrchestratorApi(JsonHttpEndpoint):
    """OrchestratorApi over HTTP(S) with urllib3: one attempt per call (JourneyTools retries), signed with
    SigV4 (service execute-api) when a signer is given."""

    def send(self, request: ApiRequest) -> ApiReply:
        headers = {"Accept": "application/json", **request.headers}
        if request.body is not None:
            headers["Content-Type"] = "application/json"
        try:
            response = self._request(request.method, request.path, request.body, headers)
        except urllib3.exceptions.HTTPError as error:
            raise ApiUnreachable(f"{type(error).__name__}: {error}") from error
        try:
            payload: Any = json.loads(response.data) if response.data else None
        except ValueError:
            payload = response.data.decode(errors="replace")
        return ApiReply(response.status, payload, dict(response.headers))


# -- what a tool call does -----------------------------------------------------------------------


@dataclass(frozen=True)
class TransportRetry:
    """The server's own retries of a transport failure, each with the same request and key. The API's
    own answers are never retried here: a 503 problem already spent the orchestrator's retry budget,
    and the model decides from its `retryable`."""

    attempts: int = 3
    base_delay_seconds: float = 0.5

    def delays(self) -> list[float]:
        return [self.base_delay_seconds * 2**attempt for attempt in range(self.attempts - 1)]


@dataclass(frozen=True)
class ToolOutcome:
    """A tool call's answer: the JSON document (a Control Record, or a problem), the guidance line."""

    document: dict[str, Any]
    guidance: str
    is_error: bool
    status: int | None = None
    replayed: bool = False
    idempotency_key: str | None = None


def problem(status: int, slug: str, title: str, detail: str, retryable: bool, **extensions: Any) -> dict[str, Any]:
    """A problem document of the same shape (and type URNs) as the APIs' own."""
    return json.loads(problem_body(status, slug, title, detail, retryable, **extensions))  # type: ignore[no-any-return]


class UnreadableDocument(Exception):
    """The orchestrator's OpenAPI document could not be fetched or read."""


def fetch_document(api: OrchestratorApi, retry: TransportRetry, sleep: Callable[[float], None]) -> dict[str, Any]:
    """The orchestrator's OpenAPI document, the source of every tool."""
    delays = retry.delays()
    while True:
        try:
            reply = api.send(ApiRequest("GET", DOCUMENT_PATH))
            break
        except ApiUnreachable as error:
            if not delays:
                raise UnreadableDocument(f"unreachable: {error}") from error
            sleep(delays.pop(0))
    if reply.status != 200 or not isinstance(reply.body, dict) or not isinstance(reply.body.get("paths"), dict):
        raise UnreadableDocument(f"GET {DOCUMENT_PATH} answered {reply.status}: {str(reply.body)[:300]}")
    return reply.body


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
        self._retry = retry or TransportRetry()
        self._new_key = new_key
        self._sleep = sleep
        self.journeys: dict[str, str] = {}  # journeyId -> its last known state, for resources/list

    @property
    def operations(self) -> list[Operation]:
        return list(self._operations.values())

    def tools(self) -> list[types.Tool]:
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
            output_schema=op.output_schema,
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
        delays = self._retry.delays() if retry_safe else []
        while True:
            try:
                return self._api.send(request)
            except ApiUnreachable:
                if not delays:
                    raise
                self._sleep(delays.pop(0))

    def _outcome(self, op: Operation, reply: ApiReply, key: str | None) -> ToolOutcome:
        body = reply.body
        if 200 <= reply.status < 300 and isinstance(body, dict):
            journey_id = body.get("journeyId")
            if isinstance(journey_id, str):
                self.journeys[journey_id] = str(body.get("currentState"))
            lines = [self._record_guidance(body)]
            if reply.replayed:
                lines.insert(0, "replayed: this call had already been made; nothing changed.")
            if key:
                lines.append(f"{KEY_ARGUMENT} used: {key}")
            return ToolOutcome(body, " ".join(lines), False, reply.status, reply.replayed, key)
        document = body if _is_problem(body) else _as_problem(reply)
        return ToolOutcome(document, self._problem_guidance(document, key), True, reply.status, reply.replayed, key)

    def _record_guidance(self, record: Mapping[str, Any]) -> str:
        state = record.get("currentState")
        actions = self.next_actions(record.get("availableActions") or [])
        if not actions:
            return f"journey {record.get('journeyId')} is {state}; no action is legal now (the journey is final)."
        return f"journey {record.get('journeyId')} is {state}; next legal actions: {actions}."

    def _problem_guidance(self, document: Mapping[str, Any], key: str | None) -> str:
        said = f"error {document.get('status')} ({document.get('title')}): {document.get('detail')}"
        if document.get("retryable"):
            again = f" with {KEY_ARGUMENT}={key!r}" if key else ""
            return f"{said}. Retryable: repeat the same call{again}."
        if "availableActions" in document:
            actions = self.next_actions(document.get("availableActions") or [])
            return f"{said}. Not retryable; legal now: {actions or 'nothing (the journey is final)'}."
        return f"{said}. Not retryable: change the input or take another action."

    def next_actions(self, available: Iterable[Any]) -> str:
        """`availableActions` as tool calls: `accept -> acceptSimulation(journey_id='...')`."""
        described = []
        for action in available:
            if not isinstance(action, Mapping):
                continue
            op, arguments = self._operation_for(action)
            name = action.get("name") or action.get("operationId")
            if op is None:
                described.append(f"{name} ({action.get('method')} {action.get('href')})")
                continue
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


def _is_problem(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("status"), int) and "title" in body


def _as_problem(reply: ApiReply) -> dict[str, Any]:
    """An answer that is not a problem document (API Gateway's own errors: 403 on a bad signature, 429
    when throttled, 504 when the function timed out), as one."""
    body = reply.body
    detail = body.get("message") if isinstance(body, dict) else None
    retryable = reply.status in (429, 502, 503, 504)
    return problem(
        reply.status,
        "gateway",
        f"The API answered {reply.status}",
        str(detail or body or "no body")[:500],
        retryable,
    )


# -- the MCP server ------------------------------------------------------------------------------


def _text(outcome: ToolOutcome) -> list[types.TextContent]:
    return [
        types.TextContent(type="text", text=outcome.guidance),
        types.TextContent(type="text", text=json.dumps(outcome.document, indent=2)),
    ]


def create_server(tools: JourneyTools) -> Server[Any]:
    """The MCP server: tools from the document, journeys as resources. Tool calls run in a worker thread
    (the HTTP port is synchronous); a failure inside one is answered as a problem, never a traceback."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.tools())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            outcome = await anyio.to_thread.run_sync(tools.call, params.name, params.arguments or {})
        except Exception as error:  # a bug here must still reach the model as a problem
            logger.exception("tool %s failed", params.name)
            document = problem(500, "mcp-server", "saga mcp failed", f"{type(error).__name__}: {error}", False)
            outcome = ToolOutcome(document, "error: the MCP server failed on this call (see its log)", True, 500)
        meta: dict[str, Any] = {"httpStatus": outcome.status, "idempotentReplayed": outcome.replayed}
        if outcome.idempotency_key:
            meta[KEY_ARGUMENT] = outcome.idempotency_key
        return types.CallToolResult(
            content=list(_text(outcome)),
            structured_content=outcome.document,
            is_error=outcome.is_error,
            _meta=meta,
        )

    async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=RESOURCE_SCHEME + journey_id,
                    name=f"journey {journey_id}",
                    description=f"Control Record of journey {journey_id} ({state} when this server last saw it)",
                    mime_type="application/json",
                )
                for journey_id, state in tools.journeys.items()
            ]
        )

    async def list_templates(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            uri_template=RESOURCE_TEMPLATE,
            name="journey",
            description="A journey's Control Record (currentState, availableActions), re-read without a tool call.",
            mime_type="application/json",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        journey_id = uri.removeprefix(RESOURCE_SCHEME)
        if not uri.startswith(RESOURCE_SCHEME) or not journey_id or "/" in journey_id:
            raise MCPError(types.INVALID_PARAMS, f"not a journey resource: {uri} (expected {RESOURCE_TEMPLATE})")
        outcome = await anyio.to_thread.run_sync(tools.read_journey, journey_id)
        if outcome.is_error:
            code = types.INVALID_PARAMS if outcome.status == 404 else types.INTERNAL_ERROR  # -32002 is retired
            raise MCPError(code, outcome.guidance, data=outcome.document)
        text = json.dumps(outcome.document, indent=2)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
        )

    return Server(
        SERVER_NAME,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


# -- composition root and transports -------------------------------------------------------------


def build(api_url: str, region: str | None = None, signed: bool = False) -> JourneyTools:
    """JourneyTools for the orchestrator at `api_url`, its tools from the document it serves now;
    `signed`: every request signed with SigV4 from the standard AWS credential chain."""
    signer = None
    if signed:
        import boto3

        signer = SigV4Signer(boto3.session.Session().get_credentials, region or "us-east-1")
    pool = cast(HttpRequester, urllib3.PoolManager(retries=False))
    # The orchestrator answers within its function's timeout (28 s) and API Gateway's 29 s.
    api = HttpOrchestratorApi(api_url, pool, urllib3.Timeout(connect=3.0, read=35.0), signer)
    retry = TransportRetry()
    return JourneyTools(api, fetch_document(api, retry, time.sleep), retry)


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve_http(server: Server[Any], port: int, host: str = "127.0.0.1") -> None:
    """Streamable HTTP at http://HOST:PORT/mcp (loopback: with DNS-rebinding protection)."""
    import uvicorn

    app = server.streamable_http_app(host=host)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def log_to_stderr() -> None:
    """stdout is the protocol's (stdio): every log line goes to stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("saga mcp: %(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
