"""Figure 5 of BENCHMARKS.md: cold start. Each function's init (a fresh interpreter until its handler
module is imported, its composition root built and its first client made), by the CPU time the process
used (wall time beside it), against a floor every Python function with these libraries pays, each run in
the same loop so a busy machine slows all alike;
then the first request through the Lambda entry, and what each init imports beyond the floor.

The child builds the composition root by calling its Lambda entry's cached builder (`built`, shared/lambda_entry.py):
Lambda builds it on the first invocation, and the benchmark times it apart from that invocation."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from saga.local.moto_server import MotoProcess
from saga.local.resources import provision
from shared import topology

COLD_START = {
    "orchestrator": ("functions.orchestrator.handler", "lambda_handler"),
    "loans-api": ("functions.loans_api.handler", "lambda_handler"),
    "relay": ("functions.relay.handler", "lambda_handler"),
    "consumer": ("functions.consumer.handler", "lambda_handler"),
    "auditor": ("functions.auditor.handler", "lambda_handler"),
}
FLOOR = "floor"
# What every function of this kind imports and does at init (BENCHMARKS.md section 5 states it): botocore's
# session and one client, pydantic's BaseModel with one model defined (`import pydantic` alone is a lazy stub,
# and BaseModel alone leaves the model machinery a first model loads, annotated_types, pydantic.fields and
# pydantic.types, unloaded: every function here defines models), Powertools' Logger, Metrics and event handler.
FLOOR_CODE = (
    "import botocore.session\n"
    "from pydantic import BaseModel\n"
    "from aws_lambda_powertools import Logger, Metrics\n"
    "from aws_lambda_powertools.event_handler import APIGatewayRestResolver\n"
    "class Floor(BaseModel):\n"
    "    name: str\n"
    "Logger(); Metrics(); APIGatewayRestResolver(); Floor(name='floor')\n"
    "botocore.session.get_session().create_client('dynamodb', region_name='us-east-1')\n"
)
# The first request after init, through the Lambda entry (Logger, Tracer, Metrics decorators included).
FIRST_REQUEST = {
    "loans-api": (
        "POST",
        "/simulations",
        {"journeyId": "cold-{run}", "amount": 10000, "termMonths": 36},
        {"Idempotency-Key": "cold-{run}"},
    ),
    "orchestrator": ("GET", "/journeys/cold-{run}", None, {}),
}
# As deployed: infra and the local runtime set Powertools' and pydantic's environment on every function
# (shared/topology.py powertools_environment), the floor's interpreter and every function's alike.
COLD_ENV = {
    **topology.powertools_environment("cold-start"),
    "LOANS_TABLE_NAME": "t",
    "JOURNEYS_TABLE_NAME": "t",
    "LOANS_API_URL": "http://loans",
    "EVENTS_TOPIC_ARN": "arn:aws:sns:us-east-1:0:t",
    "AWS_REGION": "us-east-1",
}
_CHILD = """
import json, time
{init}
initialized, init_cpu = time.perf_counter(), time.process_time()
{first}
first_ms = (time.perf_counter() - initialized) * 1000
first_cpu_ms = (time.process_time() - init_cpu) * 1000
print(json.dumps({{"initialized": initialized, "init_cpu": init_cpu, "first_ms": first_ms, "first_cpu_ms": first_cpu_ms,
                  "status": status}}))
"""
_FIRST = """
from saga.local.apigw import LambdaContextStub, proxy_event
event = proxy_event({method!r}, {path!r}, {headers!r}, {body!r})
status = m.lambda_handler(event, LambdaContextStub("cold"))["statusCode"]
"""


@dataclass
class ColdStart:
    """Medians over the runs, per name and bytecode mode ("pyc": compiled files present, "source": compiled
    from source): init (fresh interpreter to composition root built and first client made), its CPU ms (the
    process's own, interpreter start included) and its wall ms; the first request's CPU and wall ms."""

    runs: int
    init_cpu_ms: dict[tuple[str, str], float]
    init_ms: dict[tuple[str, str], float]
    first_cpu_ms: dict[str, float]
    first_ms: dict[str, float]
    first_status: dict[str, int]
    beyond_floor: dict[str, dict[str, float]] = field(default_factory=dict)

    def ratio(self, name: str, mode: str) -> float:
        return self.init_cpu_ms[(name, mode)] / self.init_cpu_ms[(FLOOR, mode)]

    def figures(self) -> dict[str, Any]:
        """What bench/measured.json keeps of it, functions in the order they are reported."""
        names = (FLOOR, *COLD_START)
        modes = ("pyc", "source")
        return {
            "runs": self.runs,
            "floorCode": FLOOR_CODE,
            "initCpuMs": {name: {mode: self.init_cpu_ms[(name, mode)] for mode in modes} for name in names},
            "initMs": {name: {mode: self.init_ms[(name, mode)] for mode in modes} for name in names},
            "firstRequest": {
                name: {
                    "method": FIRST_REQUEST[name][0],
                    "path": FIRST_REQUEST[name][1],
                    "cpuMs": self.first_cpu_ms[name],
                    "ms": ms,
                    "status": self.first_status[name],
                }
                for name, ms in self.first_ms.items()
            },
            "beyondFloorMs": {
                name: [[package, ms] for package, ms in self.beyond_floor.get(name, {}).items()] for name in COLD_START
            },
        }


def _child_code(name: str, run: int) -> str:
    if name == FLOOR:
        return _CHILD.format(init=FLOOR_CODE, first="status = 0")
    module, entry = COLD_START[name]
    first = "status = 0"
    if name in FIRST_REQUEST:
        method, path, body, headers = FIRST_REQUEST[name]
        payload = None if body is None else json.dumps(body).replace("{run}", str(run)).encode()
        first = _FIRST.format(
            method=method,
            path=path.format(run=run),
            headers={"Content-Type": "application/json", **{k: v.format(run=run) for k, v in headers.items()}},
            body=payload,
        )
    return _CHILD.format(init=f"import {module} as m\nm.{entry}.built()", first=first)


def imported(code: str, env: dict[str, str]) -> dict[str, float]:
    """Self import time (ms) of each module `code` imports (one `-X importtime` run)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], check=True, env=env, capture_output=True, text=True
    )
    selves: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            self_us, _, module = (part.strip() for part in line.removeprefix("import time:").split("|"))
            selves[module] = int(self_us) / 1000
    return selves


def import_profile(name: str, env: dict[str, str], floor: Collection[str]) -> dict[str, float]:
    """Self import time (ms) per top-level package of what `name`'s init imports beyond the `floor`'s
    modules (one `-X importtime` run)."""
    extra: dict[str, float] = {}
    for module, ms in imported(_child_code(name, -1), env).items():
        if module not in floor:
            package = module if module.startswith(("functions.", "shared.")) else module.split(".")[0]
            extra[package] = extra.get(package, 0.0) + ms
    top = sorted(extra.items(), key=lambda item: -item[1])[:6]
    return {package: round(ms, 1) for package, ms in top}


def cold_start_ms(runs: int, *, smoke: bool = False) -> ColdStart:
    """The floor and every function, each run in the same loop (so a noisy neighbour hits them alike):
    a fresh interpreter's CPU time until init is done, and its wall time from spawn, with bytecode and
    compiled from source. In a smoke run (figures that mean nothing) the source runs keep what they compile,
    so only the first compiles the libraries: each run compiling them all was a third of the suite's smoke."""
    moto = MotoProcess().start()
    try:
        r = provision(moto.url)
        env = {
            **os.environ,
            **COLD_ENV,
            "AWS_ENDPOINT_URL": r.endpoint_url,
            "LOANS_TABLE_NAME": r.loans_table,
            "JOURNEYS_TABLE_NAME": r.journeys_table,
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        init: dict[tuple[str, str], list[float]] = {}
        init_cpu: dict[tuple[str, str], list[float]] = {}
        first: dict[str, list[float]] = {}
        first_cpu: dict[str, list[float]] = {}
        status: dict[str, int] = {}
        with tempfile.TemporaryDirectory() as empty:
            source_env = {**env, "PYTHONPYCACHEPREFIX": empty}
            if not smoke:
                source_env["PYTHONDONTWRITEBYTECODE"] = "1"
            # Warm: the "pyc" runs find compiled files, as the layer has them (one interpreter runs every child's code).
            warm = "".join(f"exec({_child_code(name, -1)!r}, {{}})\n" for name in (FLOOR, *COLD_START))
            subprocess.run([sys.executable, "-c", warm], check=True, env=env, capture_output=True)
            for run in range(runs):
                for mode, mode_env in (("pyc", env), ("source", source_env)):
                    for name in (FLOOR, *COLD_START):
                        started = time.perf_counter()
                        done = subprocess.run(
                            [sys.executable, "-c", _child_code(name, run if mode == "pyc" else runs + run)],
                            check=True,
                            env=mode_env,
                            capture_output=True,
                            text=True,
                        )
                        # perf_counter is CLOCK_MONOTONIC on Linux: the child's stamp is on the parent's clock.
                        child = json.loads(done.stdout.strip().splitlines()[-1])
                        init.setdefault((name, mode), []).append((child["initialized"] - started) * 1000)
                        init_cpu.setdefault((name, mode), []).append(child["init_cpu"] * 1000)
                        if name in FIRST_REQUEST and mode == "pyc":
                            first.setdefault(name, []).append(child["first_ms"])
                            first_cpu.setdefault(name, []).append(child["first_cpu_ms"])
                            status[name] = child["status"]
        floor = imported(_child_code(FLOOR, -1), env)
        beyond = {name: import_profile(name, env, floor) for name in COLD_START}
    finally:
        moto.stop()
    return ColdStart(
        runs,
        {key: statistics.median(values) for key, values in init_cpu.items()},
        {key: statistics.median(values) for key, values in init.items()},
        {name: statistics.median(values) for name, values in first_cpu.items()},
        {name: statistics.median(values) for name, values in first.items()},
        status,
        beyond,
    )
