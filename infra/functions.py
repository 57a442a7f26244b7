"""The six Lambda functions as shared/topology.py declares them: one code asset, one dependencies
layer, Powertools configured by environment, X-Ray active, JSON logs with a retention."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import packaging
from shared import metric_names as names
from shared import topology
from shared.settings import BaseSettings
from shared.topology import Function


class SagaFunctions(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, log_retention: logs.RetentionDays, removal: RemovalPolicy
    ) -> None:
        super().__init__(scope, construct_id)
        # The runtime's Python compiles both assets, here or in Docker, or the synthesis refuses (unless
        # sources are opted in): only looked for (and installed) when bundling (infra/packaging.py).
        interpreter: str | None = None
        bytecode: packaging.Bytecode = "local"
        if Stack.of(self).bundling_required:
            interpreter = packaging.bytecode_interpreter(install=True)
            sources_allowed = str(self.node.try_get_context(packaging.SOURCE_ONLY_FLAG)).lower() == "true"
            bytecode = packaging.choose_bytecode(
                interpreter, interpreter is None and packaging.docker_available(), sources_allowed
            )
        self._code = packaging.app_code(interpreter, bytecode)
        self._layer = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=packaging.dependencies_code(interpreter, bytecode),
            compatible_runtimes=[packaging.RUNTIME],
            compatible_architectures=[packaging.ARCHITECTURE],
            description="Runtime dependencies of the loan saga (requirements/lambda.txt, arm64 wheels, bytecode)",
        )
        self._retention = log_retention
        self._removal = removal
        # One sweep (and one audit) at a time: not a reserved concurrency of 1 (an account may reserve only
        # while 100 stay unreserved, so it fails the deploy under a quota of 101), but a lease each run
        # takes in the table it owns (shared/lease.py). Scheduled runs are never retried: the next one
        # comes within the schedule's period.
        self.loans_api = self._function(topology.LOANS_API)
        self.orchestrator = self._function(topology.ORCHESTRATOR)
        self.relay = self._function(topology.RELAY)
        self.sweeper = self._function(topology.SWEEPER)
        self.consumer = self._function(topology.CONSUMER)
        self.auditor = self._function(topology.AUDITOR)

    def _function(self, declared: Function) -> lambda_.Function:
        construct_id, service = declared.construct_id, declared.service
        scheduled_every = None if declared.schedule_minutes is None else schedule(declared)
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
            handler=declared.entry_point,
            layers=[self._layer],
            timeout=Duration.seconds(declared.timeout_seconds),
            memory_size=declared.memory_mb,
            # A schedule invokes asynchronously: by default Lambda retries a failed run twice, up to 6 h later.
            retry_attempts=None if scheduled_every is None else 0,
            max_event_age=scheduled_every,
            tracing=lambda_.Tracing.ACTIVE,
            logging_format=lambda_.LoggingFormat.JSON,
            log_group=log_group,
            role=role,
            environment=topology.powertools_environment(service, names.stack_namespace(Stack.of(self).stack_name)),
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


def schedule(declared: Function) -> Duration:
    """How often a scheduled function runs (infra/event_sources.py and infra/audit.py schedule it)."""
    assert declared.schedule_minutes is not None, f"{declared.service} runs on no schedule"
    return Duration.minutes(declared.schedule_minutes)


def configure(function: lambda_.Function, settings: BaseSettings) -> None:
    """Give `function` its settings, as the environment variables its entry point reads them from (the
    local runtime gives its containers the same, saga/local/runtime.py)."""
    for name, value in settings.to_env().items():
        function.add_environment(name, value)
