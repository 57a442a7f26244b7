"""Counting what AWS bills, with botocore event hooks on every client of this process (not estimates):
calls per service and operation, and billed units by the rules of bench/billing.py.

The hooks are the meter's while it is open (`with Meter() as meter:`): closing it removes them from the
shared session and from every client made while it was open (botocore gives each client a copy of the
session's hooks), so nothing is counted, or billed by reading item images, once the measurement is done.

DynamoDB: moto answers `ReturnConsumedCapacity` with a constant (1.0 per call, whatever the item size,
and no global-index figures for writes: moto 5.2.5 `dynamodb/responses.py`, `include_consumed_capacity`),
so the meter does not ask it. It reads the item images before and after every write itself (through a
separate, unhooked client, so the reads are not counted) and bills them."""

from __future__ import annotations

import threading
import weakref
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

import botocore.session

from bench.billing import (
    TABLE,
    IndexShape,
    TableShape,
    Units,
    Usage,
    index_write_units,
    item_size,
    read_units_of,
    sns_chunks,
    sqs_chunks,
    write_targets,
    write_units,
)
from shared import aws

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Bytes of storage overhead DynamoDB bills for every item, of a table or of an index.
STORAGE_OVERHEAD = 100
# The meter's own reads (the item images around a write): botocore's default timeouts, no request's budget.
RAW_BUDGET = aws.AwsCallBudget(connect_timeout=60.0, read_timeout=60.0, max_attempts=3)
# The harness's own clients (the pollers standing in for Lambda's event sources, the benchmark's reads of the
# queue): no function's budget, and patient with an endpoint a busy machine slows (moto's GetRecords of a
# hundred records can take seconds there).
HARNESS_BUDGET = RAW_BUDGET


@dataclass
class _Pending:
    """The item images of one write call, read before it was sent."""

    endpoint: str
    writes: list[tuple[str, dict[str, Any], dict[str, Any] | None, bool]] = field(default_factory=list)


class Meter:
    """Counts calls per service and operation, and billed units: DynamoDB per (table, index), SNS and
    SQS requests in 64 KB chunks, stream read requests. With `bill=False` it counts calls only (no item
    images read: what a timed run can afford). Counting starts when it is made and ends at `close()`."""

    def __init__(self, *, bill: bool = True) -> None:
        self.calls: Counter[str] = Counter()
        self.wcu: Units = defaultdict(float)
        self.rcu: Units = defaultdict(float)
        self.billed_requests: Counter[str] = Counter()  # sns, sqs, streams
        self._bill = bill
        self._lock = threading.Lock()
        self._local = threading.local()
        self._raw: dict[str, DynamoDBClient] = {}
        self._shapes: dict[tuple[str, str], TableShape] = {}
        self._clients: weakref.WeakSet[Any] = weakref.WeakSet()
        self._hooks: list[tuple[str, Callable[..., Any]]] = [
            ("creating-client-class", self._track),
            ("provide-client-params", self._remember),
            ("before-call", self._before),
            ("after-call", self._count),
        ]
        self._session_events = aws.session().get_component("event_emitter")
        for event, hook in self._hooks:
            self._session_events.register(event, hook)

    def close(self) -> None:
        """Remove every hook: from the session, and from each client made while the meter was open."""
        for emitter in [self._session_events, *(client.meta.events for client in list(self._clients))]:
            for event, hook in self._hooks:
                emitter.unregister(event, hook)
        self._clients = weakref.WeakSet()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def total_calls(self) -> int:
        with self._lock:
            return sum(self.calls.values())

    # -- hooks ---------------------------------------------------------------------------------

    def _track(self, base_classes: list[type], **_: Any) -> None:
        """Each client class made while the meter is open remembers its instances, so `close` can
        take the hooks out of their copies of the session's hooks."""
        clients = self._clients

        class Tracked:
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                clients.add(self)

        base_classes.insert(0, Tracked)

    def _remember(self, params: dict[str, Any], **_: Any) -> None:
        self._local.params = params

    def _before(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        self._local.pending = None
        if not self._bill or model.service_model.service_name != "dynamodb":
            return
        api = getattr(self._local, "params", {}) or {}
        targets = write_targets(model.name, api)
        if not targets:
            return
        parts = urlsplit(str(params.get("url", "")))
        pending = _Pending(f"{parts.scheme}://{parts.netloc}")
        for table, item_or_key, transactional in targets:
            key = self._key_of(pending.endpoint, table, item_or_key)
            pending.writes.append((table, key, self._get(pending.endpoint, table, key), transactional))
        self._local.pending = pending

    def _count(self, model: Any, parsed: dict[str, Any], **_: Any) -> None:
        service, operation = model.service_model.service_name, model.name
        if not self._bill:
            with self._lock:
                self.calls[f"{service}:{operation}"] += 1
            return
        params = getattr(self._local, "params", {}) or {}
        wcu: Units = {}
        rcu: Units = {}
        billed: Counter[str] = Counter()
        if service == "dynamodb":
            pending = getattr(self._local, "pending", None)
            self._local.pending = None
            if pending is not None:
                wcu = self._written(pending, _unprocessed(parsed))
            rcu = read_units_of(operation, params, parsed)
        elif service == "sns":
            billed["sns"] = sns_chunks(operation, params)
        elif service == "sqs":
            billed["sqs"] = sqs_chunks(operation, params, parsed)
        elif service == "dynamodbstreams" and operation == "GetRecords":
            billed["streams"] = 1
        with self._lock:
            self.calls[f"{service}:{operation}"] += 1
            for key, units in wcu.items():
                self.wcu[key] += units
            for key, units in rcu.items():
                self.rcu[key] += units
            self.billed_requests.update(billed)

    # -- DynamoDB writes -------------------------------------------------------------------------

    def _written(self, pending: _Pending, unprocessed: list[tuple[str, dict[str, Any]]]) -> Units:
        """The units of the writes of `pending` but those DynamoDB left unprocessed (not written, not billed:
        a BatchWriteItem's `UnprocessedItems`, each (table, item or key))."""
        units: Units = defaultdict(float)
        for table, key, old, transactional in pending.writes:
            if any(left == table and all(item.get(k) == v for k, v in key.items()) for left, item in unprocessed):
                continue
            new = self._get(pending.endpoint, table, key)
            shape = self._shape(pending.endpoint, table)
            units[(table, TABLE)] += write_units(max(item_size(old), item_size(new)), transactional)
            for index in shape.indexes:
                units[(table, index.name)] += index_write_units(index, shape.keys, old, new)
        return units

    def _raw_client(self, endpoint: str) -> DynamoDBClient:
        if endpoint not in self._raw:
            # A session of its own (credentials from the environment, as the bench sets them): its calls
            # reach no hook of this meter, so they are never counted.
            self._raw[endpoint] = aws.client(
                "dynamodb", "us-east-1", endpoint, RAW_BUDGET, from_session=botocore.session.Session()
            )
        return self._raw[endpoint]

    def _shape(self, endpoint: str, table: str) -> TableShape:
        if (endpoint, table) not in self._shapes:
            described = self._raw_client(endpoint).describe_table(TableName=table)["Table"]
            indexes = tuple(
                IndexShape(
                    index["IndexName"],
                    tuple(k["AttributeName"] for k in index["KeySchema"]),
                    index["Projection"]["ProjectionType"],
                    tuple(index["Projection"].get("NonKeyAttributes", ())),
                )
                for index in described.get("GlobalSecondaryIndexes", [])
            )
            keys = tuple(k["AttributeName"] for k in described["KeySchema"])
            self._shapes[(endpoint, table)] = TableShape(keys, indexes)
        return self._shapes[(endpoint, table)]

    def _key_of(self, endpoint: str, table: str, item_or_key: dict[str, Any]) -> dict[str, Any]:
        return {name: item_or_key[name] for name in self._shape(endpoint, table).keys}

    def _get(self, endpoint: str, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        item = self._raw_client(endpoint).get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        return None if item is None else dict(item)

    # -- storage ---------------------------------------------------------------------------------

    def stored(self, endpoint: str, table: str) -> dict[str, int]:
        """Bytes `table` stores now, as DynamoDB bills storage, by what holds them: `<table>/<prefix>` per
        kind of item (its partition key's prefix: JOURNEY, RECEIPT), `<table>/<index>` per index. Every item
        counts 100 bytes of overhead on top of its size, an index item its projected attributes plus 100
        (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html,
        .../GSI.html). Read through the meter's own client: never counted as the journey's reads."""
        shape = self._shape(endpoint, table)
        stored: Counter[str] = Counter()
        for page in self._raw_client(endpoint).get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
            for item in page["Items"]:
                kind = str(item["pk"]["S"]).split("#")[0]
                stored[f"{table}/{kind}"] += item_size(dict(item)) + STORAGE_OVERHEAD
                for index in shape.indexes:
                    projected = index.image(dict(item), shape.keys)
                    if projected is not None:
                        stored[f"{table}/{index.name}"] += item_size(projected) + STORAGE_OVERHEAD
        return dict(sorted(stored.items()))

    # -- snapshots -------------------------------------------------------------------------------

    def snapshot(self) -> Usage:
        with self._lock:
            return Usage(Counter(self.calls), dict(self.wcu), dict(self.rcu), Counter(self.billed_requests))

    def since(self, start: Usage) -> Usage:
        return self.snapshot().minus(start)


def _unprocessed(parsed: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(table, item or key) of every write request a BatchWriteItem answer left unprocessed."""
    return [
        (table, (r.get("PutRequest") or {}).get("Item") or r["DeleteRequest"]["Key"])
        for table, requests in (parsed.get("UnprocessedItems") or {}).items()
        for r in requests
    ]
