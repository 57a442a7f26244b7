"""The OpenAPI documents both APIs serve, made from this checkout's code with nothing running: each API's
handler is built (it reaches nothing until a route that needs AWS or loans-api runs) and asked for
`GET /openapi.json`, so the bytes are the ones a running API serves (`saga openapi`)."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Metrics

from saga import bedrock_export
from saga.local.apigw import LambdaContextStub, http_response, proxy_event

# Nothing is ever reached at these: building a client connects nowhere, and the document route calls nothing.
_NOWHERE = "http://offline.invalid"


def served_document(api: str = "orchestrator", fmt: str = "openapi") -> dict[str, Any]:
    """The document `api` ("orchestrator" or "loans-api") serves (3.1), or with fmt "bedrock" its export
    for an Amazon Bedrock Agents action group (3.0.0)."""
    metrics = Metrics(namespace="LoanSagaOffline", service=api)
    if api == "orchestrator":
        from functions.orchestrator import bootstrap as orchestrator
        from functions.orchestrator.settings import OrchestratorSettings

        settings = OrchestratorSettings(
            journeys_table_name="offline", loans_api_url=_NOWHERE, aws_endpoint_url=_NOWHERE
        )
        handler = orchestrator.build(settings, metrics)
    else:
        from functions.loans_api import bootstrap as loans_api
        from functions.loans_api.settings import LoansSettings

        handler = loans_api.build(LoansSettings(loans_table_name="offline", aws_endpoint_url=_NOWHERE), metrics)
    answer = http_response(handler(proxy_event("GET", "/openapi.json", {}, None), LambdaContextStub(api)))
    document: dict[str, Any] = json.loads(answer.body)
    return bedrock_export.export(document) if fmt == "bedrock" else document
