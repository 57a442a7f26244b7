"""Retries of calls to loans-api (D8): one module, one secret. Only here do retries exist; the
command service does not know about them (the decorator is composed in bootstrap)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from aws_lambda_powertools import Logger

from functions.orchestrator.deadline import RequestDeadline
from shared.backoff import Backoff
from shared.errors import UpstreamUnavailable
from shared.loans_client import LoansClient, LoansReply, LoansRequest, TransientLoansError

logger = Logger(child=True)


@dataclass(frozen=True)
class RetryPolicy(Backoff):
    """The retry schedule (D8): 5 attempts, 1 s base, x2 growth, additive jitter: the delay before attempt n
    (n >= 2) is base * multiplier**(n-2) + U(0, max_jitter). Jitter is added, never subtracted, so the floor
    of the whole schedule is exact: 1 + 2 + 4 + 8 = 15 s (shared/backoff.py, every retry loop's shape)."""

    attempts: int = 5
    base_delay: float = 1.0
    multiplier: float = 2.0
    max_jitter: float = 0.1


class RetryingLoansClient:
    """LoansClient decorator: retries transient failures (5xx, 429, transport) on the schedule; any
    other 4xx is terminal and returned at once. Safe because every request carries its idempotency
    key. Every attempt and every sleep draws on the request's one deadline: an attempt is started
    only if its worst case (`attempt_seconds`) plus what the request needs afterwards
    (`reserve_seconds`: applying the answer) still fits; otherwise the request ends with 503.

    The first attempt may go through its own client (`first`, worst case `first_attempt_seconds`): one
    whose read timeout outlasts a cold loans-api, so a call after idle is not cut off and retried into a
    second cold instance (no cold chain, shared/topology.py `cold_loans_api_seconds`). The retries go
    through `inner` (the deployed defaults wait as long, shared/loans_client.py); the deadline decides
    how many attempts start."""

    def __init__(
        self,
        inner: LoansClient,
        policy: RetryPolicy,
        deadline: RequestDeadline,
        attempt_seconds: float,
        reserve_seconds: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
        unit_random: Callable[[], float] = random.random,
        first: LoansClient | None = None,
        first_attempt_seconds: float | None = None,
    ) -> None:
        self._inner = inner
        self._first = first or inner
        self._first_attempt_seconds = attempt_seconds if first_attempt_seconds is None else first_attempt_seconds
        self._policy = policy
        self._deadline = deadline
        self._attempt_seconds = attempt_seconds
        self._reserve = reserve_seconds
        self._sleep = sleep
        self._random = unit_random

    def send(self, request: LoansRequest) -> LoansReply:
        needed = self._attempt_seconds + self._reserve
        first = self._first_attempt_seconds + self._reserve
        self._deadline.require(first, f"a call to loans-api ({request.method} {request.path})")
        for attempt in range(1, self._policy.attempts + 1):
            try:
                return (self._first if attempt == 1 else self._inner).send(request)
            except TransientLoansError as error:
                if attempt == self._policy.attempts:
                    logger.warning(
                        "loans-api unavailable after every attempt",
                        extra={"path": request.path, "attempts": attempt, "error": str(error)},
                    )
                    break
                delay = self._policy.delay(attempt, self._random())
                if not self._deadline.fits(delay + needed):
                    logger.warning(
                        "no time left in the request's budget for another attempt",
                        extra={"path": request.path, "attempts": attempt, "error": str(error)},
                    )
                    break
                logger.info(
                    "transient loans-api failure, retrying",
                    extra={
                        "path": request.path,
                        "attempt": attempt,
                        "delay_s": round(delay, 3),
                        "error": str(error),
                        "idempotency_key": request.idempotency_key,
                    },
                )
                self._sleep(delay)
        raise UpstreamUnavailable(
            f"loans-api did not answer within this request's attempts ({attempt} of {self._policy.attempts}); "
            "repeating this request is safe (its one loans-api command carries its idempotency key, so nothing "
            "is applied twice)"
        )
