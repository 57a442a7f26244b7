"""A helper's failing assertion says why, with values (tests/conftest.py registers the tests package for
pytest's assertion rewriting: only test modules and conftests are rewritten otherwise)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.integration.journeys import new_journey


class Refusing:
    """An orchestrator that answers every request with a 503."""

    def post(self, path: str, body: Any, **kwargs: Any) -> Any:
        return SimpleNamespace(status=503, body=b'{"retryable": true}')


def test_a_helpers_bare_assert_fails_with_the_values_it_compared():
    # When a helper's `assert response.status == 201` fails
    with pytest.raises(AssertionError) as failed:
        new_journey(Refusing())  # type: ignore[arg-type]
    # Then the failure shows the status it got, not a bare AssertionError
    assert "503" in str(failed.value), f"the helper's assertion failed without its values: {failed.value!r}"
