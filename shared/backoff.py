"""Every retry loop's schedule, one shape: a bounded number of attempts, and before each retry a pause that
grows by a factor, plus up to `max_jitter` seconds of jitter, added, never subtracted (so the schedule's
floor is exact and a test can assert it). Used by the orchestrator's loans-api retries (D8,
functions/orchestrator/retry.py `RetryPolicy`), the rounds of a batch read (shared/batch_read.py), the MCP
server's transport retries (saga/orchestrator_api.py `TransportRetry`) and the pause before deciding a
command again after a lost race (`after_lost_race`, below)."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """`attempts` in all; the pause before retry n (n >= 1) is base_delay * multiplier**(n-1) + U(0, max_jitter)."""

    attempts: int  # the first included
    base_delay: float  # seconds, before the first retry
    multiplier: float = 2.0  # each pause is this times the one before (without its jitter)
    max_jitter: float = 0.0  # seconds at most, added to each pause

    def floor_delay(self, retry_number: int) -> float:
        """The pause before the `retry_number`-th retry (1-based), without jitter."""
        return self.base_delay * self.multiplier ** (retry_number - 1)

    def delay(self, retry_number: int, unit_random: float) -> float:
        """The pause before the `retry_number`-th retry, with `unit_random` (in [0, 1)) of the jitter."""
        return self.floor_delay(retry_number) + self.max_jitter * unit_random

    def delays(self) -> list[float]:
        """The pauses between every attempt, without jitter."""
        return [self.floor_delay(n) for n in range(1, self.attempts)]

    def floor_seconds(self) -> float:
        """Least total pausing when every attempt fails."""
        return sum(self.delays())

    def ceiling_seconds(self) -> float:
        """Most total pausing when every attempt fails."""
        return self.floor_seconds() + self.max_jitter * (self.attempts - 1)


# After losing a race for the journey (the ledger or the record moved under a decision): short, random, and
# longer with each loss, so concurrent deciders spread out instead of colliding again. loans-api and the
# orchestrator both decide again this way (each bounds its own decisions: `attempts` is not read).
LOST_RACE = Backoff(attempts=0, base_delay=0.005, max_jitter=0.045)


def after_lost_race(losses: int) -> float:
    """Seconds to pause after the `losses`-th lost race in a row (1 for the first)."""
    return LOST_RACE.delay(losses, random.random())
