"""The shell every Lambda entry wears (shared/lambda_entry.py): the composition root built from the
environment's settings once per container, at the first invocation, and the invocation answered inside
Powertools' decorators (the Lambda context and the correlation id in the log lines)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.logging import correlation_paths

from saga.local.apigw import LambdaContextStub, proxy_event
from shared.entry_points import Handler
from shared.lambda_entry import LambdaEntry
from shared.settings import BaseSettings


class TableSettings(BaseSettings):
    table_name: str


def test_the_composition_root_is_built_once_from_the_environment_at_the_first_invocation(monkeypatch):
    # Given an entry whose composition root counts its builds and answers with the table it was given
    builds: list[TableSettings] = []

    def build(settings: TableSettings, metrics: Metrics) -> Handler:
        builds.append(settings)
        return lambda event, context: {"table": settings.table_name, "event": event}

    monkeypatch.setenv("TABLE_NAME", "journeys")
    entry = LambdaEntry(TableSettings, build)
    # Then importing the handler module builds nothing
    assert builds == []
    # When it is invoked twice
    answers = [entry({"n": n}, LambdaContextStub("f")) for n in (1, 2)]
    # Then the root was built once, with the environment's settings, and it answered both invocations
    assert builds == [TableSettings(table_name="journeys")], builds
    assert answers == [{"table": "journeys", "event": {"n": 1}}, {"table": "journeys", "event": {"n": 2}}], answers
    assert entry.built() is entry.built()


def test_each_log_line_of_an_invocation_carries_the_lambda_context_and_the_requests_correlation_id(monkeypatch):
    # Given an API Gateway entry whose handler answers with what its log lines would carry
    from aws_lambda_powertools import Logger

    def build(settings: TableSettings, metrics: Metrics) -> Handler:
        def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
            logger = Logger()
            return {"keys": logger.get_current_keys(), "correlation_id": logger.get_correlation_id()}

        return handle

    monkeypatch.setenv("TABLE_NAME", "t")
    entry = LambdaEntry(TableSettings, build, correlation_paths.API_GATEWAY_REST)
    event = proxy_event("GET", "/journeys/j1", {}, None)
    event["requestContext"]["requestId"] = "request-7"
    # When it is invoked
    seen = entry(event, LambdaContextStub("orchestrator"))
    # Then its log lines name the function and the request
    assert (seen["keys"].get("function_name"), seen["correlation_id"]) == ("orchestrator", "request-7"), seen
