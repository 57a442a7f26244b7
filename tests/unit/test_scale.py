"""The scale model (bench/limits.py) and the settings a target rate derives (shared/capacity.py)."""

import pytest

from bench.limits import Measured, first_bottleneck
from shared.capacity import DEFAULT_CAPACITY, derive

MEASURED = Measured(
    {
        "agentCommands": 5,
        "events": 4,
        "hottestEventTypeCount": 2,
        "writeUnits": {"loans/table": 38.0, "loans/journey-changes": 4.0},
        "apiRequests": {"orchestrator": 5, "loans-api": 4},
        "lambdaSeconds": {"orchestrator": 0.1, "loans-api": 0.05, "relay": 0.02, "consumer": 0.01},
    }
)


def test_the_defaults_break_first_at_the_agent_api_throttle():
    [(first, ceiling, _), *_] = first_bottleneck(MEASURED, DEFAULT_CAPACITY, 1_000)
    assert (first, ceiling) == ("agent API stage throttle (infra/apis.py)", 20)


def test_sized_for_1000_the_hot_event_type_key_of_the_changes_index_is_what_is_left():
    # 2 SimulationCreated per journey, 1 write unit each, on one partition key: 1,000 / 2 journeys/s
    short = first_bottleneck(MEASURED, derive(1_000), 1_000)
    assert [(name, ceiling) for name, ceiling, _ in short] == [
        ("journey-changes index: one partition per event type", 500)
    ]


def test_a_target_rate_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        derive(0)
