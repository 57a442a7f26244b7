"""Reading many items by key (shared/batch_read.py): 100 keys a call, unprocessed keys asked for again
after a pause that doubles, and an error, not a gap, when some are still unprocessed after the last round."""

from __future__ import annotations

from typing import Any

import pytest

from shared.batch_read import ROUNDS, BatchReadIncomplete, batch_get, batch_read


class ThrottlingDynamo:
    """BatchGetItem that leaves the last `unprocessed` keys of each call unprocessed `rounds` times."""

    def __init__(self, throttled_calls: int, unprocessed: int = 1, consistent: bool = True) -> None:
        self.throttled_calls = throttled_calls
        self.unprocessed = unprocessed
        self.consistent = consistent
        self.calls: list[int] = []

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:  # noqa: N803 - boto3's name
        [(table, request)] = RequestItems.items()
        keys = request["Keys"]
        assert request["ConsistentRead"] is self.consistent
        self.calls.append(len(keys))
        if self.throttled_calls:
            self.throttled_calls -= 1
            done, left = keys[: -self.unprocessed], keys[-self.unprocessed :]
            unprocessed = {table: {"Keys": left, "ConsistentRead": self.consistent}}
            return {"Responses": {table: done}, "UnprocessedKeys": unprocessed}
        return {"Responses": {table: keys}, "UnprocessedKeys": {}}


KEYS = [{"pk": {"S": f"JOURNEY#{n}"}, "sk": {"S": "CONTROL"}} for n in range(250)]


def test_keys_are_read_a_hundred_a_call_and_every_item_is_returned():
    # Given 250 keys and a table that processes every key at once, When they are read
    client = ThrottlingDynamo(throttled_calls=0)
    items = batch_get(client, "t", KEYS, sleep=lambda s: None)  # type: ignore[arg-type]
    # Then three calls read them (100, 100, 50) and every item comes back
    assert (client.calls, items) == ([100, 100, 50], KEYS)


def test_unprocessed_keys_are_asked_for_again_after_a_pause_that_doubles():
    # Given a table that leaves a key unprocessed three times in a row
    client = ThrottlingDynamo(throttled_calls=3)
    pauses: list[float] = []
    # When 10 keys are read (with the jitter at its least)
    items = batch_get(client, "t", KEYS[:10], sleep=pauses.append, unit_random=lambda: 0.0)  # type: ignore[arg-type]
    # Then the key is asked for alone after 50, 100 and 200 ms, and every item comes back
    assert client.calls == [10, 1, 1, 1]
    assert pauses == [0.05, 0.1, 0.2], pauses
    assert sorted(i["pk"]["S"] for i in items) == sorted(k["pk"]["S"] for k in KEYS[:10])


def test_keys_still_unprocessed_after_the_last_round_are_an_error_not_a_missing_item():
    # Given a table that never processes the last key
    client = ThrottlingDynamo(throttled_calls=1000)
    # When 10 keys are read, Then after the bounded rounds the read fails instead of leaving the key out
    with pytest.raises(BatchReadIncomplete, match="1 keys of t still unprocessed"):
        batch_get(client, "t", KEYS[:10], sleep=lambda s: None)  # type: ignore[arg-type]
    assert len(client.calls) == ROUNDS.attempts


def test_a_caller_that_keeps_what_is_left_gets_the_unprocessed_keys_back_eventually_consistent_if_asked():
    # Given a table that never processes the last key of a call
    client = ThrottlingDynamo(throttled_calls=1000, consistent=False)
    # When 10 keys are read eventually consistent and the caller keeps what is left (the sweeper)
    items, left = batch_read(client, "t", KEYS[:10], consistent=False, sleep=lambda s: None)  # type: ignore[arg-type]
    # Then after the bounded rounds the nine read come back and the tenth is handed back, not dropped
    assert (len(client.calls), items, left) == (ROUNDS.attempts, KEYS[:9], KEYS[9:10])
