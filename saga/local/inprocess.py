"""An in-process stand-in for the HTTP hop from the orchestrator to loans-api, for tests and the
benchmark's deterministic counts: a urllib3-like requester that serves each request with a proxy
handler (as API Gateway would) and can inject one fault per request."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import urllib3

from saga.local.apigw import LambdaContextStub, http_response, proxy_event

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


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
