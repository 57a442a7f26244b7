"""`saga mcp` without sockets: the tools the real orchestrator app's document makes, what a tool call
sends and answers, and the server's own retries, with the real HTTP adapter over an in-process wire
that can lose a reply after the command committed. Every parameter name comes from the document."""

from __future__ import annotations

import importlib.metadata
import json
from typing import Any

import anyio
import jsonschema
import pytest
import urllib3
from mcp import Client

from saga.journey_tools import JourneyTools
from saga.mcp_server import create_server
from saga.openapi_tools import KEY_ARGUMENT
from saga.orchestrator_api import (
    ApiReply,
    ApiUnreachable,
    HttpOrchestratorApi,
    TransportRetry,
    UnreadableDocument,
    fetch_document,
    wait_for_document,
)
from saga.version import PACKAGE
from tests.fakes import FakeOrchestratorApi, InProcessOrchestrator
from tests.support import AGENT_OPERATIONS

TERMS = {"amount": 10000, "termMonths": 36}


def tools_over(orchestrator: InProcessOrchestrator, sleeps: list[float] | None = None) -> JourneyTools:
    api = HttpOrchestratorApi("http://orchestrator.invalid", orchestrator, urllib3.Timeout(connect=1, read=5))
    recorded = [] if sleeps is None else sleeps
    return JourneyTools(api, fetch_document(api, TransportRetry(), recorded.append), sleep=recorded.append)


def journey_argument(tools: JourneyTools) -> str:
    """The path parameter that names the journey, as the document spells it."""
    (name,) = next(op for op in tools.operations if op.operation_id == "getJourney").path_parameters
    return name


def create(tools: JourneyTools) -> str:
    outcome = tools.call("createJourney", {"customerId": "c-1"})
    assert not outcome.is_error, outcome.guidance
    return str(outcome.document["journeyId"])


def document_of(orchestrator: InProcessOrchestrator) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(orchestrator.wire.request("GET", "http://o.invalid/openapi.json").data)
    return document


def operation_in(document: dict[str, Any], operation_id: str) -> tuple[str, dict[str, Any]]:
    """(path, operation) of the operation with this id."""
    return next(
        (path, spec)
        for path, item in document["paths"].items()
        for spec in item.values()
        if isinstance(spec, dict) and spec.get("operationId") == operation_id
    )


def test_the_tools_are_the_documents_operations_but_health():
    # Given the orchestrator's own app
    tools = tools_over(InProcessOrchestrator())
    # When the tools are listed
    listed = {tool.name: tool for tool in tools.tools()}
    # Then there is one per operation but health, and only the GET is read-only; disburse asks for care
    assert set(listed) == AGENT_OPERATIONS
    read, disburse = listed["getJourney"].annotations, listed["disburseLoan"].annotations
    assert read is not None
    assert disburse is not None
    assert read.read_only_hint is True
    assert (disburse.read_only_hint, disburse.destructive_hint, disburse.idempotent_hint) == (None, True, True)
    assert "Confirm with the user" in str(listed["disburseLoan"].description)
    # and only the operations that declare an Idempotency-Key take an idempotencyKey
    takes_key = {name for name, tool in listed.items() if KEY_ARGUMENT in tool.input_schema["properties"]}
    assert takes_key == {"createJourney", "simulateLoan"}


def test_a_reply_lost_after_the_commit_is_retried_with_the_same_key_and_nothing_is_doubled():
    # Given a journey, and a wire that loses the simulate's first reply after the orchestrator committed it
    orchestrator = InProcessOrchestrator()
    sleeps: list[float] = []
    tools = tools_over(orchestrator, sleeps)
    journey = create(tools)
    orchestrator.wire.faults = ["lose"]
    sent_before = len(orchestrator.requests)
    # When the model simulates without giving a key
    outcome = tools.call("simulateLoan", {journey_argument(tools): journey, **TERMS})
    # Then the server retried once with the key it made for this call, and the answer is the replay
    attempts = orchestrator.requests[sent_before:]
    keys = {headers["Idempotency-Key"] for _, _, headers in attempts}
    assert len(attempts) == 2
    assert keys == {outcome.idempotency_key}
    assert sleeps[-1:] == [TransportRetry().base_delay]
    assert not outcome.is_error
    assert outcome.replayed
    assert outcome.document["currentState"] == "simulated"
    # and loans-api holds exactly one simulation
    assert orchestrator.system.loans_store.statuses(journey, "SIMULATION#") == ["ACTIVE"]


def test_each_tool_call_without_a_key_gets_a_new_one():
    # Given a journey
    orchestrator = InProcessOrchestrator()
    tools = tools_over(orchestrator)
    journey = create(tools)
    # When the model simulates twice without a key (two requests, not a repeat)
    first = tools.call("simulateLoan", {journey_argument(tools): journey, **TERMS})
    second = tools.call("simulateLoan", {journey_argument(tools): journey, **TERMS})
    # Then each call had its own key, and each made a quote
    assert first.idempotency_key != second.idempotency_key
    assert not second.replayed
    assert sorted(orchestrator.system.loans_store.statuses(journey, "SIMULATION#")) == ["ACTIVE", "SUPERSEDED"]


def test_a_create_whose_reply_is_lost_makes_one_journey():
    # Given a wire that loses the create's reply after the journey was made
    orchestrator = InProcessOrchestrator()
    tools = tools_over(orchestrator)
    orchestrator.wire.faults = ["lose"]
    # When the model creates a journey
    outcome = tools.call("createJourney", {"customerId": "c-1"})
    # Then the retry is answered from the first attempt's receipt: one journey
    assert outcome.replayed
    assert list(orchestrator.system.journeys.records) == [outcome.document["journeyId"]]


def test_an_orchestrator_that_never_answers_is_a_retryable_problem_naming_the_key():
    # Given an orchestrator whose every request times out
    orchestrator = InProcessOrchestrator()
    tools = tools_over(orchestrator)
    journey = create(tools)
    orchestrator.wire.persistent_fault = "timeout"
    # When the model simulates with its own key
    outcome = tools.call("simulateLoan", {journey_argument(tools): journey, **TERMS, KEY_ARGUMENT: "k-7"})
    # Then it gets a retryable problem telling it to repeat with that key, after the server's own attempts
    assert outcome.is_error
    assert outcome.document["status"] == 503
    assert outcome.document["retryable"] is True
    assert outcome.document[KEY_ARGUMENT] == "k-7"
    assert "k-7" in outcome.guidance
    attempts = [r for r in orchestrator.requests if r[1].endswith("/simulate")]
    assert len(attempts) == TransportRetry().attempts


def test_a_refused_command_is_a_problem_with_the_legal_actions_as_tool_calls():
    # Given a journey in created
    orchestrator = InProcessOrchestrator()
    tools = tools_over(orchestrator)
    journey = create(tools)
    name = journey_argument(tools)
    # When the model disburses
    outcome = tools.call("disburseLoan", {name: journey})
    # Then the problem lists what is legal, and the guidance spells each as a tool call
    assert outcome.is_error
    assert outcome.document["status"] == 409
    assert {action["name"] for action in outcome.document["availableActions"]} == {"simulate", "cancel"}
    assert f"simulateLoan({name}={journey!r})" in outcome.guidance
    assert f"cancelJourney({name}={journey!r})" in outcome.guidance


def test_arguments_that_cannot_make_a_request_are_a_problem_and_nothing_is_sent():
    # Given the tools
    orchestrator = InProcessOrchestrator()
    tools = tools_over(orchestrator)
    sent_before = len(orchestrator.requests)
    # When the model leaves out the journey and adds a field the operation does not have
    outcome = tools.call("acceptSimulation", {"journey": "x"})
    # Then it gets a 422 problem naming both, and nothing went out
    assert outcome.is_error
    assert outcome.document["status"] == 422
    assert {error["field"] for error in outcome.document["errors"]} == {"journey", journey_argument(tools)}
    assert len(orchestrator.requests) == sent_before


def test_a_journey_id_cannot_walk_to_another_path():
    # Given the tools over a scripted orchestrator
    orchestrator = InProcessOrchestrator()
    api = FakeOrchestratorApi(document_of(orchestrator), default=ApiReply(404, {"title": "x", "status": 404}))
    tools = JourneyTools(api, api.document)
    # When the journey argument holds a path
    tools.call("getJourney", {journey_argument(tools): "../health"})
    # Then it is one encoded segment
    assert api.requests[-1].path == "/journeys/..%2Fhealth"


def test_an_answer_that_is_not_a_problem_document_becomes_one():
    # Given an API Gateway that refuses the request itself (a bad signature)
    orchestrator = InProcessOrchestrator()
    api = FakeOrchestratorApi(document_of(orchestrator), default=ApiReply(403, {"message": "Forbidden"}))
    tools = JourneyTools(api, api.document)
    # When a tool is called
    outcome = tools.call("getJourney", {journey_argument(tools): "j1"})
    # Then the model gets a problem document with the gateway's message, not retryable
    assert outcome.is_error
    assert {k: outcome.document[k] for k in ("status", "detail", "retryable")} == {
        "status": 403,
        "detail": "Forbidden",
        "retryable": False,
    }


def test_reads_and_idempotent_commands_are_retried_but_an_unkeyed_unknown_write_is_not():
    # Given an orchestrator whose first answer never arrives, and a document with a write that takes no
    # key and is not known to be idempotent
    document = document_of(InProcessOrchestrator())
    accept_path, accept = operation_in(document, "acceptSimulation")
    document["paths"][accept_path.replace("/accept", "/topup")] = {"post": {**accept, "operationId": "topUp"}}
    name = journey_argument(JourneyTools(FakeOrchestratorApi(document), document))
    renamed = json.loads(json.dumps(document).replace(name, "jid"))
    # (its record renamed the same way: the answer is what the renamed document describes)
    record = json.loads(json.dumps(FakeOrchestratorApi(document).default.body).replace(name, "jid"))
    api = FakeOrchestratorApi(renamed, ApiReply(200, record))
    tools = JourneyTools(api, api.document, sleep=lambda _: None)
    outcomes = {}
    for name in ("getJourney", "acceptSimulation", "topUp"):
        api.replies = [ApiUnreachable("reset")]
        # When each is called
        outcomes[name] = tools.call(name, {"jid": "j1"})
    # Then the read and the idempotent accept were retried and answered; the unknown write was not retried
    assert not outcomes["getJourney"].is_error
    assert not outcomes["acceptSimulation"].is_error
    assert outcomes["topUp"].document["status"] == 503
    assert [request.path for request in api.requests] == [
        "/journeys/j1",
        "/journeys/j1",
        "/journeys/j1/accept",
        "/journeys/j1/accept",
        "/journeys/j1/topup",
    ]


def test_a_failure_inside_the_server_reaches_the_model_as_a_problem_without_a_traceback():
    # Given a port that fails in a way nobody planned for
    api = FakeOrchestratorApi(document_of(InProcessOrchestrator()))
    api.replies = [RuntimeError("boom")]
    tools = JourneyTools(api, api.document)
    server = create_server(tools)

    # When an MCP client calls a tool
    async def call() -> Any:
        async with Client(server) as client:
            return await client.call_tool("getJourney", {journey_argument(tools): "j1"})

    result = anyio.run(call)
    # Then it is a tool error carrying a problem document, and no stack trace
    assert result.is_error
    assert result.structured_content["problem"]["status"] == 500
    assert "RuntimeError: boom" in result.structured_content["problem"]["detail"]
    assert all("Traceback" not in block.text for block in result.content)


class Unreachable:
    def send(self, request: Any) -> ApiReply:
        raise ApiUnreachable("refused")


def test_a_server_that_cannot_read_the_document_says_so_after_its_retries():
    # Given an orchestrator that never answers, and one that answers something that is not a document
    silent = Unreachable()
    wrong = FakeOrchestratorApi({"title": "not found", "status": 404})
    sleeps: list[float] = []
    # When the tools are built from them
    # Then neither yields tools: each is an error naming why, the silent one after the retry schedule
    with pytest.raises(UnreadableDocument, match="unreachable: refused"):
        fetch_document(silent, TransportRetry(), sleeps.append)
    assert sleeps == TransportRetry().delays()
    with pytest.raises(UnreadableDocument, match="answered 200"):
        fetch_document(wrong, TransportRetry(), sleeps.append)


def test_every_result_is_one_object_the_output_schema_describes_and_the_text_repeats():
    # Given `saga mcp`'s server over the orchestrator's own app, an MCP client of the SDK, and an
    # orchestrator that stops answering for the last call
    orchestrator = InProcessOrchestrator()
    tools = tools_over(orchestrator)
    name = journey_argument(tools)

    async def agent() -> tuple[dict[str, Any], dict[str, Any]]:
        async with Client(create_server(tools)) as client:
            schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
            created = await client.call_tool("createJourney", {"customerId": "c-1"})
            journey = created.structured_content["record"]["journeyId"]
            results = {
                "created": created,
                "simulated": await client.call_tool("simulateLoan", {name: journey, **TERMS}),
                "refused": await client.call_tool("disburseLoan", {name: journey}),
            }
            orchestrator.wire.persistent_fault = "timeout"
            keyed = {name: journey, **TERMS, KEY_ARGUMENT: "k-9"}
            results["unanswered"] = await client.call_tool("simulateLoan", keyed)
            return schemas, results

    schemas, results = anyio.run(agent)
    # Then every result, success or error, conforms to its tool's output schema, and its text blocks are
    # the guidance line and the structured content itself (a client that reads either reads the same)
    for step, result in results.items():
        structured = result.structured_content
        jsonschema.validate(structured, schemas[result_tool(step)])
        assert [block.text for block in result.content] == [structured["guidance"], json.dumps(structured, indent=2)]
    # a success holds the record and the key the server made for the call, which the guidance names too
    created = results["created"].structured_content
    assert created["record"]["currentState"] == "created"
    assert created[KEY_ARGUMENT].startswith("mcp-")
    assert created[KEY_ARGUMENT] in created["guidance"]
    assert (created["httpStatus"], created["idempotentReplayed"]) == (201, False)
    assert results["simulated"].structured_content["record"]["currentState"] == "simulated"
    # and an error holds the problem and, where the model reads it, whether repeating is safe
    refused = results["refused"].structured_content
    assert results["refused"].is_error
    assert (refused["problem"]["status"], refused["retryable"]) == (409, False)
    assert "record" not in refused
    unanswered = results["unanswered"].structured_content
    assert (unanswered["problem"]["status"], unanswered["retryable"], unanswered[KEY_ARGUMENT]) == (503, True, "k-9")


def result_tool(step: str) -> str:
    return {"created": "createJourney", "refused": "disburseLoan"}.get(step, "simulateLoan")


def test_the_server_reports_the_installed_packages_version():
    # Given the server
    server = create_server(JourneyTools(FakeOrchestratorApi(document_of(InProcessOrchestrator())), {"paths": {}}))

    # When a client initializes
    async def connect() -> Any:
        async with Client(server) as client:
            return client.server_info

    info = anyio.run(connect)
    # Then it names the server and the package's version
    assert info is not None
    assert (info.name, info.version) == ("loan-saga", importlib.metadata.version(PACKAGE))


class StartingOrchestrator:
    """Refuses connections for its first `down` requests (it is starting), then serves `document`."""

    def __init__(self, down: int, document: dict[str, Any]) -> None:
        self.down, self.document, self.requests = down, document, 0

    def send(self, request: Any) -> ApiReply:
        self.requests += 1
        if self.requests <= self.down:
            raise ApiUnreachable("connection refused")
        return ApiReply(200, self.document)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_an_orchestrator_not_up_yet_is_waited_for_saying_so_once():
    # Given an orchestrator that refuses the first 7 connections, then serves its document
    document = document_of(InProcessOrchestrator())
    api, clock, told = StartingOrchestrator(7, document), Clock(), list[str]()
    # When the server reads the document, waiting up to 30 s
    found = wait_for_document(api, TransportRetry(), 30, clock.sleep, lambda: clock.now, told.append)
    # Then it got the document, having said once that it waits and why
    assert found == document
    assert told == ["unreachable: connection refused"]
    assert clock.now < 30


def test_an_orchestrator_that_never_comes_up_is_an_error_after_the_wait():
    # Given an orchestrator that never answers
    api, clock, told = StartingOrchestrator(10**9, {}), Clock(), list[str]()
    # When the server waits up to 10 s for its document
    # Then it gives up, unreachable, within the bound, having said it waits
    with pytest.raises(UnreadableDocument, match="unreachable") as raised:
        wait_for_document(api, TransportRetry(), 10, clock.sleep, lambda: clock.now, told.append)
    assert raised.value.unreachable
    assert 10 - TransportRetry().attempts <= clock.now <= 10 + sum(TransportRetry().delays())
    assert len(told) == 1


def test_an_answer_that_is_not_the_document_is_not_waited_for():
    # Given something that answers, but not the document
    api, clock = FakeOrchestratorApi({"title": "not found", "status": 404}), Clock()
    # When the server reads the document with a long wait
    # Then it fails at once: waiting cannot mend a wrong URL
    with pytest.raises(UnreadableDocument, match="answered 200"):
        wait_for_document(api, TransportRetry(), 60, clock.sleep, lambda: clock.now, lambda _: None)
    assert clock.now == 0


def test_list_journeys_finds_the_customers_journeys_and_says_each_ones_next_tools_and_how_to_page_on():
    # Given two journeys for a customer, one of them quoted
    tools = tools_over(InProcessOrchestrator())
    first, second = create(tools), create(tools)
    assert not tools.call("simulateLoan", {journey_argument(tools): second, **TERMS}).is_error
    # When the model lists them one at a time, as a fresh conversation would (no journeyId known)
    tools.journeys.clear()
    page = tools.call("listJourneys", {"customerId": "c-1", "limit": 1})
    # Then the newest comes first, its guidance names its next tools, and says how to get the next page
    assert not page.is_error, page.guidance
    assert [r["journeyId"] for r in page.structured()["record"]["journeys"]] == [second]
    cursor = page.document["nextCursor"]
    assert f"journey {second} is simulated; next legal actions: " in page.guidance, page.guidance
    assert f"cursor={cursor!r}" in page.guidance, page.guidance
    following = tools.call("listJourneys", {"customerId": "c-1", "limit": 1, "cursor": cursor})
    assert [r["journeyId"] for r in following.document["journeys"]] == [first]
    assert "Older journeys follow" not in following.guidance, following.guidance
    # And both are known as resources again
    assert set(tools.journeys) == {first, second}
    # And the tool's output schema says what its result holds, and the result conforms to it
    (tool,) = [t for t in tools.tools() if t.name == "listJourneys"]
    assert tool.output_schema is not None
    assert "page of the customer's journeys" in tool.output_schema["properties"]["record"]["description"]
    jsonschema.validate(following.structured(), tool.output_schema)


def test_list_journeys_with_a_bad_cursor_is_a_problem_the_model_can_act_on():
    tools = tools_over(InProcessOrchestrator())
    create(tools)
    outcome = tools.call("listJourneys", {"customerId": "c-1", "cursor": "%%%"})
    assert (outcome.is_error, outcome.status) == (True, 422), outcome.structured()
    assert outcome.structured()["retryable"] is False
    assert "cursor" in outcome.guidance, outcome.guidance


def test_a_journey_that_needs_repair_tells_the_model_to_stop_and_call_an_operator_not_to_try_another_action():
    # Given a journey whose Control Record claims a quote loans-api never committed (seq 3, no ledger)
    orchestrator = InProcessOrchestrator()
    tools = tools_over(orchestrator)
    journey = create(tools)
    record = orchestrator.system.journeys.records[journey]
    orchestrator.system.journeys.records[journey] = record.model_copy(
        update={"currentState": "simulated", "lastAppliedSeq": 3}
    )
    # When the model cancels it (legal on the record it sees)
    outcome = tools.call("cancelJourney", {journey_argument(tools): journey})
    # Then the problem is journey-needs-repair, not retryable, and the guidance says no call of the model's helps
    assert outcome.document["type"].endswith("journey-needs-repair"), outcome.document
    assert outcome.document["retryable"] is False, outcome.document
    assert "take another action" not in outcome.guidance, outcome.guidance
    advice = outcome.guidance.removeprefix(f"error 500 ({outcome.document['title']}): {outcome.document['detail']}")
    assert "stop" in advice, outcome.guidance
    assert "operator" in advice, outcome.guidance


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("listJourneys", {"customerId": "c-\ud800"}),  # JSON's "\ud800": a lone surrogate, no UTF-8 spells it
        ("listJourneys", {"customerId": "c-1", "cursor": "\udfff"}),
        ("getJourney", None),
    ],
)
def test_an_argument_no_url_can_carry_is_a_problem_naming_it_not_a_failure_of_the_server(tool, arguments):
    tools = tools_over(InProcessOrchestrator())
    if arguments is None:
        arguments = {journey_argument(tools): "j-\ud800"}
    outcome = tools.call(tool, arguments)
    assert (outcome.is_error, outcome.document.get("status")) == (True, 422), outcome.document
    (named,) = {e["field"] for e in outcome.document.get("errors", [])} & set(arguments)
    assert "Unicode" in outcome.guidance, outcome.guidance
    assert "codec" not in outcome.guidance, f"{named}: {outcome.guidance}"
