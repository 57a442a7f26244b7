"""The metrics the functions emit, kept by `saga local` for its dashboard (saga/local/dashboard.py).

Deployed, a function's Powertools metrics reach CloudWatch as EMF log lines. Locally metrics are off (no
CloudWatch to send them to), and each container hands what an invocation emitted to the runtime instead
(saga/local/containers.py); the runtime keeps them here, by service and name, for the last few minutes,
and answers CloudWatch's statistics over a window, as the deployed dashboard reads them."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence

# The longest window a widget reads (the audit's metrics are read over its 5-minute schedule), with margin.
KEEP_SECONDS = 600.0

_STATISTICS: dict[str, Callable[[Sequence[float]], float]] = {
    "Sum": sum,
    "Maximum": max,
    "Minimum": min,
    "Average": lambda values: sum(values) / len(values),
    "SampleCount": len,
}


def statistic(values: Sequence[float], name: str) -> float | None:
    """CloudWatch's statistic `name` (Sum, Maximum, Minimum, Average, SampleCount, pNN) of `values`;
    None when there are none (CloudWatch has no datapoint)."""
    if name.startswith("p") and name[1:].replace(".", "", 1).isdigit():
        if not values:
            return None
        ordered = sorted(values)
        rank = math.ceil(float(name[1:]) / 100 * len(ordered))  # nearest rank
        return float(ordered[min(len(ordered), max(rank, 1)) - 1])
    if name not in _STATISTICS:
        raise ValueError(f"not a CloudWatch statistic: {name}")
    return float(_STATISTICS[name](values)) if values else None


class LocalMetrics:
    """Datapoints (when, service, metric, value) of the last KEEP_SECONDS, safe across threads."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, keep_seconds: float = KEEP_SECONDS) -> None:
        self._clock = clock
        self._keep = keep_seconds
        self._points: deque[tuple[float, str, str, float]] = deque()
        self._lock = threading.Lock()

    def record(self, service: str, emitted: Mapping[str, Sequence[float]]) -> None:
        """What one invocation of `service` emitted: each metric's values."""
        now = self._clock()
        with self._lock:
            self._points.extend((now, service, name, float(v)) for name, values in emitted.items() for v in values)
            while self._points and self._points[0][0] < now - self._keep:
                self._points.popleft()

    def statistic(self, service: str, name: str, statistic_name: str, window_seconds: float) -> float | None:
        """`statistic_name` of `service`'s `name` over the last `window_seconds`; None: no datapoint."""
        since = self._clock() - window_seconds
        with self._lock:
            values = [v for at, s, n, v in self._points if at >= since and s == service and n == name]
        return statistic(values, statistic_name)
