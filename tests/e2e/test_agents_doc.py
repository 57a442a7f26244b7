"""docs/AGENTS.md stays true: each Python snippet marked `# tested: NAME` runs as written against `saga
local`, with `API_URL` its URL and `MODEL` a scripted pydantic-ai model (no LLM), and `saga` on PATH as an
installed checkout has it."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

pytestmark = pytest.mark.slow

DOC = Path(__file__).resolve().parents[2] / "docs" / "AGENTS.md"
_SNIPPET = re.compile(r"```python\n# tested: (?P<name>[\w-]+)\n(?P<code>.*?)```", re.DOTALL)


def snippets() -> dict[str, str]:
    return {match["name"]: match["code"] for match in _SNIPPET.finditer(DOC.read_text())}


def test_the_doc_marks_the_snippets_this_test_runs():
    assert set(snippets()) == {"mcp-sdk", "pydantic-ai"}


@pytest.fixture
def saga_on_path(monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def create_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that creates a journey, then says what the result's guidance said."""
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("createJourney", {"customerId": "c-42"})])
    result: Any = getattr(messages[-1].parts[-1], "content", None)
    return ModelResponse(parts=[TextPart(result["guidance"])])


@pytest.mark.parametrize("name", ["mcp-sdk", "pydantic-ai"])
def test_each_snippet_runs_as_written_and_creates_a_journey(name, system, saga_on_path, capfd):
    # Given the snippet, as the doc has it
    code = snippets()[name]
    # When it runs against saga local
    exec(
        compile(code, f"{DOC}:{name}", "exec"), {"API_URL": system.api_url, "MODEL": FunctionModel(create_then_answer)}
    )
    # Then it printed the guidance of a journey it created
    printed = capfd.readouterr().out
    assert re.search(r"journey \S+ is created; next legal actions: simulate -> simulateLoan\(", printed), printed
