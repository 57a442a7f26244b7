"""`saga verify`'s pure parts: every check runs and each failure carries its remedy; the body each
command is sent; the metrics read off a dashboard body in CloudWatch's format."""

from __future__ import annotations

from botocore.exceptions import ClientError

from saga.verify import checks, journey, signals


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
