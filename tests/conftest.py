"""Process-wide test setup: fake AWS credentials, never a real account."""

from __future__ import annotations

import os

os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "POWERTOOLS_METRICS_NAMESPACE": "LoanSagaTests",
        "POWERTOOLS_SERVICE_NAME": "tests",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
)

from hypothesis import HealthCheck, settings

# CI runs are derandomized so a failure reproduces; locally Hypothesis explores new examples.
settings.register_profile("ci", derandomize=True, suppress_health_check=[HealthCheck.too_slow])
if os.environ.get("CI"):
    settings.load_profile("ci")


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def system():
    """`saga local` in a subprocess (one per session), loans-api behind the fault proxy."""
    from tests.system import LOANS_PROXY, start_system, stop_local

    running, own_proxy = start_system()
    yield running
    assert running.process is not None
    exit_code = stop_local(running.process)
    running.toxiproxy.delete_proxy(LOANS_PROXY)
    if own_proxy is not None:
        own_proxy.stop()
    assert exit_code == 0, "saga local did not stop cleanly on SIGINT"


@pytest.fixture
def clean_proxy(system):
    system.toxiproxy.reset()
    yield system.toxiproxy
    system.toxiproxy.reset()
