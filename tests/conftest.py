"""Process-wide test setup: fake AWS credentials, never a real account."""

from __future__ import annotations

import os
from pathlib import Path

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

# Every failing assertion says why, with values: pytest rewrites the asserts of test modules and conftests
# only, so a helper's `assert status == 201` (tests/system.py, tests/chaos/journeys.py, ...) would fail with
# a bare AssertionError. Every other module of the tests package is rewritten too (before any is imported).
pytest.register_assert_rewrite(*(
    ".".join(path.relative_to(Path(__file__).parent.parent).with_suffix("").parts)
    for path in Path(__file__).parent.rglob("*.py")
    if not path.name.startswith(("test_", "conftest", "__init__"))
))  # fmt: skip

# `make test` runs on every core (pytest-xdist, --dist loadgroup), which spreads a module's tests over the
# workers: the tests that share an expensive fixture run on one worker (a group), which builds it once:
# tests/infra the stack's two synthesized templates, the docs' transcripts one run of every scene, the two
# operator suites and the dashboard's their consumer-less runtime (tests/e2e/road2_off.py), and each other
# module below its own deployment or system (a module-scoped fixture).
ONE_WORKER = {
    "tests/infra/": "infra",
    "tests/e2e/test_verify.py": "verify",
    "tests/e2e/test_operator.py": "road2-off",
    "tests/e2e/test_attack_operator.py": "road2-off",
    "tests/e2e/test_dashboard.py": "road2-off",
    "tests/e2e/test_docs_transcripts.py": "docs",
    "tests/chaos/test_fuzz.py": "fuzz",
}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (its own hook names each item by them)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The long tests (marked `slow`) first: xdist hands out the groups biggest first, then every other test in
    # this order, so a long test is never the last one left while the other worker has nothing to do (the
    # bench smoke and the model-based test came after most of tests/integration). A stable sort: the tests of
    # a module stay together (the `slow` marks are per module, or on a module's only long test).
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    for item in items:
        group = _group(item.nodeid)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def _group(nodeid: str) -> str | None:
    return next((name for prefix, name in ONE_WORKER.items() if nodeid.startswith(prefix)), None)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook, on the controller
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    """Under `--dist loadgroup` a grouped test's id carries its group (`...@infra`), or the scheduler
    spreads the group over the workers and each builds its fixture again, silently: pytest 9.2 broke
    that (pyproject.toml pins below it). Stop at once instead."""
    lost = [nodeid for nodeid in ids if _group(nodeid) and "@" not in nodeid]
    if lost and node.config.getvalue("dist") == "loadgroup":  # type: ignore[attr-defined]
        raise pytest.UsageError(f"{len(lost)} tests lost their xdist_group (first: {lost[0]}): see pyproject.toml")


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
