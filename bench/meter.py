"""Counting AWS calls and capacity with botocore event hooks (not estimates): every call any client
of this process makes, with DynamoDB's capacity rules applied to the item sizes that went over the
wire."""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from shared import aws

KB = 1024


def _number_size(text: str) -> int:
    digits = len(str(Decimal(text)).replace("-", "").replace(".", "").lstrip("0")) or 1
    return math.ceil(digits / 2) + 1


_SIZERS: dict[str, Callable[[Any], int]] = {
    "S": lambda v: len(v.encode()),
    "N": _number_size,
    "B": len,
    "BOOL": lambda _: 1,
    "NULL": lambda _: 1,
    "M": lambda v: 3 + sum(len(k.encode()) + attribute_size(x) + 1 for k, x in v.items()),
    "L": lambda v: 3 + sum(attribute_size(x) + 1 for x in v),
    "SS": lambda v: sum(len(x.encode()) for x in v),
    "NS": lambda v: sum(_number_size(x) for x in v),
    "BS": lambda v: sum(len(x) for x in v),
}


def attribute_size(value: dict[str, Any]) -> int:
    """DynamoDB's size of a typed attribute value, in bytes (the documented rules, rounded up)."""
    ((kind, inner),) = value.items()
    return _SIZERS[kind](inner)


def item_size(item: dict[str, Any] | None) -> int:
    return sum(len(name.encode()) + attribute_size(value) for name, value in (item or {}).items())


def write_units(size: int, transactional: bool = False) -> int:
    return max(1, math.ceil(size / KB)) * (2 if transactional else 1)


def read_units(size: int, consistent: bool = True) -> float:
    units = max(1, math.ceil(size / (4 * KB)))
    return float(units) if consistent else units / 2


class Meter:
    """Counts calls per service and operation, and DynamoDB WCU/RCU, for every client of the session."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.wcu = 0.0
        self.rcu = 0.0
        self._lock = threading.Lock()
        self._params = threading.local()
        events = aws.session().events
        events.register("provide-client-params", self._remember)
        events.register("after-call", self._count)

    def _remember(self, params: dict[str, Any], **_: Any) -> None:
        self._params.last = params

    def _count(self, model: Any, parsed: dict[str, Any], **_: Any) -> None:
        service = model.service_model.service_name
        operation = model.name
        params = getattr(self._params, "last", {}) or {}
        wcu, rcu = self._dynamodb(operation, params, parsed) if service == "dynamodb" else (0.0, 0.0)
        with self._lock:
            self.calls[f"{service}:{operation}"] += 1
            self.wcu += wcu
            self.rcu += rcu

    @staticmethod
    def _dynamodb(operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> tuple[float, float]:
        if operation == "PutItem":
            return write_units(item_size(params.get("Item"))), 0.0
        if operation in ("UpdateItem", "DeleteItem"):
            return 1.0, 0.0  # the items this system updates are all under 1 KB
        if operation == "TransactWriteItems":
            total = 0
            for entry in params.get("TransactItems", []):
                ((kind, op),) = entry.items()
                total += write_units(item_size(op.get("Item")) if kind == "Put" else 0, transactional=True)
            return float(total), 0.0
        consistent = bool(params.get("ConsistentRead"))
        if operation == "GetItem":
            return 0.0, read_units(item_size(parsed.get("Item")), consistent)
        if operation in ("Query", "Scan"):
            size = sum(item_size(item) for item in parsed.get("Items", []))
            return 0.0, read_units(size, consistent)
        return 0.0, 0.0

    def snapshot(self) -> Usage:
        with self._lock:
            return Usage(Counter(self.calls), self.wcu, self.rcu)

    def since(self, start: Usage) -> Usage:
        now = self.snapshot()
        return Usage(now.calls - start.calls, now.wcu - start.wcu, now.rcu - start.rcu)


@dataclass(frozen=True)
class Usage:
    calls: Counter[str]
    wcu: float
    rcu: float

    def count(self, prefix: str) -> int:
        return sum(n for name, n in self.calls.items() if name.startswith(prefix))
