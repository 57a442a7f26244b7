"""The stack only composes constructs, one per concern, and wires who may do what: each function gets
the calls its code makes (infra/permissions.py) and the grants of what it publishes or invokes."""

from __future__ import annotations

from aws_cdk import CfnOutput, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from functions.consumer.settings import ConsumerSettings
from functions.loans_api.settings import LoansSettings
from functions.orchestrator.settings import OrchestratorSettings
from functions.relay.settings import RelaySettings
from infra import permissions
from infra.apis import ApiGatewayAccountRole, ProxyApi, RouteInvoker, throttles
from infra.audit import JourneyAudit
from infra.bedrock import BedrockExecutor
from infra.data import DataTables
from infra.event_sources import EventSources
from infra.functions import SagaFunctions, configure
from infra.messaging import Messaging
from infra.nag import acknowledge
from infra.observability import Observability, Watched
from shared import metric_names as names
from shared import stack_outputs, topology
from shared.capacity import DEFAULT_CAPACITY, Capacity
from shared.loans_ledger import ledger_path

# The one loans-api route the consumer calls: the ledger read that confirms what road 2 applies (D15).
LEDGER_READ = ("GET", ledger_path("*"))


class LoanSagaStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        dev: bool = False,
        api_gateway_account_role: bool = True,
        alarm_email: str | None = None,
        capacity: Capacity = DEFAULT_CAPACITY,
        bedrock_agent: bool = False,
        changes_index: bool = True,
        **kwargs: object,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        orchestrator_throttle, loans_throttle = throttles(capacity)
        retention = logs.RetentionDays.ONE_WEEK if dev else logs.RetentionDays.THREE_MONTHS
        # What holds data (tables, queues, the key, logs) is kept when a production stack is deleted or
        # replaces it, but not when its creation fails: a rolled-back first deploy leaves nothing behind
        # that would block the retry. A dev stack removes everything.
        keep = RemovalPolicy.DESTROY if dev else RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE
        data = DataTables(self, "Data", removal=keep, changes_index=changes_index)
        messaging = Messaging(self, "Messaging")
        for kept in (messaging.key, messaging.queue, messaging.dlq, messaging.relay_failures):
            kept.apply_removal_policy(keep)
        fns = SagaFunctions(self, "Functions", log_retention=retention, removal=keep)
        loans_api = ProxyApi(
            self,
            "LoansApi",
            name="loans",
            function=fns.loans_api,
            log_retention=retention,
            log_removal=keep,
            throttle=loans_throttle,
            only_invoker=fns.orchestrator.role,
            route_invokers=(RouteInvoker(_role(fns.consumer), *LEDGER_READ),),
            description="loans-api: the system of record (internal: the orchestrator calls it, the consumer "
            "reads its ledgers)",
        )
        orchestrator_api = ProxyApi(
            self,
            "OrchestratorApi",
            name="orchestrator",
            function=fns.orchestrator,
            log_retention=retention,
            log_removal=keep,
            throttle=orchestrator_throttle,
            description="The loan journey orchestrator: the agent-facing API",
        )
        account_role = (
            ApiGatewayAccountRole(self, "ApiGatewayAccount", log_removal=keep) if api_gateway_account_role else None
        )
        if account_role is not None:
            account_role.must_precede(loans_api, orchestrator_api)

        # Who may do what.
        for fn, table, calls in (
            (fns.loans_api, data.loans, permissions.LOANS_API),
            (fns.orchestrator, data.journeys, permissions.ORCHESTRATOR),
            (fns.consumer, data.journeys, permissions.CONSUMER),
            (fns.relay, data.loans, permissions.RELAY),
            (fns.sweeper, data.loans, permissions.SWEEPER),
            (fns.auditor, data.loans, permissions.AUDITOR_LOANS),
            (fns.auditor, data.journeys, permissions.AUDITOR_JOURNEYS),
        ):
            for statement in calls.statements(table):
                fn.add_to_role_policy(statement)
        for outbox_worker in (fns.relay, fns.sweeper):
            messaging.topic.grant_publish(outbox_worker)
        messaging.admit_publishers([_role(fns.relay), _role(fns.sweeper)])
        loans_api.grant_invoke(fns.orchestrator)
        loans_api.grant_invoke_route(fns.consumer, *LEDGER_READ)

        # The journey-changes index's shards follow the target rate: loans-api writes to them, the sweeper
        # and the audit walk them (shared/keys.py).
        shards = capacity.changes_index_shards
        configure(fns.loans_api, LoansSettings(loans_table_name=data.loans.table_name, changes_index_shards=shards))
        orchestrator_settings = OrchestratorSettings(  # also the Bedrock executor's: the same code
            journeys_table_name=data.journeys.table_name,
            loans_api_url=loans_api.api.url.rstrip("/"),
            sign_loans_requests=True,
        )
        configure(fns.orchestrator, orchestrator_settings)
        configure(
            fns.consumer,
            ConsumerSettings(
                journeys_table_name=data.journeys.table_name,
                loans_api_url=loans_api.api.url.rstrip("/"),
                sign_loans_requests=True,
            ),
        )
        outbox_settings = RelaySettings(
            loans_table_name=data.loans.table_name,
            events_topic_arn=messaging.topic.topic_arn,
            changes_index_shards=shards,
            sweep_lanes=capacity.sweeper_lanes,
        )
        for outbox_worker in (fns.relay, fns.sweeper):
            configure(outbox_worker, outbox_settings)

        road_2 = EventSources(
            self, "EventSources", loans_table=data.loans, functions=fns, messaging=messaging, capacity=capacity
        )
        audit = JourneyAudit(self, "Audit", function=fns.auditor, loans_table=data.loans, journeys_table=data.journeys,
                             changes_index_shards=shards)  # fmt: skip
        functions = {
            "orchestrator": fns.orchestrator,
            "loans-api": fns.loans_api,
            "relay": fns.relay,
            "sweeper": fns.sweeper,
            "consumer": fns.consumer,
            "auditor": fns.auditor,
        }
        self.observability = Observability(
            self, "Observability", key=messaging.key, alarm_email=alarm_email,
            watched=Watched(functions=functions, apis={"orchestrator": orchestrator_api, "loans": loans_api},
                            queue=messaging.queue, dlq=messaging.dlq, relay_failures=messaging.relay_failures,
                            relay=fns.relay, schedules={names.SWEEPER: road_2.sweep_lanes,
                                                        names.AUDITOR: audit.schedule}),
        )  # fmt: skip

        # The policy an agent's role attaches to call the orchestrator (and nothing else).
        agent_policy = iam.ManagedPolicy(
            self,
            "AgentInvokePolicy",
            statements=[orchestrator_api.invoke_statement()],
            description="Lets an AI agent's role call the loan journey orchestrator",
        )
        outputs = {
            stack_outputs.OUTPUT_ORCHESTRATOR_URL: orchestrator_api.api.url,
            stack_outputs.OUTPUT_LOANS_API_URL: loans_api.api.url,
            stack_outputs.OUTPUT_LOANS_TABLE: data.loans.table_name,
            stack_outputs.OUTPUT_JOURNEYS_TABLE: data.journeys.table_name,
            stack_outputs.OUTPUT_EVENTS_TOPIC: messaging.topic.topic_arn,
            stack_outputs.OUTPUT_EVENTS_QUEUE: messaging.queue.queue_url,
            stack_outputs.OUTPUT_EVENTS_DLQ: messaging.dlq.queue_url,
            stack_outputs.OUTPUT_RELAY_FAILURES: messaging.relay_failures.queue_url,
            stack_outputs.OUTPUT_AGENT_POLICY: agent_policy.managed_policy_arn,
            stack_outputs.OUTPUT_DLQ_REDRIVE_ROLE: messaging.redrive_role.role_arn,
            stack_outputs.OUTPUT_DASHBOARD: self.observability.dashboard.dashboard_name,
            stack_outputs.OUTPUT_ALARM_TOPIC: self.observability.alarm_topic.topic_arn,
        }
        if bedrock_agent:  # Bedrock Agents' action-group executor: the orchestrator behind another entry point
            executor = BedrockExecutor(
                self, "BedrockAgent", orchestrator=fns.orchestrator, code=fns.code, layer=fns.layer,
                environment=orchestrator_settings.to_env(),
                declared=topology.BEDROCK_EXECUTOR, log_retention=retention,
                removal_policy=RemovalPolicy.DESTROY if dev else RemovalPolicy.RETAIN,
            )  # fmt: skip
            outputs[stack_outputs.OUTPUT_EXECUTOR_ARN] = executor.function.function_arn
            outputs[stack_outputs.OUTPUT_AGENT_ROLE] = executor.agent_role.role_arn
        for key, value in outputs.items():
            CfnOutput(self, key, value=value)
        acknowledge(
            self,
            functions=functions,
            loans_api=loans_api.api,
            orchestrator_api=orchestrator_api.api,
            agent_policy=agent_policy,
            relay_failures=messaging.relay_failures,
            account_role=None if account_role is None else account_role.role,
        )


def _role(function: lambda_.Function) -> iam.IRole:
    """The function's execution role (SagaFunctions gives every function one of its own)."""
    assert function.role is not None
    return function.role
