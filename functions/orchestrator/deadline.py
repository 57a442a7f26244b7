"""One time budget per request (D8): every loans-api attempt, every retry's sleep and every DynamoDB
call of a request draws on the same deadline, taken from the Lambda context. A step that cannot fit
in what is left is not started: the agent gets 503 `retryable: true` before the function (or API
Gateway, 29 s) times out and answers with a bare 502/504 instead. Each step's worst case is here
(a DynamoDB call's, what applying an answer needs) but a loans-api attempt's, which its timeouts set
(functions/orchestrator/bootstrap.py `loans_attempt_seconds`). The function's timeout, and why it is
API Gateway's less a cold init: shared/topology.py `ORCHESTRATOR`."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from shared import aws
from shared.errors import UpstreamUnavailable

if TYPE_CHECKING:
    from botocore.client import BaseClient

# Kept back from the Lambda's remaining time for what follows the last budgeted step: rendering the
# answer and returning it.
RESPONSE_MARGIN_SECONDS = 0.5
# The orchestrator's own DynamoDB calls get a small budget: each call is started only if its worst
# case fits the request's deadline (tests/integration/test_deadline.py runs every command's worst case).
DYNAMO_BUDGET = aws.AwsCallBudget(connect_timeout=0.2, read_timeout=0.4, max_attempts=2)
# After loans-api answered, the request still applies the event: a CAS write and, if it lost, a read
# and a second write. A loans-api attempt is started only if it leaves this much.
APPLY_RESERVE_SECONDS = 2 * DYNAMO_BUDGET.worst_case_seconds()

ClientT = TypeVar("ClientT", bound="BaseClient")


class LambdaContext(Protocol):
    def get_remaining_time_in_millis(self) -> int: ...


class DeadlineReached(UpstreamUnavailable):
    """The request's budget cannot fit the next step. Nothing half-done is left behind: each agent
    command is one loans-api transaction, so repeating the request is safe."""


class RequestDeadline:
    """The budget of the request being served (one request per process at a time, as in Lambda)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._ends_at = math.inf

    def start(self, context: LambdaContext) -> None:
        """Start a request's budget: the Lambda's remaining time less the response margin."""
        seconds = context.get_remaining_time_in_millis() / 1000 - RESPONSE_MARGIN_SECONDS
        self._ends_at = self._clock() + seconds

    def remaining(self) -> float:
        return self._ends_at - self._clock()

    def fits(self, seconds: float) -> bool:
        return self.remaining() >= seconds

    def require(self, seconds: float, step: str) -> None:
        """DeadlineReached unless `seconds` (the step's worst case) fit in what is left."""
        if not self.fits(seconds):
            raise DeadlineReached(
                f"the request's time budget cannot fit {step} (worst case {seconds:.1f} s, "
                f"{max(0.0, self.remaining()):.1f} s left); repeating the same request is safe"
            )

    def guard_botocore(self, client: ClientT, seconds: float) -> ClientT:
        """Make every call of a botocore `client` require its worst case (`seconds`) first."""

        def before_call(**_: Any) -> None:
            self.require(seconds, "a DynamoDB call")

        client.meta.events.register(f"before-call.{client.meta.service_model.service_id.hyphenize()}", before_call)
        return client
