from __future__ import annotations

from pydantic import Field

from shared.settings import LoansTableSettings


class AuditorSettings(LoansTableSettings):
    """The audit's tables, and what bounds a scheduled run (functions/auditor/service.py `AuditLimits`):
    - grace_seconds: a journey is listed once it has disagreed this long (both roads normally deliver within
      a second);
    - initial_lookback_seconds: how far back the first run (no state yet) looks;
    - late_commit_margin_seconds: how much of the previous window each run re-reads (ids are minted before
      the commit; the index is eventually consistent), longer than loans-api's function timeout;
    - max_changes_per_run, max_suspects: bounded work per run (events read from the changes index, ~4 per
      journey: at 1M journeys a day a 5-minute run reads ~14,000; a busier window is finished by the next
      runs);
    - records_swept_per_run: the rolling sweep of the Control Records (a record loans-api has no change of
      is in none of its indexes), items of the journeys table read per run, about 2 read units each with
      their audit: at 100,000 journeys (about 600,000 items with their receipts) the whole table in about
      two days."""

    journeys_table_name: str
    grace_seconds: float = 60.0
    initial_lookback_seconds: float = 3600.0
    late_commit_margin_seconds: float = 60.0
    max_changes_per_run: int = Field(default=50_000, ge=1)
    max_suspects: int = Field(default=1000, ge=0)
    records_swept_per_run: int = Field(default=1000, ge=0)
