"""The pure translation between Bedrock Agents' action-group events and the orchestrator's API Gateway
requests (functions/orchestrator/bedrock.py), with events shaped as the AWS documentation shows them
(tests/bedrock_events.py)."""

from __future__ import annotations

import json

import pytest

from functions.orchestrator import bedrock
from tests.bedrock_events import ACCOUNT, ACTION_GROUP, REGION, RESPONSE_FIELDS, RESPONSE_KEYS, action_event

SIMULATE = "/journeys/{journeyId}/simulate"
CALLER = bedrock.caller_arn(action_event(SIMULATE, "POST"), REGION, ACCOUNT)


def test_an_action_is_the_api_request_it_stands_for_with_typed_values_and_the_agent_and_user_as_caller():
    # Given Bedrock's event for simulateLoan: the path parameter and the body's properties, all strings
    event = action_event(SIMULATE, "POST", {"journeyId": "j-1"}, {"amount": 10000.5, "termMonths": 36})
    # When it is translated
    request = bedrock.request(event, CALLER)
    # Then it is the POST the API serves, the body in its JSON types, the agent and the end user its
    # application named as the signed caller
    assert (request["httpMethod"], request["path"]) == ("POST", "/journeys/j-1/simulate")
    assert json.loads(request["body"]) == {"amount": 10000.5, "termMonths": 36}
    agent = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:agent/AGENT12345"
    assert request["requestContext"]["identity"]["userArn"] == f"{agent}/user/user-1"
    # and it carries a key the agent never had to invent
    assert request["headers"]["Idempotency-Key"] == bedrock.idempotency_key(event)


def test_a_read_has_no_body_and_no_key_and_a_path_value_stays_one_segment():
    # Given getJourney naming a journey id that holds a slash
    request = bedrock.request(action_event("/journeys/{journeyId}", "GET", {"journeyId": "../health"}), CALLER)
    # Then it reads that one (encoded) segment, sends no body and no key
    assert request["path"] == "/journeys/..%2Fhealth"
    assert request["body"] is None
    assert "Idempotency-Key" not in request["headers"]


def test_a_value_that_is_not_its_type_is_passed_on_for_the_api_to_refuse():
    # Given an amount Bedrock typed as a number that is not one
    event = action_event(SIMULATE, "POST", {"journeyId": "j-1"}, {"amount": 1, "termMonths": 36})
    event["requestBody"]["content"]["application/json"]["properties"][0]["value"] = "ten thousand"
    # Then it is sent as it came (the API answers 422 naming it), not dropped or guessed at
    assert json.loads(bedrock.request(event, CALLER)["body"])["amount"] == "ten thousand"


def test_a_retried_invocation_has_the_same_key_and_another_turn_or_other_terms_another():
    # Given an action, as Bedrock sends it, and again (a retry: the same event, new session attributes)
    event = action_event(SIMULATE, "POST", {"journeyId": "j-1"}, {"amount": 10000, "termMonths": 36})
    retried = {**event, "sessionAttributes": {"channel": "web", "seen": "1"}}
    key = bedrock.idempotency_key(event)
    # Then a retry is the same request; another session, turn, journey or amount is another
    assert bedrock.idempotency_key(retried) == key
    others = [
        action_event(SIMULATE, "POST", {"journeyId": "j-1"}, {"amount": 10000, "termMonths": 36}, session_id="s-2"),
        action_event(SIMULATE, "POST", {"journeyId": "j-1"}, {"amount": 10000, "termMonths": 36}, input_text="again"),
        action_event(SIMULATE, "POST", {"journeyId": "j-2"}, {"amount": 10000, "termMonths": 36}),
        action_event(SIMULATE, "POST", {"journeyId": "j-1"}, {"amount": 20000, "termMonths": 36}),
    ]
    assert len({key, *(bedrock.idempotency_key(other) for other in others)}) == 5


def test_the_answer_is_bedrocks_response_format_with_the_apis_body_as_json_text():
    # Given the API's answer to an action (a problem document, say)
    event = action_event("/journeys/{journeyId}/disburse", "POST", {"journeyId": "j-1"})
    problem = json.dumps({"status": 409, "title": "Command not allowed", "retryable": False})
    # When it is translated back
    answer = bedrock.response(event, {"statusCode": 409, "headers": {}, "body": problem})
    # Then it is the documented response: the action echoed, the status, the body as JSON text
    assert set(answer) == RESPONSE_KEYS
    assert answer["messageVersion"] == "1.0"
    assert set(answer["response"]) == RESPONSE_FIELDS
    assert answer["response"]["actionGroup"] == ACTION_GROUP
    assert (answer["response"]["apiPath"], answer["response"]["httpMethod"]) == (
        "/journeys/{journeyId}/disburse",
        "POST",
    )
    assert answer["response"]["httpStatusCode"] == 409
    assert answer["response"]["responseBody"] == {"application/json": {"body": problem}}


def test_an_event_that_names_no_operation_is_refused():
    # Given a function-details event (it names a `function`, not an apiPath)
    event = {k: v for k, v in action_event(SIMULATE, "POST").items() if k not in ("apiPath", "httpMethod")}
    # Then it cannot become a request
    with pytest.raises(bedrock.NotAnActionEvent):
        bedrock.request(event, CALLER)


def test_an_action_s_parameters_and_body_are_each_read_once(monkeypatch):
    # Given simulateLoan's event, and the reader of Bedrock's typed values counted
    event = action_event(SIMULATE, "POST", {"journeyId": "j-1"}, {"amount": 10000.5, "termMonths": 36})
    read: list[object] = []
    original = bedrock.arguments

    def counted(items: object) -> dict[str, object]:
        read.append(items)
        return original(items)

    monkeypatch.setattr(bedrock, "arguments", counted)
    # When it is translated into its request (its key made for the header and the request id)
    bedrock.request(event, CALLER)
    # Then the parameters and the body's properties were each read once
    assert len(read) == 2, f"Bedrock's values were read {len(read)} times, not once each: {read}"
