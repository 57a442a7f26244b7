"""BENCHMARKS.md is rendered from the measured figures alone (bench/report.py): the figures of the run of
2026-11-30 09:49 UTC (tests/unit/data) render the lines that run's report printed, and each goal's
verdict follows the figures."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from bench.report import INPUT_GUARD_ALONE, WCU_WHY_MISSED, WHY_ABOVE_FLOOR, render

MEASURED = Path(__file__).parent / "data" / "measured-2026-11-30.json"

# Lines of BENCHMARKS.md as the run of 2026-11-30 09:49 UTC wrote it (before the report was a template).
PRINTED = """\
| DynamoDB calls | 22 | 31 | 0.71 | 38 | 35 |
| billed write units (WRU), all | 58 | 26 | 2.23 | 58 | 31 |
| of which index writes | 12 | 0 | n/a | 12 | 0 |
| billed read units (RRU) | 9 | 9 | 1.00 | 25 | 9 |
| stream read requests | 3 | 0 | n/a | 3 | 0 |
| SNS billed requests | 1 | 4 | 0.25 | 1 | 4 |
| SQS billed requests | 4 | 3 | 1.33 | 4 | 3 |
| API Gateway requests | 9 | 9 | 1.00 | 17 | 13 |
| Lambda invocations | 12 | 10 | 1.20 | 20 | 14 |
| Lambda GB-seconds | 0.499 | 0.43 | 1.16 | 0.56 | 0.558 |
DynamoDB calls by operation (ours / peer): BatchGetItem 1/1, GetItem 8/8, PutItem 4/16, TransactWriteItems 5/1, \
UpdateItem 4/5.
| ours | journeys | (table) | 8 | 5 |
| ours | loans | journey-changes | 4 | 0 |
| ours | loans | pending-outbox | 8 | 0 |
| ours | loans | (table) | 38 | 4 |
| peer | journeys | (table) | 8 | 5 |
| peer | peer-idempotency | (table) | 9 | 0 |
| peer | peer-loans | (table) | 9 | 4 |
| DynamoDB writes | $36.25 | $16.25 | $36.25 | $19.38 |
| DynamoDB reads | $1.12 | $1.12 | $3.12 | $1.12 |
| DynamoDB stream reads | $0.00 | $0.00 | $0.00 | $0.00 |
| SNS requests | $0.50 | $2.00 | $0.50 | $2.00 |
| SQS requests | $1.60 | $1.20 | $1.60 | $1.20 |
| Lambda requests | $2.40 | $2.00 | $4.00 | $2.80 |
| Lambda GB-seconds | $6.65 | $5.74 | $7.47 | $7.44 |
| API Gateway requests | $31.50 | $31.50 | $59.50 | $45.50 |
| **total** | **$80.03** | **$59.82** | $112.45 | $79.44 |
| create | 1 | 1 | 1 | 1 |
| simulate | 4 | 8 | 8 | 9 |
| re-simulate | 4 | 9 | 8 | 10 |
| accept | 4 | 8 | 8 | 9 |
| disburse | 4 | 8 | 8 | 9 |
| 1 | 2.97 | 80 | 120 | 161 | 0 |
| 4 | 3.61 | 183 | 738 | 866 | 0 |
| 16 | 6.66 | 538 | 1278 | 1690 | 0 |
| **floor** | 204 | 1.00 | 763 | 1.00 | |
| orchestrator | 326 | 1.60 | 1099 | 1.44 | <= 1.5x: MISSED |
| loans-api | 337 | 1.65 | 1123 | 1.47 | <= 1.5x: MISSED |
| relay | 318 | 1.56 | 1042 | 1.37 | <= 1.5x: MISSED |
| consumer | 289 | 1.41 | 1020 | 1.34 | <= 1.5x: met |
| auditor | 302 | 1.47 | 961 | 1.26 | <= 1.5x: met |
""".splitlines()

PRINTED_IN_SENTENCES = {
    "run": (
        "Measured 2026-11-30 09:49 UTC on x86_64, 2 cores, Python 3.11.7, against the local runtime (moto server "
        "as the AWS endpoint). Reproduce with `make bench` (this run: 286 s)."
    ),
    "write-unit-goal": (
        "**Goal**: at most 41 billed write units per journey, keeping atomicity: 58 (the peer: 26, 2.23x): MISSED."
    ),
    "prices-read-on": "### Dollars per 1M journeys (us-east-1 on-demand list prices read 2026-11-30, bench/prices.py)",
    "dollar-ratio": "Ours / peer: 1.34x in dollars (goal: at most 1.11x on the same API tier): MISSED.",
    "round-trip-goal": "Goal: at most 4 for a loans-backed command: met (max 4:",
    "backstop-lag": "30 samples: p50 204 ms, p99 11916 ms (goal p99 < 2 s: MISSED).",
    "drained-events": "One consumer process applied 1000 queued events",
    "drain-rate": "at **898 events/s**",
    "drain-goal": "manages ~10/s: 90x (goal >= 20x: met).",
    "cold-start-runs": "Median of 20 runs, here (x86_64, CPython 3.11.7;",
    "first-request": (
        "median ms: orchestrator 13 ms (GET /journeys/cold-..., 404), loans-api 21 ms (POST /simulations..., 201)."
    ),
    "read-timeout-goal": (
        "A cold loans-api answers its first request 358 ms after its process is spawned here with bytecode (init "
        "+ first request), 1144 ms from sources (what deploys when bundling finds no Python 3.14, "
        "`infra/packaging.py`); the orchestrator waits 2.0 s per attempt (1.7x the sources figure: enough, "
        "goal >= 1.5x)"
    ),
    "imports-beyond-floor-missed": (
        "**orchestrator** (MISSED): aws_lambda_powertools 25, pydantic 22, asyncio 7, shared.events 4, "
        "annotated_types 4, shared.problems 4;"
    ),
    "imports-beyond-floor-met": (
        "**auditor**: pydantic 22, shared.events 11, annotated_types 4, functions.auditor.audit 2, "
        "functions.loans_api.pricing 2, functions.auditor.store 2."
    ),
    "code-asset": "Code asset (all five functions share it): 221 KiB.",
}


@pytest.fixture
def measured() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(MEASURED.read_text())
    return found


def test_the_figures_of_a_run_render_every_table_row_that_runs_report_printed(measured):
    # Given the figures of the run of 2026-11-30 09:49 UTC
    # When they are rendered
    lines = render(measured).splitlines()
    # Then every table row and the calls-by-operation line are the ones that run printed, in its order
    assert [line for line in lines if line in PRINTED] == PRINTED


@pytest.mark.parametrize("sentence", list(PRINTED_IN_SENTENCES.values()), ids=list(PRINTED_IN_SENTENCES))
def test_the_figures_of_a_run_render_each_figure_in_the_prose_as_that_runs_report_printed_it(measured, sentence):
    assert sentence in render(measured)


def test_a_missed_write_unit_goal_is_explained_and_a_met_one_is_not(measured):
    # Given the run's figures (58 write units: missed), and the same with ours at 40 units
    met = copy.deepcopy(measured)
    met["costs"]["ours"]["writeUnits"]["loans/table"] -= 18.0
    # Then only the missed goal carries the explanation
    assert WCU_WHY_MISSED in render(measured)
    assert "keeping atomicity: 40 (the peer: 26, 1.54x): met." in render(met)
    assert WCU_WHY_MISSED not in render(met)


def test_a_function_over_the_cold_start_goal_is_listed_as_missed_with_its_reason(measured):
    # Given the run's figures (orchestrator, loans-api and relay over 1.5x the floor), and the same with the
    # relay's init within the goal
    faster = copy.deepcopy(measured)
    faster["coldStart"]["initMs"]["relay"]["pyc"] = 290.0
    # Then the missed functions are listed with why their init costs what it does, and only they
    assert f"**relay**: {WHY_ABOVE_FLOOR['relay']}" in render(measured)
    assert f"**relay**: {WHY_ABOVE_FLOOR['relay']}" not in render(faster)
    assert "| relay | 290 | 1.42 | 1042 | 1.37 | <= 1.5x: met |" in render(faster)
    assert f"**orchestrator**: {WHY_ABOVE_FLOOR['orchestrator']}" in render(faster)


def test_a_smoke_run_says_its_figures_are_not_meaningful(measured):
    smoke = copy.deepcopy(measured)
    smoke["run"]["smoke"] = True
    assert "(moto server as the AWS endpoint) — SMOKE RUN (tiny sizes; figures not meaningful). Reproduce" in render(
        smoke
    )
    assert "SMOKE RUN" not in render(measured)


def test_load_errors_are_listed_by_status_in_the_load_table(measured):
    measured["load"][2]["errors"] = [[503, 4], [500, 1]]
    assert "| 16 | 6.66 | 538 | 1278 | 1690 | {503: 4, 500: 1} |" in render(measured).splitlines()


def guard_figure(guard_ms: float) -> dict[str, Any]:
    """An input-guard figure (bench/input_guard.py) of two bodies, the slower guard taking `guard_ms`."""
    return {
        "runs": 15,
        "bodies": [
            {"name": "issue-23", "what": "escaped quotes", "bytes": 64001, "status": 400, "guardMs": 1.84,
             "answerMs": {"orchestrator": 1.9, "loans-api": 2.0}},
            {"name": "unknown-names", "what": "names", "bytes": 65534, "status": 422, "guardMs": guard_ms,
             "answerMs": {"orchestrator": 31.0, "loans-api": 36.44}},
        ],
    }  # fmt: skip


def test_a_run_measured_before_the_input_guard_figure_says_it_was_not_measured(measured):
    assert "inputGuard" not in measured
    assert f"Not measured in this run ({INPUT_GUARD_ALONE} measures it alone)." in render(measured)


def test_the_input_guard_figure_renders_a_row_per_body_and_the_goal_follows_the_slowest_guard(measured):
    # Given the run's figures with an input-guard figure whose slowest guard is 7.2 ms, and one where it is 51 ms
    met, missed = copy.deepcopy(measured), copy.deepcopy(measured)
    met["inputGuard"], missed["inputGuard"] = guard_figure(7.2), guard_figure(51.0)
    report = render(met)
    # Then each body is a row, and the goal's verdict and the slowest whole answer follow the figures
    assert "| issue-23 | escaped quotes | 64001 | 400 | 1.8 | 1.9 | 2.0 |" in report
    assert "| body | what | bytes | answer | guard ms | orchestrator ms | loans-api ms |" in report
    assert (
        "under 50 ms: 7.2 ms (unknown-names): met. The slowest whole answer: 36.4 ms (unknown-names, loans-api)."
        in (report)
    )
    assert "under 50 ms: 51.0 ms (unknown-names): MISSED." in render(missed)
