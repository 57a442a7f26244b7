"""Publishing events to SNS: the port and its adapter. One module, one secret: PublishBatch takes
at most 10 entries per call, and a 200 answer can still hold failed entries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from shared.events import LoanEvent

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sns.type_defs import PublishBatchRequestEntryTypeDef

SNS_BATCH_LIMIT = 10


class EventPublisher(Protocol):
    def publish(self, events: Sequence[LoanEvent]) -> dict[str, str]:
        """Publish `events`; returns {eventId: reason} for every event that was NOT published."""
        ...


class SnsPublisher:
    def __init__(self, client: SNSClient, topic_arn: str) -> None:
        self._client = client
        self._topic_arn = topic_arn

    def publish(self, events: Sequence[LoanEvent]) -> dict[str, str]:
        failed: dict[str, str] = {}
        for start in range(0, len(events), SNS_BATCH_LIMIT):
            chunk = events[start : start + SNS_BATCH_LIMIT]
            try:
                response = self._client.publish_batch(
                    TopicArn=self._topic_arn, PublishBatchRequestEntries=[_entry(e) for e in chunk]
                )
            except (ClientError, BotoCoreError) as error:
                failed.update({event.eventId: f"{type(error).__name__}: {error}" for event in chunk})
                continue
            for entry in response.get("Failed", []):
                failed[entry["Id"]] = f"{entry.get('Code')}: {entry.get('Message', '')}"
        return failed


def _entry(event: LoanEvent) -> PublishBatchRequestEntryTypeDef:
    return {
        "Id": event.eventId,  # a UUID: within SNS's 80-character [A-Za-z0-9_-] limit
        "Message": event.model_dump_json(),
        "MessageAttributes": {
            "eventType": {"DataType": "String", "StringValue": event.type},
            "journeyId": {"DataType": "String", "StringValue": event.journeyId},
        },
    }
