"""Attacks on `saga mcp`: waiting for an orchestrator that is not up yet, and results that
must conform to each tool's declared outputSchema (MCP: "Servers MUST provide structured results that
conform to this schema"; the mcp SDK's client validates them and raises when they do not)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from saga.journey_tools import JourneyTools
from saga.orchestrator_api import ApiReply, ApiUnreachable, TransportRetry, UnreadableDocument, wait_for_document
from tests.fakes import FakeOrchestratorApi, InProcessOrchestrator
from tests.unit.test_mcp_server import document_of


class StartingGateway:
    """A deployed stack while it starts: API Gateway answers `status` (its own JSON error) before the
    function serves the document."""

    def __init__(self, document: dict[str, Any], status: int, times: int) -> None:
        self.document, self.status, self.left = document, status, times

    def send(self, request: Any) -> ApiReply:
        if self.left > 0:
            self.left -= 1
            return ApiReply(self.status, {"message": "Service Unavailable"})
        return ApiReply(200, self.document)


@pytest.mark.parametrize("status", [502, 503, 504])
def test_saga_mcp_waits_through_a_gateways_not_ready_answers(status):
    # Given an orchestrator whose gateway answers `status` twice while it starts, then the document
    document = document_of(InProcessOrchestrator())
    api = StartingGateway(document, status, times=2)
    clock: list[float] = [0.0]
    told: list[str] = []

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    # When saga mcp waits up to 30 s for it
    got = wait_for_document(api, TransportRetry(), 30.0, sleep, lambda: clock[0], told.append)
    # Then it waited (saying so once) and has the document, as for a refused connection
    assert got == document
    assert len(told) == 1


CALL = {"createJourney": {"customerId": "c-1"}, "getJourney": {"journeyId": "j1"}}
ANSWERS = {
    # a body with a status and a title, but not the API's problem document (a proxy's, another service's)
    "a-409-that-is-only-status-and-title": ApiReply(409, {"title": "Conflict", "status": 409}),
    # a 2xx whose body is not a Control Record (a proxy's, an older orchestrator's)
    "a-200-that-is-not-a-record": ApiReply(200, {"message": "ok"}),
}


@pytest.mark.parametrize("answer", list(ANSWERS))
@pytest.mark.parametrize("tool", list(CALL))
def test_every_result_conforms_to_the_tools_output_schema(tool, answer):
    # Given the tools over an orchestrator that answers something the document does not describe
    api = FakeOrchestratorApi(document_of(InProcessOrchestrator()), default=ANSWERS[answer])
    tools = JourneyTools(api, api.document, sleep=lambda seconds: None)
    schema = next(t for t in tools.tools() if t.name == tool).output_schema
    # When the tool is called
    result = tools.call(tool, CALL[tool]).structured()
    # Then the result still conforms to the declared output schema (a client validating it does not fail)
    jsonschema.validate(result, schema)


class Refusing:
    """An orchestrator that never comes up: every connection is refused."""

    def send(self, request: Any) -> ApiReply:
        raise ApiUnreachable("connection refused")


def test_saga_mcp_wait_nan_is_still_bounded():
    # Given `saga mcp --wait nan` (argparse's float() takes it) and an orchestrator that never comes up
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) > 1000:  # this test's own bound: without it, the wait never ends
            raise TimeoutError("still waiting after 1000 pauses")

    # When saga mcp waits for it, Then it gives up (as for --wait 0) instead of waiting forever
    with pytest.raises(UnreadableDocument):
        wait_for_document(Refusing(), TransportRetry(), float("nan"), sleep, lambda: sum(slept), lambda why: None)
