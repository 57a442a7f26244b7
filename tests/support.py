"""Helpers shared by the integration, e2e and chaos tests."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aws_lambda_powertools import Metrics

from saga.local.apigw import HttpResponse, LambdaContextStub, http_response, proxy_event
from shared import aws

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

# How long a subprocess the tests run (a `saga` command, `make -n`, a fresh interpreter's import check) may take
# before it counts as hung: it ends as soon as it is done, and at a load average of 20 on 2 cores an import
# that takes 2 s of CPU can take a minute, so a guard of a minute would turn a busy machine into a red test.
PROCESS_PATIENCE = 600.0

# The tests' own calls to the local AWS endpoint (moto, in a process of its own, serving one request at a
# time): a read waits as long as a busy machine makes it, since the default budget (shared/aws.py: 2 s a
# read, 3 attempts) is a Lambda's, and on a loaded machine it both fails the call and repeats it, and a
# repeated call is not harmless: moto may have done the first (a second SendMessage, a ReceiveMessage that
# hides ten more messages). A hang guard, not a budget: an attempt is retried only after a real hang.
PATIENT_AWS = aws.AwsCallBudget(connect_timeout=5.0, read_timeout=120.0, max_attempts=3)
# The same patience, one attempt: a test that counts what one call did (a retry would hide or double it).
ONE_PATIENT_ATTEMPT = aws.AwsCallBudget(connect_timeout=5.0, read_timeout=120.0, max_attempts=1)

# The orchestrator's operations an agent calls (its document also has `health`).
AGENT_OPERATIONS = frozenset(
    {"createJourney", "listJourneys", "getJourney", "simulateLoan", "acceptSimulation", "disburseLoan", "cancelJourney"}
)


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
        headers: Mapping[str, str | None] | None = None,
        raw: bytes | None = None,
    ) -> HttpResponse:
        """`headers` add to (or replace) `Content-Type: application/json`; a header given as None is not sent."""
        payload = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        given = {"Content-Type": "application/json", **(headers or {})}
        event = proxy_event(method, path, {name: value for name, value in given.items() if value is not None}, payload)
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


class FakeClock:
    """A monotonic clock that moves only when a test moves it (`now += seconds`)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def uuid7_at(moment: datetime) -> str:
    """A UUIDv7 minted at `moment` (RFC 9562: 48 bits of Unix milliseconds, version 7, variant 10,
    random bits): an event id as loans-api would have minted it then."""
    millis = int(moment.timestamp() * 1000)
    random = uuid.uuid4().int
    value = (millis << 80) | (0x7 << 76) | (random & ((1 << 12) - 1)) << 64 | (0b10 << 62) | (random >> 66)
    return str(uuid.UUID(int=value))
