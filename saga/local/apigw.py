"""API Gateway REST proxy integration, locally: an HTTP request becomes the event a Lambda behind
API Gateway receives, and the handler's result becomes the HTTP response."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes


def proxy_event(
    method: str, raw_path: str, headers: Mapping[str, str], body: bytes | None, stage: str = "local"
) -> dict[str, Any]:
    """The REST API (v1) proxy event for one request. Resource matching is left to the app's
    resolver, as API Gateway's `{proxy+}` resource does."""
    parts = urlsplit(raw_path)
    query = parse_qsl(parts.query, keep_blank_values=True)
    text: str | None = None
    encoded = False
    if body:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text, encoded = base64.b64encode(body).decode(), True
    header_map = dict(headers)
    return {
        "resource": "/{proxy+}",
        "path": parts.path,
        "httpMethod": method.upper(),
        "headers": header_map,
        "multiValueHeaders": {name: [value] for name, value in header_map.items()},
        "queryStringParameters": dict(query) or None,
        "multiValueQueryStringParameters": _multi(query) or None,
        "pathParameters": {"proxy": parts.path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method.upper(),
            "path": f"/{stage}{parts.path}",
            "stage": stage,
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {"sourceIp": "127.0.0.1", "userArn": caller_arn(header_map), "caller": None},
        },
        "body": text,
        "isBase64Encoded": encoded,
    }


# Locally there is no SigV4: this header names the caller, as API Gateway's IAM authorization
# fills `requestContext.identity.userArn` with the signer's ARN. Functions never read the header.
CALLER_HEADER = "X-Saga-Caller"
DEFAULT_CALLER = "arn:aws:iam::000000000000:user/local-agent"


def caller_arn(headers: Mapping[str, str]) -> str:
    """The caller's ARN for a local request: the X-Saga-Caller header, or the default local agent."""
    named = next((value for name, value in headers.items() if name.lower() == CALLER_HEADER.lower()), None)
    return named or DEFAULT_CALLER


def _multi(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for name, value in pairs:
        grouped.setdefault(name, []).append(value)
    return grouped


def http_response(result: Mapping[str, Any]) -> HttpResponse:
    """The HTTP response API Gateway makes of a proxy integration's result."""
    headers = {str(k): str(v) for k, v in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[str(name)] = ", ".join(str(v) for v in values)
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode()
    return HttpResponse(status=int(result.get("statusCode", 200)), headers=headers, body=body)


class LambdaContextStub:
    """The few LambdaContext attributes Powertools reads, for handlers invoked locally."""

    def __init__(self, function_name: str, timeout_seconds: float = 30.0) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:000000000000:function:{function_name}"
        self.memory_limit_in_mb = 512
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))
