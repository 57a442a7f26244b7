"""Process-wide test setup: fake AWS credentials, never a real account."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

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
        "POWERTOOLS_METRICS_DISABLED": "true",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
)

from hypothesis import HealthCheck, settings

# CI runs are derandomized so a failure reproduces; locally Hypothesis explores new examples.
settings.register_profile("ci", derandomize=True, suppress_health_check=[HealthCheck.too_slow])
if os.environ.get("CI"):
    settings.load_profile("ci")


import pytest  # noqa: E402
from _pytest.nodeid import NodeId  # noqa: E402

# `make test` runs on every core (pytest-xdist, --dist loadgroup); the tests that share an expensive fixture
# run on one worker, which builds it once: tests/infra the stack's two synthesized templates, and each
# module below its own deployment or system (a module-scoped fixture).
ONE_WORKER = ("tests/infra/", "tests/e2e/test_verify.py", "tests/e2e/test_operator.py", "tests/chaos/test_fuzz.py")


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Iterator[None]:
    # Before every other implementation: pytest-xdist's own (on each worker) reads the marks.
    for item in items:
        group = next((prefix for prefix in ONE_WORKER if item.nodeid.startswith(prefix)), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    yield
    _suffix_groups(config, items)


def _suffix_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """pytest-xdist 3.8 tells its scheduler an item's group by appending `@group` to `item._nodeid`, which
    pytest 9.2 no longer reads (pytest-dev/pytest-xdist#1386): every group's tests were spread over the
    workers, each building the group's fixture again. Append it where pytest reads the id; a no-op once
    pytest-xdist does it itself, or without `--dist loadgroup`."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        groups = sorted({str(mark.args[0]) for mark in item.iter_markers("xdist_group") if mark.args})
        if groups and not item.nodeid.endswith(f"@{'_'.join(groups)}"):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")


@pytest.fixture(scope="session")
def system():
    """`saga local` in a subprocess (one per session), loans-api behind the fault proxy."""
    from tests.system import running_system

    with running_system() as running:
        yield running


@pytest.fixture
def clean_proxy(system):
    system.toxiproxy.reset()
    yield system.toxiproxy
    system.toxiproxy.reset()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Under `make test` (the Makefile sets MAKE_TEST_CLOCK: when it started, when .venv was installed,
    when ruff and mypy were done, in epoch seconds), the closing summary says how long it all took."""
    clock = os.environ.get("MAKE_TEST_CLOCK", "").split()
    if len(clock) != 3:
        return
    started, installed, checked = (int(moment) for moment in clock)
    now = time.time()
    terminalreporter.write_sep(
        "-",
        f"make test: {now - started:.0f} s (install {installed - started} s, ruff and mypy {checked - installed} s,"
        f" pytest {now - checked:.0f} s)",
    )
