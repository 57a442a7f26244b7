"""DynamoDB helpers shared by the adapters: item (de)serialization and transaction failure reasons."""

from __future__ import annotations

from collections.abc import Mapping, Set
from decimal import Clamped, Context, Decimal, Inexact, Overflow, Rounded, Underflow
from typing import Any

from aws_lambda_powertools.shared.dynamodb_deserializer import TypeDeserializer
from botocore.exceptions import ClientError

# Not boto3.dynamodb.types: importing it imports boto3, and boto3 imports s3transfer (~90 ms of a cold
# start, tests/unit/test_import_graph.py). The deserializer is Powertools' copy of boto3's (binary as
# bytes); the serializer below is boto3's rules for the types our items hold.
_deserializer = TypeDeserializer()
# DynamoDB's number: 38 digits, exponent -128..126; a value it would round is refused, as boto3 does.
_NUMBER = Context(Emin=-128, Emax=126, prec=38, traps=[Clamped, Overflow, Inexact, Rounded, Underflow])

AttributeMap = dict[str, Any]


def serialize(value: Any) -> dict[str, Any]:
    """One Python value -> its DynamoDB attribute value (boto3's TypeSerializer rules; floats refused)."""
    scalar = _scalar(value)
    if scalar is not None:
        return scalar
    if isinstance(value, Mapping):
        return {"M": {str(key): serialize(item) for key, item in value.items()}}
    if isinstance(value, list | tuple):
        return {"L": [serialize(item) for item in value]}
    if isinstance(value, Set) and value:
        return _set(value)
    raise TypeError(f"unsupported type for DynamoDB: {type(value).__name__}")


def _scalar(value: Any) -> dict[str, Any] | None:
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int | Decimal):
        return {"N": _number(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, bytes | bytearray):
        return {"B": bytes(value)}
    return None


def _set(values: Set[Any]) -> dict[str, Any]:
    if all(isinstance(item, str) for item in values):
        return {"SS": list(values)}
    if all(isinstance(item, int | Decimal) and not isinstance(item, bool) for item in values):
        return {"NS": [_number(item) for item in values]}
    if all(isinstance(item, bytes | bytearray) for item in values):
        return {"BS": [bytes(item) for item in values]}
    raise TypeError("a DynamoDB set holds only strings, only numbers or only binaries")


def _number(value: int | Decimal) -> str:
    return str(_NUMBER.create_decimal(value))


def to_item(values: Mapping[str, Any]) -> AttributeMap:
    """Plain JSON-like values -> DynamoDB attribute map. None values are left out."""
    return {key: serialize(value) for key, value in values.items() if value is not None}


def from_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """DynamoDB attribute map -> plain values, with whole numbers as int."""
    return {key: _plain(_deserializer.deserialize(value)) for key, value in item.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def cancellation_reasons(error: ClientError) -> list[Mapping[str, Any]]:
    """The per-item reasons of a TransactionCanceledException, in the order of the items: `Code`,
    `Message`, and `Item` (the item's attribute map, when the write asked for it on failure)."""
    reasons = error.response.get("CancellationReasons")
    if reasons is not None:
        return list(reasons)
    # Some endpoints only put the codes in the message: "... [None, ConditionalCheckFailed]".
    message = str(error.response.get("Error", {}).get("Message", ""))
    if "[" not in message:
        return []
    codes = message[message.rindex("[") + 1 : message.rindex("]")].split(",")
    return [{"Code": code.strip()} for code in codes]
