"""The custom resource that gives API Gateway its account-wide logging role (infra/account_setting/index.py):
it sets the stack's role only where the account has none, never over one, and leaves the setting on
delete; it answers CloudFormation in every case, failures included (a custom resource that never
answers holds the stack for an hour)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from infra.account_setting import index

OURS = "arn:aws:iam::123456789012:role/LoanSaga-ApiGatewayAccountCloudWatchRole"
THEIRS = "arn:aws:iam::123456789012:role/platform-team-apigateway-logs"


class FakeAccount:
    """API Gateway's account settings: `cloudwatchRoleArn`, and what was asked of them."""

    def __init__(self, role: str | None = None, refusals: int = 0) -> None:
        self.role = role
        self.refusals = refusals  # updates refused while IAM propagates a new role
        self.updates: list[list[dict[str, str]]] = []

    def get_account(self) -> dict[str, Any]:
        return {} if self.role is None else {"cloudwatchRoleArn": self.role}

    def update_account(self, *, patchOperations: list[dict[str, str]]) -> dict[str, Any]:  # noqa: N803
        self.updates.append(patchOperations)
        if self.refusals:
            self.refusals -= 1
            raise RuntimeError(
                "BadRequestException: The role ARN does not have required permissions set to API Gateway"
            )
        self.role = patchOperations[0]["value"]
        return {}


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_an_account_without_a_role_gets_the_stacks(request_type):
    account = FakeAccount()
    assert index.ensure_role(account, request_type, OURS) == {"RoleArn": OURS, "SetByThisStack": "true"}
    assert account.role == OURS
    assert account.updates == [[{"op": "replace", "path": "/cloudwatchRoleArn", "value": OURS}]]


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_a_role_the_account_already_has_is_never_overwritten(request_type):
    account = FakeAccount(role=THEIRS)
    assert index.ensure_role(account, request_type, OURS) == {"RoleArn": THEIRS, "SetByThisStack": "false"}
    assert account.role == THEIRS
    assert account.updates == []


@pytest.mark.parametrize("role", [OURS, THEIRS])
def test_deleting_the_stack_leaves_the_accounts_setting(role):
    account = FakeAccount(role=role)
    index.ensure_role(account, "Delete", OURS)
    assert (account.role, account.updates) == (role, [])


def test_a_role_iam_has_not_propagated_yet_is_set_again_until_it_is_accepted():
    account, slept = FakeAccount(refusals=2), list[float]()
    assert index.ensure_role(account, "Create", OURS, sleep=slept.append)["SetByThisStack"] == "true"
    assert len(account.updates) == 3
    assert slept == [index.ATTEMPT_DELAY_SECONDS] * 2


def test_an_update_refused_for_another_reason_is_not_retried():
    class Refusing(FakeAccount):
        def update_account(self, *, patchOperations: list[dict[str, str]]) -> dict[str, Any]:  # noqa: N803
            raise RuntimeError("AccessDeniedException")

    with pytest.raises(RuntimeError, match="AccessDenied"):
        index.ensure_role(Refusing(), "Create", OURS, sleep=lambda _: None)


@pytest.fixture
def response_url() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A local stand-in for CloudFormation's pre-signed response URL: it keeps what was PUT."""
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/response", received
    server.shutdown()


def event(url: str, request_type: str = "Create") -> dict[str, Any]:
    return {"RequestType": request_type, "ResponseURL": url, "StackId": "stack", "RequestId": "request",
            "LogicalResourceId": "ApiGatewayAccountSetting", "ResourceProperties": {"RoleArn": OURS}}  # fmt: skip


def test_the_handler_answers_cloudformation_with_what_it_did(response_url):
    url, received = response_url
    index.handler(event(url), None, api=FakeAccount())
    [answer] = received
    assert answer["Status"] == "SUCCESS"
    assert answer["Data"] == {"RoleArn": OURS, "SetByThisStack": "true"}
    assert (answer["StackId"], answer["RequestId"], answer["LogicalResourceId"]) == (
        "stack", "request", "ApiGatewayAccountSetting")  # fmt: skip


def test_a_failure_is_answered_as_failed_with_its_reason_not_left_hanging(response_url):
    url, received = response_url

    class Broken(FakeAccount):
        def get_account(self) -> dict[str, Any]:
            raise RuntimeError("AccessDeniedException: not allowed")

    index.handler(event(url), None, api=Broken())
    [answer] = received
    assert answer["Status"] == "FAILED"
    assert "AccessDenied" in answer["Reason"]
