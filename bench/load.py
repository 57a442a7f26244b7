"""Figure 3 of BENCHMARKS.md: the local runtime (`saga local`'s worker processes and pollers) under
concurrent agents over HTTP, every container started and warmed before anything is timed, by CPU time
per journey (the function containers' and the AWS endpoint's) beside wall time and latency; and the
backstop's lag (a commit road 1 never hears of, until road 2 applied it)."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import urllib3

from bench.cost import SIMULATE, request_headers
from bench.cpu import Interval, Stopwatch
from saga.links import link_body


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


@dataclass
class LoadResult:
    agents: int
    journeys: int
    latencies_ms: list[float]
    errors: Counter[int]
    taken: Interval  # wall seconds; CPU seconds of the function containers and of the AWS endpoint

    def figures(self) -> dict[str, Any]:
        """What bench/measured.json keeps of it: journeys, wall and CPU time, the latency percentiles, the
        errors by status."""
        lat = self.latencies_ms
        journeys = max(1, self.journeys)
        return {
            "agents": self.agents,
            "journeys": self.journeys,
            "seconds": self.taken.wall,
            "journeysPerSecond": self.journeys / self.taken.wall,
            "functionsCpuMsPerJourney": self.taken.cpu["functions"] * 1000 / journeys,
            "endpointCpuMsPerJourney": self.taken.cpu["endpoint"] * 1000 / journeys,
            "commandMs": {"p50": percentile(lat, 50), "p95": percentile(lat, 95), "p99": percentile(lat, 99)},
            "errors": [[status, count] for status, count in self.errors.items()],
        }


def load(runtime_api: str, agents: int, seconds: float, watched: Mapping[str, Iterable[int]]) -> LoadResult:
    """`agents` threads, each walking journeys (create, simulate, accept, disburse) for `seconds`, with the
    CPU time of the `watched` processes ("functions": every container, "endpoint": the AWS endpoint)."""
    http = urllib3.PoolManager(maxsize=agents * 2, timeout=urllib3.Timeout(connect=2, read=60), retries=False)
    latencies: list[float] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    errors: Counter[int] = Counter()

    def call(method: str, path: str, body: Any = None) -> Any:
        started = time.monotonic()
        response = http.request(
            method,
            runtime_api + path,
            body=None if body is None else json.dumps(body),
            headers=request_headers(path),
        )
        with lock:
            latencies.append((time.monotonic() - started) * 1000)
            if response.status >= 400:
                errors[response.status] += 1
        return json.loads(response.data) if response.status < 400 else None

    def agent(_: int) -> int:
        done = 0
        while time.monotonic() < deadline:
            record = call("POST", "/journeys", {"customerId": "load"})
            if record is None:
                continue
            journey_id = record["journeyId"]
            for name in ("simulate", "accept", "disburse"):
                body = SIMULATE if name == "simulate" else link_body(record, name)
                record = call("POST", f"/journeys/{journey_id}/{name}", body)
                if record is None:
                    break
            else:
                done += 1
        return done

    watch = Stopwatch(watched).start()
    with ThreadPoolExecutor(max_workers=agents) as pool:
        journeys = sum(pool.map(agent, range(agents)))
    return LoadResult(agents, journeys, latencies, errors, watch.stop())


def backstop_lag(api: str, loans_api: str, samples: int) -> list[float]:
    """Commit in loans-api directly (road 1 never runs), then time until road 2 applied it (seconds)."""
    http = urllib3.PoolManager(timeout=urllib3.Timeout(connect=2, read=30), retries=False)
    lags = []
    for index in range(samples):
        record = json.loads(
            http.request(
                "POST",
                f"{api}/journeys",
                body=json.dumps({"customerId": "lag"}),
                headers=request_headers("/journeys"),
            ).data
        )
        journey_id = record["journeyId"]
        started = time.monotonic()
        http.request(
            "POST",
            f"{loans_api}/simulations",
            headers={"Content-Type": "application/json", "Idempotency-Key": f"lag-{index}"},
            body=json.dumps({"journeyId": journey_id, "amount": 5000, "termMonths": 12}),
        )
        while json.loads(http.request("GET", f"{api}/journeys/{journey_id}").data)["lastAppliedSeq"] < 1:
            if time.monotonic() - started > 30:
                raise RuntimeError("road 2 did not apply the event within 30 s")
            time.sleep(0.005)
        lags.append(time.monotonic() - started)
    return lags


def lag_figures(lags: list[float]) -> dict[str, Any]:
    return {"samples": len(lags), "p50Seconds": percentile(lags, 50), "p99Seconds": percentile(lags, 99)}
