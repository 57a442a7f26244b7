"""Amazon Bedrock Agents' action-group events and responses, written from the AWS documentation:
"Configure Lambda functions to send information that an Amazon Bedrock agent elicits from the user",
https://docs.aws.amazon.com/bedrock/latest/userguide/agents-lambda.html (sections "Lambda input event
from Amazon Bedrock", for an action group defined with an API schema, and "Lambda response event to
Amazon Bedrock"). Every value in `parameters` and in the request body's `properties` is a string, with
the type the schema gives it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

AGENT = {"name": "LoanAgent", "id": "AGENT12345", "alias": "TSTALIASID", "version": "DRAFT"}
ACTION_GROUP = "loan-journeys"
SESSION = "111122223333-session-1"
REGION, ACCOUNT = "us-east-1", "000000000000"  # the local Lambda context's (saga/local/apigw.py)

_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _typed(values: Mapping[str, Any]) -> list[dict[str, str]]:
    """[{"name", "type", "value"}] as Bedrock sends them: each value as a string."""
    return [
        {
            "name": name,
            "type": _TYPES[type(value)],
            "value": str(value).lower() if isinstance(value, bool) else str(value),
        }
        for name, value in values.items()
    ]


def action_event(
    api_path: str,
    http_method: str,
    parameters: Mapping[str, Any] | None = None,
    body: Mapping[str, Any] | None = None,
    *,
    session_id: str = SESSION,
    input_text: str = "I'd like a loan of 10000 over 36 months",
    user: str | None = "user-1",
) -> dict[str, Any]:
    """The input event Bedrock sends a Lambda action-group executor for one API operation."""
    event: dict[str, Any] = {
        "messageVersion": "1.0",
        "agent": dict(AGENT),
        "inputText": input_text,
        "sessionId": session_id,
        "actionGroup": ACTION_GROUP,
        "apiPath": api_path,
        "httpMethod": http_method,
        "parameters": _typed(parameters or {}),
        # (the end user the calling application names: functions/orchestrator/bedrock.py USER_ATTRIBUTE)
        "sessionAttributes": {"channel": "web"} | ({} if user is None else {"userId": user}),
        "promptSessionAttributes": {},
    }
    if body is not None:
        event["requestBody"] = {"content": {"application/json": {"properties": _typed(body)}}}
    return event


# The response format's keys, as the page lists them for an API-schema action group.
RESPONSE_KEYS = {"messageVersion", "response"}
RESPONSE_FIELDS = {"actionGroup", "apiPath", "httpMethod", "httpStatusCode", "responseBody"}
