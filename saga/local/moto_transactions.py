"""All-or-nothing TransactWriteItems for the local moto endpoint.

moto (5.x) applies a transaction's items one by one and, when one fails, restores a deep copy of the
table. Three things go wrong with that for this system: the stream keeps the records of the writes
that were undone (the relay would publish phantom events of a cancelled transaction), open stream
iterators stay bound to the discarded shard (new records stop reaching the relay), and every
transaction copies the whole table. DynamoDB checks every condition first and then writes all or
nothing; this module gives moto that behaviour. It relies on the endpoint serving one request at a
time (see moto_server), which makes check-then-write atomic.

It also honours ClientRequestToken, as DynamoDB does (botocore fills one in): a transaction retried
with the same token after its reply was lost (say, a read timeout) succeeds again instead of failing
on the conditions its own first attempt satisfied."""

from __future__ import annotations

import json
from typing import Any

from moto.core.responses import ActionResult
from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
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
    for op_type, op, key in planned:
        _write(self, op_type, op, key)


_committed_tokens: dict[str, str] = {}
_original_response = DynamoHandler.transact_write_items


def _transact_write_items_response(self: DynamoHandler) -> ActionResult:
    token = self.body.get("ClientRequestToken")
    # moto has decoded binary attributes (a compressed receipt body) to bytes: compare them as text.
    request = json.dumps(self.body.get("TransactItems"), sort_keys=True, default=repr)
    if token is not None and _committed_tokens.get(token) == request:
        return ActionResult({"ConsumedCapacity": [], "ItemCollectionMetrics": {}})
    result = _original_response(self)
    if token is not None:
        _committed_tokens[token] = request
    return result


def install() -> None:
    """Replace moto's TransactWriteItems (idempotent)."""
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    DynamoHandler.transact_write_items = _transact_write_items_response  # type: ignore[method-assign]
