"""Retry classification and schedule (D8), with fake time, and the request deadline it draws on."""

import pytest
import urllib3
from hypothesis import given
from hypothesis import strategies as st

from functions.orchestrator.deadline import RESPONSE_MARGIN_SECONDS, DeadlineReached, RequestDeadline
from functions.orchestrator.retry import RetryingLoansClient, RetryPolicy
from shared.errors import UpstreamUnavailable
from shared.loans_client import HttpLoansClient, LoansReply, LoansRequest, TransientLoansError
from tests.support import FakeClock
from tools.inprocess import FakeHttpResponse

REQUEST = LoansRequest("POST", "/simulations", {"a": 1}, "k")


class FlakyClient:
    def __init__(self, failures: int, reply: LoansReply | None = None) -> None:
        self.failures = failures
        self.calls = 0
        self.reply = reply or LoansReply(201, {"ok": True})

    def send(self, request):
        self.calls += 1
        if self.calls <= self.failures:
            raise TransientLoansError("boom")
        return self.reply


def retrying(inner, sleeps, unit_random=lambda: 0.0, deadline=None):
    return RetryingLoansClient(
        inner,
        RetryPolicy(),
        deadline or RequestDeadline(),
        attempt_seconds=1.8,
        sleep=sleeps.append,
        unit_random=unit_random,
    )


def test_transient_failures_are_retried_until_success():
    sleeps: list[float] = []
    inner = FlakyClient(failures=2)
    assert retrying(inner, sleeps).send(REQUEST).status == 201
    assert inner.calls == 3
    assert sleeps == [1.0, 2.0]


def test_five_attempts_then_unavailable_with_the_exact_floor_schedule():
    sleeps: list[float] = []
    inner = FlakyClient(failures=99)
    with pytest.raises(UpstreamUnavailable) as raised:
        retrying(inner, sleeps).send(REQUEST)
    assert inner.calls == 5
    assert sleeps == [1.0, 2.0, 4.0, 8.0]
    assert sum(sleeps) > 12
    assert "safe" in raised.value.detail


@given(st.lists(st.floats(min_value=0.0, max_value=0.999999), min_size=4, max_size=4))
def test_jitter_is_additive_and_never_shortens_the_floor(randoms):
    sleeps: list[float] = []
    draws = iter(randoms)
    with pytest.raises(UpstreamUnavailable):
        retrying(FlakyClient(failures=99), sleeps, unit_random=lambda: next(draws)).send(REQUEST)
    policy = RetryPolicy()
    for n, delay in enumerate(sleeps, start=1):
        assert policy.floor_delay(n) <= delay <= policy.floor_delay(n) + policy.max_jitter
    assert policy.floor_seconds() <= sum(sleeps) <= policy.ceiling_seconds()


def test_a_429_is_transient():
    with pytest.raises(TransientLoansError):
        HttpLoansClient("http://loans", Requester(FakeHttpResponse(429, b"{}", {})), urllib3.Timeout(1, 1)).send(
            REQUEST
        )


class Remaining:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def get_remaining_time_in_millis(self) -> int:
        return int(self.seconds * 1000)


def test_the_schedule_stops_when_the_next_attempt_would_not_fit_the_deadline():
    # Given a request with 10 s left and a fake clock that each sleep advances
    clock = FakeClock()
    deadline = RequestDeadline(clock)
    deadline.start(Remaining(10.0))
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock.now += seconds

    inner = FlakyClient(failures=99)

    class TimingOut:
        def send(self, request):
            clock.now += 1.8  # every attempt runs out its connect + read timeouts
            return inner.send(request)

    client = RetryingLoansClient(
        TimingOut(), RetryPolicy(), deadline, attempt_seconds=1.8, sleep=sleep, unit_random=lambda: 0
    )
    # When loans-api keeps timing out
    with pytest.raises(UpstreamUnavailable) as raised:
        client.send(REQUEST)
    # Then it stops early (a 4 s sleep and a 1.8 s attempt would overrun), within the budget, with a 503
    assert sleeps == [1.0, 2.0]
    assert inner.calls == 3
    assert clock.now <= 10.0 - RESPONSE_MARGIN_SECONDS
    assert "safe" in raised.value.detail


@pytest.mark.parametrize("status", [400, 404, 409, 413, 422])
def test_any_4xx_is_terminal(status):
    sleeps: list[float] = []
    inner = FlakyClient(failures=0, reply=LoansReply(status, {"detail": "no"}))
    assert retrying(inner, sleeps).send(REQUEST).status == status
    assert inner.calls == 1
    assert sleeps == []


class Requester:
    def __init__(self, outcome):
        self.outcome = outcome

    def request(self, method, url, body=None, headers=None, **kwargs):
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


@pytest.mark.parametrize(
    "outcome",
    [
        FakeHttpResponse(500, b"{}", {}),
        FakeHttpResponse(503, b"", {}),
        FakeHttpResponse(201, b'{"cut": ', {}),
        urllib3.exceptions.ProtocolError("Connection reset by peer"),
        urllib3.exceptions.ReadTimeoutError(None, "http://x", "read timed out"),  # type: ignore[arg-type]
        urllib3.exceptions.NewConnectionError(None, "refused"),  # type: ignore[arg-type]
    ],
    ids=["500", "503", "a-reply-cut-short", "connection-reset", "read-timeout", "connection-refused"],
)
def test_5xx_and_transport_failures_are_transient(outcome):
    client = HttpLoansClient("http://loans", Requester(outcome), urllib3.Timeout(1, 1))
    with pytest.raises(TransientLoansError):
        client.send(REQUEST)


def test_a_4xx_is_returned_with_its_problem_and_the_replay_header_is_read():
    reply = HttpLoansClient(
        "http://loans", Requester(FakeHttpResponse(409, b'{"detail":"no"}', {})), urllib3.Timeout(1, 1)
    ).send(REQUEST)
    assert (reply.status, reply.body, reply.replayed) == (409, {"detail": "no"}, False)
    replayed = HttpLoansClient(
        "http://loans", Requester(FakeHttpResponse(201, b"{}", {"Idempotent-Replayed": "true"})), urllib3.Timeout(1, 1)
    ).send(REQUEST)
    assert replayed.replayed


def test_the_first_attempt_goes_through_its_own_client_and_every_retry_through_the_other():
    # Given a first-attempt client (the long, cold-start timeout) that times out, and a retry client
    first, retries = FlakyClient(failures=1), FlakyClient(failures=1)
    sleeps: list[float] = []
    client = RetryingLoansClient(retries, RetryPolicy(), RequestDeadline(), attempt_seconds=0.9,
                                 sleep=sleeps.append, unit_random=lambda: 0.0,
                                 first=first, first_attempt_seconds=2.8)  # fmt: skip
    # When a call fails once on each
    assert client.send(REQUEST).status == 201
    # Then the first attempt went through the first client alone, the two retries through the other
    assert (first.calls, retries.calls) == (1, 2)
    assert sleeps == [1.0, 2.0]


def test_a_call_is_not_started_unless_its_first_attempts_worst_case_fits():
    # Given 2.5 s left: a retry (0.9 s) would fit, the first attempt (2.8 s) does not
    clock = FakeClock()
    deadline = RequestDeadline(clock)
    deadline.start(Remaining(2.5 + RESPONSE_MARGIN_SECONDS))
    first, retries = FlakyClient(failures=0), FlakyClient(failures=0)
    client = RetryingLoansClient(retries, RetryPolicy(), deadline, attempt_seconds=0.9,
                                 first=first, first_attempt_seconds=2.8)  # fmt: skip
    # Then the call is refused before any attempt
    with pytest.raises(DeadlineReached, match=r"worst case 2\.8 s") as refused:
        client.send(REQUEST)
    assert (first.calls, retries.calls) == (0, 0), refused.value
