"""Composition root of the consumer: an SQS batch handler reporting partial batch failures."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from functions.consumer.service import EventConsumer, MalformedEvent
from functions.consumer.settings import ConsumerSettings
from shared import aws
from shared.applier import EventApplier
from shared.clock import utc_now
from shared.control_record import ControlRecord
from shared.control_store import DynamoControlRecordStore
from shared.entry_points import Handler

logger = Logger(child=True)


def build_consumer(settings: ConsumerSettings, metrics: Metrics) -> EventConsumer:
    store = DynamoControlRecordStore(
        aws.client("dynamodb", settings.region, settings.aws_endpoint_url), settings.journeys_table_name
    )
    return EventConsumer(EventApplier(store, clock=utc_now), store, metrics)


def build(settings: ConsumerSettings, metrics: Metrics) -> Handler:
    consumer = build_consumer(settings, metrics)
    known: dict[str, ControlRecord] = {}

    def record_handler(record: SQSRecord) -> None:
        try:
            consumer.consume(record.body, known)
        except MalformedEvent as error:
            # No stack trace: the reason is the whole story, and `saga dlq list` repeats it.
            logger.error(
                "message unreadable: it is retried, then moves to the DLQ",
                extra={
                    "message_id": record.message_id,
                    "receive_count": record.attributes.approximate_receive_count,
                    "reason": str(error),
                },
            )
            raise
        except Exception:
            logger.exception(
                "message failed",
                extra={"message_id": record.message_id, "receive_count": record.attributes.approximate_receive_count},
            )
            raise

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        known.clear()
        known.update(consumer.prefetch([str(record.get("body", "")) for record in event.get("Records", [])]))
        processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
        return dict(process_partial_response(event, record_handler, processor, context))

    return handle
