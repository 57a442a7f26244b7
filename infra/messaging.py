"""SNS topic -> SQS events queue (raw delivery) with its DLQ, and the relay's on-failure queue
(docs/ARCHITECTURE.md, D6). Who may put an event on road 2 (D15): the topic admits Publish only from
the relay's and the sweeper's roles, the events queue SendMessage only from the topic and from the
operator's DLQ redrive role."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from shared.tables import EVENTS_DLQ, EVENTS_QUEUE, RELAY_FAILURES_QUEUE, QueueSpec

# SQS's own DLQ redrive: start a move task, follow it, stop it (each authorized on the source queue).
MESSAGE_MOVE_ACTIONS = ("sqs:StartMessageMoveTask", "sqs:ListMessageMoveTasks", "sqs:CancelMessageMoveTask")


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
        # DLQ messages go back as this role, by `saga dlq redrive` or by SQS's own redrive (the console's
        # "Start DLQ redrive", `aws sqs start-message-move-task`, docs/DEPLOY.md): the one principal besides
        # the topic the queue admits. Any principal of the account whose own policy allows sts:AssumeRole
        # on it may assume it.
        self.redrive_role = iam.Role(
            self,
            "DlqRedriveRole",
            assumed_by=iam.AccountRootPrincipal(),
            description="loan saga: moves events DLQ messages back to the events queue (saga dlq redrive, SQS redrive)",
        )
        # A message move task runs with its starter's rights: on the source (the DLQ) receive, delete and
        # read attributes, on the destination send (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/
        # SQSDeveloperGuide/sqs-configure-dead-letter-queue-redrive.html); its three actions name the source.
        self.dlq.grant_consume_messages(self.redrive_role)
        self.dlq.grant(self.redrive_role, *MESSAGE_MOVE_ACTIONS)
        self.queue.grant_send_messages(self.redrive_role)
        self.queue.add_to_resource_policy(
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["sqs:SendMessage"],
                resources=[self.queue.queue_arn],
                # Both must differ to deny (two keys of one operator are ANDed): SNS delivers with the topic
                # as aws:SourceArn, the redrive sends as its role; a key the request lacks counts as
                # differing. https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html
                # and .../reference_policies_condition-logic-multiple-context-keys-or-values.html
                conditions={
                    "ArnNotEquals": {
                        "aws:SourceArn": self.topic.topic_arn,
                        "aws:PrincipalArn": self.redrive_role.role_arn,
                    }
                },
            )
        )

    def admit_publishers(self, publishers: Sequence[iam.IRole]) -> None:
        """The topic refuses Publish to every principal but `publishers` (their own policies grant it). A
        negated operator over several values is their NOR: denied unless the principal is one of them."""
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={"ArnNotEquals": {"aws:PrincipalArn": [role.role_arn for role in publishers]}},
            )
        )

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
