"""`saga verify`'s pure parts: every check runs and each failure carries its remedy; the body each
command is sent; the metrics read off a dashboard body in CloudWatch's format."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from saga.verify import checks, configuration, journey, signals
from shared import metric_names


def _deployment() -> checks.Deployment:
    return checks.Deployment("S", "eu-west-3", {}, [])


def test_a_failing_check_names_itself_with_its_remedy_and_the_others_still_run():
    # Given three checks: one holds, one finds a fault, one cannot read what it needs
    def denied(_: checks.Deployment) -> str:
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "GetAccount")

    def faulty(_: checks.Deployment) -> str:
        raise checks.Failed("the DLQ holds 2")

    told: list[checks.Outcome] = []
    # When they run
    outcomes = checks.run_all(_deployment(), [
        checks.Check("holds", lambda _: "fine", "nothing"),
        checks.Check("faulty", faulty, "saga dlq list"),
        checks.Check("denied", denied, "grant apigateway:GET"),
    ], told.append)  # fmt: skip
    # Then each was told as it ended, and only the two that failed say what to do
    assert told == outcomes
    assert [o.to_json() for o in outcomes] == [
        {"check": "holds", "ok": True, "detail": "fine"},
        {"check": "faulty", "ok": False, "detail": "the DLQ holds 2", "next": "saga dlq list"},
        {"check": "denied", "ok": False, "next": "grant apigateway:GET",
         "detail": "could not read it: ClientError: An error occurred (AccessDenied) when calling the GetAccount "
                   "operation: no"},
    ]  # fmt: skip
    assert checks.line(outcomes[1]) == "FAIL faulty: the DLQ holds 2\n     next: saga dlq list"
    assert checks.line(outcomes[0]) == "ok   holds: fine"


DOCUMENT = {"components": {"schemas": {"SimulateRequest": {
    "required": ["amount", "termMonths"],
    "properties": {"amount": {"examples": [10000]}, "termMonths": {"minimum": 6}}}}}}  # fmt: skip
RECORD = {"simulation": {"simulationId": "sim-1"}, "acceptance": {"acceptanceId": "acc-1"}}


def test_a_link_that_carries_a_body_is_sent_exactly_that_body():
    link = {"operationId": "acceptSimulation", "body": {"simulationId": "sim-9"}}
    assert journey._body(link, RECORD, DOCUMENT) == {"simulationId": "sim-9"}


def test_accept_and_disburse_without_a_body_in_the_link_send_the_ids_of_the_record():
    assert journey._body({"operationId": "acceptSimulation"}, RECORD, DOCUMENT) == {"simulationId": "sim-1"}
    assert journey._body({"operationId": "disburseLoan"}, RECORD, DOCUMENT) == {"acceptanceId": "acc-1"}


def test_simulate_sends_an_example_of_its_schema():
    link = {"operationId": "simulateLoan", "requestSchema": "#/components/schemas/SimulateRequest"}
    assert journey._body(link, RECORD, DOCUMENT) == {"amount": 10000, "termMonths": 6}


def test_the_metrics_of_a_dashboard_body_with_their_dimensions_repeats_and_expressions_inputs():
    body = {"widgets": [
        {"properties": {"metrics": [
            ["LoanSaga", "EventsApplied", "service", "consumer", {"stat": "Sum"}],
            [".", "EventsFailed", ".", "."],
            [{"expression": "FILL(a, 0)", "label": "x"}],
            ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "dlq", {"id": "a", "visible": False}],
        ]}},
        {"properties": {"markdown": "no metrics here"}},
        {"properties": {"metrics": [["LoanSaga", "EventsApplied", "service", "consumer"]]}},
    ]}  # fmt: skip
    assert signals.dashboard_metrics(body) == [
        ("LoanSaga", "EventsApplied", (("service", "consumer"),)),
        ("LoanSaga", "EventsFailed", (("service", "consumer"),)),
        ("AWS/SQS", "ApproximateNumberOfMessagesVisible", (("QueueName", "dlq"),)),
    ]


APIGATEWAY_TRUST: dict[str, Any] = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "apigateway.amazonaws.com"}, "Action": "sts:AssumeRole"}]}  # fmt: skip


def test_a_logging_role_must_let_api_gateway_assume_it():
    # API Gateway's own trust (as CDK and the console write it, listed or not) admits it
    assert configuration.api_gateway_may_assume(APIGATEWAY_TRUST)
    listed = {"Statement": [{"Effect": "Allow", "Principal": {"Service": ["lambda.amazonaws.com",
              "apigateway.amazonaws.com"]}, "Action": ["sts:AssumeRole", "sts:TagSession"]}]}  # fmt: skip
    assert configuration.api_gateway_may_assume(listed)
    # Another service's trust, another action, or an explicit deny does not
    lambda_only = {
        "Statement": [{**APIGATEWAY_TRUST["Statement"][0], "Principal": {"Service": "lambda.amazonaws.com"}}]
    }
    assert not configuration.api_gateway_may_assume(lambda_only)
    web_identity = {"Statement": [{**APIGATEWAY_TRUST["Statement"][0], "Action": "sts:AssumeRoleWithWebIdentity"}]}
    assert not configuration.api_gateway_may_assume(web_identity)
    denied = {"Statement": [*APIGATEWAY_TRUST["Statement"], {**APIGATEWAY_TRUST["Statement"][0], "Effect": "Deny"}]}
    assert not configuration.api_gateway_may_assume(denied)


class ListedMetrics:
    """CloudWatch's ListMetrics over a fixed set of (namespace, name, dimensions)."""

    def __init__(self, body: dict, written: set[signals.Metric]) -> None:
        self.body = body
        self.written = written

    def get_dashboard(self, DashboardName: str) -> dict:  # noqa: N803 - botocore's names
        return {"DashboardBody": json.dumps(self.body)}

    def list_metrics(self, Namespace: str, MetricName: str, Dimensions: list | None = None) -> dict:  # noqa: N803
        wanted = {(d["Name"], d["Value"]) for d in Dimensions or []}
        return {"Metrics": [
            {"Namespace": n, "MetricName": m, "Dimensions": [{"Name": k, "Value": v} for k, v in dims]}
            for n, m, dims in self.written if (n, m) == (Namespace, MetricName) and wanted <= set(dims)]}  # fmt: skip


def _charted(*rows: list) -> dict:
    return {"widgets": [{"type": "metric", "properties": {"metrics": list(rows)}}]}


def test_a_metric_written_only_on_occurrence_may_be_absent_whatever_other_dimensions_hold():
    # Given a dashboard charting replays for loans-api and the orchestrator, and one retried command: the
    # orchestrator wrote IdempotentReplays, loans-api did not
    ns = metric_names.stack_namespace("S")
    body = _charted([ns, metric_names.IDEMPOTENT_REPLAYS, "service", "loans-api"],
                    [ns, metric_names.IDEMPOTENT_REPLAYS, "service", "orchestrator"])  # fmt: skip
    written: set[signals.Metric] = {(ns, metric_names.IDEMPOTENT_REPLAYS, (("service", "orchestrator"),))}
    deployment = _deployment()
    deployment.outputs["DashboardName"] = "S-dashboard"
    deployment.__dict__["cloudwatch"] = ListedMetrics(body, written)
    # Then the metrics check holds, and says one is not written yet
    assert signals.metrics_present(deployment) == (
        "1 of 2 dashboard metrics present; 1 written only when it happens, none yet"
    )
    # But a metric every run writes, absent under the dashboard's dimensions, fails, naming where it is
    body = _charted([ns, metric_names.EVENTS_APPLIED, "service", "consumers"])
    deployment.__dict__["cloudwatch"] = ListedMetrics(
        body, {(ns, metric_names.EVENTS_APPLIED, (("service", "consumer"),))}
    )
    with pytest.raises(checks.Failed, match=r"EventsApplied\{service=consumers\} \(present under other dimensions\)"):
        signals.metrics_present(deployment)


def test_the_signed_journeys_summary_counts_only_what_the_records_trail_says_and_names_the_rest():
    # Given a journey of three events whose record's trail (its newest two changes) says road 2 applied the
    # last two; the first is in the record, by a road the trail no longer says
    history: list[dict[str, Any]] = [
        {"seq": 1, "inRecord": True, "appliedBy": None},
        {"seq": 2, "inRecord": True, "appliedBy": "outbox"},
        {"seq": 3, "inRecord": True, "appliedBy": "outbox"},
    ]
    # When verify sums up road 2's part
    summary = journey.road2_summary(history)
    # Then it claims neither that road 1 applied the first nor that road 2 did
    assert summary == "2 applied by road 2 itself, 0 by road 1, 1 before the record's trail", summary
