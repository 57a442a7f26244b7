"""docs/AGENTS.md runs as printed: each snippet marked `# tested: NAME` runs as written against `saga local`
(with `API_URL` its URL and `MODEL` a scripted pydantic-ai model: no LLM), and its printed output is what
the page says; the MCP configuration `make mcp-config` prints starts the server from another folder with
no venv on the PATH. Nothing puts `saga` on the PATH: a fresh clone's user has not activated the venv."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import anyio
import boto3
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.support import PROCESS_PATIENCE

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "AGENTS.md"
_SNIPPET = re.compile(r"```python\n# tested: (?P<name>[\w-]+)\n(?P<code>.*?)```", re.DOTALL)
_BLOCK = re.compile(r"```(?P<kind>\w+)\n(?P<body>.*?)```", re.DOTALL)


def snippets() -> dict[str, str]:
    return {match["name"]: match["code"] for match in _SNIPPET.finditer(DOC.read_text())}


def test_every_python_snippet_on_the_page_is_one_this_test_runs():
    python_blocks = [m["body"] for m in _BLOCK.finditer(DOC.read_text()) if m["kind"] == "python"]
    assert len(python_blocks) == len(snippets()), "a python block is not marked `# tested: NAME`"
    assert set(snippets()) == {"links", "mcp-sdk", "pydantic-ai", "pydantic-ai-errors", "bedrock-turn"}


@pytest.fixture
def no_venv_on_path(monkeypatch):
    """The PATH of a user who has not activated the venv."""
    kept = [p for p in os.environ.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT))]
    monkeypatch.setenv("PATH", os.pathsep.join(kept))
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)


def run(name: str, namespace: dict[str, Any]) -> dict[str, Any]:
    exec(compile(snippets()[name], f"{DOC}:{name}", "exec"), namespace)
    return namespace


def create_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that creates a journey, then says what the result's guidance said."""
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("createJourney", {"customerId": "c-42"})])
    result: Any = getattr(messages[-1].parts[-1], "content", None)
    return ModelResponse(parts=[TextPart(result["guidance"])])


def create_then_disburse(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that creates a journey, asks to disburse it at once (a 409), then stops."""
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("createJourney", {"customerId": "c-42"})])
    result: Any = getattr(messages[-1].parts[-1], "content", None)
    if isinstance(result, dict) and "record" in result:
        return ModelResponse(parts=[ToolCallPart("disburseLoan", {"journeyId": result["record"]["journeyId"]})])
    return ModelResponse(parts=[TextPart("not yet: the journey has no accepted quote")])


def test_the_links_snippet_builds_simulates_body_from_the_schema_and_sends_accepts_as_given(system, capfd):
    run("links", {"API_URL": system.api_url})
    printed = capfd.readouterr().out.splitlines()
    assert printed[0] == "simulate carries a body: False | its schema requires: ['amount', 'termMonths']", printed
    assert re.fullmatch(r"simulated \| accept's body: \{'simulationId': '[0-9a-f-]{36}'\}", printed[1]), printed


def test_the_mcp_sdk_snippet_creates_a_journey_and_finds_it_again(system, no_venv_on_path, capfd):
    run("mcp-sdk", {"API_URL": system.api_url})
    created, found = capfd.readouterr().out.splitlines()[-2:]
    journey = re.match(r"journey (\S+) is created; next legal actions: simulate -> simulateLoan\(", created)
    assert journey, created
    assert found.startswith(f"1 journey(s), newest first: journey {journey[1]} is created"), found


def test_the_pydantic_ai_snippet_creates_a_journey(system, no_venv_on_path, capfd):
    run("pydantic-ai", {"API_URL": system.api_url, "MODEL": FunctionModel(create_then_answer)})
    printed = capfd.readouterr().out
    assert re.search(r"journey \S+ is created; next legal actions: simulate -> simulateLoan\(", printed), printed


def test_the_pydantic_ai_error_snippet_prints_what_the_page_shows(system, no_venv_on_path, capfd):
    # Given the pydantic-ai snippet's agent, with a model that disburses too early
    namespace = run("pydantic-ai", {"API_URL": system.api_url, "MODEL": FunctionModel(create_then_disburse)})
    capfd.readouterr()
    # When the error snippet runs, continuing it
    run("pydantic-ai-errors", namespace)
    printed = capfd.readouterr().out.splitlines()
    # Then it prints what the page says it prints (but for ids and the guidance's tail)
    shown = DOC.read_text().split("# tested: pydantic-ai-errors", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert printed == shown.splitlines(), f"printed {printed}, the page shows {shown.splitlines()}"


def test_the_mcp_configuration_make_prints_starts_the_server_from_anywhere_without_the_venv(
    system, no_venv_on_path, tmp_path
):
    # Given the configuration `make mcp-config` prints, and the page's copy of it for a checkout elsewhere
    printed = subprocess.run(["make", "-s", "mcp-config", f"MCP_ARGS=--api-url {system.api_url}"], cwd=ROOT,
                             capture_output=True, text=True, check=True, timeout=PROCESS_PATIENCE).stdout  # fmt: skip
    server = json.loads(printed)["mcpServers"]["loan-saga"]
    default = subprocess.run(["make", "-s", "mcp-config"], cwd=ROOT, capture_output=True, text=True, check=True,
                             timeout=PROCESS_PATIENCE).stdout  # fmt: skip
    page = DOC.read_text().split("make mcp-config\n```", 1)[1].split("```json\n", 1)[1].split("```", 1)[0]
    assert default.replace(str(ROOT), "/home/you/loan-saga") == page, f"make prints {default}, the page {page}"
    # When an MCP client starts it as configured, from another folder
    assert Path(server["command"]).is_absolute(), server

    async def session() -> str:
        parameters = StdioServerParameters(command=server["command"], args=server["args"], cwd=str(tmp_path))
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            result = await client.call_tool("createJourney", {"customerId": "c-config"})
            return str(result.structured_content["guidance"])

    # Then it serves the tools
    assert "is created" in anyio.run(session)


def test_the_bedrock_snippet_is_a_valid_invoke_agent_call_with_a_fresh_turn_each_time(monkeypatch, capfd):
    # Given a default session whose InvokeAgent calls are answered here, after botocore validated them
    # against its model of the API (a before-call handler's answer replaces the request: no AWS account)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    boto3.setup_default_session()
    sent: list[dict[str, Any]] = []

    def answer(params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
        sent.append(params)
        return _Ok(), {"completion": [{"chunk": {"bytes": b"Paid out."}}], "contentType": "text", "sessionId": "s"}

    boto3.DEFAULT_SESSION.events.register("before-call.bedrock-agent-runtime.InvokeAgent", answer)
    namespace = {"AGENT_ID": "AGENT12345", "ALIAS_ID": "TSTALIASID", "SESSION_ID": "session-1", "USER_ID": "u-42"}
    # When the snippet runs twice (two turns)
    run("bedrock-turn", dict(namespace))
    run("bedrock-turn", dict(namespace))
    # Then each call was valid, carried a turnId, a new one each turn, and the answer was printed
    bodies = [json.loads(params["body"]) for params in sent]
    turns = [body["sessionState"]["promptSessionAttributes"]["turnId"] for body in bodies]
    assert len(set(turns)) == 2, turns
    # and named its end user, the scope of its keys and journeys (functions/orchestrator/bedrock.py)
    assert [body["sessionState"]["sessionAttributes"] for body in bodies] == [{"userId": "u-42"}] * 2, bodies
    assert [p["url_path"] for p in sent] == ["/agents/AGENT12345/agentAliases/TSTALIASID/sessions/session-1/text"] * 2
    assert capfd.readouterr().out == "Paid out.\nPaid out.\n"


class _Ok:
    status_code = 200
    headers: dict[str, str] = {}
