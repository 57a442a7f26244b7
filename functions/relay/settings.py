from __future__ import annotations

from shared.settings import BaseSettings
from shared.tables import PENDING_SHARDS

# The sweeper's function timeout (infra deploys it): a run can last no longer, so its lease
# (shared/lease.py) outlasts it by the clock-skew margin and no more.
SWEEPER_TIMEOUT_SECONDS = 60


class RelaySettings(BaseSettings):
    loans_table_name: str
    events_topic_arn: str
    # NOTIFIED outbox items expire after this, so the table does not grow forever.
    notified_ttl_seconds: int = 7 * 24 * 3600
    # The sweeper republishes PENDING events older than this, at most `sweep_max_per_run` per run.
    sweep_threshold_seconds: float = 60.0
    sweep_max_per_run: int = 100
    pending_shards: int = PENDING_SHARDS  # the stack sets it from its target rate (as for loans-api)
