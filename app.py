#!/usr/bin/env python3
"""CDK entry for `cdk deploy` / `cdk synth`.

Context flags: `-c dev=true` for a stack that can be torn down (tables and logs are destroyed with it);
`-c skipBundling=true` to synthesize without packaging (offline; what `make synth` and the tests do);
`-c stackName=NAME` to deploy more than one copy; `-c apiGatewayAccountRole=false` to leave API Gateway's
account-wide CloudWatch role alone (by default the stack sets it where none is set, never over one; see docs/DEPLOY.md);
`-c alarmEmail=ADDRESS` to subscribe an address to the alarms; `-c targetJourneysPerSecond=N` to size the
agent API's throttle, the consumer's concurrency and the relay's
parallelization factor for N journeys per second (shared/capacity.py, docs/SCALE.md; default 20);
`-c bedrockAgent=true` to add Amazon Bedrock Agents' action-group executor (infra/bedrock.py; docs/DEPLOY.md);
`-c journeyChangesIndex=false` only for the first of the two deploys that upgrade a stack deployed before the
journey-changes index was sharded or the customer index sorted by creation time: both tables without those
indexes (docs/DEPLOY.md, "Upgrade")."""

from __future__ import annotations

import os

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from infra.stack import LoanSagaStack
from shared.capacity import DEFAULT_TARGET_JOURNEYS_PER_SECOND, derive


def _flag(app: cdk.App, name: str, default: bool = False) -> bool:
    value = app.node.try_get_context(name)
    return default if value is None else str(value).lower() == "true"


def build_app(app: cdk.App | None = None) -> tuple[cdk.App, LoanSagaStack]:
    app = app or cdk.App()
    if _flag(app, "skipBundling"):
        # Synthesize without packaging code or dependencies: offline and fast (tests, `make synth`).
        app.node.set_context("aws:cdk:bundling-stacks", [])
    dev = _flag(app, "dev")
    target = float(app.node.try_get_context("targetJourneysPerSecond") or DEFAULT_TARGET_JOURNEYS_PER_SECOND)
    stack = LoanSagaStack(
        app,
        str(app.node.try_get_context("stackName") or "LoanSaga"),
        dev=dev,
        api_gateway_account_role=_flag(app, "apiGatewayAccountRole", default=True),
        alarm_email=app.node.try_get_context("alarmEmail") or None,
        capacity=derive(target),
        bedrock_agent=_flag(app, "bedrockAgent"),
        changes_index=_flag(app, "journeyChangesIndex", default=True),
        env=cdk.Environment(account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=os.environ.get("CDK_DEFAULT_REGION")),
        description="Orchestrated loan-journey saga: agent-safe retries, atomic receipts, transactional outbox",
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack


if __name__ == "__main__":
    build_app()[0].synth()
