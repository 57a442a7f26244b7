from __future__ import annotations

from shared.loans_client import LoansApiSettings


class ConsumerSettings(LoansApiSettings):
    """loans-api (shared/loans_client.py's fields) is the ledger that confirms every event the consumer would
    apply (D15). One attempt per ledger read, no retries here: a failed read fails the message, and SQS
    redelivers it after the queue's visibility timeout. A batch's worst case (every message needs a read and
    every read times out) fits the function's timeout (tests/unit/test_consumer.py holds it to that). The read
    timeout is long enough for a cold loans-api, as the orchestrator's (a confirmation cut off by a cold start
    would wait the queue's visibility timeout for its next receive)."""

    journeys_table_name: str
    # The local runtime's only: a file each failed message's cause is also appended to, by message id, for
    # `saga dlq list` to say why a DLQ message failed (functions/consumer/failure_notes.py). In AWS the log
    # line the consumer writes for each failure is the record of it.
    failure_notes_file: str | None = None
