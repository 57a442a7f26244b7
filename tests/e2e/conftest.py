"""Runtimes shared by more than one e2e module (each started once per test worker that needs it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.road2_off import Road2Off
from tests.e2e.road2_off import road2_off as running_road2_off


@pytest.fixture(scope="session")
def road2_off(tmp_path_factory) -> Iterator[Road2Off]:
    """`saga local --disable consumer` for the operator suites (tests/e2e/road2_off.py)."""
    with running_road2_off(tmp_path_factory.mktemp("road2-off")) as system:
        yield system
