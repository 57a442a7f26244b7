"""cdk-nag AwsSolutions acknowledgements: each one is attached to the constructs it is about (a role,
a policy, an API, a queue), names the exact finding, and says why the rule does not apply there.
Nothing is acknowledged stack-wide, so a new finding anywhere else fails synthesis."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Acknowledgment, Stack, Token, Validations
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import IConstruct

_WILDCARD = "AwsSolutions::AwsSolutions-IAM5[Resource::*]"
_XRAY = (
    "X-Ray's PutTraceSegments and PutTelemetryRecords (added by active tracing) support no resource-level "
    "permissions: '*' is the only valid resource."
)
_ON_EVERY_FUNCTION_ROLE = {_WILDCARD: _XRAY}
_ON_RELAY_ROLE = {
    _WILDCARD: _XRAY[:-1] + "; so does dynamodb:ListStreams, which the stream event source's poller calls with "
    "this role (the stream's own reads are scoped to the loans table's stream).",
}
_ON_PUBLISHER_ROLES = {
    "AwsSolutions::AwsSolutions-IAM5[Action::kms:GenerateDataKey*]": (
        "Publishing to the KMS-encrypted events topic needs GenerateDataKey* (a family of two actions) on the "
        "topic's one key: grant_publish scopes it to that key's ARN."
    ),
}
_ON_ORCHESTRATOR_ROLE = {
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:{partition}:execute-api:{region}:{account}:<{loans_api}>/v1/*/*]": (
        "The orchestrator may call every route of loans-api's one stage, and no other API: loans-api is a proxy "
        "API, so its routes are not separate resources."
    ),
}
_ON_CONSUMER_ROLE = {
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:{partition}:execute-api:{region}:{account}:"
    "<{loans_api}>/v1/GET/journeys/*/ledger]": (
        "The consumer may call one route of loans-api, GET /journeys/{journeyId}/ledger (the read that confirms "
        "what road 2 applies, D15), for any journey: the '*' is the journey id in the path, not a wider route."
    ),
}
_ON_AGENT_POLICY = {
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:{partition}:execute-api:{region}:{account}:"
    "<{orchestrator_api}>/v1/*/*]": (
        "The agent policy grants every route of the orchestrator's one stage (the agent-facing API is the unit "
        "of access), and no other API."
    ),
}
_ON_ACCOUNT_ROLE = {
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:{partition}:logs:{region}:{account}:log-group:*]": (
        "This is API Gateway's role for the whole account and region: it writes the logs of every API there, "
        "into groups this stack does not name; it is scoped to the account's and region's log groups."
    ),
}
_ON_RELAY_FAILURES = {
    "AwsSolutions::AwsSolutions-SQS3": (
        "The relay-failures queue is the stream event source's on-failure destination: it is the end of the "
        "line, as a DLQ is, and an alarm fires on its first message."
    ),
}
_ON_APIS = {
    "AwsSolutions::AwsSolutions-COG4": (
        "Both APIs use AWS_IAM (SigV4) authorization on every method: callers are AWS principals (the agent's "
        "role via the exported managed policy, the orchestrator's role), not end users with Cognito identities."
    ),
    "AwsSolutions::AwsSolutions-APIG3": (
        "IAM authorization rejects unsigned requests before any integration runs and stage throttling bounds "
        "the rate; accounts that require a WAF web ACL can associate one with the stages."
    ),
    "AwsSolutions::AwsSolutions-APIG2": (
        "The function validates every body with pydantic and answers RFC 9457 problems (400, 413, 422 with the "
        "failing fields) that an agent can act on; a gateway validator would answer in another format."
    ),
}
ALL_REASONS = {
    **_ON_EVERY_FUNCTION_ROLE,
    **_ON_PUBLISHER_ROLES,
    **_ON_ORCHESTRATOR_ROLE,
    **_ON_CONSUMER_ROLE,
    **_ON_AGENT_POLICY,
    **_ON_ACCOUNT_ROLE,
    **_ON_RELAY_FAILURES,
    **_ON_APIS,
}


def _literal_or(value: str, placeholder: str) -> str:
    return placeholder if Token.is_unresolved(value) else value


def _named(stack: Stack, rules: Mapping[str, str], **constructs: IConstruct) -> dict[str, str]:
    """The findings' exact ids: they name resources by logical id, and by literal partition, region
    and account when the stack's environment is known (as during `cdk deploy`)."""
    names = {
        "partition": _literal_or(stack.partition, "<AWS::Partition>"),
        "region": _literal_or(stack.region, "<AWS::Region>"),
        "account": _literal_or(stack.account, "<AWS::AccountId>"),
        **{key: stack.get_logical_id(c.node.default_child) for key, c in constructs.items()},  # type: ignore[arg-type]
    }
    return {rule.format(**names): reason for rule, reason in rules.items()}


def _acknowledge(scope: IConstruct, rules: Mapping[str, str]) -> None:
    Validations.of(scope).acknowledge(*(Acknowledgment(id=rule, reason=reason) for rule, reason in rules.items()))


def acknowledge(
    stack: Stack,
    *,
    functions: Mapping[str, lambda_.Function],
    loans_api: apigw.RestApi,
    orchestrator_api: apigw.RestApi,
    agent_policy: iam.ManagedPolicy,
    relay_failures: sqs.Queue,
    account_role: iam.Role | None,
) -> None:
    for name, fn in functions.items():
        assert fn.role is not None  # every function has its explicit role (infra/functions.py)
        rules = dict(_ON_RELAY_ROLE if name == "relay" else _ON_EVERY_FUNCTION_ROLE)
        if name in ("relay", "sweeper"):
            rules |= _ON_PUBLISHER_ROLES
        if name == "orchestrator":
            rules |= _named(stack, _ON_ORCHESTRATOR_ROLE, loans_api=loans_api)
        if name == "consumer":
            rules |= _named(stack, _ON_CONSUMER_ROLE, loans_api=loans_api)
        _acknowledge(fn.role, rules)
    _acknowledge(agent_policy, _named(stack, _ON_AGENT_POLICY, orchestrator_api=orchestrator_api))
    if account_role is not None:
        _acknowledge(account_role, _named(stack, _ON_ACCOUNT_ROLE))
    _acknowledge(relay_failures, _ON_RELAY_FAILURES)
    for api in (loans_api, orchestrator_api):
        _acknowledge(api, _ON_APIS)
