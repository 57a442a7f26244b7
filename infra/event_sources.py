"""How road 2 is driven: the stream feeds the relay (outbox INSERTs only), the queue feeds the
consumer, a schedule per lane runs the sweeper, each as shared/topology.py declares it. Partial batch
failures everywhere."""

from __future__ import annotations

import json

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct

from infra.functions import SagaFunctions, schedule
from infra.messaging import Messaging
from shared import topology
from shared.capacity import DEFAULT_CAPACITY, SQS_PROVISIONED_MIN_POLLERS, Capacity


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
                # Standard mode up to 1,000 batches at once; past that, provisioned pollers (the modes exclude
                # each other; shared/capacity.py derives which).
                **(
                    {"max_concurrency": capacity.consumer_max_concurrency}
                    if capacity.consumer_pollers is None
                    else {
                        "provisioned_poller_config": lambda_.ProvisionedPollerConfig(
                            minimum_pollers=SQS_PROVISIONED_MIN_POLLERS, maximum_pollers=capacity.consumer_pollers
                        )
                    }
                ),
            )
        )
        self.sweep_lanes = self._sweep_lanes(functions.sweeper, capacity.sweeper_lanes)

    def _sweep_lanes(self, sweeper: lambda_.IFunction, lanes: int) -> scheduler.ScheduleGroup:
        """An EventBridge Scheduler schedule per lane of the sweeper (functions/relay/sweeper.py
        lane_partitions), each invoking it with its lane in its input, in a group of their own: the group's
        invocation attempts are the runs scheduled, which the SweeperSilent alarm counts against the runs
        that reported (infra/observability.py). Schedules, not EventBridge rules: an event bus holds 300
        rules by default and the lanes at 100,000 journeys/s are more (docs/ARCHITECTURE.md D7). A run that
        cannot be delivered is not retried and not kept past the period: the lane's next run is due by then."""
        # Nothing is kept in a group but its schedules: it goes with the stack (retained, its name would be
        # taken when the stack is deployed again).
        group = scheduler.ScheduleGroup(self, "SweepLanes", removal_policy=RemovalPolicy.DESTROY)
        stack = Stack.of(self)
        role = iam.Role(
            self,
            "SweepLanesRole",
            assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com").with_conditions(
                {"StringEquals": {"aws:SourceAccount": stack.account}}
            ),
            description="Lets the sweeper's lane schedules invoke the sweeper (and nothing else)",
        )
        # Invoke on the sweeper's ARN exactly (the L2 target would grant its versions too, `arn:*`).
        role.add_to_policy(iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[sweeper.function_arn]))
        period = schedule(topology.SWEEPER)
        for lane in range(lanes):
            lane_schedule = scheduler.CfnSchedule(
                self,
                f"SweepLane{lane}",
                schedule_expression=f"rate({topology.SWEEPER.schedule_minutes} minute"
                f"{'' if topology.SWEEPER.schedule_minutes == 1 else 's'})",
                flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
                group_name=group.schedule_group_name,
                target=scheduler.CfnSchedule.TargetProperty(
                    arn=sweeper.function_arn,
                    role_arn=role.role_arn,
                    input=json.dumps({"lane": lane}),
                    retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                        maximum_retry_attempts=0, maximum_event_age_in_seconds=int(period.to_seconds())
                    ),
                ),
                description=f"Sweeper lane {lane} of {lanes}: republish its partitions' stale outbox events",
            )
            lane_schedule.node.add_dependency(role)
        return group


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
