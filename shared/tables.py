"""Resource definitions shared by the CDK stack and the local runtime: one source of truth for
names, keys, indexes, streams, TTL and redrive. Nothing here talks to AWS."""

from __future__ import annotations

from dataclasses import dataclass

from shared import topology

PARTITION_KEY = "pk"
SORT_KEY = "sk"
TTL_ATTRIBUTE = "expiresAt"

# The index of what changed when: every outbox event item, keyed by its `changesKey` (its type and a
# shard: shared/keys.py changes_partition, the shard count derived from the target rate) and its UUIDv7
# eventId (sorts by time), keys only. "Which events since T" is one Query per partition from the smallest
# id of T: the scheduled audit reads the journeys that changed, and the sweeper walks each partition from
# its cursor to find the events still PENDING (D7; there is no index of pending events). One entry per
# event, whatever the shard count; each partition takes 1,000 write units/s, so the shards carry the rate.
CHANGES_INDEX = "journey-changes"
CHANGES_PARTITION_ATTRIBUTE = "changesKey"
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
        # Keys only: an index write is billed by the projected item's size (issue 19); the audit and the
        # sweeper read the items they need whole.
        IndexSpec(CHANGES_INDEX, CHANGES_PARTITION_ATTRIBUTE, CHANGES_SORT_ATTRIBUTE, projection="KEYS_ONLY"),
    ),
)
# The index of a customer's journeys, as the caller that created them lists them (GET /journeys): every
# Control Record keyed by its `listing` (a digest of the creating caller and the customer, set at creation and
# never changed) and its `createdAt` (one width, so it sorts as the time does: shared/control_record.py), keys
# only; DynamoDB orders journeys created in the same microsecond by the table's key (the journeyId), and a
# page's last key holds both. Not the journeyId alone: a journey created with an agent key has an id derived
# from the key (docs/ARCHITECTURE.md D2), which says nothing of when. Every later write of the record carries
# the same key and no projected attribute, so the index is written once per journey, when it is created
# (DynamoDB writes an index only when the item's index key or projection changes). Its name changed with its
# sort key (it was `customer-journeys`, by journeyId): a GSI's key cannot change in place (docs/DEPLOY.md).
CUSTOMER_INDEX = "customer-journeys-by-time"
CUSTOMER_PARTITION_ATTRIBUTE = "listing"
CUSTOMER_SORT_ATTRIBUTE = "createdAt"
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
