"""One deadline per request (D8): every command, from every state it is legal in, run with the worst
timing the configuration allows: each loans-api attempt runs out its connect + read timeouts, each
DynamoDB call its botocore budget, each retry sleeps its longest jittered delay. Time is fake, so
this runs in seconds; the orchestrator, its retry decorator, its deadline and its DynamoDB client
are the real ones (bootstrap), on a moto server, with the function timeout that infra deploys."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3

from functions.orchestrator import bootstrap
from functions.orchestrator.deadline import DYNAMO_BUDGET, RESPONSE_MARGIN_SECONDS
from functions.orchestrator.settings import OrchestratorSettings
from saga.local.apigw import LambdaContextStub, http_response, proxy_event
from shared import aws
from shared.topology import COLD_INIT_ALLOWANCE_SECONDS, ORCHESTRATOR
from tests.integration.journeys import truth_names
from tests.support import FakeClock, json_of, quiet_metrics
from tools.inprocess import InProcessHttp

API_GATEWAY_INTEGRATION_TIMEOUT = 29.0


class SlowWire:
    """Every attempt at loans-api takes its whole connect + read timeout (the first attempt's, or a
    retry's: what the attempt was given), then meets its fault."""

    def __init__(self, inner: InProcessHttp, clock: FakeClock) -> None:
        self.inner = inner
        self.clock = clock

    def request(self, *args: Any, **kwargs: Any) -> Any:
        timeout: urllib3.Timeout = kwargs["timeout"]
        self.clock.now += float(timeout.connect_timeout) + float(timeout.read_timeout)  # type: ignore[arg-type]
        return self.inner.request(*args, **kwargs)


@pytest.fixture
def clock() -> Iterator[FakeClock]:
    """A fake clock that every DynamoDB call advances by its worst case (registered on the shared
    botocore session before the orchestrator's client is made, removed afterwards)."""
    fake = FakeClock()
    worst = DYNAMO_BUDGET.worst_case_seconds()

    def charge(**_: Any) -> None:
        fake.now += worst

    events = aws.session().get_component("event_emitter")
    events.register("after-call.dynamodb", charge, unique_id="worst-case-clock")
    yield fake
    events.unregister("after-call.dynamodb", unique_id="worst-case-clock")


def slow_orchestrator(settings: OrchestratorSettings, loans_http: InProcessHttp, clock: FakeClock) -> Any:
    policy = bootstrap.retry_policy(settings)

    def longest_sleep(seconds: float) -> None:
        clock.now += seconds + policy.max_jitter  # the schedule's ceiling, not what was drawn

    wire = SlowWire(loans_http, clock)
    ports = bootstrap.Ports(http=wire, sleep=longest_sleep, monotonic=clock)
    return bootstrap.build(settings, quiet_metrics("orchestrator"), ports)


# (state to reach first, command, body, agent key)
COMMANDS = [
    ("created", "simulate", {"amount": 10000, "termMonths": 36}, None),
    ("created", "simulate", {"amount": 10000, "termMonths": 36}, "agent-key"),
    ("simulated", "simulate", {"amount": 10000, "termMonths": 36}, None),
    ("accepted", "simulate", {"amount": 10000, "termMonths": 36}, None),
    ("simulated", "accept", None, None),
    ("accepted", "disburse", None, None),
    ("created", "cancel", None, None),
    ("simulated", "cancel", None, None),
    ("accepted", "cancel", None, None),
    ("stale", "accept", None, None),  # the record is behind the truth: catch up (GET), then accept
    ("accepted", "accept", None, None),  # a repeat on a live record: catch-up first
]
# What loans-api does to each attempt: every attempt times out; or each call gets through only on its
# third or fifth attempt (so a request can spend most of a schedule and still have calls to make).
FAULTS = {
    "all-time-out": ("timeout", []),
    "third-attempt-answers": (None, ["timeout"] * 2 + ["ok"] + ["timeout"] * 2 + ["ok"]),
    "fifth-attempt-answers": (None, ["timeout"] * 4 + ["ok"] + ["timeout"] * 4 + ["ok"]),
}


@pytest.mark.parametrize("faults", FAULTS)
@pytest.mark.parametrize(
    ("state", "name", "body", "key"),
    COMMANDS,
    ids=[f"{name}-from-{state}" + ("-with-an-agent-key" if key else "") for state, name, _, key in COMMANDS],
)
def test_every_command_answers_within_the_function_timeout(
    orchestrator, orchestrator_settings, loans_http, clock, state, name, body, key, faults
):
    # Given a journey brought to `state` with a healthy link
    journey = json_of(orchestrator.post("/journeys", {"customerId": "c-1"}, key="c-1"))["journeyId"]
    if state == "stale":
        loans_http.persistent_fault = "lose"  # loans-api moves to simulated; the record never hears
    if state in ("simulated", "accepted", "stale"):
        orchestrator.post(f"/journeys/{journey}/simulate", {"amount": 10000, "termMonths": 36})
    if state == "accepted":
        orchestrator.post(f"/journeys/{journey}/accept", truth_names(loans_http, journey, "accept"))
    if body is None and name in ("accept", "disburse"):
        body = truth_names(loans_http, journey, name)  # what the agent names: what the journey holds
    # And the worst timing from here on, in the deployed function's budget
    loans_http.persistent_fault, loans_http.faults = FAULTS[faults][0], list(FAULTS[faults][1])
    handler = slow_orchestrator(orchestrator_settings, loans_http, clock)
    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
    event = proxy_event(
        "POST", f"/journeys/{journey}/{name}", headers, None if body is None else json.dumps(body).encode()
    )
    # When the command runs
    response = http_response(handler(event, LambdaContextStub("orchestrator", ORCHESTRATOR.timeout_seconds)))
    # Then it answers, within the function's timeout, and so, after a cold init of up to the allowance,
    # before API Gateway's 29 s (which count the init); never a 5xx that is not retryable
    assert clock.now <= ORCHESTRATOR.timeout_seconds - RESPONSE_MARGIN_SECONDS, clock.now
    assert COLD_INIT_ALLOWANCE_SECONDS + clock.now < API_GATEWAY_INTEGRATION_TIMEOUT
    assert response.status in (200, 409, 503), response.body
    if response.status == 503:
        assert json_of(response)["retryable"] is True


def test_the_default_schedule_still_has_its_15_second_floor_when_failures_are_fast(orchestrator, loans_http, sleeps):
    # Fast failures (a reset, a 503) leave the budget room for all five attempts: chaos relies on it.
    journey = json_of(orchestrator.post("/journeys", {"customerId": "c-1"}, key="c-1"))["journeyId"]
    loans_http.persistent_fault = "5xx"
    response = orchestrator.post(f"/journeys/{journey}/simulate", {"amount": 10000, "termMonths": 36})
    assert response.status == 503
    assert sleeps[:4] == pytest.approx([1.0, 2.0, 4.0, 8.0], abs=0.11)
    assert len(loans_http.calls) == 5
