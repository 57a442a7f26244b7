"""The statistics `saga local`'s dashboard reads off what the functions emitted (saga/local/local_metrics.py):
CloudWatch's, over the window the deployed dashboard reads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from saga.local.local_metrics import LocalMetrics, statistic

values = st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=50)


@given(values)
def test_each_statistic_of_some_values_is_cloudwatchs(points):
    assert statistic(points, "Sum") == pytest.approx(sum(points))
    assert statistic(points, "Maximum") == max(points)
    assert statistic(points, "Minimum") == min(points)
    assert statistic(points, "SampleCount") == len(points)
    assert statistic(points, "Average") == pytest.approx(sum(points) / len(points))
    # a percentile is one of the values, with that share of them at or below it (nearest rank)
    for percentile in (50, 99, 100):
        found = statistic(points, f"p{percentile}")
        assert found in points, (found, points)
        assert sum(1 for p in points if p <= found) >= percentile / 100 * len(points), (percentile, found, points)
    assert statistic(points, "p100") == max(points)


@pytest.mark.parametrize("name", ["Sum", "Maximum", "SampleCount", "p99"])
def test_no_values_is_no_datapoint(name):
    assert statistic([], name) is None


def test_an_unknown_statistic_is_refused():
    with pytest.raises(ValueError, match="not a CloudWatch statistic: Median"):
        statistic([1.0], "Median")


def test_the_window_holds_what_was_emitted_within_it_by_that_service_only():
    now = [1000.0]
    metrics = LocalMetrics(clock=lambda: now[0], keep_seconds=600)
    metrics.record("loans-api", {"CommandsCommitted": [1.0, 1.0]})
    metrics.record("orchestrator", {"CommandsCommitted": [5.0]})
    now[0] += 45
    metrics.record("loans-api", {"CommandsCommitted": [1.0], "IdempotentReplays": [1.0]})
    now[0] += 30  # the first two are 75 s old, the third 30 s
    assert metrics.statistic("loans-api", "CommandsCommitted", "Sum", 60) == 1.0
    assert metrics.statistic("loans-api", "CommandsCommitted", "Sum", 300) == 3.0
    assert metrics.statistic("loans-api", "Compensations", "Sum", 300) is None


def test_what_is_older_than_it_keeps_is_forgotten():
    now = [0.0]
    metrics = LocalMetrics(clock=lambda: now[0], keep_seconds=600)
    metrics.record("sweeper", {"PendingOutboxCount": [7.0]})
    now[0] += 601
    metrics.record("sweeper", {"PendingOutboxCount": [2.0]})
    assert metrics.statistic("sweeper", "PendingOutboxCount", "Maximum", 10_000) == 2.0
