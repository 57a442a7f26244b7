"""Functions that die at the worst moment, wrapped around the real ones: the relay between publishing and
marking what it published, the consumer halfway through a batch. When they die is the caller's choice
(`once`, `at_rate`, or any callable); each counts its crashes."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

Strike = Callable[[], bool]


def once() -> Strike:
    """The first time asked, and never again."""
    struck = [False]

    def strike() -> bool:
        first, struck[0] = not struck[0], True
        return first

    return strike


def at_rate(rng: random.Random, rate: float) -> Strike:
    """A fraction `rate` of the times asked, drawn from `rng`."""
    return lambda: rng.random() < rate


class RelayDiesAfterPublish:
    """The relay's publisher: it publishes, then (when `strike` says so) the relay dies before it can mark
    anything NOTIFIED, so the stream hands it the same records again."""

    def __init__(self, inner: Any, strike: Strike) -> None:
        self.inner, self.strike = inner, strike
        self.crashes = 0

    def publish(self, events: Any) -> Any:
        failed = self.inner.publish(events)
        if events and self.strike():
            self.crashes += 1
            raise RuntimeError("relay killed between publish and mark")
        return failed


class ConsumerDiesMidBatch:
    """The consumer's handler: (when `strike` says so) it applies the first half of a batch, then dies before
    acknowledging anything, so the whole batch comes back. Counts every event's deliveries."""

    def __init__(self, inner: Any, strike: Strike) -> None:
        self.inner, self.strike = inner, strike
        self.crashes = 0
        self.deliveries: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        records = event["Records"]
        with self.lock:
            self.deliveries.update(_event_id(record["body"]) for record in records)
            crash = self.strike()
            self.crashes += crash
        if crash:
            self.inner({"Records": records[: max(1, len(records) // 2)]}, context)
            raise RuntimeError("consumer killed mid-batch")
        return dict(self.inner(event, context))


def _event_id(body: str) -> str:
    try:
        return str(json.loads(body).get("eventId", "?"))
    except (ValueError, AttributeError):
        return "?"
