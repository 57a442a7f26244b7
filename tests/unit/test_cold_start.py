"""No cold chain (D8): a cold loans-api, modelled at its configured memory from the CPU the bench measured
(shared/topology.py `cold_loans_api_seconds`, bench/measured.json), is outlasted by the first attempt of a
call, and by every retry, by at least COLD_TIMEOUT_MULTIPLE; when every attempt times out the deadline
truncates the schedule, after four attempts; the consumer's one ledger read follows the same rule. The
constants are the ones infra deploys."""

from __future__ import annotations

import json

import pytest

from functions.consumer.settings import ConsumerSettings
from functions.orchestrator import bootstrap
from functions.orchestrator.deadline import APPLY_RESERVE_SECONDS, RESPONSE_MARGIN_SECONDS, RequestDeadline
from functions.orchestrator.retry import RetryingLoansClient, RetryPolicy
from functions.orchestrator.settings import OrchestratorSettings
from infra.packaging import ROOT
from shared import topology
from shared.errors import UpstreamUnavailable
from shared.loans_client import CONNECT_TIMEOUT_SECONDS, LoansReply, LoansRequest, TransientLoansError
from tests.support import FakeClock

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


@pytest.mark.parametrize(
    ("settings", "field", "who"),
    [
        (OrchestratorSettings, "loans_read_timeout", "the first attempt"),
        (ConsumerSettings, "loans_read_timeout", "the consumer's ledger read"),
        # A retry follows a first attempt that failed: one cut off still holds its loans-api instance (it runs
        # on to its own timeout), so the retry may meet another, cold one (a scale-out), or a loans-api
        # retrying a throttled DynamoDB write itself (up to a second and more of botocore's backoff). A retry
        # that cannot outlast those would be cut off in turn and retried into yet another instance: the cold
        # chain again.
        (OrchestratorSettings, "loans_retry_read_timeout", "a retry"),
    ],
    ids=["first-attempt", "consumer-ledger-read", "retry"],
)
def test_a_call_to_loans_api_outlasts_a_cold_loans_api_by_half_again(
    settings: type[OrchestratorSettings] | type[ConsumerSettings], field: str, who: str
):
    cold = cold_loans_api_seconds()
    waits = default(settings, field)
    assert waits >= topology.COLD_TIMEOUT_MULTIPLE * cold, (
        f"{who} waits {waits} s; a cold loans-api at {topology.LOANS_API.memory_mb} MB answers in "
        f"{cold:.2f} s (x{topology.COLD_TIMEOUT_MULTIPLE} = {topology.COLD_TIMEOUT_MULTIPLE * cold:.2f} s)"
    )


class Remaining:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def get_remaining_time_in_millis(self) -> int:
        return int(self.seconds * 1000)


class TimingOut:
    """loans-api at its worst: every attempt runs out its connect and read timeouts, then fails."""

    def __init__(self, clock: FakeClock, seconds: float) -> None:
        self.clock, self.seconds, self.calls = clock, seconds, 0

    def send(self, request: LoansRequest) -> LoansReply:
        self.calls += 1
        self.clock.now += self.seconds
        raise TransientLoansError("read timed out")


def worst_case_run(settings: OrchestratorSettings) -> tuple[int, float, float]:
    """(attempts started, when the call gave up, the deadline) of one call whose every attempt runs out its
    time and whose every sleep is its longest, through the orchestrator's own retry decorator."""
    clock = FakeClock()
    deadline = RequestDeadline(clock)
    deadline.start(Remaining(topology.ORCHESTRATOR.timeout_seconds))
    first = TimingOut(clock, bootstrap.loans_attempt_seconds(settings, first=True))
    retries = TimingOut(clock, bootstrap.loans_attempt_seconds(settings))
    policy = bootstrap.retry_policy(settings)

    def sleep(seconds: float) -> None:
        clock.now += seconds

    # every delay drawn at its longest (U = 1)
    client = RetryingLoansClient(
        retries, policy, deadline, attempt_seconds=bootstrap.loans_attempt_seconds(settings),
        reserve_seconds=APPLY_RESERVE_SECONDS, sleep=sleep, unit_random=lambda: 1.0,
        first=first, first_attempt_seconds=bootstrap.loans_attempt_seconds(settings, first=True),
    )  # fmt: skip
    with pytest.raises(UpstreamUnavailable):
        client.send(LoansRequest("POST", "/simulations", {}, "k"))
    return first.calls + retries.calls, clock.now, topology.ORCHESTRATOR.timeout_seconds - RESPONSE_MARGIN_SECONDS


def test_the_deadline_truncates_the_schedule_when_every_attempt_times_out():
    # Given the deployed defaults and a loans-api whose every attempt runs out its timeouts
    settings = OrchestratorSettings(journeys_table_name="t", loans_api_url="http://loans")
    attempts, gave_up_at, deadline = worst_case_run(settings)
    # Then the call gives up in time to apply an answer and reply (no attempt is started that cannot end
    # within the deadline with the apply's reserve after it), after at least four attempts
    assert gave_up_at + APPLY_RESERVE_SECONDS <= deadline, (gave_up_at, deadline)
    assert attempts >= 4, f"only {attempts} attempts fit the deadline when each runs out its time"
    # and the schedule is the one D8 names: 5 attempts, 1 s doubling, additive jitter (all five are made
    # when failures are fast: tests/integration/test_deadline.py)
    policy = bootstrap.retry_policy(settings)
    assert policy == RetryPolicy() == RetryPolicy(attempts=5, base_delay=1.0, multiplier=2.0, max_jitter=0.1)
    assert settings.loans_connect_timeout == CONNECT_TIMEOUT_SECONDS


def test_a_cold_start_at_a_quarter_of_a_vcpu_would_outlast_the_first_attempt():
    # The memory is what makes the rule hold: at 512 MB (0.29 of a vCPU), the first attempt would be cut off
    first = default(OrchestratorSettings, "loans_read_timeout")
    assert topology.COLD_TIMEOUT_MULTIPLE * cold_loans_api_seconds(512) > first, cold_loans_api_seconds(512)
