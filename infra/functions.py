"""The six Lambda functions: one code asset, one dependencies layer, Powertools configured by
environment, X-Ray active, JSON logs with a retention, timeouts that fit the retry budget."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from functions.auditor.settings import AUDITOR_TIMEOUT_SECONDS
from functions.loans_api.settings import FUNCTION_TIMEOUT_SECONDS as LOANS_FUNCTION_TIMEOUT_SECONDS
from functions.orchestrator.deadline import FUNCTION_TIMEOUT_SECONDS
from functions.relay.settings import SWEEPER_TIMEOUT_SECONDS
from infra import packaging
from shared import entry_points
from shared import metric_names as names
from shared.tables import CONSUMER_TIMEOUT_SECONDS

# API Gateway gives up after 29 s; the function must not outlive the integration, and each request
# budgets its own steps against this timeout (functions/orchestrator/deadline.py).
ORCHESTRATOR_TIMEOUT = Duration.seconds(FUNCTION_TIMEOUT_SECONDS)
# loans-api answers within the orchestrator's per-attempt read timeout in normal operation; the
# function limit only bounds a stuck invocation.
LOANS_API_TIMEOUT = Duration.seconds(LOANS_FUNCTION_TIMEOUT_SECONDS)
RELAY_TIMEOUT = Duration.seconds(30)
SWEEPER_TIMEOUT = Duration.seconds(SWEEPER_TIMEOUT_SECONDS)
CONSUMER_TIMEOUT = Duration.seconds(CONSUMER_TIMEOUT_SECONDS)
AUDITOR_TIMEOUT = Duration.seconds(AUDITOR_TIMEOUT_SECONDS)
# How often the scheduled functions run (infra/event_sources.py, infra/audit.py schedule them).
SCHEDULED = {names.SWEEPER: Duration.minutes(1), names.AUDITOR: Duration.minutes(5)}
# Memory per function, in MB (Lambda bills GB-seconds at this size; bench/report.py prices them).
MEMORY_MB = {
    names.LOANS_API: 512,
    names.ORCHESTRATOR: 512,
    names.RELAY: 256,
    names.SWEEPER: 256,
    names.CONSUMER: 256,
    names.AUDITOR: 256,
}


class SagaFunctions(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, log_retention: logs.RetentionDays, removal: RemovalPolicy
    ) -> None:
        super().__init__(scope, construct_id)
        # The runtime's Python compiles both assets; it is only looked for (and installed) when bundling.
        interpreter = packaging.bytecode_interpreter(install=True) if Stack.of(self).bundling_required else None
        self._code = packaging.app_code(interpreter)
        self._layer = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=packaging.dependencies_code(interpreter),
            compatible_runtimes=[packaging.RUNTIME],
            compatible_architectures=[packaging.ARCHITECTURE],
            description="Runtime dependencies of the loan saga (requirements/lambda.txt, arm64 wheels, bytecode)",
        )
        self._retention = log_retention
        self._removal = removal
        self.loans_api = self._function("LoansApi", names.LOANS_API, entry_points.LOANS_API, LOANS_API_TIMEOUT)
        self.orchestrator = self._function(
            "Orchestrator",
            names.ORCHESTRATOR,
            entry_points.ORCHESTRATOR,
            ORCHESTRATOR_TIMEOUT,
        )
        self.relay = self._function("Relay", names.RELAY, entry_points.RELAY, RELAY_TIMEOUT)
        # One sweep (and one audit) at a time: not a reserved concurrency of 1 (an account may reserve only
        # while 100 stay unreserved, so it fails the deploy under a quota of 101), but a lease each run
        # takes in the table it owns (shared/lease.py). Scheduled runs are never retried: the next one
        # comes within the schedule's period.
        self.sweeper = self._function(
            "Sweeper", names.SWEEPER, entry_points.SWEEPER, SWEEPER_TIMEOUT, scheduled_every=SCHEDULED[names.SWEEPER]
        )
        self.consumer = self._function("Consumer", names.CONSUMER, entry_points.CONSUMER, CONSUMER_TIMEOUT)
        self.auditor = self._function(
            "Auditor", names.AUDITOR, entry_points.AUDITOR, AUDITOR_TIMEOUT, scheduled_every=SCHEDULED[names.AUDITOR]
        )

    def _function(
        self, construct_id: str, service: str, handler: str, timeout: Duration, scheduled_every: Duration | None = None
    ) -> lambda_.Function:
        log_group = logs.LogGroup(self, f"{construct_id}Logs", retention=self._retention, removal_policy=self._removal)
        # An explicit role: it may write to its own log group and nothing else until granted more.
        role = iam.Role(
            self,
            f"{construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"loan saga {service} function",
        )
        log_group.grant_write(role)
        return lambda_.Function(
            self,
            construct_id,
            runtime=packaging.RUNTIME,
            architecture=packaging.ARCHITECTURE,
            code=self._code,
            handler=handler,
            layers=[self._layer],
            timeout=timeout,
            memory_size=MEMORY_MB[service],
            # A schedule invokes asynchronously: by default Lambda retries a failed run twice, up to 6 h later.
            retry_attempts=None if scheduled_every is None else 0,
            max_event_age=scheduled_every,
            tracing=lambda_.Tracing.ACTIVE,
            logging_format=lambda_.LoggingFormat.JSON,
            log_group=log_group,
            role=role,
            environment={
                "POWERTOOLS_SERVICE_NAME": service,
                "POWERTOOLS_METRICS_NAMESPACE": names.NAMESPACE,
                "POWERTOOLS_LOG_LEVEL": "INFO",
            },
            description=f"loan saga: {service}",
        )

    @property
    def code(self) -> lambda_.Code:
        """The one code asset every function runs (infra/bedrock.py runs it too)."""
        return self._code

    @property
    def layer(self) -> lambda_.ILayerVersion:
        """The one dependencies layer."""
        return self._layer
