"""Two REST APIs with IAM authorization on every method: the orchestrator for the agent, loans-api
internal (a resource policy lets only the orchestrator's role invoke it, and the consumer's role its one
ledger read). Access and error logs, throttling, tracing; and the account-wide role API Gateway needs to
write any log, set where unset."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from functions.orchestrator.settings import OrchestratorSettings
from shared.capacity import Capacity

STAGE = "v1"
# Every path of the API's one stage, in the resource-policy shorthand (the API's own ARN would make
# the policy refer to the API it belongs to).
_EVERY_ROUTE = "execute-api:/*"


@dataclass(frozen=True)
class RouteInvoker:
    """A role admitted to one route of an API only: `method` on `path` (`*` matches one path segment's id)."""

    role: iam.IRole
    method: str
    path: str

    def resource(self) -> str:
        """The route in the resource-policy shorthand, on every stage."""
        return f"execute-api:/*/{self.method}{self.path}"


@dataclass(frozen=True)
class Throttle:
    rate: int
    burst: int


# Each orchestrator command may call loans-api once per attempt of its retry schedule: loans-api's
# gateway must never be the one that says 429 first.
_ATTEMPTS = int(OrchestratorSettings.model_fields["retry_attempts"].default)


def throttles(capacity: Capacity) -> tuple[Throttle, Throttle]:
    """The agent API's throttle for the target rate (shared/capacity.py), and loans-api's above it."""
    orchestrator = Throttle(rate=capacity.orchestrator_rate, burst=capacity.orchestrator_burst)
    return orchestrator, Throttle(rate=orchestrator.rate * _ATTEMPTS, burst=orchestrator.burst * _ATTEMPTS)


class ProxyApi(Construct):
    """A REST API proxying every path and method to one function, IAM-authorized.

    `only_invoker`: when given, a resource policy denies every other principal, so an identity policy
    elsewhere in the account that allows `execute-api:Invoke` on `*` does not open it; each of
    `route_invokers` is admitted to its one route and denied every other."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str,
        function: lambda_.IFunction,
        description: str,
        log_retention: logs.RetentionDays,
        log_removal: RemovalPolicy,
        throttle: Throttle,
        only_invoker: iam.IRole | None = None,
        route_invokers: tuple[RouteInvoker, ...] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        access_logs = logs.LogGroup(self, "AccessLogs", retention=log_retention, removal_policy=log_removal)
        self.api = apigw.RestApi(
            self,
            "Api",
            rest_api_name=f"{Stack.of(self).stack_name}-{name}",
            description=description,
            cloud_watch_role=False,
            endpoint_types=[apigw.EndpointType.REGIONAL],
            policy=None if only_invoker is None else _only(only_invoker, route_invokers),
            deploy_options=apigw.StageOptions(
                stage_name=STAGE,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True, http_method=True, ip=True, protocol=True, request_time=True,
                    resource_path=True, response_length=True, status=True, user=True,
                ),
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                throttling_rate_limit=throttle.rate,
                throttling_burst_limit=throttle.burst,
                tracing_enabled=True,
                metrics_enabled=True,
            ),
        )  # fmt: skip
        # API Gateway writes error (execution) logs to a group of this exact name, creating it without a
        # retention if it does not exist yet: created here first, it expires like the others.
        execution_logs = logs.LogGroup(
            self,
            "ExecutionLogs",
            log_group_name=f"API-Gateway-Execution-Logs_{self.api.rest_api_id}/{STAGE}",
            retention=log_retention,
            removal_policy=log_removal,
        )
        self.api.deployment_stage.node.add_dependency(execution_logs)
        # No gateway request validator: the function validates every body (pydantic) and answers the
        # RFC 9457 problems an agent can act on; a gateway validator would answer in its own format.
        integration = apigw.LambdaIntegration(function, proxy=True)
        for resource in (self.api.root, self.api.root.add_proxy(any_method=False)):
            resource.add_method("ANY", integration, authorization_type=apigw.AuthorizationType.IAM)

    def grant_invoke(self, grantee: iam.IGrantable) -> None:
        grantee.grant_principal.add_to_principal_policy(self.invoke_statement())

    def grant_invoke_route(self, grantee: iam.IGrantable, method: str, path: str) -> None:
        """`grantee` may call `method` on `path` of this API's stage, and nothing else of it."""
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["execute-api:Invoke"],
                resources=[self.api.arn_for_execute_api(method=method, path=path, stage=STAGE)],
            )
        )

    def invoke_statement(self) -> iam.PolicyStatement:
        return iam.PolicyStatement(
            actions=["execute-api:Invoke"],
            resources=[self.api.arn_for_execute_api(method="*", path="/*", stage=STAGE)],
        )


def _only(role: iam.IRole, route_invokers: tuple[RouteInvoker, ...]) -> iam.PolicyDocument:
    admitted = [role.role_arn, *(invoker.role.role_arn for invoker in route_invokers)]
    statements = [
        iam.PolicyStatement(
            principals=[iam.ArnPrincipal(role.role_arn)], actions=["execute-api:Invoke"], resources=[_EVERY_ROUTE]
        ),
        *(
            iam.PolicyStatement(
                principals=[iam.ArnPrincipal(invoker.role.role_arn)],
                actions=["execute-api:Invoke"],
                resources=[invoker.resource()],
            )
            for invoker in route_invokers
        ),
        iam.PolicyStatement(
            effect=iam.Effect.DENY,
            principals=[iam.AnyPrincipal()],
            actions=["execute-api:Invoke"],
            resources=[_EVERY_ROUTE],
            conditions={"StringNotEquals": {"aws:PrincipalArn": admitted[0] if len(admitted) == 1 else admitted}},
        ),
        # A role admitted to one route is refused every other, whatever its identity policy says.
        *(
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                principals=[iam.ArnPrincipal(invoker.role.role_arn)],
                actions=["execute-api:Invoke"],
                not_resources=[invoker.resource()],
            )
            for invoker in route_invokers
        ),
    ]
    return iam.PolicyDocument(statements=statements)


class ApiGatewayAccountRole(Construct):
    """The role API Gateway uses to write CloudWatch logs, for the whole account and region, set only
    where none is set yet.

    It is an account setting, not this stack's: every API in the region uses it. A custom resource
    (infra/account_setting/index.py) reads the account's setting and sets this role only when it is
    empty, so a role the account already has is never overwritten; on delete it leaves the setting (and
    the role, which the setting may point at) in place. Without it the stages' logging fails with
    "CloudWatch Logs role ARN must be set in account settings". `-c apiGatewayAccountRole=false` leaves
    it out (for accounts whose setting is managed elsewhere)."""

    def __init__(self, scope: Construct, construct_id: str, *, log_removal: RemovalPolicy) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.role = iam.Role(
            self,
            "CloudWatchRole",
            assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com"),
            description="API Gateway's account-wide role for CloudWatch logs (kept when the loan saga is deleted)",
            inline_policies={
                "WriteApiLogs": iam.PolicyDocument(
                    statements=[
                        iam.PolicyStatement(
                            # The actions of the AWS managed policy AmazonAPIGatewayPushToCloudWatchLogs.
                            actions=[
                                "logs:CreateLogGroup",
                                "logs:CreateLogStream",
                                "logs:DescribeLogGroups",
                                "logs:DescribeLogStreams",
                                "logs:PutLogEvents",
                                "logs:GetLogEvents",
                                "logs:FilterLogEvents",
                            ],
                            resources=[f"arn:{stack.partition}:logs:{stack.region}:{stack.account}:log-group:*"],
                        )
                    ]
                )
            },
        )
        # Always kept, even when the deploy that created it rolls back: the account's setting may name it
        # by then (the custom resource set it), and the setting is never cleared (it is the account's, and
        # a retry keeps a role already set), so a deleted role would leave every API of the account and
        # region logging nowhere. An orphan role, unused or used, costs nothing.
        self.role.apply_removal_policy(RemovalPolicy.RETAIN)
        account = f"arn:{stack.partition}:apigateway:{stack.region}::/account"
        setter_role = iam.Role(
            self,
            "SetterRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Sets API Gateway's account CloudWatch role where none is set",
        )
        setter_role.add_to_policy(iam.PolicyStatement(actions=["apigateway:GET", "apigateway:PATCH"],
                                                      resources=[account]))  # fmt: skip
        setter_role.add_to_policy(iam.PolicyStatement(actions=["iam:PassRole"], resources=[self.role.role_arn]))
        setter_logs = logs.LogGroup(
            self, "SetterLogs", retention=logs.RetentionDays.ONE_WEEK, removal_policy=log_removal
        )
        setter_logs.grant_write(setter_role)
        self.setter = lambda_.Function(
            self,
            "Setter",
            runtime=lambda_.Runtime.PYTHON_3_14,
            architecture=lambda_.Architecture.ARM_64,
            code=lambda_.Code.from_asset(
                str(Path(__file__).parent / "account_setting"), exclude=["__pycache__", "*.pyc"]
            ),
            handler="index.handler",
            timeout=Duration.minutes(2),
            role=setter_role,
            log_group=setter_logs,
            description="loan saga: sets API Gateway's account CloudWatch role where none is set",
        )
        self.setting = CustomResource(
            self,
            "Setting",
            service_token=self.setter.function_arn,
            resource_type="Custom::ApiGatewayAccountCloudWatchRole",
            properties={"RoleArn": self.role.role_arn},
        )

    def must_precede(self, *apis: ProxyApi) -> None:
        """The stages' logging settings are refused until the account has a role."""
        for api in apis:
            api.api.deployment_stage.node.add_dependency(self.setting)
