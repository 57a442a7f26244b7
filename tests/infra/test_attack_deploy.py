"""Adversary's tests of the deploy, read against AWS's documented rules: each names a defect found by
attack and fails until it is fixed."""

from __future__ import annotations

from typing import Any

from infra.account_setting import index
from shared.capacity import DEFAULT_CAPACITY, derive
from tests.infra.template import of_type
from tests.infra.test_account_setting import FakeAccount

ROLLED_BACK = "arn:aws:iam::123456789012:role/LoanSaga-ApiGatewayAccountCloudWatchRole-FIRST"
RETRY = "arn:aws:iam::123456789012:role/LoanSaga-ApiGatewayAccountCloudWatchRole-RETRY"
# The target rate docs/DEPLOY.md's preflight gives an account whose concurrency quota is 10.
SMALL_ACCOUNT_TARGET = 5


def _survives_create_rollback(deletion_policy: str | None) -> bool:
    """Whether CloudFormation keeps a resource when the stack operation that created it rolls back:
    RetainExceptOnCreate deletes it then ("If the stack operation that created the resource is rolled
    back, CloudFormation deletes the resource", https://docs.aws.amazon.com/AWSCloudFormation/latest/
    TemplateReference/aws-attribute-deletionpolicy.html); only Retain keeps it."""
    return deletion_policy == "Retain"


def test_a_rolled_back_first_deploy_never_leaves_the_account_logging_through_a_deleted_role(resources):
    # Given the stack's API Gateway logging role and the custom resource that sets it on the account
    [(_, role)] = [
        (k, v)
        for k, v in of_type(resources, "AWS::IAM::Role").items()
        if k.startswith("ApiGatewayAccountCloudWatchRole")
    ]
    account = FakeAccount()
    existing: set[str] = set()
    # When a first deploy into a fresh account creates the role, sets it on the account (Create), and
    # then fails on a later resource: CloudFormation rolls back, deleting what it created by each one's
    # DeletionPolicy and sending the custom resource a Delete
    existing.add(ROLLED_BACK)
    index.ensure_role(account, "Create", ROLLED_BACK)
    index.ensure_role(account, "Delete", ROLLED_BACK)
    if not _survives_create_rollback(role.get("DeletionPolicy")):
        existing.discard(ROLLED_BACK)
    # And the user deploys again (a new role: CloudFormation names it anew)
    existing.add(RETRY)
    data: dict[str, Any] = index.ensure_role(account, "Create", RETRY)
    # Then the account's setting names a role that exists; today it names the deleted one, and the retry
    # keeps it as "a role the account already has": every API in the region silently stops logging
    # (the failure aws/aws-cdk#12769 and #10878 describe)
    assert account.role in existing, (account.role, data, role.get("DeletionPolicy"))


def test_in_an_account_of_10_the_consumers_confirmations_leave_loans_api_and_the_agents_room(resources):
    """https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html: every function of the account
    shares its concurrency quota (10 in a new account, tests/infra/test_deploy_rules.py); a synchronous
    invocation past it is throttled. Since D15 every consumer execution that confirms an event holds its
    own slot while it calls loans-api, which needs a second one. So at the consumer's maximum concurrency
    (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html) a backlog, e.g. a `saga dlq
    redrive` after a loans-api outage, asks for twice the consumer's maximum, next to one agent request
    (orchestrator and loans-api), the relay's pollers (its parallelization factor on a new table's one
    stream shard), one sweep and one audit. The default stack is sized for 20 journeys/s, more than an
    account of 10 carries; docs/DEPLOY.md's preflight says to deploy such an account with
    `-c targetJourneysPerSecond=5`, whose stack must fit."""

    def needed(consumers: int, relay_factor: int) -> int:
        return 2 * consumers + 2 + relay_factor + 1 + 1

    small = derive(SMALL_ACCOUNT_TARGET)
    assert needed(small.consumer_max_concurrency, small.relay_parallelization_factor) <= 10, small
    # And the default stack's mapping asks for what its rate needs, no more (4 consumers at 20 journeys/s)
    [consumer] = [
        m["Properties"]
        for m in of_type(resources, "AWS::Lambda::EventSourceMapping").values()
        if "ScalingConfig" in m["Properties"]
    ]
    assert consumer["ScalingConfig"]["MaximumConcurrency"] == DEFAULT_CAPACITY.consumer_max_concurrency < 10
