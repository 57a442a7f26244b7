"""Lambda's billed duration as the benchmark models it from CPU time (bench/cost.py, docs/COST.md): own CPU
stretched by the vCPU share of the function's memory, a round trip per AWS request and per function called,
and the called function's own modelled duration, rounded up to the ms."""

from __future__ import annotations

import pytest

from bench.cost import AWS_ROUND_TRIP_MS, LAMBDA_VCPU_MB, Invocation, cpu_stretch

MEMORY = {"orchestrator": 512, "loans-api": 512, "big": 3538}


def test_cpu_is_stretched_by_the_share_of_a_vcpu_the_memory_buys_and_never_shrunk():
    assert cpu_stretch(512) == pytest.approx(LAMBDA_VCPU_MB / 512)
    assert cpu_stretch(3538) == 1.0, "above one vCPU's memory a single thread runs no faster"


def test_an_invocation_is_billed_its_own_cpu_stretched_plus_a_round_trip_per_aws_call():
    alone = Invocation(cpu=0.010, calls=3)
    expected = 10 * LAMBDA_VCPU_MB / 512 + 3 * AWS_ROUND_TRIP_MS
    assert alone.modelled_ms(MEMORY, "loans-api") == pytest.approx(expected, abs=1), alone


def test_a_caller_is_billed_while_its_callee_runs_and_the_callee_s_cpu_is_not_the_caller_s():
    # Given an orchestrator invocation (12 ms of CPU in all, 5 AWS calls in all) that called loans-api
    # (10 ms of that CPU, 3 of those calls)
    callee = Invocation(cpu=0.010, calls=3)
    caller = Invocation(cpu=0.012, calls=5, callees=[("loans-api", callee)])
    # Then the caller's own part is 2 ms of CPU and 2 calls, and it waits one round trip plus the callee
    assert caller.own_cpu == pytest.approx(0.002)
    assert caller.own_calls == 2
    callee_ms = callee.modelled_ms(MEMORY, "loans-api")
    own = 2 * LAMBDA_VCPU_MB / 512 + 2 * AWS_ROUND_TRIP_MS
    assert caller.modelled_ms(MEMORY, "orchestrator") == pytest.approx(own + AWS_ROUND_TRIP_MS + callee_ms, abs=1)
