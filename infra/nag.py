"""cdk-nag AwsSolutions acknowledgements: each one says why the rule does not apply here. Nothing is
acknowledged stack-wide without naming the exact finding."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Stack, Token, Validations
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sqs as sqs
from constructs import IConstruct

_REASONS: dict[str, str] = {
    "AwsSolutions::AwsSolutions-IAM5[Resource::*]": (
        "X-Ray's PutTraceSegments/PutTelemetryRecords (added by active tracing) support no resource-level "
        "permissions; '*' is the only valid resource."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::<{loans_table}.Arn>/index/*]": (
        "The table grants cover the loans table's indexes: the sparse pending-outbox GSI, which the sweeper "
        "queries (oldest pending first), and the keys-only journey-changes GSI, which the auditor queries."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Action::kms:GenerateDataKey*]": (
        "Publishing to the KMS-encrypted events topic needs GenerateDataKey* on that one key (grant_publish "
        "scopes it to the topic's key)."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:{partition}:execute-api:{region}:{account}:<{loans_api}>/v1/*/*]": (
        "The orchestrator may call every route of loans-api's one stage, and nothing else: loans-api is a "
        "proxy API, so its routes are not separate resources."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:{partition}:execute-api:{region}:{account}:"
    "<{orchestrator_api}>/v1/*/*]": (
        "The agent policy grants every route of the orchestrator's one stage (the agent-facing API is the "
        "unit of access), and no other API."
    ),
}

# Acknowledged only on the constructs named in `acknowledge`.
_ON_RELAY_FAILURES: dict[str, str] = {
    "AwsSolutions::AwsSolutions-SQS3": (
        "The relay-failures queue is the stream event source's on-failure destination: it is the end of the "
        "line, as a DLQ is, and an alarm fires on its first message."
    ),
}
_ON_APIS: dict[str, str] = {
    "AwsSolutions::AwsSolutions-APIG6": (
        "Access logging is on for every request of both stages. Execution logging needs an account-wide API "
        "Gateway CloudWatch role, which this stack must not impose on the account it is deployed to."
    ),
    "AwsSolutions::AwsSolutions-COG4": (
        "Both APIs use AWS_IAM (SigV4) authorization on every method: callers are AWS principals (the agent's "
        "role via the exported managed policy, the orchestrator's role), not end users with Cognito identities."
    ),
    "AwsSolutions::AwsSolutions-APIG3": (
        "IAM authorization rejects unsigned requests before any integration runs and stage throttling bounds "
        "the rate; accounts that require a WAF web ACL can associate one with the stages."
    ),
}


def _literal_or(value: str, placeholder: str) -> str:
    return placeholder if Token.is_unresolved(value) else value


def rule_ids(
    stack: Stack, loans_table: dynamodb.Table, loans_api: apigw.RestApi, orchestrator_api: apigw.RestApi
) -> dict[str, str]:
    """The findings' exact ids: they name resources by logical id, and by literal partition, region
    and account when the stack's environment is known (as during `cdk deploy`)."""

    def logical_id(construct: object) -> str:
        return stack.get_logical_id(construct.node.default_child)  # type: ignore[attr-defined]

    names = {
        "partition": _literal_or(stack.partition, "<AWS::Partition>"),
        "region": _literal_or(stack.region, "<AWS::Region>"),
        "account": _literal_or(stack.account, "<AWS::AccountId>"),
        "loans_table": logical_id(loans_table),
        "loans_api": logical_id(loans_api),
        "orchestrator_api": logical_id(orchestrator_api),
    }
    return {rule.format(**names): reason for rule, reason in _REASONS.items()}


def _acknowledge(scope: IConstruct, rules: dict[str, str]) -> None:
    Validations.of(scope).acknowledge(*(Acknowledgment(id=rule, reason=reason) for rule, reason in rules.items()))


def acknowledge(
    stack: Stack,
    loans_table: dynamodb.Table,
    loans_api: apigw.RestApi,
    orchestrator_api: apigw.RestApi,
    relay_failures: sqs.Queue,
) -> None:
    _acknowledge(stack, rule_ids(stack, loans_table, loans_api, orchestrator_api))
    _acknowledge(relay_failures, _ON_RELAY_FAILURES)
    for api in (loans_api, orchestrator_api):
        _acknowledge(api, _ON_APIS)


ALL_REASONS = {**_REASONS, **_ON_RELAY_FAILURES, **_ON_APIS}
