from __future__ import annotations

from functions.orchestrator.retry import RetryPolicy
from shared.loans_client import RETRY_READ_TIMEOUT_SECONDS, LoansApiSettings

_SCHEDULE = RetryPolicy()


class OrchestratorSettings(LoansApiSettings):
    """loans-api's per-attempt limits (shared/loans_client.py's fields) with the retry schedule fit API
    Gateway's 29 s integration timeout (see tests/unit/test_retry.py for the worst case). The first attempt's
    read timeout and the retries' are sized for a cold loans-api, so no attempt is cut off and retried into
    another cold instance; when every attempt times out, the deadline truncates the schedule
    (tests/unit/test_cold_start.py holds both to the cold-start model and counts the attempts;
    tests/integration/test_deadline.py runs every command's worst case with them)."""

    journeys_table_name: str
    loans_retry_read_timeout: float = RETRY_READ_TIMEOUT_SECONDS
    # The retry schedule's defaults are functions/orchestrator/retry.py's.
    retry_attempts: int = _SCHEDULE.attempts
    retry_base_delay: float = _SCHEDULE.base_delay
    retry_multiplier: float = _SCHEDULE.multiplier
    retry_max_jitter: float = _SCHEDULE.max_jitter
