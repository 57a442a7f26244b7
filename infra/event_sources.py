"""How road 2 is driven: the stream feeds the relay (outbox INSERTs only), the queue feeds the
consumer, a schedule runs the sweeper. Partial batch failures everywhere."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from shared.capacity import DEFAULT_CAPACITY
from shared.outbox import EVENT_PREFIX

RELAY_BATCH_SIZE = 100
RELAY_RETRIES = 5
CONSUMER_BATCH_SIZE = 10
# The consumer's concurrency and the relay's parallelization factor come from the stack's target rate
# (shared/capacity.py); these are the defaults'.
CONSUMER_MAX_CONCURRENCY = DEFAULT_CAPACITY.consumer_max_concurrency
RELAY_PARALLELIZATION_FACTOR = DEFAULT_CAPACITY.relay_parallelization_factor
SWEEP_EVERY = Duration.minutes(1)


class EventSources(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        loans_table: dynamodb.ITable,
        relay: lambda_.IFunction,
        relay_failures: sqs.IQueue,
        queue: sqs.IQueue,
        consumer: lambda_.IFunction,
        sweeper: lambda_.IFunction,
        consumer_max_concurrency: int = CONSUMER_MAX_CONCURRENCY,
        relay_parallelization_factor: int = RELAY_PARALLELIZATION_FACTOR,
    ) -> None:
        super().__init__(scope, construct_id)
        # The filter keeps the relay's own NOTIFIED updates (MODIFY) and every non-outbox item away;
        # the relay checks the same in code for endpoints without filters.
        outbox_inserts = lambda_.FilterCriteria.filter(
            {
                "eventName": lambda_.FilterRule.is_equal("INSERT"),
                "dynamodb": {"Keys": {"sk": {"S": lambda_.FilterRule.begins_with(EVENT_PREFIX)}}},
            }
        )
        relay.add_event_source(
            sources.DynamoEventSource(
                loans_table,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=RELAY_BATCH_SIZE,
                bisect_batch_on_error=True,
                retry_attempts=RELAY_RETRIES,
                max_record_age=Duration.hours(24),
                report_batch_item_failures=True,
                on_failure=sources.SqsDlq(relay_failures),
                filters=[outbox_inserts],
                parallelization_factor=relay_parallelization_factor,
            )
        )
        consumer.add_event_source(
            sources.SqsEventSource(
                queue,
                batch_size=CONSUMER_BATCH_SIZE,
                report_batch_item_failures=True,
                max_concurrency=consumer_max_concurrency,
            )
        )
        events.Rule(
            self,
            "SweepSchedule",
            schedule=events.Schedule.rate(SWEEP_EVERY),
            targets=[targets.LambdaFunction(sweeper)],
            description="Republish stale outbox events and report the outbox's age",
        )
