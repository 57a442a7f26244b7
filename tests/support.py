"""Helpers shared by the integration, e2e and chaos tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Metrics

from saga.local.apigw import HttpResponse, LambdaContextStub, http_response, proxy_event

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def quiet_metrics(service: str) -> Metrics:
    return Metrics(namespace="LoanSagaTests", service=service)


@dataclass
class ApiClient:
    """Calls a proxy handler in-process the way API Gateway would."""

    handler: Handler
    name: str = "api"

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        raw: bytes | None = None,
    ) -> HttpResponse:
        payload = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        event = proxy_event(method, path, all_headers, payload)
        return http_response(self.handler(event, LambdaContextStub(self.name)))

    def post(self, path: str, body: Any = None, key: str | None = None, **kwargs: Any) -> HttpResponse:
        headers = dict(kwargs.pop("headers", {}) or {})
        if key is not None:
            headers["Idempotency-Key"] = key
        return self.request("POST", path, body, headers=headers, **kwargs)

    def get(self, path: str) -> HttpResponse:
        return self.request("GET", path)


def json_of(response: HttpResponse) -> Any:
    return json.loads(response.body)


@dataclass
class FakeHttpResponse:
    status: int
    data: bytes
    headers: dict[str, str]


class InProcessHttp:
    """A urllib3-like requester that serves requests with an in-process proxy handler and can
    inject faults, one per request, from `faults`:
    - "lose": the handler runs (the write commits), then the connection drops before the reply;
    - "5xx": a 503 without reaching the handler;
    - "timeout": a read timeout without reaching the handler.
    Requests with no fault left are served normally."""

    def __init__(self, handler: Handler, name: str = "loans-api") -> None:
        self.handler = handler
        self.name = name
        self.faults: list[str] = []
        self.calls: list[tuple[str, str]] = []
        self.persistent_fault: str | None = None

    def request(
        self, method: str, url: str, body: bytes | None = None, headers: Mapping[str, str] | None = None, **_: Any
    ) -> FakeHttpResponse:
        from urllib.parse import urlsplit

        import urllib3

        path = urlsplit(url).path
        self.calls.append((method, path))
        fault = self.faults.pop(0) if self.faults else self.persistent_fault
        if fault == "5xx":
            return FakeHttpResponse(503, b'{"title":"unavailable"}', {})
        if fault == "timeout":
            raise urllib3.exceptions.ReadTimeoutError(None, url, "read timed out")  # type: ignore[arg-type]
        result = http_response(
            self.handler(proxy_event(method, path, dict(headers or {}), body), LambdaContextStub(self.name))
        )
        if fault == "lose":
            raise urllib3.exceptions.ProtocolError("Connection aborted: response lost after commit")
        return FakeHttpResponse(result.status, result.body, result.headers)
