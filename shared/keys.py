"""The key layout of the two tables, one place (docs/ARCHITECTURE.md, Data model): every item's `pk` and
`sk`. What an item holds lives with its writer (the outbox item: shared/outbox.py; the Control Record:
shared/control_store.py; a receipt: shared/idempotency.py)."""

from __future__ import annotations

# -- both tables: a service's receipts (each service owns its own, in its own table) -----------------
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
SWEEPER_LEASE_KEY = {"pk": "LEASE#sweeper", "sk": "LEASE"}
SWEEPER_CURSOR_PK = "SWEEPER#cursor"  # one item per partition of the changes index, `sk` its name

# -- the journeys table (the orchestrator's) ---------------------------------------------------------
CONTROL_SK = "CONTROL"  # the journey's Control Record


def receipt_key(key: str) -> dict[str, str]:
    """Where an Idempotency-Key's receipt lives in its service's table."""
    return {"pk": f"{RECEIPT_PREFIX}{key}", "sk": RECEIPT_SK}


def journey_pk(journey_id: str) -> str:
    return f"{JOURNEY_PREFIX}{journey_id}"


def event_sk(seq: int) -> str:
    return f"{EVENT_PREFIX}{seq:0{_SEQ_WIDTH}d}"
