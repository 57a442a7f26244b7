"""BENCHMARKS.md is rendered from the measured figures alone (bench/report.py), and every verdict follows a
figure a busy machine cannot move: billed units, round trips, CPU time, ratios measured in the same loop.
The figures are those of a smoke run of `python -m bench.run --smoke` on a loaded machine (tests/unit/data):
their values do not matter here, what is rendered from them does."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench.report import (
    COLD_START_RATIO_GOAL,
    DRAIN_GOAL_EVENTS_PER_SECOND,
    INPUT_GUARD_ALONE,
    RELAY_CPU_BEFORE,
    WCU_PER_JOURNEY_GOAL,
    WCU_WHY_MISSED,
    WHY_ABOVE_FLOOR,
    cpu_limited_rate,
    relay_cpu_per_event,
    render,
)

MEASURED = Path(__file__).parent / "data" / "measured-2026-12-01-smoke.json"
VERDICT = re.compile(r"\b(met|MISSED|enough|TOO TIGHT)\b")


@pytest.fixture
def measured() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(MEASURED.read_text())
    return found


def _slower_wall_clock(measured: dict[str, Any], factor: float) -> dict[str, Any]:
    """The same run's figures with every wall-clock figure `factor` times worse (a busier machine), every
    CPU time, count and unit as measured."""
    slow = copy.deepcopy(measured)
    slow["run"]["seconds"] *= factor
    slow["run"]["loadAverage"] = {"start": [40.0, 30.0, 20.0], "end": [45.0, 35.0, 25.0]}
    for row in slow["load"]:
        row["seconds"] *= factor
        row["journeysPerSecond"] /= factor
        row["commandMs"] = {q: ms * factor for q, ms in row["commandMs"].items()}
    slow["backstopLag"]["p50Seconds"] *= factor
    slow["backstopLag"]["p99Seconds"] *= factor
    slow["drain"]["wallSeconds"] *= factor
    slow["relay"]["wallSeconds"] *= factor
    for design in slow["costs"].values():
        for figures in design["timed"]["functions"].values():
            figures["wallMs"] *= factor
    cold = slow["coldStart"]
    cold["initMs"] = {name: {mode: ms * factor for mode, ms in modes.items()} for name, modes in cold["initMs"].items()}
    for request in cold["firstRequest"].values():
        request["ms"] *= factor
    if "inputGuard" in slow:
        for body in slow["inputGuard"]["bodies"]:
            body["guardMs"] *= factor
            body["answerMs"] = {api: ms * factor for api, ms in body["answerMs"].items()}
    return slow


def test_no_verdict_follows_a_wall_clock_figure(measured):
    # Given the run's figures, and the same with every wall-clock figure 50 times worse
    slow = _slower_wall_clock(measured, 50.0)
    # Then every verdict is the same, in the same place
    verdicts, slow_verdicts = VERDICT.findall(render(measured)), VERDICT.findall(render(slow))
    assert verdicts == slow_verdicts, f"as measured: {verdicts}; wall clock 50x slower: {slow_verdicts}"
    assert len(verdicts) >= 10, f"expected a verdict per goal, found {verdicts}"


def test_the_report_says_the_run_s_load_average_and_how_verdicts_are_judged(measured):
    measured["run"]["loadAverage"] = {"start": [13.41, 13.0, 8.9], "end": [2.0, 1.5, 1.25]}
    report = render(measured)
    assert "(load average 13.4, 13.0, 8.9 at the start of this run, 2.0, 1.5, 1.2 at its end)" in report
    assert 'Every verdict ("met", "MISSED") comes from a figure a busy machine cannot move' in report


def _ours_write_units(measured: dict[str, Any], total: float) -> dict[str, Any]:
    changed = copy.deepcopy(measured)
    units = changed["costs"]["ours"]["writeUnits"]
    units["loans/table"] += total - sum(units.values())
    return changed


def test_the_write_unit_goal_is_38_and_only_a_miss_is_explained(measured):
    # 37 (three items per command, the marks, the changes index, the Control Record) + the customer index's 1
    met, missed = _ours_write_units(measured, 38.0), _ours_write_units(measured, 39.0)
    peer = sum(measured["costs"]["peer"]["writeUnits"].values())
    assert WCU_PER_JOURNEY_GOAL == 38
    assert f"at most 38 billed write units per journey, keeping atomicity: 38 (the peer: {peer:g}," in render(met)
    assert WCU_WHY_MISSED not in render(met)
    assert "keeping atomicity: 39 (the peer" in render(missed)
    assert WCU_WHY_MISSED in render(missed)
    assert re.search(r"keeping atomicity: 39 \(the peer: [^)]*\): MISSED\.", render(missed))


def _drain_at(measured: dict[str, Any], events_per_second: float) -> dict[str, Any]:
    """The run's figures with the consumer's own CPU giving `events_per_second`, and an endpoint three
    times as busy (its share is reported, never judged)."""
    changed = copy.deepcopy(measured)
    drain = changed["drain"]
    drain["cpuSeconds"] = drain["events"] / events_per_second
    drain["endpointCpuSeconds"] = 3 * drain["cpuSeconds"]
    return changed


def test_the_drain_goal_is_judged_on_the_consumers_own_cpu_and_the_endpoints_share_is_reported(measured):
    met, missed = _drain_at(measured, DRAIN_GOAL_EVENTS_PER_SECOND), _drain_at(measured, 1499.0)
    assert "**CPU-limited, one consumer process drains 1,500 events/s** (goal >= 1,500: met)" in render(met)
    assert "drains 1,499 events/s** (goal >= 1,500: MISSED)" in render(missed)
    assert cpu_limited_rate(met["drain"]) == pytest.approx(375.0)
    assert "this endpoint would drain 375 events/s" in render(met), render(met)


def _relay_at(measured: dict[str, Any], fraction_of_before: float) -> dict[str, Any]:
    """The run's figures with the relay's CPU per event `fraction_of_before` of the figure recorded before
    issue 35."""
    changed = copy.deepcopy(measured)
    relay = changed["relay"]
    relay["cpuSeconds"] = fraction_of_before * RELAY_CPU_BEFORE.cpu_ms_per_event * relay["events"] / 1000
    return changed


def test_the_relay_goal_is_half_its_cpu_per_event_before(measured):
    met, missed = _relay_at(measured, 0.5), _relay_at(measured, 0.52)
    assert relay_cpu_per_event(met["relay"]) == pytest.approx(0.5 * RELAY_CPU_BEFORE.cpu_ms_per_event)
    assert "it was 4.62 ms; now 0.50x that (goal: at most half, 2.31 ms: met)." in render(met)
    assert "now 0.52x that (goal: at most half, 2.31 ms: MISSED)." in render(missed)


def test_the_relay_goal_is_judged_on_the_functions_cpu_and_the_process_is_reported_beside_its_own_before(measured):
    # Given a run that kept the process's CPU (the local stream poller's reads included) beside the function's
    process_ms, function_ms = 3.5, 1.5
    both = copy.deepcopy(measured)
    relay = both["relay"]
    relay["processCpuSeconds"] = process_ms * relay["events"] / 1000
    relay["cpuSeconds"] = function_ms * relay["events"] / 1000
    report = render(both)
    # Then the verdict is the function's against the function's before, and the process's is shown against
    # the process's before (5.93 ms), no verdict of its own
    assert relay_cpu_per_event(relay) == pytest.approx(function_ms), relay
    assert "**1.50 ms of CPU per event**" in report, report
    assert "(goal: at most half, 2.31 ms: met)" in report, report
    assert "3.50 ms per event, 0.59x the 5.93 ms the process took" in report, report


def test_a_function_over_the_cold_start_goal_by_cpu_is_listed_as_missed_with_its_reason(measured):
    # Given the run's figures with the relay's init CPU at the goal, and just over it
    floor = measured["coldStart"]["initCpuMs"]["floor"]["pyc"]
    at, over = copy.deepcopy(measured), copy.deepcopy(measured)
    at["coldStart"]["initCpuMs"]["relay"]["pyc"] = floor * COLD_START_RATIO_GOAL
    over["coldStart"]["initCpuMs"]["relay"]["pyc"] = floor * 1.16
    # Then only the one over it is listed, with why its init costs what it does
    assert f"**relay**: {WHY_ABOVE_FLOOR['relay']}" not in render(at)
    assert re.search(r"\| relay \| \d+ \| 1\.15 \| .* \| <= 1\.15x: met \|", render(at))
    assert f"**relay**: {WHY_ABOVE_FLOOR['relay']}" in render(over)
    assert re.search(r"\| relay \| \d+ \| 1\.16 \| .* \| <= 1\.15x: MISSED \|", render(over))


def test_the_floor_is_stated_as_the_code_it_runs(measured):
    report = render(measured)
    assert "from pydantic import BaseModel; from aws_lambda_powertools import Logger, Metrics; " in report
    assert "from aws_lambda_powertools.event_handler import APIGatewayRestResolver" in report


def test_lambda_gb_seconds_are_the_modelled_durations_at_each_function_s_memory(measured):
    # Given the run's figures with ours' modelled ms doubled
    doubled = copy.deepcopy(measured)
    ours = doubled["costs"]["ours"]
    ours["billedMs"] = {name: ms * 2 for name, ms in ours["billedMs"].items()}
    memory = measured["memoryMb"]
    gb_seconds = sum(ms / 1000 * memory[name] / 1024 for name, ms in measured["costs"]["ours"]["billedMs"].items())

    def row(report: str) -> str:
        return next(line for line in report.splitlines() if line.startswith("| Lambda GB-seconds | "))

    # Then the GB-seconds row doubles with them
    assert row(render(measured)).startswith(f"| Lambda GB-seconds | {round(gb_seconds, 3):g} |")
    assert row(render(doubled)).startswith(f"| Lambda GB-seconds | {round(2 * gb_seconds, 3):g} |")


def test_a_smoke_run_says_its_figures_are_not_meaningful(measured):
    measured["run"]["smoke"] = True
    assert "(moto server as the AWS endpoint) — SMOKE RUN (tiny sizes; figures not meaningful). Reproduce" in render(
        measured
    )
    measured["run"]["smoke"] = False
    assert "SMOKE RUN" not in render(measured)


def test_load_rows_show_cpu_per_journey_and_errors_by_status(measured):
    row = measured["load"][0]
    row.update(journeys=12, functionsCpuMsPerJourney=81.4, endpointCpuMsPerJourney=120.6, journeysPerSecond=2.5)
    row["commandMs"] = {"p50": 98.2, "p95": 144.6, "p99": 148.7}
    row["errors"] = [[503, 4], [500, 1]]
    assert f"| {row['agents']} | 12 | 81 | 121 | 2.50 | 98 | 145 | 149 | {{503: 4, 500: 1}} |" in render(measured)


def guard_figure(guard_cpu_ms: float) -> dict[str, Any]:
    """An input-guard figure (bench/input_guard.py) of two bodies, the slower guard taking `guard_cpu_ms`."""
    return {
        "runs": 15,
        "bodies": [
            {"name": "issue-23", "what": "escaped quotes", "bytes": 64001, "status": 400, "guardCpuMs": 1.84,
             "guardMs": 9.0, "answerCpuMs": {"orchestrator": 1.9, "loans-api": 2.0},
             "answerMs": {"orchestrator": 19.0, "loans-api": 20.0}},
            {"name": "unknown-names", "what": "names", "bytes": 65534, "status": 422, "guardCpuMs": guard_cpu_ms,
             "guardMs": 500.0, "answerCpuMs": {"orchestrator": 31.0, "loans-api": 36.44},
             "answerMs": {"orchestrator": 310.0, "loans-api": 364.4}},
        ],
    }  # fmt: skip


def test_a_run_measured_without_the_input_guard_figure_says_it_was_not_measured(measured):
    del measured["inputGuard"]
    assert f"Not measured in this run ({INPUT_GUARD_ALONE} measures it alone)." in render(measured)


def test_the_input_guard_goal_follows_the_slowest_guard_s_cpu_time(measured):
    met, missed = copy.deepcopy(measured), copy.deepcopy(measured)
    met["inputGuard"], missed["inputGuard"] = guard_figure(7.2), guard_figure(51.0)
    report = render(met)
    assert "| issue-23 | escaped quotes | 64001 | 400 | 1.8 | 1.9 | 2.0 | 9.0 |" in report
    assert (
        "| body | what | bytes | answer | guard CPU ms | orchestrator CPU ms | loans-api CPU ms | guard wall ms |"
        in (report)
    )
    assert "under 50 ms: 7.2 ms (unknown-names): met. The slowest whole answer: 36.4 ms of CPU (unknown-names, " \
           "loans-api)." in report  # fmt: skip
    assert "under 50 ms: 51.0 ms (unknown-names): MISSED." in render(missed)
