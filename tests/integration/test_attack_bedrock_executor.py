"""Attacks on the Bedrock Agents action-group executor: events shaped as
https://docs.aws.amazon.com/bedrock/latest/userguide/agents-lambda.html shows them (tests/bedrock_events.py),
through the orchestrator's own code path, as tests/integration/test_bedrock_executor.py drives it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from saga.local.apigw import LambdaContextStub
from tests.bedrock_events import action_event
from tests.integration.journeys import truth
from tests.integration.test_bedrock_executor import Agent, api_paths, executor  # noqa: F401 (fixtures)


def _with_text(event: dict[str, Any], text: str, turn: str | None = None) -> dict[str, Any]:
    """The event in a turn with these words, and (when given) the caller's turnId (docs/AGENTS.md)."""
    attributes = {} if turn is None else {"promptSessionAttributes": {"turnId": turn}}
    return {**event, "inputText": text, **attributes}


def test_the_same_words_in_a_later_turn_are_a_new_request_not_a_replay_of_an_old_one(executor, api_paths, loans_http):  # noqa: F811
    agent = Agent(executor, api_paths)
    _, record, _ = agent.invoke(agent.event("createJourney", body={"customerId": "c-turns"}))
    journey = {"journeyId": record["journeyId"]}
    # Given turn 1: the agent proposed 36 months and the user said "yes"; the agent simulated
    status, first, _ = agent.invoke(
        _with_text(agent.event("simulateLoan", journey, {"amount": 10000, "termMonths": 36}), "yes", "turn-1")
    )
    assert status == 200
    # and turn 2: the user asked for 24 months; the agent re-priced
    status, _, _ = agent.invoke(
        _with_text(agent.event("simulateLoan", journey, {"amount": 10000, "termMonths": 24}), "24 months", "turn-2")
    )
    assert status == 200
    # When turn 3 (a caller that sends a turnId per turn, as docs/AGENTS.md says): back to 36 months, "yes"
    status, third, _ = agent.invoke(
        _with_text(agent.event("simulateLoan", journey, {"amount": 10000, "termMonths": 36}), "yes", "turn-3")
    )
    # Then that is a new re-price: the journey's current quote is 36 months, and the answer says so
    current = truth(loans_http, journey["journeyId"])["simulations"]
    assert len(current) == 3, "turn 3 was answered with turn 1's receipt: no new quote was made"
    assert third["simulation"]["simulationId"] != first["simulation"]["simulationId"]


@pytest.mark.xfail(
    strict=True,
    reason="documented limitation (docs/AGENTS.md, D16): the event carries no id of its invocation, so two "
    "identical actions in one turn cannot be told from Bedrock retrying one",
)
def test_two_journeys_asked_for_in_one_turn_are_two_journeys(executor, api_paths):  # noqa: F811
    agent = Agent(executor, api_paths)
    # Given one turn in which the user asks for two applications (the agent calls createJourney twice)
    text = "open two loan applications for customer c-two, one for me and one for my partner"
    create = _with_text(agent.event("createJourney", body={"customerId": "c-two"}), text)
    first, second = agent.invoke(create), agent.invoke(dict(create))
    # Then two journeys exist; the executor cannot tell these apart from a retry (documented limitation?)
    assert first[1]["journeyId"] != second[1]["journeyId"]


MALFORMED: dict[str, Any] = {
    "parameters-not-a-list": {"parameters": 5},
    "request-body-a-string": {"requestBody": "x"},
    "content-a-list": {"requestBody": {"content": ["application/json"]}},
    "agent-a-string": {"agent": "AGENT12345"},
    "properties-a-number": {"requestBody": {"content": {"application/json": {"properties": 7}}}},
}


@pytest.mark.parametrize("change", list(MALFORMED))
def test_a_malformed_event_is_a_problem_in_bedrocks_format_never_an_exception(executor, change):  # noqa: F811
    # Given an action-group event with a field of the wrong type
    event = {**action_event("/journeys", "POST", body={"customerId": "c-bad"}), **MALFORMED[change]}
    # When the executor is invoked with it
    answer = executor(event, LambdaContextStub("bedrock-executor"))
    # Then Bedrock gets a 4xx problem in its response format (not a Lambda function error)
    assert 400 <= answer["response"]["httpStatusCode"] < 500
    problem = json.loads(answer["response"]["responseBody"]["application/json"]["body"])
    assert problem["retryable"] is False
