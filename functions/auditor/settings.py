from __future__ import annotations

from shared.settings import LoansTableSettings


class AuditorSettings(LoansTableSettings):
    journeys_table_name: str
    # A journey is listed once it has disagreed this long: both roads normally deliver within a second.
    grace_seconds: float = 60.0
    # The first run (no state yet) looks back this far.
    initial_lookback_seconds: float = 3600.0
    # Each run re-reads this much of the previous window (ids are minted before the commit; the index
    # is eventually consistent). Longer than loans-api's function timeout.
    late_commit_margin_seconds: float = 60.0
    # Bounded work per run (events read from the changes index; ~4 per journey): at 1M journeys a
    # day a 5-minute run reads ~14,000. A busier window is finished by the next runs.
    max_changes_per_run: int = 50_000
    max_suspects: int = 1000
    # The rolling sweep of the Control Records (a record loans-api has no change of is in none of its
    # indexes): items of the journeys table read per run, about 2 read units each with their audit. At
    # 100,000 journeys (about 600,000 items with their receipts) the whole table in about two days.
    records_swept_per_run: int = 1000
