"""No cold chain (D8): a cold loans-api, modelled at its configured memory from the CPU the bench measured
(shared/topology.py `cold_loans_api_seconds`, bench/measured.json), is outlasted by the first attempt of a
call by at least COLD_TIMEOUT_MULTIPLE, and the whole retry schedule still fits the orchestrator's deadline;
the consumer's one ledger read follows the same rule. The constants are the ones infra deploys."""

from __future__ import annotations

import json

from functions.consumer.settings import ConsumerSettings
from functions.orchestrator import bootstrap
from functions.orchestrator.deadline import RESPONSE_MARGIN_SECONDS
from functions.orchestrator.retry import RetryPolicy
from functions.orchestrator.settings import OrchestratorSettings
from infra.packaging import ROOT
from shared import topology
from shared.loans_client import CONNECT_TIMEOUT_SECONDS

MEASURED = json.loads((ROOT / "bench" / "measured.json").read_text())["coldStart"]


def default(settings: type[OrchestratorSettings] | type[ConsumerSettings], field: str) -> float:
    return float(settings.model_fields[field].default)


def cold_loans_api_seconds(memory_mb: int = topology.LOANS_API.memory_mb) -> float:
    """A cold loans-api with bytecode (what every deploy ships, infra/packaging.py) at `memory_mb`."""
    return topology.cold_loans_api_seconds(
        MEASURED["initCpuMs"]["loans-api"]["pyc"] / 1000,
        MEASURED["firstRequest"]["loans-api"]["cpuMs"] / 1000,
        memory_mb,
    )


def test_the_first_attempt_outlasts_a_cold_loans_api_by_half_again():
    cold = cold_loans_api_seconds()
    first = default(OrchestratorSettings, "loans_read_timeout")
    assert first >= topology.COLD_TIMEOUT_MULTIPLE * cold, (
        f"the first attempt waits {first} s; a cold loans-api at {topology.LOANS_API.memory_mb} MB answers in "
        f"{cold:.2f} s (x{topology.COLD_TIMEOUT_MULTIPLE} = {topology.COLD_TIMEOUT_MULTIPLE * cold:.2f} s)"
    )


def test_the_consumers_ledger_read_outlasts_a_cold_loans_api_by_half_again():
    cold = cold_loans_api_seconds()
    read = default(ConsumerSettings, "loans_read_timeout")
    assert read >= topology.COLD_TIMEOUT_MULTIPLE * cold, (read, cold)


def test_the_whole_schedule_fits_the_orchestrators_deadline():
    # Given the deployed defaults: the first attempt and every retry run out their timeouts, every sleep is
    # its longest jittered delay, and the answer is then applied at the DynamoDB budget's worst
    settings = OrchestratorSettings(journeys_table_name="t", loans_api_url="http://loans")
    policy = bootstrap.retry_policy(settings)
    parts = {
        "first attempt": bootstrap.loans_attempt_seconds(settings, first=True),
        "retries": (policy.attempts - 1) * bootstrap.loans_attempt_seconds(settings),
        "sleeps": policy.ceiling_seconds(),
        "apply": bootstrap.APPLY_RESERVE_SECONDS,
    }
    deadline = topology.ORCHESTRATOR.timeout_seconds - RESPONSE_MARGIN_SECONDS
    # Then all of it fits the function's deadline, with room for the record's read at its usual tens of ms
    # (a read at its own worst case, 2.2 s, on top of all of it gives up the last attempt: the deadline's
    # guard answers 503, retryable, tests/integration/test_deadline.py)
    assert sum(parts.values()) + 0.05 <= deadline, (round(sum(parts.values()), 2), deadline, parts)
    # and the schedule is the one D8 names: 5 attempts, 1 s doubling, additive jitter
    assert policy == RetryPolicy() == RetryPolicy(attempts=5, base_delay=1.0, multiplier=2.0, max_jitter=0.1)
    assert settings.loans_connect_timeout == CONNECT_TIMEOUT_SECONDS


def test_a_cold_start_at_a_quarter_of_a_vcpu_would_outlast_the_first_attempt():
    # The memory is what makes the rule hold: at 512 MB (0.29 of a vCPU), the first attempt would be cut off
    first = default(OrchestratorSettings, "loans_read_timeout")
    assert topology.COLD_TIMEOUT_MULTIPLE * cold_loans_api_seconds(512) > first, cold_loans_api_seconds(512)
