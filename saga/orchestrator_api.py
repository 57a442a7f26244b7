"""The MCP server's port to the orchestrator's HTTP API (`OrchestratorApi`) and its adapter
(`HttpOrchestratorApi`, urllib3, optionally SigV4-signed for a deployed stack): one attempt per call,
and the server's own retries of a transport failure (`TransportRetry`). The tools come from the
OpenAPI document the API serves (`fetch_document`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import urllib3

from shared.backoff import Backoff
from shared.idempotency import REPLAYED_HEADER
from shared.loans_client import JsonHttpEndpoint

DOCUMENT_PATH = "/openapi.json"


@dataclass(frozen=True)
class ApiRequest:
    """One call of the orchestrator's API: method, path (from the base URL), JSON body, headers."""

    method: str
    path: str
    body: dict[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ApiReply:
    """The API's answer: its status, body and headers."""

    status: int
    body: Any  # the JSON answer, or the text of one that is not JSON
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def replayed(self) -> bool:
        """The answer is the recorded one of an earlier request (Idempotent-Replayed: true)."""
        return str(self.headers.get(REPLAYED_HEADER, self.headers.get(REPLAYED_HEADER.lower(), ""))).lower() == "true"


class ApiUnreachable(Exception):
    """The request may or may not have reached the API (refused, reset, timed out): retry it, with its key."""


class OrchestratorApi(Protocol):
    """The port to the orchestrator's HTTP API."""

    def send(self, request: ApiRequest) -> ApiReply:
        """One attempt; ApiUnreachable when the transport failed."""
        ...


class HttpOrchestratorApi(JsonHttpEndpoint):
    """OrchestratorApi over HTTP(S) with urllib3: one attempt per call (JourneyTools retries), signed with
    SigV4 (service execute-api) when a signer is given."""

    def send(self, request: ApiRequest) -> ApiReply:
        """One attempt; ApiUnreachable when the transport failed."""
        headers = {"Accept": "application/json", **request.headers}
        if request.body is not None:
            headers["Content-Type"] = "application/json"
        try:
            response = self._request(request.method, request.path, request.body, headers)
        except urllib3.exceptions.HTTPError as error:
            raise ApiUnreachable(f"{type(error).__name__}: {error}") from error
        try:
            payload: Any = json.loads(response.data) if response.data else None
        except ValueError:
            payload = response.data.decode(errors="replace")
        return ApiReply(response.status, payload, dict(response.headers))


@dataclass(frozen=True)
class TransportRetry(Backoff):
    """The server's own retries of a transport failure, each with the same request and key: 3 attempts,
    0.5 s then 1 s between them. The API's own answers are never retried here: a 503 problem already spent
    the orchestrator's retry budget, and the model decides from its `retryable`."""

    attempts: int = 3
    base_delay: float = 0.5

    def send(self, api: OrchestratorApi, request: ApiRequest, sleep: Callable[[float], None]) -> ApiReply:
        """`request` sent until it gets an answer, at most `attempts` times; ApiUnreachable after the last."""
        delays = self.delays()
        while True:
            try:
                return api.send(request)
            except ApiUnreachable:
                if not delays:
                    raise
                sleep(delays.pop(0))


# What a gateway answers while the function behind it is not ready: waited through like no answer at all.
NOT_READY = frozenset({502, 503, 504})


class UnreadableDocument(Exception):
    """The orchestrator's OpenAPI document could not be fetched or read; `unreachable`: nothing answered."""

    def __init__(self, message: str, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


def fetch_document(api: OrchestratorApi, retry: TransportRetry, sleep: Callable[[float], None]) -> dict[str, Any]:
    """The orchestrator's OpenAPI document, the source of every tool."""
    try:
        reply = retry.send(api, ApiRequest("GET", DOCUMENT_PATH), sleep)
    except ApiUnreachable as error:
        raise UnreadableDocument(f"unreachable: {error}", unreachable=True) from error
    if reply.status in NOT_READY:  # a gateway in front of a function still starting (or deploying)
        raise UnreadableDocument(f"GET {DOCUMENT_PATH} answered {reply.status}: not ready yet", unreachable=True)
    if reply.status != 200 or not isinstance(reply.body, dict) or not isinstance(reply.body.get("paths"), dict):
        raise UnreadableDocument(f"GET {DOCUMENT_PATH} answered {reply.status}: {str(reply.body)[:300]}")
    return reply.body


def wait_for_document(
    api: OrchestratorApi,
    retry: TransportRetry,
    wait_seconds: float,
    sleep: Callable[[float], None],
    monotonic: Callable[[], float],
    waiting: Callable[[str], None],
    pause_seconds: float = 1.0,
) -> dict[str, Any]:
    """`fetch_document`, tried again while the orchestrator does not answer (it is starting), until
    `wait_seconds` have passed; `waiting(why)` is told once, when the wait begins. An answer that is not
    the document is an error at once: waiting cannot mend it."""
    deadline = monotonic() + wait_seconds
    told = False
    while True:
        try:
            return fetch_document(api, retry, sleep)
        except UnreadableDocument as error:
            if not error.unreachable or not wait_seconds > 0:  # (nan included)
                raise
            if not told:
                waiting(str(error))
                told = True
            left = deadline - monotonic()
            if left <= 0:
                raise
            sleep(min(pause_seconds, left))
