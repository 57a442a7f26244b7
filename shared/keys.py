"""The key layout of the two tables, one place (docs/ARCHITECTURE.md, Data model): every item's `pk` and
`sk`. What an item holds lives with its writer (the outbox item: shared/outbox.py; the Control Record:
shared/control_store.py; a receipt: shared/idempotency.py)."""

from __future__ import annotations

import zlib
from collections.abc import Iterable

# -- loans-api's receipts, in its own table (the orchestrator keeps none: a keyed create's journeyId is derived
# from its key, docs/ARCHITECTURE.md D2; `RECEIPT#` items of earlier releases in the journeys table expire) --
RECEIPT_PREFIX = "RECEIPT#"
RECEIPT_SK = "RECEIPT"

# -- both tables: a journey's partition --------------------------------------------------------------
JOURNEY_PREFIX = "JOURNEY#"

# -- the loans table ---------------------------------------------------------------------------------
# An event item is the outbox item and the journey's history at once (D1): kept as long as the journey,
# never expired, the only record of its quotes and acceptances (functions/loans_api/history.py).
EVENT_PREFIX = "EVENT#"
# The journey's loan item (its ledger: seq, newest event, disbursement mark) shares the events' partition
# (its seq numbers them); the auditor reads it too.
LEDGER_SK = "LEDGER"
_SEQ_WIDTH = 10
# The sweeper's lease (shared/lease.py) and cursors (functions/relay/sweeper.py) live in the table it
# sweeps, in partitions of their own: no journey's, not an event (the stream's filter and the relay pass
# them by), in no index (they have no `type` and no `eventId`).
SWEEPER_LEASE_KEY = {"pk": "LEASE#sweeper", "sk": "LEASE"}  # lane 0's: the one lease of a one-lane sweeper


def sweeper_lease_key(lane: int) -> dict[str, str]:
    """The lease of the sweeper's lane `lane` (functions/relay/sweeper.py lane_partitions): one per lane, so
    two runs of a lane never overlap while the lanes run side by side. Lane 0's is the key a sweeper of one
    lane always used, so a run of the previous deploy and one of this still exclude each other."""
    return SWEEPER_LEASE_KEY if lane == 0 else {"pk": SWEEPER_LEASE_KEY["pk"], "sk": f"LEASE#{lane}"}


SWEEPER_CURSOR_PK = "SWEEPER#cursor"  # one item per partition of the changes index, `sk` its name
# The journey-changes index's shard count in use (CHANGES_INDEX below): the highest loans-api (before its first
# write under a count above 1) or any sweeper run was configured with (shared/outbox.py
# record_changes_shards), never lowered, so readers also walk shards a lowered count
# no longer writes to (changes_partitions). In no index, not an event, like the cursors.
CHANGES_SHARDS_KEY = {"pk": "CHANGES#shards", "sk": "COUNT"}

# -- the loans table's journey-changes index ---------------------------------------------------------
# The index of what changed when: every outbox event item, keyed by its `changesKey` (its type and a
# shard: changes_partition below, the shard count derived from the target rate) and its UUIDv7
# eventId (sorts by time), keys only. "Which events since T" is one Query per partition from the smallest
# id of T: the scheduled audit reads the journeys that changed, and the sweeper walks each partition from
# its cursor to find the events still PENDING (D7; there is no index of pending events). One entry per
# event, whatever the shard count; each partition takes 1,000 write units/s, so the shards carry the rate.
CHANGES_INDEX = "journey-changes"
CHANGES_PARTITION_ATTRIBUTE = "changesKey"
CHANGES_SORT_ATTRIBUTE = "eventId"

# Its partition key is an event item's `changesKey`: the event type and a shard, `SimulationCreated#3`.
# The shard is the eventId's CRC-32 modulo the shard count loans-api is configured with (derived from
# the target rate, shared/capacity.py), so one type's entries spread over that many partitions whatever
# journey ids the callers choose (the eventId's random bits are loans-api's). A reader walks shards
# 0 .. n-1 of every type, n the larger of its own configured count and the count recorded at
# CHANGES_SHARDS_KEY: entries written under an older, larger count are still walked; a shard a raised
# count adds has no cursor yet and is walked from the reader's initial lookback (docs/ARCHITECTURE.md D7).
CHANGES_KEY_SEPARATOR = "#"

# -- the journeys table (the orchestrator's) ---------------------------------------------------------
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
CONTROL_SK = "CONTROL"  # the journey's Control Record


def receipt_key(key: str) -> dict[str, str]:
    """Where an Idempotency-Key's receipt lives in its service's table."""
    return {"pk": f"{RECEIPT_PREFIX}{key}", "sk": RECEIPT_SK}


def journey_pk(journey_id: str) -> str:
    return f"{JOURNEY_PREFIX}{journey_id}"


def event_sk(seq: int) -> str:
    return f"{EVENT_PREFIX}{seq:0{_SEQ_WIDTH}d}"


def changes_shard(event_id: str, shards: int) -> int:
    """The shard of the journey-changes index an event is written to, under `shards` shards: from its
    eventId, whose random bits loans-api mints, never from the journey id a caller chooses (a set of ids
    crafted to one shard would throttle that shard's partition, and every journey written to it)."""
    return zlib.crc32(event_id.encode()) % shards


def changes_partition(event_type: str, shard: int) -> str:
    """The journey-changes index's partition key value (an event item's `changesKey`)."""
    return f"{event_type}{CHANGES_KEY_SEPARATOR}{shard}"


def changes_partitions(event_types: Iterable[str], shards: int) -> tuple[str, ...]:
    """Every partition of the journey-changes index under `shards` shards, type by type."""
    return tuple(changes_partition(t, shard) for t in sorted(event_types) for shard in range(shards))
