"""What an agent sees when AWS fails under `saga local`: faults set through the local endpoint's control
API (saga/local/aws_faults.py), everything else over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3

from saga.links import link_body
from saga.local.aws_faults import CONTROL_PATH, FaultRule
from saga.ops.journeys import compare
from shared.tables import JOURNEYS_TABLE, LOANS_TABLE


@pytest.fixture
def aws_faults(system: Any) -> Iterator[Any]:
    url = system.aws_url + CONTROL_PATH

    def add(**rule: Any) -> Any:
        response = urllib3.request("POST", url, body=json.dumps(rule))
        assert response.status == 200, response.data
        return json.loads(response.data)

    urllib3.request("DELETE", url)
    yield add
    urllib3.request("DELETE", url)


def injected(system: Any) -> dict[str, int]:
    return dict(json.loads(urllib3.request("GET", system.aws_url + CONTROL_PATH).data)["injected"])


def test_a_throttled_journeys_table_is_a_retryable_503_and_the_agents_retry_converges(system, clean_proxy, aws_faults):
    # Given DynamoDB throttles every call on the orchestrator's table (beyond botocore's 2 attempts)
    before = injected(system)
    aws_faults(service="dynamodb", operation="*", kind="ThrottlingException", match=f'"{JOURNEYS_TABLE.local_name}"')
    # When an agent creates a journey, Then it sees a problem it may retry, never a bare failure
    status, problem = system.api("POST", "/journeys", {"customerId": "throttled"}, Idempotency_Key="thr-1")
    assert status >= 500, problem
    assert problem["retryable"] is True
    # (the create's write: one conditional PutItem of the Control Record)
    assert injected(system).get("dynamodb:PutItem:ThrottlingException", 0) > before.get(
        "dynamodb:PutItem:ThrottlingException", 0
    ), injected(system)
    # And once the throttling ends, the same call succeeds, once
    urllib3.request("DELETE", system.aws_url + CONTROL_PATH)
    status, record = system.api("POST", "/journeys", {"customerId": "throttled"}, Idempotency_Key="thr-1")
    assert status == 201, record
    again = system.api("POST", "/journeys", {"customerId": "throttled"}, Idempotency_Key="thr-1")[1]
    assert again["journeyId"] == record["journeyId"]


def test_loans_api_conflicts_and_lost_dynamodb_replies_are_invisible_to_the_agent(system, clean_proxy, aws_faults):
    # Given loans-api's transactions: every other one cancelled by a conflict, and lost replies after commit
    status, record = system.api("POST", "/journeys", {"customerId": "conflicted"}, Idempotency_Key="conflicted-1")
    assert status == 201, record
    jid = record["journeyId"]
    before = injected(system)
    match = f'"{LOANS_TABLE.local_name}"'
    aws_faults(service="dynamodb", operation="TransactWriteItems", kind="TransactionConflict", match=match, limit=2)
    aws_faults(service="dynamodb", operation="TransactWriteItems", kind="ReplyLost", match=match, limit=2)
    # When the agent simulates, accepts and disburses, Then each answers 200 and loans-api made each change once
    for command in ("simulate", "accept", "disburse"):
        body = {"amount": 9000, "termMonths": 24} if command == "simulate" else link_body(record, command)
        status, record = system.api("POST", f"/journeys/{jid}/{command}", body)
        assert status == 200, record
    after = injected(system)
    for kind in ("TransactionConflict", "ReplyLost"):
        name = f"dynamodb:TransactWriteItems:{kind}"
        assert after.get(name, 0) - before.get(name, 0) == 2
    truth = system.truth(jid)
    assert [e["type"] for e in truth["events"]] == ["SimulationCreated", "AcceptanceCreated", "LoanDisbursed"]
    assert compare(record, truth)["agree"]


def test_a_fault_rule_is_refused_when_its_kind_does_not_exist() -> None:
    with pytest.raises(ValueError, match="unknown AWS fault kind"):
        FaultRule.parse("dynamodb:GetItem:Nope@0.1")
    with pytest.raises(ValueError, match="not a fault of"):
        FaultRule.parse("sqs:ReceiveMessage:TransactionConflict")
    rule = FaultRule.parse("sns:PublishBatch:Throttled@0.05")
    assert (rule.service, rule.operation, rule.kind, rule.rate) == ("sns", "PublishBatch", "Throttled", 0.05)
