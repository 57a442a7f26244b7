"""Two REST APIs with IAM authorization on every method: the orchestrator for the agent, loans-api
internal (only the orchestrator's role may invoke it). Access logs, request validation, throttling."""

from __future__ import annotations

from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

STAGE = "v1"
THROTTLE_RATE = 100
THROTTLE_BURST = 200


class ProxyApi(Construct):
    """A REST API proxying every path and method to one function, IAM-authorized."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.IFunction,
        description: str,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        access_logs = logs.LogGroup(self, "AccessLogs", retention=log_retention)
        self.api = apigw.RestApi(
            self,
            "Api",
            description=description,
            cloud_watch_role=False,
            endpoint_types=[apigw.EndpointType.REGIONAL],
            deploy_options=apigw.StageOptions(
                stage_name=STAGE,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True, http_method=True, ip=True, protocol=True, request_time=True,
                    resource_path=True, response_length=True, status=True, user=True,
                ),
                throttling_rate_limit=THROTTLE_RATE,
                throttling_burst_limit=THROTTLE_BURST,
                tracing_enabled=True,
                metrics_enabled=True,
            ),
        )  # fmt: skip
        # Bodies are validated by the function (pydantic, problem+json); the gateway's validator
        # checks the request's shape before a Lambda is even invoked.
        validator = self.api.add_request_validator(
            "Validator", validate_request_body=True, validate_request_parameters=True
        )
        integration = apigw.LambdaIntegration(function, proxy=True)
        for resource in (self.api.root, self.api.root.add_proxy(any_method=False)):
            resource.add_method(
                "ANY", integration, authorization_type=apigw.AuthorizationType.IAM, request_validator=validator
            )

    def grant_invoke(self, grantee: iam.IGrantable) -> None:
        grantee.grant_principal.add_to_principal_policy(self.invoke_statement())

    def invoke_statement(self) -> iam.PolicyStatement:
        return iam.PolicyStatement(
            actions=["execute-api:Invoke"],
            resources=[self.api.arn_for_execute_api(method="*", path="/*", stage=STAGE)],
        )
