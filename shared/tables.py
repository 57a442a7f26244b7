"""Resource definitions shared by the CDK stack and the local runtime: one source of truth for
names, keys, indexes, streams, TTL and redrive. Nothing here talks to AWS."""

from __future__ import annotations

from dataclasses import dataclass

from shared import keys, topology

PARTITION_KEY = "pk"
SORT_KEY = "sk"
TTL_ATTRIBUTE = "expiresAt"

# The indexes' names and keys live with the key layout (shared/keys.py), which the functions import: this
# module's specs are for the stack and the local runtime, and a function's init need not build them.
CHANGES_INDEX = keys.CHANGES_INDEX
CHANGES_PARTITION_ATTRIBUTE = keys.CHANGES_PARTITION_ATTRIBUTE
CHANGES_SORT_ATTRIBUTE = keys.CHANGES_SORT_ATTRIBUTE
CUSTOMER_INDEX = keys.CUSTOMER_INDEX
CUSTOMER_PARTITION_ATTRIBUTE = keys.CUSTOMER_PARTITION_ATTRIBUTE
CUSTOMER_SORT_ATTRIBUTE = keys.CUSTOMER_SORT_ATTRIBUTE


@dataclass(frozen=True)
class IndexSpec:
    name: str
    partition_key: str
    sort_key: str
    projection: str = "ALL"  # or KEYS_ONLY


@dataclass(frozen=True)
class TableSpec:
    logical_id: str
    local_name: str
    stream_new_image: bool = False
    indexes: tuple[IndexSpec, ...] = ()
    partition_key: str = PARTITION_KEY
    sort_key: str = SORT_KEY
    ttl_attribute: str = TTL_ATTRIBUTE


@dataclass(frozen=True)
class QueueSpec:
    logical_id: str
    local_name: str
    visibility_timeout_seconds: int = 30
    retention_days: int = 4
    dead_letter: QueueSpec | None = None
    max_receive_count: int = 3


LOANS_TABLE = TableSpec(
    logical_id="LoansTable",
    local_name="loans",
    stream_new_image=True,
    indexes=(
        # Keys only: an index write is billed by the projected item's size (issue 19); the audit and the
        # sweeper read the items they need whole.
        IndexSpec(CHANGES_INDEX, CHANGES_PARTITION_ATTRIBUTE, CHANGES_SORT_ATTRIBUTE, projection="KEYS_ONLY"),
    ),
)
JOURNEYS_TABLE = TableSpec(
    logical_id="JourneysTable",
    local_name="journeys",
    indexes=(IndexSpec(CUSTOMER_INDEX, CUSTOMER_PARTITION_ATTRIBUTE, CUSTOMER_SORT_ATTRIBUTE, projection="KEYS_ONLY"),),
)

EVENTS_DLQ = QueueSpec(logical_id="EventsDlq", local_name="loan-events-dlq", retention_days=14)
EVENTS_QUEUE = QueueSpec(
    logical_id="EventsQueue",
    local_name="loan-events",
    visibility_timeout_seconds=topology.EVENTS_QUEUE_VISIBILITY_SECONDS,
    dead_letter=EVENTS_DLQ,
    max_receive_count=3,
)
RELAY_FAILURES_QUEUE = QueueSpec(logical_id="RelayFailures", local_name="relay-failures", retention_days=14)
EVENTS_TOPIC_LOCAL_NAME = "loan-events"
