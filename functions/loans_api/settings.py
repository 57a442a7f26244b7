from __future__ import annotations

from shared.idempotency import DEFAULT_RECEIPT_TTL_SECONDS
from shared.settings import BaseSettings


class LoansSettings(BaseSettings):
    loans_table_name: str
    receipt_ttl_seconds: int = DEFAULT_RECEIPT_TTL_SECONDS
