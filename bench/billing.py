"""AWS's billing rules for what the benchmark counts, as pure functions of requests, responses and item
images (bench/meter.py applies them to every call of a process).

DynamoDB:

* a write is billed by the larger of the item's before and after images, in 1 KB units, x2 in a
  transaction; a write whose condition fails is billed too (so is every item of a cancelled transaction);
* every global secondary index is billed for its own writes, from the index's projection: an item
  entering the index is one write of the projected item's size, leaving it one write, changing its
  index key two (delete + put), changing a projected attribute one, anything else none (not doubled in
  a transaction: the documentation prices index writes as standard writes);
* reads in 4 KB units (strongly consistent 1, eventually consistent 0.5) of what was returned: per
  item for GetItem and BatchGetItem, per page for Query (an index query reads the projected items).

SNS and SQS bill every 64 KB chunk of a request's payload as one request; a DynamoDB stream bills one
read request unit per GetRecords call (free when Lambda's event source makes it)."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

KB = 1024
MESSAGE_CHUNK = 64 * KB
TABLE = "table"  # the bucket of a table's own units (an index's bucket is its name)


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


def message_chunks(payload_bytes: int) -> int:
    """SNS and SQS requests billed for one API call carrying `payload_bytes`."""
    return max(1, math.ceil(payload_bytes / MESSAGE_CHUNK))


@dataclass(frozen=True)
class IndexShape:
    name: str
    keys: tuple[str, ...]
    projection: str  # ALL, KEYS_ONLY or INCLUDE
    included: tuple[str, ...] = ()

    def image(self, item: dict[str, Any] | None, table_keys: tuple[str, ...]) -> dict[str, Any] | None:
        """The index's item for a table item, or None when the item is not in this (sparse) index."""
        if item is None or any(key not in item for key in self.keys):
            return None
        if self.projection == "ALL":
            return item
        kept = set(table_keys) | set(self.keys) | (set(self.included) if self.projection == "INCLUDE" else set())
        return {name: value for name, value in item.items() if name in kept}


@dataclass(frozen=True)
class TableShape:
    keys: tuple[str, ...]
    indexes: tuple[IndexShape, ...]


Image = dict[str, Any] | None
Units = dict[tuple[str, str], float]  # (table, TABLE or index name) -> units


def index_write_units(index: IndexShape, keys: tuple[str, ...], old: Image, new: Image) -> int:
    """Write units one table write costs `index` (DynamoDB's rules for global secondary indexes)."""
    before, after = index.image(old, keys), index.image(new, keys)
    if before is None and after is None:
        return 0
    if before is None:
        return write_units(item_size(after))
    if after is None:
        return write_units(item_size(before))
    if any(before[key] != after[key] for key in index.keys):
        return write_units(item_size(before)) + write_units(item_size(after))
    return 0 if before == after else write_units(item_size(after))


def write_targets(operation: str, params: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
    """(table, item or key, transactional) of every item a write call may change."""
    if operation == "PutItem":
        return [(params["TableName"], params["Item"], False)]
    if operation in ("UpdateItem", "DeleteItem"):
        return [(params["TableName"], params["Key"], False)]
    if operation == "TransactWriteItems":
        found = []
        for entry in params.get("TransactItems", []):
            ((kind, op),) = entry.items()
            if kind != "ConditionCheck":
                found.append((op["TableName"], op["Item"] if kind == "Put" else op["Key"], True))
        return found
    if operation == "BatchWriteItem":
        return [
            (table, (r.get("PutRequest") or {}).get("Item") or r["DeleteRequest"]["Key"], False)
            for table, requests in params.get("RequestItems", {}).items()
            for r in requests
        ]
    return []


def read_units_of(operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> Units:
    units: Units = defaultdict(float)
    consistent = bool(params.get("ConsistentRead"))
    if operation == "GetItem":
        units[(params["TableName"], TABLE)] += read_units(item_size(parsed.get("Item")), consistent)
    elif operation == "BatchGetItem":
        for table, items in parsed.get("Responses", {}).items():
            strong = bool(params.get("RequestItems", {}).get(table, {}).get("ConsistentRead"))
            for item in items:
                units[(table, TABLE)] += read_units(item_size(item), strong)
    elif operation in ("Query", "Scan"):
        size = sum(item_size(item) for item in parsed.get("Items", []))
        units[(params["TableName"], params.get("IndexName") or TABLE)] += read_units(size, consistent)
    elif operation == "TransactGetItems":
        for entry, response in zip(params.get("TransactItems", []), parsed.get("Responses", []), strict=False):
            units[(entry["Get"]["TableName"], TABLE)] += 2 * read_units(item_size(response.get("Item")))
    return units


def sns_chunks(operation: str, params: dict[str, Any]) -> int:
    if operation == "Publish":
        return message_chunks(len(str(params.get("Message", "")).encode()) + _attributes_size(params))
    if operation == "PublishBatch":
        entries = params.get("PublishBatchRequestEntries", [])
        return message_chunks(sum(len(str(e.get("Message", "")).encode()) + _attributes_size(e) for e in entries))
    return 1


def sqs_chunks(operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> int:
    if operation == "SendMessage":
        return message_chunks(len(str(params.get("MessageBody", "")).encode()))
    if operation == "SendMessageBatch":
        return message_chunks(sum(len(str(e.get("MessageBody", "")).encode()) for e in params.get("Entries", [])))
    if operation == "ReceiveMessage":
        return message_chunks(sum(len(str(m.get("Body", "")).encode()) for m in parsed.get("Messages", [])))
    return 1


def _attributes_size(params: dict[str, Any]) -> int:
    return len(json.dumps(params.get("MessageAttributes", {})).encode()) if params.get("MessageAttributes") else 0


@dataclass(frozen=True)
class Usage:
    calls: Counter[str]
    wcu_by: Units
    rcu_by: Units
    requests: Counter[str] = field(default_factory=Counter)  # billed sns / sqs / streams requests

    @property
    def wcu(self) -> float:
        return float(sum(self.wcu_by.values()))

    @property
    def rcu(self) -> float:
        return float(sum(self.rcu_by.values()))

    def index_wcu(self) -> float:
        return float(sum(units for (_, bucket), units in self.wcu_by.items() if bucket != TABLE))

    def count(self, prefix: str) -> int:
        return sum(n for name, n in self.calls.items() if name.startswith(prefix))

    def minus(self, start: Usage) -> Usage:
        """What was used since `start` (an earlier snapshot of the same meter)."""
        return Usage(
            self.calls - start.calls,
            _minus(self.wcu_by, start.wcu_by),
            _minus(self.rcu_by, start.rcu_by),
            self.requests - start.requests,
        )


def _minus(a: Units, b: Units) -> Units:
    return {key: a[key] - b.get(key, 0.0) for key in a if a[key] - b.get(key, 0.0)}
