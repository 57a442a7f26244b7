"""Figure 6 of BENCHMARKS.md: what the worst bodies found cost to answer (one 64 KB body once took
51 s to be refused, and four at once made every request of the orchestrator answer 502).

Each body is at most the 64 KiB the guards admit and is the worst found for one stage: the input guard
(`shared.guards.refusal`: size, media type, encoding, the JSON depth scan and parse of
`shared/json_input.py`), the resolver (which reads the guard's parse: a body is parsed once), pydantic's
validation of the request models and the 422's rendering. Each is timed through the guard alone and
through each API's whole handler (built by its composition root, as the local runtime serves it), to the
problem it answers. No body reaches a service, so the handlers' AWS endpoint is never called.
tests/unit/test_json_input.py and tests/integration/test_input_edges.py assert each body's answer; only
this module times them.

`python -m bench.input_guard --into bench/measured.json` measures this figure alone and writes it into
a measured file, for `python -m bench.run --render-only`."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Metrics

from functions.loans_api import bootstrap as loans_bootstrap
from functions.loans_api.settings import LoansSettings
from functions.orchestrator import bootstrap as orchestrator_bootstrap
from functions.orchestrator.settings import OrchestratorSettings
from saga.local.apigw import LambdaContextStub, http_response, proxy_event
from shared.entry_points import Handler
from shared.guards import MAX_BODY_BYTES, refusal

# Where each API takes a simulation: the body every worst case is shaped after (or breaks).
PATHS = {"orchestrator": "/journeys/j-bench/simulate", "loans-api": "/simulations"}
NOWHERE = "http://127.0.0.1:9"  # the handlers' AWS endpoint and loans-api: no body here gets that far


def _filled(head: str, unit: str, tail: str = "") -> str:
    """`head`, as many `unit`s as fit, `tail`: at most MAX_BODY_BYTES bytes (units are ASCII)."""
    return head + unit * ((MAX_BODY_BYTES - len(head) - len(tail)) // len(unit)) + tail


def _distinct_keys(head: str) -> str:
    """`head` followed by as many distinct short unknown names as fit, then `}`."""
    parts, size, index = [head], len(head) + 1, 0
    while size + len(part := f',"{index:x}":0') <= MAX_BODY_BYTES:
        parts.append(part)
        size, index = size + len(part), index + 1
    return "".join(parts) + "}"


@dataclass(frozen=True)
class Body:
    """One worst case: its name, what it is, its text, and the status both APIs answer it with."""

    name: str
    what: str
    text: str
    status: int


_SIMULATION = '{"amount": 10000, "termMonths": 36'
_AMOUNT_OF = '{"termMonths": 36, "amount": '
WORST: tuple[Body, ...] = (
    Body("unclosed-escapes", "a quote, then 32,000 escaped quotes, never closed", '"' + '\\"' * 32000, 400),
    Body("unterminated-escapes", "a quote, escaped quotes to 64 KiB, a lone backslash", _filled('"', '\\"', "\\"), 400),
    Body("quotes", "64 KiB of quotes: 32,768 empty strings", '"' * MAX_BODY_BYTES, 400),
    Body("open-brackets", "64 KiB of `[`: nesting past the limit", "[" * MAX_BODY_BYTES, 400),
    Body("nesting-at-the-limit", "an amount of ~1,000 arrays nested 32 deep with the body (the limit)",
         _filled(_AMOUNT_OF + "[", "[" * 30 + "]" * 30 + ",", "[]]}"), 422),
    Body("unknown-names", "~7,700 distinct unknown names: a 422 with ~7,700 errors", _distinct_keys(_SIMULATION), 422),
    Body("duplicate-names", "one name, ~5,000 times in one object",
         _filled('{"termMonths": 36', ',"amount":1', "}"), 400),
    Body("array-items", "an amount of ~32,000 zeros", _filled(_AMOUNT_OF + "[", "0,", "0]}"), 422),
    Body("empty-objects", "an amount of ~21,800 empty objects", _filled(_AMOUNT_OF + "[", "{},", "{}]}"), 422),
    Body("huge-exponents", "an amount of ~5,000 numbers 1e999999999",
         _filled(_AMOUNT_OF + "[", "1e999999999,", "1]}"), 422),
    Body("digits", "an amount of 64 KiB of digits", _filled(_AMOUNT_OF, "9", "}"), 422),
    Body("fraction-digits", "a term of 36.000...001 (64 KiB)",
         _filled('{"amount": 10000, "termMonths": 36.', "0", "1}"), 422),
    Body("escaped-surrogates", "a journeyId of ~10,900 escaped lone surrogates",
         _filled(_SIMULATION + ', "journeyId": "', "\\ud800", '"}'), 422),
)  # fmt: skip


def handlers() -> dict[str, Handler]:
    """Each API's handler as its composition root builds it, pointed at an endpoint no body reaches."""
    return {
        "orchestrator": orchestrator_bootstrap.build(
            OrchestratorSettings(aws_endpoint_url=NOWHERE, journeys_table_name="bench", loans_api_url=NOWHERE),
            Metrics(namespace="Bench", service="orchestrator"),
        ),
        "loans-api": loans_bootstrap.build(
            LoansSettings(aws_endpoint_url=NOWHERE, loans_table_name="bench"),
            Metrics(namespace="Bench", service="loans-api"),
        ),
    }


def event(api: str, body: Body) -> dict[str, Any]:
    """The API Gateway event that posts `body` to `api`'s simulation route."""
    headers = {"Content-Type": "application/json", "Idempotency-Key": f"bench-{body.name}"}
    return proxy_event("POST", PATHS[api], headers, body.text.encode())


def _median_ms(answer: Callable[[dict[str, Any]], object], request: dict[str, Any], runs: int) -> tuple[float, float]:
    """Median CPU ms (this thread's: the answer does no I/O) and median wall ms of `runs` answers."""
    cpu, wall = [], []
    for _ in range(runs):
        started, started_cpu = time.perf_counter(), time.thread_time()
        answer(request)
        cpu.append(time.thread_time() - started_cpu)
        wall.append(time.perf_counter() - started)
    return statistics.median(cpu) * 1000, statistics.median(wall) * 1000


def _invoked(api: str, handler: Handler) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda request: handler(request, LambdaContextStub(api))


def input_guard(runs: int) -> dict[str, Any]:
    """The figure: `runs`, and per worst body its size, what both APIs answered, and the median CPU ms and
    wall ms of `runs` through the guard alone and through each API's handler. A body answered otherwise than
    expected is an error: the figure would time something else."""
    apis = handlers()
    bodies = []
    for body in WORST:
        answers = {api: _invoked(api, handler) for api, handler in apis.items()}
        statuses = {api: http_response(answer(event(api, body))).status for api, answer in answers.items()}
        if set(statuses.values()) != {body.status}:
            raise RuntimeError(f"{body.name}: answered {statuses}, expected {body.status} from both APIs")
        guard_cpu, guard_wall = _median_ms(refusal, event("orchestrator", body), runs)
        answered = {api: _median_ms(answer, event(api, body), runs) for api, answer in answers.items()}
        bodies.append(
            {
                "name": body.name,
                "what": body.what,
                "bytes": len(body.text.encode()),
                "status": body.status,
                "guardCpuMs": guard_cpu,
                "guardMs": guard_wall,
                "answerCpuMs": {api: cpu for api, (cpu, _) in answered.items()},
                "answerMs": {api: wall for api, (_, wall) in answered.items()},
            }
        )
    return {"runs": runs, "bodies": bodies}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.input_guard", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--into", help="a measured file (bench/measured.json) to write the figure into")
    args = parser.parse_args(argv)
    figure = input_guard(args.runs)
    for row in figure["bodies"]:
        answers = ", ".join(f"{api} {ms:.1f}" for api, ms in row["answerMs"].items())
        print(f"{row['name']:22} {row['bytes']} B, {row['status']}: guard {row['guardMs']:.1f} ms, answer {answers} ms")
    if args.into:
        path = Path(args.into)
        measured: Mapping[str, Any] = json.loads(path.read_text())
        path.write_text(json.dumps({**measured, "inputGuard": figure}, indent=2) + "\n")
        print(f"wrote inputGuard into {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
