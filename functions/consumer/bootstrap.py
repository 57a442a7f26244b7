"""Composition root of the consumer: an SQS batch handler reporting partial batch failures, with
loans-api's ledger read (signed HTTP in AWS) to confirm what it would apply."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import urllib3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from botocore.exceptions import ClientError

from functions.consumer.failure_notes import FailureNotes, JsonLinesFailureNotes
from functions.consumer.service import Batch, EventConsumer, EventRejected, MalformedEvent
from functions.consumer.settings import ConsumerSettings
from shared import aws
from shared.applier import EventApplier
from shared.clock import utc_now
from shared.control_store import DynamoControlRecordStore
from shared.entry_points import Handler
from shared.loans_client import HttpRequester, TransientLoansError, http_loans_client
from shared.loans_ledger import LoansLedger

logger = Logger(child=True)

# A failed message the consumer expects, and how it is logged (each is retried, then moves to the DLQ).
_EXPECTED_FAILURES: dict[type[Exception], tuple[Callable[..., None], str]] = {
    MalformedEvent: (logger.error, "message unreadable: it is retried, then moves to the DLQ"),
    # Not applied, and never will be: set aside for an operator.
    EventRejected: (
        logger.error,
        "message rejected: not what loans-api committed; it is retried, then moves to the DLQ",
    ),
    # loans-api could not confirm the event now: the message waits for SQS to redeliver it.
    TransientLoansError: (
        logger.warning,
        "loans-api unavailable: the message is retried after the queue's visibility timeout",
    ),
}


def _cause(error: Exception, table: str) -> str:
    """An unexpected failure in an operator's words: an AWS error names its call and its code (the consumer's
    only AWS calls are DynamoDB's, on the journeys table), any other its type and text."""
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        said = details.get("Message") or ""
        return f"DynamoDB {error.operation_name} on {table} answered {details.get('Code', 'an error')}" + (
            f" ({said})" if said else ""
        )
    return f"{type(error).__name__}: {error}"


def ledger_read_seconds(settings: ConsumerSettings) -> float:
    """The worst case of one ledger read: connect and read timeouts both run out."""
    return settings.loans_connect_timeout + settings.loans_read_timeout


def build_ledger(settings: ConsumerSettings, http: HttpRequester | None = None) -> LoansLedger:
    """loans-api's ledger read over (signed, in AWS) HTTP: one attempt per read, no retries."""
    timeout = urllib3.Timeout(connect=settings.loans_connect_timeout, read=settings.loans_read_timeout)
    return LoansLedger(http_loans_client(settings, timeout, pool_size=4, http=http))


def build_consumer(settings: ConsumerSettings, metrics: Metrics, http: HttpRequester | None = None) -> EventConsumer:
    store = DynamoControlRecordStore(
        aws.client("dynamodb", settings.region, settings.aws_endpoint_url), settings.journeys_table_name
    )
    return EventConsumer(EventApplier(store, clock=utc_now), store, build_ledger(settings, http), metrics)


def build(settings: ConsumerSettings, metrics: Metrics, http: HttpRequester | None = None) -> Handler:
    consumer = build_consumer(settings, metrics, http)
    table = settings.journeys_table_name
    notes: FailureNotes | None = (
        None if settings.failure_notes_file is None else JsonLinesFailureNotes(settings.failure_notes_file)
    )

    def note(record: SQSRecord, cause: str) -> None:
        if notes is None:
            return
        try:
            notes.note(record.message_id, int(record.attributes.approximate_receive_count or 0), cause)
        except OSError:  # a note is an aid to the operator: never a reason to fail the message
            logger.warning("failure note not written", extra={"message_id": record.message_id}, exc_info=True)

    def prefetch(event: dict[str, Any]) -> Batch:
        """The batch's record heads, in one read (each body read once, for this and for its own apply); when
        it fails, the whole batch fails (each message is received again), and each message's note says why."""
        raw = event.get("Records", [])
        try:
            return consumer.prefetch([str(record.get("body", "")) for record in raw])
        except Exception as error:
            records = [SQSRecord(record) for record in raw]
            cause = f"failed before it was applied (the batch's read of its records): {_cause(error, table)}"
            logger.exception("batch failed", extra={"message_ids": [record.message_id for record in records]})
            for record in records:
                note(record, cause)
            raise

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        batch = prefetch(event)

        def record_handler(record: SQSRecord) -> None:
            try:
                consumer.consume(record.body, batch)
            except (MalformedEvent, EventRejected, TransientLoansError) as error:
                # No stack trace: the reason is the whole story, and `saga dlq list` repeats it.
                log, message = next(how for kind, how in _EXPECTED_FAILURES.items() if isinstance(error, kind))
                extra = {"receive_count": record.attributes.approximate_receive_count, "reason": str(error)}
                log(message, extra={"message_id": record.message_id, **extra})
                note(record, f"{message.split(':')[0]}: {error}")
                raise
            except Exception as error:
                logger.exception(
                    "message failed",
                    extra={
                        "message_id": record.message_id,
                        "receive_count": record.attributes.approximate_receive_count,
                    },
                )
                note(record, f"failed when applied: {_cause(error, table)}")
                raise

        processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
        return dict(process_partial_response(event, record_handler, processor, context))

    return handle
