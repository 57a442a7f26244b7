"""shared.dynamo's serializer against boto3's TypeSerializer (the rules it replaces without importing boto3)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from shared import dynamo

VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -7,
    10**37,
    Decimal("1250.50"),
    Decimal("0.0790"),
    "",
    "journey",
    b"\x00\x01",
    {"a": 1, "b": {"c": [1, "x", None, Decimal("2.5")]}},
    [],
    ["x", 2, {"k": False}],
    {"a", "b"},
    {1, Decimal("2.5")},
    {b"x", b"y"},
]


def stable_id(value: Any) -> str:
    """The same test id in every process (pytest-xdist's workers must collect the same ids): a set's
    members sorted (their order follows string hashing, random per process), a bare object by its type."""
    if isinstance(value, set | frozenset):
        return "{" + ", ".join(sorted(map(repr, value))) + "}"
    if type(value) is object:
        return "object()"
    return repr(value)


@pytest.mark.parametrize("value", VALUES, ids=stable_id)
def test_serialize_matches_boto3(value: Any) -> None:
    # Given a value our items hold, When serialized, Then the attribute value is boto3's (sets in any order)
    ours, theirs = dynamo.serialize(value), TypeSerializer().serialize(value)
    normalize = TypeDeserializer().deserialize
    assert normalize(ours) == normalize(theirs)
    assert ours.keys() == theirs.keys()


@pytest.mark.parametrize("value", [1.5, Decimal("1.0000000000000000000000000000000000000001"), object()], ids=stable_id)
def test_serialize_refuses_what_boto3_refuses(value: Any) -> None:
    # Given a float, a number DynamoDB would round, or an unknown type, Then both refuse it
    with pytest.raises(Exception):  # noqa: B017, PT011 - boto3 raises TypeError or decimal.Inexact
        TypeSerializer().serialize(value)
    with pytest.raises(Exception):  # noqa: B017, PT011
        dynamo.serialize(value)


def test_an_item_round_trips_with_none_left_out() -> None:
    item = dynamo.to_item({"pk": "j1", "seq": 3, "amount": Decimal("10.25"), "gone": None})
    assert "gone" not in item
    assert dynamo.from_item(item) == {"pk": "j1", "seq": 3, "amount": Decimal("10.25")}
