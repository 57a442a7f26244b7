"""Amazon Bedrock Agents' action-group events as orchestrator requests, and back (pure: no I/O).

An action group whose executor is a Lambda function never calls HTTP: Bedrock invokes the function with
the operation the agent chose (`apiPath`, `httpMethod`), its `parameters` and `requestBody`, each value a
string with the type the schema gives it, and expects `{"messageVersion": "1.0", "response": {...,
"httpStatusCode", "responseBody": {"application/json": {"body": "<JSON text>"}}}}` back
(https://docs.aws.amazon.com/bedrock/latest/userguide/agents-lambda.html). `request` makes the API Gateway
proxy event the orchestrator's own resolver answers (so keys, receipts and problems are the API's), and
`response` wraps its answer, record or problem document, in Bedrock's format.

The agent never invents an Idempotency-Key (the exported schema has none, shared/openapi.py `bedrock`).
The event carries no id of its own invocation, nor of the turn; what a retry of the same action repeats is
the whole action: the session, the turn, the operation and its arguments. So the key is a digest of those
(`idempotency_key`): Bedrock re-invoking the action is a replay, and so is the agent calling it again with
the same arguments in the same turn. The turn is the `turnId` the caller of InvokeAgent puts in
`sessionState.promptSessionAttributes` (they last one turn): send a fresh one with every turn (docs/AGENTS.md).
Without one, the turn is its words (`inputText`), and a later turn with the same words and the same
arguments ("yes", to the same terms) is answered as the earlier one.
Keys are scoped by the caller (`caller_arn`), as the API scopes a signed caller's: the agent, and the end
user the application names in `sessionState.sessionAttributes.userId` of InvokeAgent (attributes the model
cannot set). Every user of one agent reaches the executor as that agent, so without a `userId` they would
share one scope, and listJourneys would show any of them the journeys of any customer id they guess:
listJourneys is refused (403 `user-not-bound`) unless the application names its user.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from shared.idempotency import HEADER as KEY_HEADER

MESSAGE_VERSION = "1.0"
JSON = "application/json"
_TYPED = ("number", "integer", "boolean", "array", "object")


# The session attribute the calling application names its end user with (docs/AGENTS.md).
USER_ATTRIBUTE = "userId"


class NotAnActionEvent(ValueError):
    """The event is not an API-schema action-group invocation (no apiPath or httpMethod)."""


class UserNotBound(ValueError):
    """listJourneys asked through a session whose application named no end user (`USER_ATTRIBUTE`)."""


def _user(event: Mapping[str, Any]) -> str | None:
    attributes = event.get("sessionAttributes")
    user = attributes.get(USER_ATTRIBUTE) if isinstance(attributes, Mapping) else None
    return user if isinstance(user, str) and user else None


def caller_arn(event: Mapping[str, Any], region: str, account: str, partition: str = "aws") -> str:
    """The agent that called, as an ARN, and the end user its application named, if any: the principal
    keys and a customer's journeys are scoped by."""
    agent = event.get("agent")
    agent_id = str((agent.get("id") if isinstance(agent, Mapping) else None) or "unknown")
    arn = f"arn:{partition}:bedrock:{region}:{account}:agent/{agent_id}"
    user = _user(event)
    return arn if user is None else f"{arn}/user/{quote(user, safe='', errors='surrogatepass')}"


def arguments(items: Any) -> dict[str, Any]:
    """Bedrock's `[{"name", "type", "value"}]` as values of their JSON type (each comes as a string); a
    value that does not read as its type stays a string, and the API answers 422 naming it."""
    found: dict[str, Any] = {}
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            continue
        value = item.get("value")
        if isinstance(value, str) and item.get("type") in _TYPED:
            with contextlib.suppress(ValueError):
                value = json.loads(value)
        found[item["name"]] = value
    return found


def _turn(event: Mapping[str, Any]) -> Any:
    """The turn an action belongs to: the caller's `turnId` (promptSessionAttributes), else its words."""
    attributes = event.get("promptSessionAttributes")
    turn_id = attributes.get("turnId") if isinstance(attributes, Mapping) else None
    return ["turnId", turn_id] if isinstance(turn_id, str) and turn_id else ["inputText", event.get("inputText")]


def idempotency_key(event: Mapping[str, Any]) -> str:
    """The key of this action: the same for every invocation of the same action in the same turn."""
    return _key(event, arguments(event.get("parameters")), _body(event))


def _key(event: Mapping[str, Any], parameters: dict[str, Any], body: dict[str, Any] | None) -> str:
    action = {
        "session": event.get("sessionId"),
        "turn": _turn(event),
        "actionGroup": event.get("actionGroup"),
        "operation": [event.get("httpMethod"), event.get("apiPath")],
        "parameters": parameters,
        "body": body,
    }
    digest = hashlib.sha256(json.dumps(action, sort_keys=True, default=str).encode()).hexdigest()
    return f"bedrock-{digest[:48]}"


def request(event: Mapping[str, Any], caller: str) -> dict[str, Any]:
    """The API Gateway (REST, proxy) event of the orchestrator request this action is."""
    method, template = event.get("httpMethod"), event.get("apiPath")
    if not isinstance(method, str) or not isinstance(template, str) or not template.startswith("/"):
        raise NotAnActionEvent("an action-group event names its operation with apiPath and httpMethod")
    for field, kind, named in (
        ("agent", Mapping, "an object"),
        ("parameters", list, "a list"),
        ("requestBody", Mapping, "an object"),
    ):
        if event.get(field) is not None and not isinstance(event.get(field), kind):
            raise NotAnActionEvent(f"an action-group event's {field} is {named}")
    if method.upper() == "GET" and template == "/journeys" and _user(event) is None:
        raise UserNotBound(
            "listJourneys through a Bedrock agent needs the application to name its end user: every user of "
            f"the agent calls as the agent, so set sessionState.sessionAttributes.{USER_ATTRIBUTE} in InvokeAgent "
            "(the model cannot set it); each user then lists only the journeys created in their sessions"
        )
    # The action's parameters and body are read once; the body goes on as JSON text, which the
    # orchestrator's guard parses (once: shared/guards.py).
    parameters, body = arguments(event.get("parameters")), _body(event)
    key = _key(event, parameters, body)
    path, query = template, {}
    for name, value in parameters.items():
        placeholder = "{" + name + "}"
        if placeholder in path:
            # (a lone surrogate, which UTF-8 cannot spell, is quoted as its bytes: the API refuses them in words)
            path = path.replace(placeholder, quote(str(value), safe="", errors="surrogatepass"))
        else:
            query[name] = str(value)
    headers = {"Content-Type": JSON, "Accept": JSON}
    if method.upper() == "POST":
        headers[KEY_HEADER] = key
    return {
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method.upper(),
        "headers": headers,
        "multiValueHeaders": {name: [value] for name, value in headers.items()},
        "queryStringParameters": query or None,
        "multiValueQueryStringParameters": {name: [value] for name, value in query.items()} or None,
        "pathParameters": {"proxy": path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method.upper(),
            "path": path,
            "stage": "bedrock",
            "requestId": key,
            "identity": {"userArn": caller, "caller": caller, "sourceIp": "bedrock.amazonaws.com"},
        },
        "body": None if body is None else json.dumps(body),
        "isBase64Encoded": False,
    }


def response(event: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """The orchestrator's proxy answer in Bedrock's response format: its status, and its body (the
    Control Record, or the problem document) as the JSON text the agent reads."""
    body = answer.get("body") or "{}"
    return {
        "messageVersion": MESSAGE_VERSION,
        "response": {
            "actionGroup": event.get("actionGroup"),
            "apiPath": event.get("apiPath"),
            "httpMethod": event.get("httpMethod"),
            "httpStatusCode": int(answer.get("statusCode", 500)),
            "responseBody": {JSON: {"body": body}},
        },
    }


def _body(event: Mapping[str, Any]) -> dict[str, Any] | None:
    request_body = event.get("requestBody")
    contents = request_body.get("content") if isinstance(request_body, Mapping) else None
    content = contents.get(JSON) if isinstance(contents, Mapping) else None
    if not isinstance(content, Mapping):
        return None
    return arguments(content.get("properties"))
