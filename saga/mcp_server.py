"""`saga mcp`: an MCP server in front of the orchestrator API, so any agent runtime takes the journey's
commands as tools with no glue.

The tools are generated at startup from the orchestrator's own OpenAPI document (saga/openapi_tools.py),
never from a copy of it. A result is one JSON object (`structuredContent`, described by the tool's
output schema; its text blocks are the guidance line and the same object serialized): the guidance,
the Control Record (`record`) or, for a tool error, the API's problem document (`problem`) and whether
repeating is safe (`retryable`), and the `idempotencyKey` the call used. A write tool that declares an
Idempotency-Key takes an optional `idempotencyKey`; without one the server makes one per tool call and
keeps it for its own transport retries, so a retried call never doubles an effect. Operations without the
header (accept, disburse, cancel) are idempotent by nature: a repeat answers the record with `Idempotent-Replayed`.

Layers: `OrchestratorApi` is the port to the HTTP API (`HttpOrchestratorApi`, urllib3, optionally
SigV4-signed for a deployed stack; saga/orchestrator_api.py); `JourneyTools` is what a tool call does
(synchronous, no MCP types but the results; saga/journey_tools.py); `create_server` here maps MCP
requests onto it; `build` is the composition root.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, cast

import anyio
import mcp_types as types
import urllib3
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from saga.journey_tools import JourneyTools, ToolOutcome, problem
from saga.openapi_tools import KEY_ARGUMENT
from saga.orchestrator_api import HttpOrchestratorApi, TransportRetry, wait_for_document
from saga.version import version
from shared.loans_client import HttpRequester, SigV4Signer

logger = logging.getLogger("saga.mcp")

RESOURCE_TEMPLATE = "journey://{journeyId}"
RESOURCE_SCHEME = "journey://"
SERVER_NAME = "loan-saga"

INSTRUCTIONS = """Tools drive a loan journey on the loan-saga orchestrator: createJourney, then simulateLoan,
acceptSimulation, disburseLoan (or cancelJourney). Every result is one object: `guidance` says which tools
are legal next and with which arguments, `record` is the journey's Control Record, `idempotencyKey` the key
the call used. Errors carry the API's problem document (`problem`) and `retryable`: when it is true, repeat
the same call with the same `idempotencyKey`; on 409, pick one of the problem's `availableActions`.
disburseLoan moves money and cannot be undone: confirm with the user first."""


def _text(structured: dict[str, Any]) -> list[types.TextContent]:
    """The guidance line first, then the structured content serialized (as the spec asks, for clients
    that read only text)."""
    return [
        types.TextContent(type="text", text=structured["guidance"]),
        types.TextContent(type="text", text=json.dumps(structured, indent=2)),
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
        structured = outcome.structured()
        return types.CallToolResult(
            content=list(_text(structured)),
            structured_content=structured,
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
        version=version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


def build(api_url: str, region: str | None = None, signed: bool = False, wait_seconds: float = 0.0) -> JourneyTools:
    """JourneyTools for the orchestrator at `api_url`, its tools from the document it serves; while it
    does not answer (not up yet), waiting up to `wait_seconds`, saying so on stderr once. `signed`: every
    request signed with SigV4 from the standard AWS credential chain."""
    signer = None
    if signed:
        import boto3

        signer = SigV4Signer(boto3.session.Session().get_credentials, region or "us-east-1")
    pool = cast(HttpRequester, urllib3.PoolManager(retries=False))
    # The orchestrator answers within its function's timeout (26 s) and API Gateway's 29 s.
    api = HttpOrchestratorApi(api_url, pool, urllib3.Timeout(connect=3.0, read=35.0), signer)
    retry = TransportRetry()
    document = wait_for_document(
        api, retry, wait_seconds, time.sleep, time.monotonic, lambda why: _waiting(api_url, wait_seconds, why)
    )
    return JourneyTools(api, document, retry)


def _waiting(api_url: str, wait_seconds: float, why: str) -> None:
    said = f"saga mcp: the orchestrator at {api_url} is not up yet ({why}); waiting up to {wait_seconds:g} s"
    print(said, file=sys.stderr)


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
