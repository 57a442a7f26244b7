"""The custom resource that gives API Gateway its account-wide CloudWatch role only where none is set
(infra/apis.py, ApiGatewayAccountRole). It runs in Lambda on its own (boto3 is the runtime's), so it
imports nothing from this repository.

- Create / Update: if the account (in this region) has no `cloudwatchRoleArn`, set it to the stack's
  role; if it has one, leave it: it may be another stack's or an administrator's.
- Delete: leave the setting as it is: every API of the account and region logs through it.

IAM is eventually consistent: API Gateway may refuse a role created seconds ago ("The role ARN does
not have required permissions"), so setting it is retried for up to a minute."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from typing import Any, Protocol

ATTEMPTS = 12
ATTEMPT_DELAY_SECONDS = 5.0


class AccountApi(Protocol):
    def get_account(self) -> dict[str, Any]: ...

    def update_account(self, *, patchOperations: list[dict[str, str]]) -> dict[str, Any]: ...  # noqa: N803


def ensure_role(
    api: AccountApi, request_type: str, role_arn: str, sleep: Callable[[float], None] = time.sleep
) -> dict[str, str]:
    """What the account's role is after the request: set to `role_arn` only on Create/Update where unset."""
    if request_type == "Delete":
        return {"RoleArn": "", "SetByThisStack": "false"}
    current = str(api.get_account().get("cloudwatchRoleArn") or "")
    if current:
        return {"RoleArn": current, "SetByThisStack": "false"}
    for attempt in range(ATTEMPTS):
        try:
            api.update_account(patchOperations=[{"op": "replace", "path": "/cloudwatchRoleArn", "value": role_arn}])
            return {"RoleArn": role_arn, "SetByThisStack": "true"}
        except Exception as error:  # BadRequestException while IAM propagates the new role
            if attempt == ATTEMPTS - 1 or "permissions" not in str(error):
                raise
            sleep(ATTEMPT_DELAY_SECONDS)
    raise AssertionError("unreachable")


def respond(event: dict[str, Any], status: str, data: dict[str, str], reason: str) -> None:
    """CloudFormation's custom resource response: a PUT of JSON to the pre-signed ResponseURL."""
    body = json.dumps({
        "Status": status,
        "Reason": reason[:500] or status,
        "PhysicalResourceId": event.get("PhysicalResourceId") or "apigateway-account-cloudwatch-role",
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
        "Data": data,
    }).encode()  # fmt: skip
    request = urllib.request.Request(event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": ""})  # noqa: S310
    with urllib.request.urlopen(request, timeout=10):  # noqa: S310 - CloudFormation's pre-signed https URL
        pass


def handler(event: dict[str, Any], context: Any, api: AccountApi | None = None) -> None:
    try:
        if api is None:
            import boto3  # the runtime's

            api = boto3.client("apigateway")
        data = ensure_role(api, event["RequestType"], event["ResourceProperties"]["RoleArn"])
        respond(event, "SUCCESS", data, "")
    except Exception as error:
        print(f"setting API Gateway's account role failed: {error!r}")  # the function's log
        respond(event, "FAILED", {}, f"{type(error).__name__}: {error}")
