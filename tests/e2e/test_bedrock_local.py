"""The Bedrock executor's Lambda entry point as deployed (functions/orchestrator/handler.py
`bedrock_handler`, in a container of its own as `saga local` runs every function) against the local
runtime: moto as DynamoDB, loans-api over real HTTP. Events as the AWS documentation shows them
(tests/bedrock_events.py), paths as the exported schema names them: a retried invocation is a replay
(one quote), and an illegal action is a 409 whose body is the problem."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from functions.orchestrator.settings import OrchestratorSettings
from saga import bedrock_export
from saga.cli_servers import default_region
from saga.local.containers import ContainerPool
from shared import entry_points
from shared import metric_names as names
from shared.tables import JOURNEYS_TABLE
from shared.topology import BEDROCK_EXECUTOR
from tests.bedrock_events import action_event

pytestmark = pytest.mark.slow


@pytest.fixture
def executor(system) -> Iterator[ContainerPool]:
    settings = OrchestratorSettings(
        region=default_region(),
        aws_endpoint_url=system.aws_url,
        journeys_table_name=JOURNEYS_TABLE.local_name,
        loans_api_url=system.loans_url,
    )
    environment = {**settings.to_env(), "POWERTOOLS_SERVICE_NAME": "bedrock-executor",
                   "POWERTOOLS_METRICS_NAMESPACE": names.NAMESPACE}  # fmt: skip
    pool = ContainerPool(
        "bedrock-executor",
        entry_points.BEDROCK_EXECUTOR,
        environment,
        1,
        function_timeout=BEDROCK_EXECUTOR.timeout_seconds,
    )
    yield pool
    pool.stop()


def test_the_deployed_entry_point_replays_a_retried_invocation_and_answers_a_409_as_a_problem(system, executor):
    _, document, _ = system.call("GET", f"{system.api_url}/openapi.json")
    paths = {
        spec["operationId"]: (path, method.upper())
        for path, item in bedrock_export.export(document)["paths"].items()
        for method, spec in item.items()
    }

    def invoke(operation: str, parameters: Any = None, body: Any = None) -> tuple[int, Any]:
        answer = executor(action_event(*paths[operation], parameters, body), None)
        reply = answer["response"]
        assert (answer["messageVersion"], reply["apiPath"]) == ("1.0", paths[operation][0])
        return reply["httpStatusCode"], json.loads(reply["responseBody"]["application/json"]["body"])

    # Given a journey Bedrock's agent created
    status, record = invoke("createJourney", body={"customerId": "c-bedrock-local"})
    assert status == 201, record
    journey = {"journeyId": record["journeyId"]}
    # When it disburses too early, then simulates, and Bedrock invokes that same simulate again
    refused = invoke("disburseLoan", journey, {"acceptanceId": "a-none"})
    first = invoke("simulateLoan", journey, {"amount": 10000, "termMonths": 36})
    retried = invoke("simulateLoan", journey, {"amount": 10000, "termMonths": 36})
    # Then the early disburse is a 409 whose body is the problem, with what is legal instead
    assert refused[0] == 409
    assert {action["name"] for action in refused[1]["availableActions"]} == {"simulate", "cancel"}
    # and the retry answers the first simulate's record: loans-api holds one quote
    assert first[0] == retried[0] == 200
    assert retried[1] == first[1]
    assert len(system.truth(record["journeyId"])["simulations"]) == 1
