"""A pydantic-ai agent over `saga mcp`, as docs/AGENTS.md sets it up: `MCPToolset` on the stdio server,
`tool_error_behavior="failed"` so a tool error reaches the model without spending its retry budget, and a
scripted `FunctionModel` (no LLM) that decides each call from what pydantic-ai hands it, which is the
result's `structuredContent` and nothing else. Against `saga local`: a 409 recovered through the
problem's `availableActions`, two retryable 503s in a row (every loans-api reply lost) repeated with the
key the first one named, and a whole journey with one quote."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import pytest
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from saga.links import link, link_body
from saga.openapi_tools import KEY_ARGUMENT
from tests.system import LOANS_PROXY, PATIENCE

pytestmark = pytest.mark.slow

TERMS = {"amount": 10000, "termMonths": 36}


def toolset(api_url: str) -> MCPToolset[None]:
    """`saga mcp` over stdio, as docs/AGENTS.md configures it."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "AWS_ENDPOINT_URL"))}
    server = StdioTransport(sys.executable, ["-m", "saga.cli", "mcp", "--api-url", api_url], env=environment)
    return MCPToolset(server, init_timeout=PATIENCE, tool_error_behavior="failed")


def last_result(messages: list[ModelMessage]) -> Any:
    """What the model was handed for its last tool call (pydantic-ai gives it the structured content;
    a failed call's arrives as its JSON text)."""
    request = messages[-1]
    assert isinstance(request, ModelRequest)
    content: Any = getattr(request.parts[-1], "content", None)
    while isinstance(content, str) or (isinstance(content, dict) and set(content) == {"error"}):
        content = json.loads(content) if isinstance(content, str) else content["error"]
    return content


class ScriptedModel:
    """A model that reads each result and picks the next call: follow the links, repeat a retryable error
    with the key the result names, take a legal action after a 409. `faults` breaks and heals the network
    between its turns (the world moves while the model thinks)."""

    def __init__(self, faults: Any) -> None:
        self.faults = faults
        self.seen: list[Any] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return self.call("createJourney", {"customerId": "c-pydantic-ai"})
        result = last_result(messages)
        self.seen.append(result)
        if "problem" in result:
            return self.recover(result)
        record = result["record"]
        journey = {"journeyId": record["journeyId"]}
        if record["currentState"] == "created" and not any(name == "disburseLoan" for name, _ in self.calls):
            return self.call("disburseLoan", journey)  # too early: a 409 it must recover from
        if record["currentState"] == "simulated":
            return self.call("acceptSimulation", {**journey, **(link_body(record, "accept") or {})})
        if record["currentState"] == "accepted":
            return self.call("disburseLoan", {**journey, **(link_body(record, "disburse") or {})})
        if record["currentState"] == "disbursed":
            return ModelResponse(parts=[TextPart(f"journey {record['journeyId']} disbursed")])
        raise AssertionError(f"the script has no step for {result}")

    def recover(self, result: dict[str, Any]) -> ModelResponse:
        problem, (name, arguments) = result["problem"], self.calls[-1]
        if result["retryable"]:
            repeats = sum(1 for called, _ in self.calls if called == name)
            self.faults(repeats)
            return self.call(name, {**arguments, KEY_ARGUMENT: result[KEY_ARGUMENT]})
        legal = link(problem, "simulate")
        assert problem["status"] == 409, problem
        assert legal is not None, problem
        self.faults(0)
        return self.call("simulateLoan", {"journeyId": arguments["journeyId"], **TERMS})

    def call(self, name: str, arguments: dict[str, Any]) -> ModelResponse:
        self.calls.append((name, arguments))
        return ModelResponse(parts=[ToolCallPart(name, arguments)])


def test_a_pydantic_ai_agent_recovers_from_a_409_and_two_lost_replies_and_finishes_with_one_quote(system, clean_proxy):
    # Given saga local, and a network that loses every loans-api reply from the first simulate until the
    # agent has seen two 503s
    def faults(repeats: int) -> None:
        if repeats == 0:
            clean_proxy.add_toxic(LOANS_PROXY, "limit_data", stream="downstream", bytes=0)
        if repeats == 2:
            clean_proxy.reset()

    model = ScriptedModel(faults)
    agent = Agent(FunctionModel(model), toolsets=[toolset(system.api_url)])

    # When the agent runs
    async def run() -> Any:
        with anyio.fail_after(240):
            return await agent.run("Get customer c-pydantic-ai a loan of 10000 over 36 months and pay it out.")

    output = anyio.run(run).output
    # Then it finished the journey
    journey = model.seen[0]["record"]["journeyId"]
    assert output == f"journey {journey} disbursed"
    # having recovered from the 409 through the problem's availableActions, which it was handed
    refused = model.seen[1]
    assert (refused["problem"]["status"], refused["retryable"]) == (409, False)
    assert "simulateLoan(" in refused["guidance"]
    # and from two 503s in a row, repeating the simulate with the key the server minted and named
    simulates = [arguments for name, arguments in model.calls if name == "simulateLoan"]
    unanswered = [result for result in model.seen if result.get("httpStatus") == 503]
    assert len(unanswered) == 2
    assert all(result["retryable"] for result in unanswered)
    key = unanswered[0][KEY_ARGUMENT]
    assert [arguments.get(KEY_ARGUMENT) for arguments in simulates] == [None, key, key]
    # so loans-api holds exactly one quote, and one disbursement
    truth = system.truth(journey)
    assert len(truth["simulations"]) == 1
    assert truth["disbursement"] is not None
