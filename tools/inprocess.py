"""An in-process stand-in for the HTTP hop from the orchestrator to loans-api, for tests and the
benchmark's deterministic counts: a urllib3-like requester that serves each request with a proxy
handler (as API Gateway would) and can inject one fault per request."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import urllib3

from saga.local.apigw import HttpResponse, LambdaContextStub, http_response, proxy_event
from shared.entry_points import Handler

# A fault is a name (below) or a callable run before the request is served: another command that
# lands between two attempts of this one, for instance.
Fault = str | Callable[[], None]


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
    - "timeout": a read timeout without reaching the handler;
    - "hold": a read timeout, while the request itself is held back and reaches the handler only
      when `deliver_held` is called (API Gateway does not stop a Lambda whose caller gave up: an
      abandoned attempt can commit late);
    - a callable: run first, then the request is served normally.
    Requests with no fault left are served normally."""

    def __init__(self, handler: Handler, name: str = "loans-api") -> None:
        self.handler = handler
        self.name = name
        self.faults: list[Fault] = []
        self.calls: list[tuple[str, str]] = []
        self.persistent_fault: str | None = None
        self.held: list[HeldRequest] = []

    def request(
        self, method: str, url: str, body: bytes | None = None, headers: Mapping[str, str] | None = None, **_: Any
    ) -> FakeHttpResponse:

        parts = urlsplit(url)
        path = parts.path
        self.calls.append((method, path))
        target = f"{path}?{parts.query}" if parts.query else path  # what is served: the query too
        fault = self.faults.pop(0) if self.faults else self.persistent_fault
        if callable(fault):
            fault()
            fault = None
        if fault == "5xx":
            return FakeHttpResponse(503, b'{"title":"unavailable"}', {})
        if fault in ("timeout", "hold"):
            if fault == "hold":
                self.held.append(HeldRequest(method, target, dict(headers or {}), body))
            raise urllib3.exceptions.ReadTimeoutError(None, url, "read timed out")  # type: ignore[arg-type]
        result = self._serve(HeldRequest(method, target, dict(headers or {}), body))
        if fault == "lose":
            raise urllib3.exceptions.ProtocolError("Connection aborted: response lost after commit")
        return FakeHttpResponse(result.status, result.body, result.headers)

    def deliver_held(self) -> list[HttpResponse]:
        """Serve every held request now (the late commits); their answers reach no caller."""
        held, self.held = self.held, []
        return [self._serve(request) for request in held]

    def _serve(self, request: HeldRequest) -> HttpResponse:
        event = proxy_event(request.method, request.path, request.headers, request.body)
        return http_response(self.handler(event, LambdaContextStub(self.name)))


@dataclass(frozen=True)
class HeldRequest:
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
