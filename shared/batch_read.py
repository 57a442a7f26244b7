"""Reading many items by key (DynamoDB BatchGetItem), one way everywhere: at most 100 keys a call,
strongly consistent (the sweeper reads eventually consistent first: `batch_read(consistent=False)`),
and the keys DynamoDB leaves unprocessed (throttling, a response over 16 MB) asked for again
after a pause that doubles (shared/backoff.py), a bounded number of rounds. AWS: "If DynamoDB returns any
unprocessed items, you should retry the batch operation on those items. However, we strongly recommend
that you use an exponential backoff algorithm"
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html). What is still
unprocessed after the last round is an error, never a silent gap: a caller that took a missing item for
an absent one would decide on it (a Control Record "missing", a journey "never seen")."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from shared.backoff import Backoff

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import KeysAndAttributesUnionTypeDef

# BatchGetItem's limit of keys per call.
BATCH_GET_LIMIT = 100
# Calls per 100 keys at most, and the pauses between them: 50 ms, then 100, 200, 400 (0.75 s in all), each
# with up to 50 ms of jitter.
ROUNDS = Backoff(attempts=5, base_delay=0.05, max_jitter=0.05)


class BatchReadIncomplete(Exception):
    """Some keys were still unprocessed after the last round: the read did not finish (retry it later)."""


def batch_get(
    client: DynamoDBClient,
    table: str,
    keys: list[dict[str, Any]],
    *,
    attributes: Sequence[str] = (),
    rounds: Backoff = ROUNDS,
    sleep: Callable[[float], None] = time.sleep,
    unit_random: Callable[[], float] = random.random,
) -> list[dict[str, Any]]:
    """The items of `table` at `keys` (DynamoDB's attribute maps), strongly consistent; an item that
    does not exist is left out. BatchReadIncomplete when keys are still unprocessed after the last of `rounds`.
    `attributes`: only those of each item (a projection), when the caller needs no more."""
    items, unprocessed = batch_read(
        client, table, keys, attributes=attributes, rounds=rounds, sleep=sleep, unit_random=unit_random
    )
    if unprocessed:
        raise BatchReadIncomplete(
            f"{len(unprocessed)} keys of {table} still unprocessed after {rounds.attempts} BatchGetItem calls"
        )
    return items


def batch_read(
    client: DynamoDBClient,
    table: str,
    keys: list[dict[str, Any]],
    *,
    consistent: bool = True,
    attributes: Sequence[str] = (),
    rounds: Backoff = ROUNDS,
    sleep: Callable[[float], None] = time.sleep,
    unit_random: Callable[[], float] = random.random,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The items of `table` at `keys` that exist, and the keys still unprocessed after the last of `rounds`,
    for a caller that keeps those for later (the sweeper revisits them next run). `consistent=False`
    reads eventually consistent (half a read unit an item). `attributes`: only those of each item (a
    projection: DynamoDB bills the whole item's read all the same, but neither side serializes the rest)."""
    items: list[dict[str, Any]] = []
    unprocessed: list[dict[str, Any]] = []
    for start in range(0, len(keys), BATCH_GET_LIMIT):
        wanted: KeysAndAttributesUnionTypeDef = {
            "Keys": keys[start : start + BATCH_GET_LIMIT],
            "ConsistentRead": consistent,
        }
        if attributes:
            # Placeholders for the names: then none of them can be a reserved word.
            names = {f"#a{index}": name for index, name in enumerate(attributes)}
            wanted |= {"ProjectionExpression": ", ".join(names), "ExpressionAttributeNames": names}
        request: Mapping[str, KeysAndAttributesUnionTypeDef] = {table: wanted}
        for round_number in range(rounds.attempts):
            if round_number:
                sleep(rounds.delay(round_number, unit_random()))
            response = client.batch_get_item(RequestItems=request)
            items += response.get("Responses", {}).get(table, [])
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
        if request:
            unprocessed += [dict(key) for key in request[table]["Keys"]]
    return items, unprocessed
