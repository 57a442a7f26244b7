"""Amazon Bedrock Agents' action-group executor (`-c bedrockAgent=true`; off by default): a Lambda function
running the orchestrator's code (functions/orchestrator/handler.py `bedrock_handler`) that Bedrock may
invoke, and the service role an agent runs with.

The executor IS the orchestrator behind another entry point: the same code makes the same calls, so it
runs with the orchestrator's role (its table permissions, the invoke of loans-api, whose resource policy
admits that role alone) and nothing more; the role may also write the executor's own log group. Only
Bedrock, for an agent of this account, may invoke it (the resource policy's SourceAccount and SourceArn,
https://docs.aws.amazon.com/bedrock/latest/userguide/agents-permissions.html)."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Stack, Token, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import packaging
from shared import metric_names as names
from shared import topology
from shared.topology import Function

# The model is chosen when the agent is created (docs/DEPLOY.md, "A Bedrock agent"), not here.
_MODELS = (
    "The agent's service role may invoke foundation models and this account's inference profiles: the model is "
    "chosen when the agent is created (aws bedrock-agent create-agent --foundation-model), after deployment, "
    "and a cross-region inference profile routes to the model in other regions."
)
_INVOKE = "InvokeModel and InvokeModelWithResponseStream, the two ways an agent calls its model (AWS's prerequisites)."


class BedrockExecutor(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        orchestrator: lambda_.Function,
        code: lambda_.Code,
        layer: lambda_.ILayerVersion,
        environment: Mapping[str, str],
        declared: Function,
        log_retention: logs.RetentionDays,
        removal_policy: RemovalPolicy,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        assert orchestrator.role is not None  # every function has its explicit role (infra/functions.py)
        log_group = logs.LogGroup(self, "Logs", retention=log_retention, removal_policy=removal_policy)
        log_group.grant_write(orchestrator.role)
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=packaging.RUNTIME,
            architecture=packaging.ARCHITECTURE,
            code=code,
            handler=declared.entry_point,
            layers=[layer],
            timeout=Duration.seconds(declared.timeout_seconds),
            memory_size=declared.memory_mb,
            tracing=lambda_.Tracing.ACTIVE,
            logging_format=lambda_.LoggingFormat.JSON,
            log_group=log_group,
            role=orchestrator.role,
            environment={
                **topology.powertools_environment(declared.service, names.stack_namespace(stack.stack_name)),
                **environment,
            },
            description="loan saga: Amazon Bedrock Agents action-group executor (the orchestrator's operations)",
        )
        agents = stack.format_arn(service="bedrock", resource="agent", resource_name="*")
        self.function.add_permission(
            "BedrockAgentsInvoke",
            principal=iam.ServicePrincipal("bedrock.amazonaws.com"),
            action="lambda:InvokeFunction",
            source_account=stack.account,
            source_arn=agents,
        )
        # The role an agent runs with (create-agent --agent-resource-role-arn): it invokes the model.
        self.agent_role = iam.Role(
            self,
            "AgentRole",
            assumed_by=iam.ServicePrincipal(
                "bedrock.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {"aws:SourceArn": agents},
                },
            ),
            description="loan saga: the service role of a Bedrock agent driving loan journeys",
        )
        # As AWS's inference-profile prerequisites list them (https://docs.aws.amazon.com/bedrock/latest/
        # userguide/inference-profiles-prereq.html), for use, not management: invoke a foundation model, a
        # system (cross-region) or an application profile of this account, and read a profile.
        models = f"arn:{stack.partition}:bedrock:*::foundation-model/*"
        profiles = [
            stack.format_arn(service="bedrock", region="*", resource=kind, resource_name="*")
            for kind in ("inference-profile", "application-inference-profile")
        ]
        self.agent_role.add_to_policy(
            iam.PolicyStatement(actions=["bedrock:InvokeModel*"], resources=[models, *profiles])
        )
        self.agent_role.add_to_policy(iam.PolicyStatement(actions=["bedrock:GetInferenceProfile"], resources=profiles))
        partition = _literal_or(stack.partition, "<AWS::Partition>")
        account = _literal_or(stack.account, "<AWS::AccountId>")
        finding = "AwsSolutions::AwsSolutions-IAM5[Resource::arn:{}]"
        Validations.of(self.agent_role).acknowledge(
            Acknowledgment(id=finding.format(f"{partition}:bedrock:*::foundation-model/*"), reason=_MODELS),
            *(Acknowledgment(id=finding.format(f"{partition}:bedrock:*:{account}:{kind}/*"), reason=_MODELS)
              for kind in ("inference-profile", "application-inference-profile")),
            Acknowledgment(id="AwsSolutions::AwsSolutions-IAM5[Action::bedrock:InvokeModel*]", reason=_INVOKE),
        )  # fmt: skip


def _literal_or(value: str, placeholder: str) -> str:
    """How cdk-nag names a value in a finding: literally when known (a stack with an environment)."""
    return placeholder if Token.is_unresolved(value) else value
