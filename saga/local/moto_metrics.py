"""The SQS metric the events queue's age alarm watches (`ApproximateAgeOfOldestMessage`, infra/observability.py),
on the local endpoint's CloudWatch, as AWS publishes it.

SQS has no attribute for a queue's oldest message (GetQueueAttributes counts messages, it does not age
them) and no peek: a receive counts towards the queue's maxReceiveCount and hides the message from its
consumer. AWS publishes the age as a CloudWatch metric of namespace AWS/SQS, "the approximate age of the
oldest non-deleted message in the queue"
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html);
`saga status` reads it there, from a deployed stack or from this endpoint. moto publishes no SQS metric,
so this provider (moto's own hook for AWS metrics, as its S3 reports bucket sizes) reports each queue's
oldest message, visible or in flight, at the moment it is asked.
"""

from __future__ import annotations

from typing import Any

from moto.cloudwatch.models import MetricDatum
from moto.core.common_models import CloudWatchMetricProvider
from moto.core.utils import unix_time_millis, utcnow
from moto.sqs.models import sqs_backends

NAMESPACE = "AWS/SQS"
OLDEST_MESSAGE_AGE = "ApproximateAgeOfOldestMessage"


class SqsQueueAges(CloudWatchMetricProvider):
    """moto's CloudWatch asks every subclass of CloudWatchMetricProvider for its metrics."""

    @staticmethod
    def get_cloudwatch_metrics(account_id: str, region: str) -> list[MetricDatum]:
        now, now_ms = utcnow(), unix_time_millis()
        ages = []
        for name, queue in sqs_backends[account_id][region].queues.items():
            sent: list[Any] = [m.sent_timestamp for m in queue._messages if m.sent_timestamp is not None]
            if sent:  # AWS reports a queue's age while it holds a message
                ages.append(
                    MetricDatum(
                        namespace=NAMESPACE,
                        name=OLDEST_MESSAGE_AGE,
                        value=max(0.0, (now_ms - min(sent)) / 1000),
                        dimensions=[{"Name": "QueueName", "Value": name}],
                        timestamp=now,
                        unit="Seconds",
                    )
                )
        return ages


def install() -> None:
    """Nothing to patch: defining the provider (importing this module) is what registers it."""
