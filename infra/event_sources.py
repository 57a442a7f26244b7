"""How road 2 is driven: the stream feeds the relay (outbox INSERTs only), the queue feeds the
consumer, a schedule runs the sweeper, each as shared/topology.py declares it. Partial batch failures
everywhere."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from constructs import Construct

from infra.functions import SagaFunctions, schedule
from infra.messaging import Messaging
from shared import topology
from shared.capacity import DEFAULT_CAPACITY, Capacity


class EventSources(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        loans_table: dynamodb.ITable,
        functions: SagaFunctions,
        messaging: Messaging,
        capacity: Capacity = DEFAULT_CAPACITY,
    ) -> None:
        """The relay, the consumer and the sweeper of `functions`, driven by the loans table's stream,
        `messaging`'s queue and a schedule; the consumer's concurrency and the relay's parallelization
        factor come from the stack's target rate (`capacity`, shared/capacity.py)."""
        super().__init__(scope, construct_id)
        stream, queue = topology.RELAY_STREAM, topology.EVENTS_QUEUE_SOURCE
        outbox_inserts = lambda_.FilterCriteria.filter(
            {
                "eventName": lambda_.FilterRule.is_equal(stream.event_name),
                "dynamodb": {"Keys": {"sk": {"S": lambda_.FilterRule.begins_with(stream.sort_key_prefix)}}},
            }
        )
        functions.relay.add_event_source(
            sources.DynamoEventSource(
                loans_table,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=stream.batch_size,
                bisect_batch_on_error=stream.bisect_on_error,
                retry_attempts=stream.retries,
                max_record_age=Duration.hours(stream.max_record_age_hours),
                report_batch_item_failures=True,
                on_failure=sources.SqsDlq(messaging.relay_failures),
                filters=[outbox_inserts],
                parallelization_factor=capacity.relay_parallelization_factor,
            )
        )
        functions.consumer.add_event_source(
            sources.SqsEventSource(
                messaging.queue,
                batch_size=queue.batch_size,
                report_batch_item_failures=True,
                max_concurrency=capacity.consumer_max_concurrency,
            )
        )
        purpose = "Republish stale outbox events and report the outbox's age"
        self.sweep_schedule = run_every(self, "SweepSchedule", schedule(topology.SWEEPER), functions.sweeper, purpose)


def run_every(
    scope: Construct, construct_id: str, rate: Duration, function: lambda_.IFunction, description: str
) -> events.Rule:
    """An EventBridge schedule that invokes `function` every `rate` (the sweeper's, the audit's). A run
    that cannot be delivered is not retried and not kept past `rate`: the next one is due by then."""
    return events.Rule(
        scope,
        construct_id,
        schedule=events.Schedule.rate(rate),
        targets=[targets.LambdaFunction(function, retry_attempts=0, max_event_age=rate)],
        description=description,
    )
