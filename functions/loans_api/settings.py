from __future__ import annotations

from pydantic import Field

from functions.loans_api.domain import QUOTE_CAP
from shared.capacity import DEFAULT_CAPACITY
from shared.idempotency import DEFAULT_RECEIPT_TTL_SECONDS
from shared.settings import BaseSettings


class LoansSettings(BaseSettings):
    loans_table_name: str
    receipt_ttl_seconds: int = DEFAULT_RECEIPT_TTL_SECONDS
    max_simulations_per_journey: int = Field(default=QUOTE_CAP, ge=1)
    # The journey-changes index's shards per event type (shared/keys.py): from the target rate.
    changes_index_shards: int = Field(default=DEFAULT_CAPACITY.changes_index_shards, ge=1)
