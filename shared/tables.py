"""Resource definitions shared by the CDK stack and the local runtime: one source of truth for
names, keys, indexes, streams, TTL and redrive. Nothing here talks to AWS."""

from __future__ import annotations

from dataclasses import dataclass

from shared import topology

PARTITION_KEY = "pk"
SORT_KEY = "sk"
TTL_ATTRIBUTE = "expiresAt"

# The sparse pending-outbox index (D7): items carry `pendingShard` only while PENDING, so the
# index holds exactly the events not yet published. The shard spreads writes over N partitions.
PENDING_INDEX = "pending-outbox"
PENDING_SHARD_ATTRIBUTE = "pendingShard"
PENDING_SORT_ATTRIBUTE = "eventId"
# The default shard count: the stack derives the deployed one from its target rate (shared/capacity.py)
# and gives it to loans-api (writes) and the sweeper (reads) as PENDING_SHARDS. Only ever raise it on a
# live table: the sweeper reads shards 0..N-1, so items on shards past a lowered N would wait unswept.
PENDING_SHARDS = 4

# The audit's index of what changed when: every outbox event item, keyed by its type (a handful of
# partitions) and its UUIDv7 eventId (sorts by time), keys only. "Which journeys changed since T" is
# one Query per event type from the smallest id of T, so a scheduled audit reads only what changed.
# Writers set nothing new: `type` and `eventId` are on every event item already.
CHANGES_INDEX = "journey-changes"
CHANGES_PARTITION_ATTRIBUTE = "type"
CHANGES_SORT_ATTRIBUTE = "eventId"


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
        # Keys only: the sweeper finds pending items here and reads the few it needs whole. An index
        # write is billed by the projected item's size, and every event is written to this index and
        # removed from it again (issue 19).
        IndexSpec(PENDING_INDEX, PENDING_SHARD_ATTRIBUTE, PENDING_SORT_ATTRIBUTE, projection="KEYS_ONLY"),
        IndexSpec(CHANGES_INDEX, CHANGES_PARTITION_ATTRIBUTE, CHANGES_SORT_ATTRIBUTE, projection="KEYS_ONLY"),
    ),
)
JOURNEYS_TABLE = TableSpec(logical_id="JourneysTable", local_name="journeys")

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
