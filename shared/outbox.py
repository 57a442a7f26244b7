"""The outbox item's layout (D4, D7): written by loans-api in the command's transaction, read by
the relay from the stream and by the sweeper (found through the journey-changes index), marked NOTIFIED
once published. One module, one secret: how an event is stored."""

from __future__ import annotations

from typing import Any

from shared.dynamo import from_item, to_item
from shared.events import LoanEvent

JOURNEY_PREFIX = "JOURNEY#"
# An event item is the outbox item and the journey's history at once (D1): kept as long as the journey,
# never expired, the only record of its quotes and acceptances (functions/loans_api/history.py).
EVENT_PREFIX = "EVENT#"
# The journey's loan item (its ledger: seq, newest event, disbursement mark) shares the events' partition
# (its seq numbers them); the auditor reads it too.
LEDGER_SK = "LEDGER"
PENDING = "PENDING"
NOTIFIED = "NOTIFIED"
_SEQ_WIDTH = 10
# The sweeper's lease (shared/lease.py) lives in the table it sweeps, in a partition of its own: no
# journey's, not an event (the stream's filter and the relay pass it by), in no index.
SWEEPER_LEASE_KEY = {"pk": "LEASE#sweeper", "sk": "LEASE"}


def journey_pk(journey_id: str) -> str:
    return f"{JOURNEY_PREFIX}{journey_id}"


def event_sk(seq: int) -> str:
    return f"{EVENT_PREFIX}{seq:0{_SEQ_WIDTH}d}"


def outbox_item(event: LoanEvent) -> dict[str, Any]:
    """The outbox item for `event`, PENDING (it is in the journey-changes index by its type and eventId)."""
    values = event.model_dump(mode="json")
    return to_item(
        {
            "pk": journey_pk(event.journeyId),
            "sk": event_sk(event.seq),
            **values,
            "status": PENDING,
            "attempts": 0,
        }
    )


def is_outbox_item(item: dict[str, Any]) -> bool:
    """True for a DynamoDB-typed item (or keys) of an outbox event."""
    sort_key = item.get("sk", {})
    return isinstance(sort_key, dict) and str(sort_key.get("S", "")).startswith(EVENT_PREFIX)


def event_from_item(item: dict[str, Any]) -> LoanEvent:
    """The event stored in a DynamoDB-typed outbox item (stream NewImage or table item)."""
    values = from_item(item)
    return LoanEvent.model_validate({name: values[name] for name in LoanEvent.model_fields})
