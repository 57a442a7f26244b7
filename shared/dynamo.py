"""DynamoDB helpers shared by the adapters: item (de)serialization and transaction failure reasons."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()

AttributeMap = dict[str, Any]


def to_item(values: Mapping[str, Any]) -> AttributeMap:
    """Plain JSON-like values -> DynamoDB attribute map. None values are left out."""
    return {key: _serializer.serialize(value) for key, value in values.items() if value is not None}


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


def cancellation_reasons(error: ClientError) -> list[dict[str, Any]]:
    """The per-item reasons of a TransactionCanceledException, in the order of the items."""
    reasons = error.response.get("CancellationReasons")
    if reasons is not None:
        return list(reasons)
    # Some endpoints only put the codes in the message: "... [None, ConditionalCheckFailed]".
    message = str(error.response.get("Error", {}).get("Message", ""))
    if "[" not in message:
        return []
    codes = message[message.rindex("[") + 1 : message.rindex("]")].split(",")
    return [{"Code": code.strip()} for code in codes]
