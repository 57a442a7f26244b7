"""`make bench`: cost, critical path, load, drain rate, cold start and the input guard, ours and the peer's
side by side. Measures (bench/cost.py, load.py, drain.py, cold_start.py, input_guard.py), keeps every
figure in bench/measured.json, and renders BENCHMARKS.md from it (bench/report.py). `--smoke` runs every
part at a tiny size (part of `make test`); `--render-only` renders the report again from a measured file,
measuring nothing."""

from __future__ import annotations

import os

os.environ.update(
    {
        name: os.environ.get(name, value)
        for name, value in {
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
            "POWERTOOLS_LOG_LEVEL": "ERROR",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_TRACE_DISABLED": "true",
        }.items()
    }
)

import argparse
import json
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import report
from bench.cold_start import cold_start_ms
from bench.cost import JOURNEY, JourneyCost, journey_cost
from bench.drain import drain_rate
from bench.input_guard import input_guard
from bench.load import backstop_lag, lag_figures, load
from bench.meter import Meter
from functions.orchestrator.settings import OrchestratorSettings
from infra import packaging
from saga.local.moto_server import MotoServer
from saga.local.ports import free_port
from saga.local.runtime import LocalRuntime, RuntimeConfig
from shared import topology

DESIGNS = {"ours": ("ours", False), "peer": ("peer", False), "oursLostReply": ("ours", True),
           "peerLostReply": ("peer", True)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="every part at a tiny size")
    parser.add_argument("--out", default="BENCHMARKS.md")
    parser.add_argument("--measured", help="where the figures go (default: bench/measured.json; smoke: next to --out)")
    parser.add_argument("--render-only", action="store_true", help="render --out from --measured, measure nothing")
    args = parser.parse_args(argv)
    measured_path = Path(
        args.measured or (Path(args.out).with_suffix(".json") if args.smoke else "bench/measured.json")
    )
    if args.render_only:
        figures = json.loads(measured_path.read_text())
    else:
        figures = measure(args.smoke)
        measured_path.write_text(json.dumps(figures, indent=2) + "\n")
    Path(args.out).write_text(report.render(figures))
    print(f"wrote {args.out} and {measured_path}")
    return 0


def measure(smoke: bool) -> dict[str, Any]:
    """Every figure of the report, as bench/measured.json keeps it."""
    started = time.monotonic()
    meter = Meter()
    moto = MotoServer().start()
    try:
        costs = {key: journey_cost(moto, meter, *design) for key, design in DESIGNS.items()}
        drain, drained = drain_rate(moto, *((10, 1) if smoke else (1000, 5)))
    finally:
        moto.stop()
    cold = cold_start_ms(1 if smoke else 20)
    guard = input_guard(1 if smoke else 15)
    config = RuntimeConfig(port=free_port(), loans_port=free_port(), aws_port=free_port())
    runtime = LocalRuntime(config).start()
    try:
        api, loans_api = f"http://127.0.0.1:{config.port}", f"http://127.0.0.1:{config.loans_port}"
        loads = [load(api, n, 1.0 if smoke else 15.0) for n in ((1,) if smoke else (1, 4, 16))]
        lags = backstop_lag(api, loans_api, 2 if smoke else 30)
    finally:
        runtime.stop()
    return {
        **scale_inputs(costs["ours"], drain),
        "run": {
            "machine": platform.machine(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "smoke": smoke,
            "seconds": time.monotonic() - started,
        },
        "memoryMb": topology.memory_mb(),
        "costs": {key: cost.figures() for key, cost in costs.items()},
        "load": [result.figures() for result in loads],
        "backstopLag": lag_figures(lags),
        "drain": {"eventsPerSecond": drain, "events": drained},
        "coldStart": cold.figures(),
        "inputGuard": guard,
        "loansReadTimeoutSeconds": float(OrchestratorSettings.model_fields["loans_read_timeout"].default),
        "codeAssetBytes": asset_bytes(),
    }


def scale_inputs(ours: JourneyCost, drain_events_per_second: float) -> dict[str, Any]:
    """Per-journey figures of our design, for the scale model (bench/scale.py)."""
    figures = ours.figures()
    return {
        "measuredAt": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "journey": list(JOURNEY),
        "agentCommands": ours.invocations["orchestrator"],
        "events": ours.invocations["loans-api"],  # each loans-api command commits one event
        # The journey-changes index is keyed by event type: the journey's most frequent type is its hottest key.
        "hottestEventTypeCount": sum(1 for step in JOURNEY if step in ("simulate", "re-simulate")),
        "writeUnits": figures["writeUnits"],
        "readUnits": figures["readUnits"],
        "storedBytes": figures["storedBytes"],
        "apiRequests": {"orchestrator": ours.invocations["orchestrator"], "loans-api": ours.invocations["loans-api"]},
        "snsMessages": ours.invocations["loans-api"],
        "snsRequests": ours.usage.requests["sns"],
        "sqsRequests": ours.usage.requests["sqs"],
        "lambdaSeconds": {name: ms / 1000 for name, ms in sorted(figures["billedMs"].items())},
        "lambdaInvocations": dict(sorted(ours.invocations.items())),
        "consumerDrainEventsPerSecond": drain_events_per_second,
        "dollarsPerMillionJourneys": sum(report.Cost(figures, topology.memory_mb()).bill().values()) * 1_000_000,
    }


def asset_bytes() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        packaging.copy_app(Path(tmp))
        return sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())


if __name__ == "__main__":
    sys.exit(main())
