"""`saga mcp` as an agent runtime starts it: a subprocess speaking MCP over stdio, driven by the `mcp`
SDK's own client. Against `saga local`: the tools match the OpenAPI document, a whole journey, a 409 as
a tool error with availableActions, a replayed write that doubles nothing, a journey as a resource;
and the same over streamable HTTP.
Against a "deployed stack" without an AWS account: the URL comes from the stack's outputs (a local
CloudFormation endpoint) and every request reaches the API signed with SigV4 for execute-api."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client

from saga.links import link_body
from saga.openapi_tools import KEY_ARGUMENT
from tests.e2e.fake_aws import REGION, FakeAws
from tests.support import PROCESS_PATIENCE
from tests.system import PATIENCE, free_port

pytestmark = pytest.mark.slow

TERMS = {"amount": 10000, "termMonths": 36}


@contextlib.asynccontextmanager
async def mcp_session(*args: str, env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """`saga mcp ARGS` over stdio, initialized; its stderr goes to a file, shown if the server fails."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "AWS_ENDPOINT_URL"))}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "saga.cli", "mcp", *args], env={**environment, **(env or {})}
    )
    with tempfile.TemporaryFile("w+") as errors:
        try:
            async with stdio_client(params, errlog=errors) as (read, write), ClientSession(read, write) as session:
                with anyio.fail_after(PATIENCE):
                    await session.initialize()
                yield session
        except BaseException:
            errors.seek(0)
            print(f"saga mcp stderr:\n{errors.read()[-3000:]}", file=sys.stderr)
            raise


def path_parameter(document: dict[str, Any], operation_id: str) -> str:
    """The name the document gives the operation's (one) path parameter."""
    for item in document["paths"].values():
        for spec in item.values():
            if isinstance(spec, dict) and spec.get("operationId") == operation_id:
                (name,) = [p["name"] for p in spec.get("parameters", []) if p["in"] == "path"]
                return str(name)
    raise AssertionError(f"no operation {operation_id}")


def assert_tools_match(document: dict[str, Any], tools: dict[str, Any]) -> None:
    """Each operation but health is a tool whose input schema is its parameters and JSON body."""
    schemas = document["components"]["schemas"]
    operations = {
        spec["operationId"]: spec
        for item in document["paths"].values()
        for spec in item.values()
        if isinstance(spec, dict) and spec.get("operationId")
    }
    assert set(tools) == set(operations) - {"health"}
    for operation_id, tool in tools.items():
        spec, properties = operations[operation_id], tool.input_schema["properties"]
        assert spec["summary"] in tool.description
        expected = set()
        for parameter in spec.get("parameters", []):
            if parameter["in"] == "header" and parameter["name"].lower() == "idempotency-key":
                expected.add(KEY_ARGUMENT)
                continue
            expected.add(parameter["name"])
            # everything the document says of the parameter (the tool may add its description)
            assert properties[parameter["name"]].items() >= parameter["schema"].items(), parameter["name"]
            if parameter["in"] == "path":
                assert parameter["name"] in tool.input_schema["required"]
        body = spec.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if body is not None:
            body = schemas[body["$ref"].rsplit("/", 1)[1]] if "$ref" in body else body
            for name, schema in body["properties"].items():
                expected.add(name)
                assert properties[name] == schema, (operation_id, name)
            assert set(body.get("required", [])) <= set(tool.input_schema["required"])
        assert set(properties) == expected, operation_id


def test_an_agent_drives_a_whole_journey_through_saga_mcp(system):
    # Given `saga local`, its OpenAPI document, and `saga mcp` pointed at it
    status, document, _ = system.call("GET", f"{system.api_url}/openapi.json")
    assert status == 200, document
    journey_arg = path_parameter(document, "getJourney")
    seen: dict[str, Any] = {}

    async def agent() -> None:
        async with mcp_session("--api-url", system.api_url) as session:
            # When the agent lists the tools
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            seen["tools"] = tools
            # and walks a journey, reading each result's guidance
            created = await session.call_tool("createJourney", {"customerId": "c-mcp"})
            journey = created.structured_content["record"]["journeyId"]
            seen["journey"], seen["created"] = journey, created
            seen["refused"] = await session.call_tool("disburseLoan", {journey_arg: journey})
            terms = {journey_arg: journey, **TERMS, KEY_ARGUMENT: f"mcp-e2e-{journey}"}
            seen["simulated"] = await session.call_tool("simulateLoan", terms)
            seen["replayed"] = await session.call_tool("simulateLoan", terms)
            # (accept and disburse name what the last result showed: the link's body, as the guidance spells it)
            quote = link_body(seen["simulated"].structured_content["record"], "accept") or {}
            seen["accepted"] = await session.call_tool("acceptSimulation", {journey_arg: journey, **quote})
            payout = link_body(seen["accepted"].structured_content["record"], "disburse") or {}
            seen["disbursed"] = await session.call_tool("disburseLoan", {journey_arg: journey, **payout})
            seen["disbursed again"] = await session.call_tool("disburseLoan", {journey_arg: journey, **payout})
            seen["cancelled late"] = await session.call_tool("cancelJourney", {journey_arg: journey})
            seen["templates"] = (await session.list_resource_templates()).resource_templates
            seen["resources"] = (await session.list_resources()).resources
            seen["resource"] = await session.read_resource(f"journey://{journey}")

    anyio.run(agent)

    # Then the tools are the document's operations, with its schemas, and disburse asks for care
    assert_tools_match(document, seen["tools"])
    assert seen["tools"]["disburseLoan"].annotations.destructive_hint is True
    journey = seen["journey"]
    # and each step answers the Control Record with a line naming the legal next tools
    for step, state in (("created", "created"), ("simulated", "simulated"), ("accepted", "accepted")):
        result = seen[step]
        assert not result.is_error, result.content[0].text
        assert result.structured_content["record"]["currentState"] == state
        assert "next legal actions:" in result.content[0].text
    simulation_id = seen["simulated"].structured_content["record"]["simulation"]["simulationId"]
    assert (
        f"acceptSimulation({journey_arg}={journey!r}, simulationId={simulation_id!r})"
        in seen["simulated"].content[0].text
    )
    assert seen["disbursed"].structured_content["record"]["currentState"] == "disbursed"
    assert "no action is legal now" in seen["disbursed"].content[0].text
    # a command the state refuses is a tool error carrying the problem and what is legal instead
    refused = seen["refused"]
    assert refused.is_error
    assert refused.structured_content["problem"]["status"] == 409
    legal = {action["name"] for action in refused.structured_content["problem"]["availableActions"]}
    assert legal == {"simulate", "cancel"}
    assert refused.structured_content["retryable"] is False
    cancelled_late = seen["cancelled late"]
    assert cancelled_late.is_error
    assert cancelled_late.structured_content["problem"]["status"] == 409
    assert cancelled_late.structured_content["problem"]["availableActions"] == []
    # a write repeated with the same idempotencyKey is replayed and doubles nothing
    assert seen["replayed"].meta["idempotentReplayed"] is True
    assert seen["simulated"].meta["idempotentReplayed"] is False
    assert seen["replayed"].structured_content["record"] == seen["simulated"].structured_content["record"]
    assert seen["disbursed again"].meta["idempotentReplayed"] is True
    truth = system.truth(journey)
    assert len(truth["simulations"]) == 1
    assert truth["disbursement"] is not None
    # and the journey is a resource the client can re-read without a tool call
    assert [template.uri_template for template in seen["templates"]] == ["journey://{journeyId}"]
    assert f"journey://{journey}" in [resource.uri for resource in seen["resources"]]
    assert json.loads(seen["resource"].contents[0].text)["currentState"] == "disbursed"


# -- a deployed stack, without an AWS account ----------------------------------------------------


@pytest.fixture
def fake_aws():
    server = FakeAws()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_for_a_stack_every_request_is_signed_for_execute_api_in_the_stacks_region(fake_aws):
    # Given a "stack" whose outputs name an orchestrator that refuses any request not signed with SigV4
    # (service execute-api, this region, the credentials in the environment)
    env = {"AWS_ENDPOINT_URL_CLOUDFORMATION": fake_aws.url, "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION}
    seen: dict[str, Any] = {}

    async def agent() -> None:
        # When `saga mcp --stack` starts and an agent creates and reads a journey
        async with mcp_session("--stack", "LoanSagaTest", "--region", REGION, env=env) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            (journey_arg,) = tools["getJourney"].input_schema["required"]
            created = await session.call_tool("createJourney", {"customerId": "c-signed"})
            seen["created"] = created
            journey = created.structured_content["record"]["journeyId"]
            seen["read"] = await session.call_tool("getJourney", {journey_arg: journey})

    anyio.run(agent)

    # Then the URL came from the stack's outputs, and the document and both calls were answered
    assert fake_aws.describe_stacks == 1
    assert not seen["created"].is_error, seen["created"].content[0].text
    assert seen["read"].structured_content["record"]["currentState"] == "created"
    # because every request reached the API signed, scoped to execute-api in the stack's region
    assert [request["path"].split("/")[-1] for request in fake_aws.api_requests][:2] == ["openapi.json", "journeys"]
    assert len(fake_aws.api_requests) == 3
    for request in fake_aws.api_requests:
        assert request["scope"] is not None, request
        assert (request["scope"]["service"], request["scope"]["region"]) == ("execute-api", REGION)


def test_saga_mcp_over_streamable_http_on_loopback_serves_the_tools_and_creates_a_journey(system):
    # Given `saga mcp --http PORT` in front of saga local
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("POWERTOOLS_")}
    command = [sys.executable, "-m", "saga.cli", "mcp", "--api-url", system.api_url, "--http", str(port)]
    with tempfile.TemporaryFile("w+") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)
        try:
            wait_for_port(port, server)

            async def agent() -> Any:
                # When a client connects over HTTP and creates a journey
                async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                    names = [tool.name for tool in (await client.list_tools()).tools]
                    return names, await client.call_tool("createJourney", {"customerId": "c-http"})

            names, created = anyio.run(agent)
        finally:
            server.terminate()
            server.wait(timeout=PROCESS_PATIENCE)  # a hang guard: a busy machine is slow to end a process
            log.seek(0)
            output = log.read()
    # Then it gets the same tools and the Control Record
    assert "createJourney" in names, output
    assert created.structured_content["record"]["currentState"] == "created", output


def test_saga_mcp_waits_a_bounded_time_for_an_orchestrator_that_is_not_up_and_says_so():
    # Given no orchestrator at the URL
    url = f"http://127.0.0.1:{free_port()}"
    command = [sys.executable, "-m", "saga.cli", "mcp", "--api-url", url, "--wait", "2"]
    # When `saga mcp` starts with a 2 s wait
    done = subprocess.run(command, capture_output=True, text=True, timeout=PROCESS_PATIENCE, check=False)
    # Then it said on stderr that it waits, then gave up with an error naming the URL (stdout stays clean)
    assert f"the orchestrator at {url} is not up yet" in done.stderr
    assert "waiting up to 2 s" in done.stderr
    assert "cannot read the orchestrator's API" in done.stderr
    assert (done.returncode, done.stdout) == (2, "")


def wait_for_port(port: int, process: subprocess.Popen[Any], timeout: float = PATIENCE) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "saga mcp --http exited"
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port} after {timeout} s")
