from __future__ import annotations

from pydantic import Field

from functions.loans_api.domain import QUOTE_CAP
from shared.idempotency import DEFAULT_RECEIPT_TTL_SECONDS
from shared.settings import LoansTableSettings


class LoansSettings(LoansTableSettings):
    receipt_ttl_seconds: int = DEFAULT_RECEIPT_TTL_SECONDS
    max_simulations_per_journey: int = Field(default=QUOTE_CAP, ge=1)
