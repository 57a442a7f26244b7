"""The Bedrock Agents action-group executor over the orchestrator's own code path (moto for DynamoDB,
loans-api over the in-process HTTP transport): events shaped as the AWS documentation shows them
(tests/bedrock_events.py), each operation named as the exported schema names it
(`saga openapi --format bedrock`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from functions.orchestrator import bedrock, bootstrap
from saga import bedrock_export
from saga.links import link_body
from saga.local.apigw import LambdaContextStub
from shared.entry_points import Handler
from tests.bedrock_events import ACTION_GROUP, action_event
from tests.integration.journeys import truth
from tests.support import ApiClient, json_of, quiet_metrics
from tools.inprocess import InProcessHttp

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TERMS = {"amount": 10000, "termMonths": 36}


@pytest.fixture
def executor(orchestrator_settings, loans_http: InProcessHttp, sleeps) -> Handler:
    return bootstrap.build_bedrock(
        orchestrator_settings, quiet_metrics("bedrock-executor"), bootstrap.Ports(http=loans_http, sleep=sleeps.append)
    )


@pytest.fixture
def api_paths(orchestrator) -> dict[str, tuple[str, str]]:
    """operationId -> (apiPath, httpMethod), as the exported schema declares them."""
    exported = bedrock_export.export(json_of(orchestrator.get("/openapi.json")))
    return {
        spec["operationId"]: (path, method.upper())
        for path, item in exported["paths"].items()
        for method, spec in item.items()
    }


class Agent:
    """Bedrock, invoking the executor for the operations its agent chooses."""

    def __init__(self, executor: Handler, api_paths: dict[str, tuple[str, str]]) -> None:
        self.executor, self.api_paths = executor, api_paths

    def event(self, operation: str, parameters: dict[str, Any] | None = None, body: Any = None) -> dict[str, Any]:
        path, method = self.api_paths[operation]
        return action_event(path, method, parameters, body)

    def invoke(self, event: dict[str, Any]) -> tuple[int, Any, dict[str, Any]]:
        answer = self.executor(event, LambdaContextStub("bedrock-executor"))
        reply = answer["response"]
        return reply["httpStatusCode"], json.loads(reply["responseBody"]["application/json"]["body"]), answer


def test_a_bedrock_agent_runs_a_whole_journey_and_a_retried_invocation_is_a_replay(executor, api_paths, loans_http):
    agent = Agent(executor, api_paths)
    # Given a journey the agent created, with no key of its own (the schema asks for none)
    status, record, answer = agent.invoke(agent.event("createJourney", body={"customerId": "c-bedrock"}))
    assert status == 201, record
    journey = {"journeyId": record["journeyId"]}
    # (the answer is Bedrock's documented response format)
    assert answer["messageVersion"] == "1.0"
    assert answer["response"]["actionGroup"] == ACTION_GROUP
    assert answer["response"]["apiPath"] == api_paths["createJourney"][0]
    # When Bedrock invokes the simulate, and invokes the very same action again (a retry)
    simulate = agent.event("simulateLoan", journey, TERMS)
    first = agent.invoke(simulate)
    retried = agent.invoke(simulate)
    # Then the retry is answered with the same record, and loans-api holds one quote
    assert first[0] == retried[0] == 200
    assert retried[1] == first[1]
    assert len(truth(loans_http, journey["journeyId"])["simulations"]) == 1
    # and the journey finishes with the bodies its links carry
    status, accepted, _ = agent.invoke(agent.event("acceptSimulation", journey, link_body(first[1], "accept")))
    assert (status, accepted["currentState"]) == (200, "accepted")
    status, disbursed, _ = agent.invoke(agent.event("disburseLoan", journey, link_body(accepted, "disburse")))
    assert (status, disbursed["currentState"]) == (200, "disbursed")
    status, read, _ = agent.invoke(agent.event("getJourney", journey))
    assert (status, read["currentState"]) == (200, "disbursed")


def test_a_retried_create_makes_one_journey(executor, api_paths, orchestrator_settings, dynamodb: DynamoDBClient):
    agent = Agent(executor, api_paths)
    # Given a createJourney action Bedrock invokes twice
    create = agent.event("createJourney", body={"customerId": "c-twice"})
    first, again = agent.invoke(create), agent.invoke(create)
    # Then both answers name one journey
    assert (first[0], again[0]) == (201, 201)
    assert again[1]["journeyId"] == first[1]["journeyId"]
    items = dynamodb.scan(TableName=orchestrator_settings.journeys_table_name)["Items"]
    assert [item["pk"]["S"] for item in items if item["sk"]["S"] == "CONTROL"] == [f"JOURNEY#{first[1]['journeyId']}"]


def test_an_illegal_action_is_a_409_whose_body_is_the_problem_with_the_legal_actions(executor, api_paths):
    agent = Agent(executor, api_paths)
    _, record, _ = agent.invoke(agent.event("createJourney", body={"customerId": "c-409"}))
    journey = {"journeyId": record["journeyId"]}
    # When the agent disburses a journey that was never priced (naming an acceptance it made up)
    status, problem, answer = agent.invoke(agent.event("disburseLoan", journey, {"acceptanceId": "a-made-up"}))
    # Then Bedrock gets the 409 and the problem document as the body: what is legal instead
    assert status == 409
    assert answer["response"]["httpStatusCode"] == 409
    assert (problem["status"], problem["retryable"]) == (409, False)
    assert {action["name"] for action in problem["availableActions"]} == {"simulate", "cancel"}


def test_a_legal_action_with_a_bad_body_is_a_422_problem(executor, api_paths):
    agent = Agent(executor, api_paths)
    _, record, _ = agent.invoke(agent.event("createJourney", body={"customerId": "c-422"}))
    # When the agent simulates an amount that is not a number
    event = agent.event("simulateLoan", {"journeyId": record["journeyId"]}, TERMS)
    event["requestBody"]["content"]["application/json"]["properties"][0]["value"] = "ten thousand"
    status, problem, _ = agent.invoke(event)
    # Then it is the API's own 422, naming the field
    assert status == 422
    assert any("amount" in error["field"] for error in problem["errors"])


def test_the_agent_is_the_caller_its_keys_belong_to(executor, api_paths, orchestrator: ApiClient):
    agent = Agent(executor, api_paths)
    # Given a create the agent invoked
    create = agent.event("createJourney", body={"customerId": "c-scope"})
    status, record, _ = agent.invoke(create)
    assert status == 201
    # When another caller sends the same key straight to the API
    other = orchestrator.post("/journeys", {"customerId": "c-scope"}, key=bedrock.idempotency_key(create))
    # Then it is another journey: the key was the agent's alone
    assert other.status == 201
    assert json_of(other)["journeyId"] != record["journeyId"]


def test_an_event_that_names_no_operation_is_a_400_problem_in_bedrocks_format(executor):
    # Given an event for a function-details action group (no apiPath, no httpMethod)
    event = {k: v for k, v in action_event("/journeys", "POST").items() if k not in ("apiPath", "httpMethod")}
    # When the executor is invoked with it
    answer = executor(event, LambdaContextStub("bedrock-executor"))
    # Then it answers a 400 problem, in Bedrock's format, and never a stack trace
    assert answer["response"]["httpStatusCode"] == 400
    problem = json.loads(answer["response"]["responseBody"]["application/json"]["body"])
    assert (problem["status"], problem["retryable"]) == (400, False)


def test_a_bedrock_agent_finds_the_journeys_it_created_for_a_customer_in_a_later_session(executor, api_paths):
    # Given two journeys the agent created for a customer, in one session
    agent = Agent(executor, api_paths)
    created = []
    for words in ("a loan please", "another loan please"):
        path, method = api_paths["createJourney"]
        event = action_event(path, method, body={"customerId": "c-back"}, input_text=words)
        status, record, _ = agent.invoke(event)
        assert status == 201, record
        created.append(record["journeyId"])
    # When the customer comes back in another session, and the agent lists its journeys a page at a time
    found = []
    parameters: dict[str, Any] = {"customerId": "c-back", "limit": 1}
    while True:
        path, method = api_paths["listJourneys"]
        event = action_event(path, method, parameters, session_id="111122223333-session-2")
        status, page, _ = agent.invoke(event)
        assert status == 200, page
        found += [record["journeyId"] for record in page["journeys"]]
        if "nextCursor" not in page:
            break
        parameters["cursor"] = page["nextCursor"]
    # Then it finds both, newest first, with their links
    assert found == created[::-1], f"listed {found}, created {created}"


def test_listing_through_an_agent_is_scoped_to_the_end_user_its_application_names(executor, api_paths):
    # Given a journey one end user of the agent created for a customer
    agent = Agent(executor, api_paths)
    path, method = api_paths["createJourney"]
    status, record, _ = agent.invoke(action_event(path, method, body={"customerId": "c-shared"}, user="alice"))
    assert status == 201, record
    path, method = api_paths["listJourneys"]
    # When another user of the same agent lists that customer's journeys, Then they see none of alice's
    status, page, _ = agent.invoke(action_event(path, method, {"customerId": "c-shared"}, user="mallory"))
    assert (status, page.get("journeys")) == (200, []), page
    # And alice sees hers
    status, page, _ = agent.invoke(action_event(path, method, {"customerId": "c-shared"}, user="alice"))
    assert [r["journeyId"] for r in page["journeys"]] == [record["journeyId"]], page
    # And a session whose application named no user lists nothing: it is told what to set
    status, problem, _ = agent.invoke(action_event(path, method, {"customerId": "c-shared"}, user=None))
    assert (status, problem["type"], problem["retryable"]) == (
        403,
        "urn:loan-saga:problem:user-not-bound",
        False,
    ), problem
    assert "sessionAttributes.userId" in problem["detail"], problem


@pytest.mark.parametrize(
    ("operation", "parameters"),
    [
        ("getJourney", {"journeyId": "j-\ud800"}),  # a lone surrogate: no UTF-8 (so no URL) spells it
        ("listJourneys", {"customerId": "c-\ud800"}),
    ],
)
def test_a_parameter_no_url_can_carry_is_a_problem_in_bedrocks_format(executor, api_paths, operation, parameters):
    agent = Agent(executor, api_paths)
    status, problem, _ = agent.invoke(agent.event(operation, parameters))
    assert 400 <= status < 500, f"{operation} with {parameters!r} answered {status}: {problem}"
    assert "codec" not in str(problem), problem
    assert problem.get("type", "").startswith("urn:loan-saga:problem:"), problem
