from __future__ import annotations

from pydantic import Field

from shared import topology
from shared.capacity import DEFAULT_CAPACITY
from shared.settings import LoansTableSettings

# The sweeper's function timeout (infra deploys it): a run can last no longer, so its lease
# (shared/lease.py) outlasts it by the clock-skew margin and no more.
SWEEPER_TIMEOUT_SECONDS = topology.SWEEPER.timeout_seconds
# How far behind its cursor the sweeper re-reads the changes index (functions/relay/sweeper.py). An
# eventId is minted by loans-api before the command's transaction commits, and an attempt can commit no
# later than loans-api's function timeout (10 s, shared/topology.py LOANS_API) after it started; the
# id carries loans-api's clock, the horizon the sweeper's (5 s of skew, shared/lease.py); and the index
# is eventually consistent (normally well under a second: 15 s are kept for a slow propagation).
# tests/unit/test_sweeper_margin.py holds it to those constants.
LATE_COMMIT_MARGIN_SECONDS = 30


class RelaySettings(LoansTableSettings):
    events_topic_arn: str
    # The sweeper republishes PENDING events older than this; younger ones are the stream's.
    sweep_threshold_seconds: float = 60.0
    # What bounds one sweep (functions/relay/sweeper.py): events republished, index entries read per
    # partition, items kept to revisit per partition, and wall time (well inside the function timeout).
    sweep_max_per_run: int = 1000
    sweep_max_entries_per_partition: int = 50_000
    sweep_max_revisits: int = 100
    sweep_budget_seconds: float = SWEEPER_TIMEOUT_SECONDS * 2 / 3
    # Where a sweeper without a cursor starts reading: a day back (a new stack has nothing older; a stack
    # upgraded from the pending index had its older events swept by the sweeper it replaces).
    sweep_initial_lookback_seconds: float = 24 * 3600
    sweep_margin_seconds: float = LATE_COMMIT_MARGIN_SECONDS
    # The sweeper's lanes (functions/relay/sweeper.py lane_partitions), each scheduled with its lane in its
    # input (infra/event_sources.py); derived from the target rate (shared/capacity.py).
    sweep_lanes: int = Field(default=DEFAULT_CAPACITY.sweeper_lanes, ge=1)
