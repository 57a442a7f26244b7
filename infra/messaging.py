"""SNS topic -> SQS events queue (raw delivery) with its DLQ, and the relay's on-failure queue
(docs/ARCHITECTURE.md, D6)."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from shared.tables import EVENTS_DLQ, EVENTS_QUEUE, RELAY_FAILURES_QUEUE, QueueSpec


class Messaging(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self,
            "EventsKey",
            enable_key_rotation=True,
            description="Encrypts the loan events topic and the alarm topic",
        )
        self.topic = sns.Topic(self, "EventsTopic", master_key=self.key, enforce_ssl=True)
        self.dlq = self._queue(EVENTS_DLQ)
        self.queue = self._queue(EVENTS_QUEUE, dead_letter=self.dlq)
        self.relay_failures = self._queue(RELAY_FAILURES_QUEUE)
        self.topic.add_subscription(subscriptions.SqsSubscription(self.queue, raw_message_delivery=True))

    def _queue(self, spec: QueueSpec, dead_letter: sqs.IQueue | None = None) -> sqs.Queue:
        return sqs.Queue(
            self,
            spec.logical_id,
            visibility_timeout=Duration.seconds(spec.visibility_timeout_seconds),
            retention_period=Duration.days(spec.retention_days),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            dead_letter_queue=None
            if dead_letter is None
            else sqs.DeadLetterQueue(queue=dead_letter, max_receive_count=spec.max_receive_count),
        )
