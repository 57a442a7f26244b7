"""All-or-nothing TransactWriteItems for the local moto endpoint.

moto (5.x) applies a transaction's items one by one and, when one fails, restores a deep copy of the
table. Three things go wrong with that for this system: the stream keeps the records of the writes
that were undone (the relay would publish phantom events of a cancelled transaction), open stream
iterators stay bound to the discarded shard (new records stop reaching the relay), and every
transaction copies the whole table. DynamoDB checks every condition first and then writes all or
nothing; this module gives moto that behaviour. It relies on the endpoint serving one request at a
time (see moto_server), which makes check-then-write atomic.

The write phase is all-or-nothing too: a write that moto refuses after the checks passed (an item over
400 KB, say) undoes the writes before it, with their stream records, and the error is the client's.

It also honours ClientRequestToken, as DynamoDB does (botocore fills one in): a transaction retried
with the same token after its reply was lost (say, a read timeout) succeeds again instead of failing
on the conditions its own first attempt satisfied. As in DynamoDB, a token is remembered for 10
minutes (the clock is injectable), and the same token with other parameters within them is refused
with IdempotentParameterMismatchException."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from typing import Any

from moto.core.responses import ActionResult
from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    DynamodbException,
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
    TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.responses import DynamoHandler

_OPERATIONS = {"ConditionCheck", "Put", "Delete", "Update"}


def _key_of(backend: DynamoDBBackend, op_type: str, op: dict[str, Any]) -> dict[str, Any]:
    if op_type != "Put":
        return dict(op["Key"])
    table = backend.get_table(op["TableName"])
    key = {table.hash_key_attr: op["Item"][table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = op["Item"][table.range_key_attr]
    return key


def _check(backend: DynamoDBBackend, op_type: str, op: dict[str, Any], key: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(None, None, None) when the item's condition holds, else the cancellation reason."""
    condition = op.get("ConditionExpression")
    if condition is None:
        return None, None, None
    current = backend.get_item(op["TableName"], key)
    expression = get_filter_expression(
        condition, op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
    )
    if expression.expr(current):
        return None, None, None
    old = None
    if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
        old = current.to_json()["Attributes"]
    return "ConditionalCheckFailed", "The conditional request failed", old


def _write(backend: DynamoDBBackend, op_type: str, op: dict[str, Any], key: dict[str, Any]) -> None:
    names = op.get("ExpressionAttributeNames") or {}
    values = op.get("ExpressionAttributeValues") or {}
    if op_type == "Put":
        backend.put_item(op["TableName"], op["Item"])
    elif op_type == "Delete":
        backend.delete_item(op["TableName"], key)
    elif op_type == "Update":
        backend.update_item(
            op["TableName"],
            key,
            update_expression=op["UpdateExpression"],
            expression_attribute_names=names,
            expression_attribute_values=values,
        )


def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    planned: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    seen: set[tuple[str, str]] = set()
    for item in transact_items:
        if len(item) != 1:
            raise TransactWriteSingleOpException()
        op_type, op = next(iter(item.items()))
        if op_type not in _OPERATIONS:
            raise ValueError(f"unsupported transaction operation {op_type}")
        key = _key_of(self, op_type, op)
        identity = (str(op["TableName"]), str(sorted(key.items())))
        if identity in seen:
            raise MultipleTransactionsException()
        seen.add(identity)
        planned.append((op_type, op, key))
    reasons = [_check(self, op_type, op, key) for op_type, op, key in planned]
    if any(code is not None for code, _, _ in reasons):
        raise TransactionCanceledException(reasons)
    undo = _Undo(self, planned)
    try:
        for op_type, op, key in planned:
            _write(self, op_type, op, key)
    except Exception:
        undo()
        raise


class _Undo:
    """What the items and streams of a transaction's tables were before its writes, to restore them."""

    def __init__(self, backend: DynamoDBBackend, planned: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> None:
        self._backend = backend
        # Copies: an Update changes moto's item in place.
        self._items = [
            (op["TableName"], key, copy.deepcopy(backend.get_item(op["TableName"], key))) for _, op, key in planned
        ]
        self._stream_lengths: dict[str, int] = {}
        for name, _, _ in self._items:
            shard = backend.get_table(name).stream_shard
            self._stream_lengths[name] = 0 if shard is None else len(shard.items)

    def __call__(self) -> None:
        for name, key, before in reversed(self._items):
            table = self._backend.get_table(name)
            item = before or self._backend.get_item(name, key)
            if item is None:
                continue  # neither there before nor written
            partition: Any = table.items
            if item.range_key is not None:
                partition = table.items[item.hash_key]
            slot = item.hash_key if item.range_key is None else item.range_key
            if before is None:
                partition.pop(slot, None)
            else:
                partition[slot] = before
        for name, length in self._stream_lengths.items():
            shard = self._backend.get_table(name).stream_shard
            if shard is not None:
                del shard.items[length:]


class IdempotentParameterMismatch(DynamodbException):
    def __init__(self) -> None:
        super().__init__(
            "com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException",
            "The request uses the same client token as a previous, but non-identical request.",
        )


TOKEN_LIFETIME_SECONDS = 600.0  # DynamoDB: "A client token is valid for 10 minutes"


class TokenRegistry:
    """The ClientRequestTokens of committed transactions, each with its request and when it committed."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._tokens: dict[str, tuple[str, float]] = {}

    def replayed(self, token: str, request: str) -> bool:
        """True when `token` committed `request` within the last 10 minutes (answer it as a success);
        raises when it committed a different request; False when it is new or has expired."""
        known = self._tokens.get(token)
        if known is None or self.clock() - known[1] >= TOKEN_LIFETIME_SECONDS:
            self._tokens.pop(token, None)
            return False
        if known[0] != request:
            raise IdempotentParameterMismatch()
        return True

    def committed(self, token: str, request: str) -> None:
        now = self.clock()
        expired = [t for t, (_, at) in self._tokens.items() if now - at >= TOKEN_LIFETIME_SECONDS]
        for old in expired:
            del self._tokens[old]
        self._tokens[token] = (request, now)


tokens = TokenRegistry()
_original_response = DynamoHandler.transact_write_items


def _transact_write_items_response(self: DynamoHandler) -> ActionResult:
    token = self.body.get("ClientRequestToken")
    # moto has decoded binary attributes (a compressed receipt body) to bytes: compare them as text.
    request = json.dumps(self.body.get("TransactItems"), sort_keys=True, default=repr)
    if token is not None and tokens.replayed(token, request):
        return ActionResult({"ConsumedCapacity": [], "ItemCollectionMetrics": {}})
    result = _original_response(self)
    if token is not None:
        tokens.committed(token, request)
    return result


def install() -> None:
    """Replace moto's TransactWriteItems (idempotent)."""
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    DynamoHandler.transact_write_items = _transact_write_items_response  # type: ignore[method-assign]
