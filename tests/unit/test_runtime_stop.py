"""saga/local/runtime.py stops each stage's parts at once; what one part's stop raises still reaches the
caller (`saga local`'s exit code, a test's teardown), once the others stopped."""

from __future__ import annotations

import pytest

from saga.local import runtime


def test_a_part_that_fails_to_stop_fails_the_stop():
    def fails() -> None:
        raise RuntimeError("the relay's pool did not stop")

    with pytest.raises(RuntimeError, match="did not stop"):
        runtime._all_at_once([fails, lambda: None])
