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
from bench.cost import AWS_ROUND_TRIP_MS, JOURNEY, LAMBDA_VCPU_MB, JourneyCost, journey_cost
from bench.cpu import load_average, reference_ms
from bench.drain import Timed, drain_rate
from bench.input_guard import input_guard
from bench.load import backstop_lag, lag_figures, load
from functions.orchestrator.settings import OrchestratorSettings
from saga.local.moto_server import MotoProcess
from saga.local.runtime import LocalRuntime, RuntimeConfig
from shared import topology
from tools.ports import free_port

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
    stages: dict[str, float] = {}

    def stage(name: str) -> None:
        """Note how long the part just done took (wall seconds, to plan a run: no figure)."""
        stages[name] = time.monotonic() - started - sum(stages.values())
        print(f"bench: {name} done in {stages[name]:.0f} s", file=sys.stderr, flush=True)

    load_at_start, reference_at_start = load_average(), reference_ms()
    moto = MotoProcess().start()
    try:
        costs = {key: journey_cost(moto, *design, timed_journeys=1 if smoke else 10) for key, design in DESIGNS.items()}
        stage("cost")
        relayed, drained = drain_rate(moto, *((10, 1) if smoke else (1000, 25)))
        stage("drain")
    finally:
        moto.stop()
    cold = cold_start_ms(1 if smoke else 20, smoke=smoke)
    stage("coldStart")
    guard = input_guard(1 if smoke else 15)
    stage("inputGuard")
    # A smoke run's one agent needs one container per function (each warmed container is an interpreter).
    containers_per_api = 1 if smoke else RuntimeConfig.max_containers
    config = RuntimeConfig(
        port=free_port(), loans_port=free_port(), aws_port=free_port(), max_containers=containers_per_api
    )
    runtime = LocalRuntime(config).start()
    try:
        api, loans_api = f"http://127.0.0.1:{config.port}", f"http://127.0.0.1:{config.loans_port}"
        containers = runtime.warm_every_container()
        # The functions a journey invokes: the sweeper's scheduled runs are not per journey.
        journey_pids = [pid for name, pids in containers.items() if name != topology.SWEEPER.service for pid in pids]
        watched = {"functions": journey_pids, "endpoint": [runtime.aws_pid]}
        agents = (1,) if smoke else (1, 4, 16)
        load(api, max(agents), 1.0 if smoke else 5.0, watched)  # warm: every poller's composition root, untimed
        loads = [load(api, n, 1.0 if smoke else 15.0, watched) for n in agents]
        lags = backstop_lag(api, loans_api, 2 if smoke else 30)
    finally:
        runtime.stop()
    stage("load")
    return {
        **scale_inputs(costs["ours"], cpu_limited_rate(drained)),
        "run": {
            "machine": platform.machine(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "smoke": smoke,
            "seconds": time.monotonic() - started,
            "stageSeconds": stages,
            "loadAverage": {"start": load_at_start, "end": load_average()},
            "referenceMs": {"start": reference_at_start, "end": reference_ms()},
        },
        "memoryMb": topology.memory_mb(),
        "lambdaModel": {"vcpuMb": LAMBDA_VCPU_MB, "awsRoundTripMs": AWS_ROUND_TRIP_MS},
        "costs": {key: cost.figures() for key, cost in costs.items()},
        "load": [result.figures() for result in loads],
        "containers": {name: len(pids) for name, pids in sorted(containers.items())},
        "backstopLag": lag_figures(lags),
        "drain": drained.figures(),
        "relay": relayed.figures(),
        "coldStart": cold.figures(),
        "inputGuard": guard,
        "loansReadTimeoutSeconds": float(OrchestratorSettings.model_fields["loans_read_timeout"].default),
        "codeAssetBytes": asset_bytes(),
    }


def cpu_limited_rate(drained: Timed) -> float:
    """Events/s one core sustains running the consumer and the AWS endpoint's share of its work."""
    return drained.events / (drained.cpu + drained.endpoint_cpu)


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
    # Imported here: the CDK it imports takes seconds, and every process the benchmark spawns (the AWS
    # endpoint, the containers) imports this module again as its main module.
    from infra import packaging

    with tempfile.TemporaryDirectory() as tmp:
        packaging.copy_app(Path(tmp))
        return sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())


if __name__ == "__main__":
    sys.exit(main())
