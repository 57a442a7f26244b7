"""loans-api on a moto server: each command one transaction (the journey's item, its receipt, its event: all or none),
the one-disbursement rule, compensations inside a command, what it refuses. Its receipts and replays are in
test_loans_api_receipts.py."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from shared.dynamo import from_item, to_item
from shared.idempotency import Receipt
from shared.keys import event_sk, journey_pk
from tests.integration.aws_calls import scan
from tests.integration.journeys import LOANS_JOURNEY as JOURNEY
from tests.integration.journeys import accepted_at_loans_api as accepted_journey
from tests.integration.journeys import simulate_at_loans_api as simulate
from tests.support import json_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def test_a_simulation_commits_the_journey_item_its_receipt_and_its_event_and_nothing_else(
    loans_api, dynamodb: DynamoDBClient, resources
):
    # Given an empty table
    # When a simulation is created
    response = simulate(loans_api, "k1")
    # Then it answers 201 with the priced quote and the event to apply at once
    assert response.status == 201
    body = json_of(response)
    assert body["status"] == "ACTIVE"
    assert (body["amount"], body["annualRate"], body["monthlyPayment"]) == ("10000.00", "0.0790", "312.90")
    assert body["event"]["eventId"] == body["eventId"]
    assert body["event"]["snapshot"]["state"] == "simulated"
    # And the table holds exactly: the journey's item, the receipt, one PENDING event (the quote's only record)
    kinds = sorted(item["sk"].split("#")[0] for item in scan(dynamodb, resources.loans_table))
    assert kinds == ["EVENT", "LEDGER", "RECEIPT"]
    events = [i for i in scan(dynamodb, resources.loans_table) if i["sk"].startswith("EVENT#")]
    assert events[0]["status"] == "PENDING"
    assert "pendingShard" not in events[0]  # no index of pending events: the sweeper walks journey-changes
    assert events[0]["eventId"] == body["eventId"]


def test_a_business_violation_writes_nothing_at_all(loans_api, dynamodb: DynamoDBClient, resources):
    # Given a journey whose first simulation was superseded
    old = json_of(simulate(loans_api, "k1"))
    simulate(loans_api, "k2", amount=20000)
    before = scan(dynamodb, resources.loans_table)
    # When the superseded simulation is accepted
    response = loans_api.post("/acceptances", {"journeyId": JOURNEY, "simulationId": old["simulationId"]}, key="k3")
    # Then 409, and no receipt, no outbox item, no domain change
    assert response.status == 409
    assert json_of(response)["type"].endswith("business-rule-violated")
    assert scan(dynamodb, resources.loans_table) == before


def test_one_disbursement_per_journey_even_with_a_fresh_key_and_no_receipt(
    loans_api, dynamodb: DynamoDBClient, resources
):
    # Given a disbursed journey
    _, acceptance = accepted_journey(loans_api)
    body = {"journeyId": JOURNEY, "acceptanceId": acceptance["acceptanceId"]}
    first = loans_api.post("/disbursements", body, key=f"{JOURNEY}:disbursement")
    assert first.status == 201
    # When the receipt is gone (expired) and a fresh key asks again
    dynamodb.delete_item(
        TableName=resources.loans_table, Key=to_item({"pk": f"RECEIPT#{JOURNEY}:disbursement", "sk": "RECEIPT"})
    )
    second = loans_api.post("/disbursements", body, key="a-fresh-key")
    replay_without_receipt = loans_api.post("/disbursements", body, key=f"{JOURNEY}:disbursement")
    # Then both are refused: the journey's permanent item allows one disbursement, ever
    assert second.status == 409
    assert replay_without_receipt.status == 409
    items = scan(dynamodb, resources.loans_table)
    assert len([i for i in items if i.get("type") == "LoanDisbursed"]) == 1
    [journey_item] = [i for i in items if i["sk"] == "LEDGER"]
    assert journey_item["disbursementId"] == json_of(first)["disbursementId"]


def test_the_disbursement_condition_holds_inside_the_transaction(loans_api, dynamodb: DynamoDBClient, resources):
    # Given a disbursed journey whose item's snapshot was rolled back to claim no disbursement (its
    # disbursement mark left as it was)
    _, acceptance = accepted_journey(loans_api)
    body = {"journeyId": JOURNEY, "acceptanceId": acceptance["acceptanceId"]}
    loans_api.post("/disbursements", body, key="d1")
    ledger_key = {"pk": f"JOURNEY#{JOURNEY}", "sk": "LEDGER"}
    ledger = from_item(dynamodb.get_item(TableName=resources.loans_table, Key=to_item(ledger_key))["Item"])
    ledger["lastEvent"]["snapshot"]["disbursement"] = None
    ledger["lastEvent"]["snapshot"]["state"] = "accepted"
    dynamodb.put_item(TableName=resources.loans_table, Item=to_item(ledger))
    before = scan(dynamodb, resources.loans_table)
    # When a second disbursement passes the in-code checks
    response = loans_api.post("/disbursements", body, key="d2")
    # Then the transaction's condition on the mark refuses it (409, not a retry), and nothing at all is written
    assert response.status == 409
    assert scan(dynamodb, resources.loans_table) == before


def test_each_command_commits_one_event_numbered_in_order_with_one_receipt(
    loans_api, dynamodb: DynamoDBClient, resources
):
    # Given a journey walked through every command
    first = json_of(simulate(loans_api, "s1"))
    second = json_of(simulate(loans_api, "s2", amount=5000))
    acc = json_of(
        loans_api.post("/acceptances", {"journeyId": JOURNEY, "simulationId": second["simulationId"]}, key="a1")
    )
    third = json_of(simulate(loans_api, "s3", amount=7000))  # supersedes and cancels the acceptance
    acc2 = json_of(
        loans_api.post("/acceptances", {"journeyId": JOURNEY, "simulationId": third["simulationId"]}, key="a2")
    )
    loans_api.post("/disbursements", {"journeyId": JOURNEY, "acceptanceId": acc2["acceptanceId"]}, key="d1")
    # Then the events are numbered 1..6 without gaps, one per committed command
    truth = json_of(loans_api.get(f"/journeys/{JOURNEY}"))
    assert [e["seq"] for e in truth["events"]] == list(range(1, 7))
    assert [e["type"] for e in truth["events"]] == [
        "SimulationCreated",
        "SimulationCreated",
        "AcceptanceCreated",
        "SimulationCreated",
        "AcceptanceCreated",
        "LoanDisbursed",
    ]
    receipts = [i for i in scan(dynamodb, resources.loans_table) if i["sk"] == "RECEIPT"]
    assert len(receipts) == 6
    recorded = {json.loads(Receipt.from_values(r).body)["eventId"] for r in receipts}
    assert recorded == {e["eventId"] for e in truth["events"]}
    # And the superseded / cancelled statuses follow from the history
    statuses = {s["simulationId"]: s["status"] for s in truth["simulations"]}
    assert statuses[first["simulationId"]] == "SUPERSEDED"
    assert statuses[third["simulationId"]] == "ACTIVE"
    assert {a["acceptanceId"]: a["status"] for a in truth["acceptances"]}[acc["acceptanceId"]] == "CANCELLED"
    assert truth["state"] == "disbursed"
    assert truth["disbursement"]["amount"] == "7000.00"
    # And the newest event, whole, is what a reader applies to catch up
    assert truth["lastEvent"]["seq"] == 6
    assert truth["lastEvent"]["type"] == "LoanDisbursed"
    assert truth["lastEvent"]["snapshot"]["state"] == "disbursed"


def test_re_simulating_cancels_the_active_acceptance_in_the_same_transaction(
    loans_api, dynamodb: DynamoDBClient, resources
):
    # Given an accepted journey
    simulation, acceptance = accepted_journey(loans_api)
    # When it is simulated again
    response = simulate(loans_api, "s-again", amount=9000)
    # Then one event records all of it: the old quote superseded, the acceptance cancelled
    assert response.status == 201
    body = json_of(response)
    assert body["cancelledAcceptanceId"] == acceptance["acceptanceId"]
    assert body["event"]["snapshot"]["acceptance"] is None
    truth = json_of(loans_api.get(f"/journeys/{JOURNEY}"))
    assert [a["status"] for a in truth["acceptances"]] == ["CANCELLED"]
    assert {s["simulationId"]: s["status"] for s in truth["simulations"]}[simulation["simulationId"]] == "SUPERSEDED"
    assert [e["seq"] for e in truth["events"]] == [1, 2, 3]


@pytest.mark.parametrize("state", ["created", "simulated", "accepted"])
def test_cancel_marks_the_ledger_and_cancels_what_is_active_in_one_transaction(loans_api, state):
    # Given a journey in `state` at loans-api (created: no ledger at all yet)
    if state == "simulated":
        simulate(loans_api, "s1")
    if state == "accepted":
        accepted_journey(loans_api)
    # When it is cancelled
    response = loans_api.post(f"/journeys/{JOURNEY}/cancel", key="cancel-1")
    # Then the ledger says cancelled and nothing is ACTIVE
    assert response.status == 200
    assert json_of(response)["event"]["type"] == "JourneyCancelled"
    truth = json_of(loans_api.get(f"/journeys/{JOURNEY}"))
    assert truth["state"] == "cancelled"
    assert "ACTIVE" not in [e["status"] for e in truth["simulations"] + truth["acceptances"]]
    # And every later write is refused, a repeat of the key replays, another cancel is 409
    assert simulate(loans_api, "s-after").status == 409
    assert loans_api.post(f"/journeys/{JOURNEY}/cancel", key="cancel-1").headers["Idempotent-Replayed"] == "true"
    assert loans_api.post(f"/journeys/{JOURNEY}/cancel", key="cancel-2").status == 409


def test_a_disbursed_journey_cannot_be_cancelled(loans_api):
    _, acceptance = accepted_journey(loans_api)
    loans_api.post("/disbursements", {"journeyId": JOURNEY, "acceptanceId": acceptance["acceptanceId"]}, key="d1")
    response = loans_api.post(f"/journeys/{JOURNEY}/cancel", key="c1")
    assert response.status == 409
    assert json_of(loans_api.get(f"/journeys/{JOURNEY}"))["state"] == "disbursed"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/simulations", {"journeyId": JOURNEY, "amount": 499.99, "termMonths": 12}),
        ("/simulations", {"journeyId": JOURNEY, "amount": 100000.01, "termMonths": 12}),
        ("/simulations", {"journeyId": JOURNEY, "amount": 1000, "termMonths": 2}),
        ("/simulations", {"journeyId": JOURNEY, "amount": 1000, "termMonths": 121}),
        ("/simulations", {"journeyId": JOURNEY, "amount": 1000, "termMonths": "12"}),
        ("/simulations", {"journeyId": JOURNEY, "amount": "lots", "termMonths": 12}),
        ("/simulations", {"journeyId": JOURNEY, "amount": 1000.123, "termMonths": 12}),
        ("/simulations", {"journeyId": JOURNEY, "amount": 1000, "termMonths": 12, "extra": 1}),
        ("/simulations", {"amount": 1000, "termMonths": 12}),
        ("/simulations", {"journeyId": "bad id!", "amount": 1000, "termMonths": 12}),
        ("/acceptances", {"journeyId": JOURNEY}),
        ("/disbursements", []),
    ],
    ids=[
        "amount-below-500",
        "amount-above-100000",
        "term-under-3",
        "term-over-120",
        "term-a-string",
        "amount-a-word",
        "amount-of-three-decimals",
        "an-unknown-field",
        "no-journey",
        "a-journey-id-with-spaces",
        "acceptance-without-simulation",
        "disbursement-not-an-object",
    ],
)
def test_invalid_input_is_a_422_problem_and_writes_nothing(loans_api, dynamodb: DynamoDBClient, resources, path, body):
    response = loans_api.post(path, body, key="k")
    assert response.status == 422
    problem = json_of(response)
    assert response.headers["Content-Type"] == "application/problem+json"
    assert {"type", "title", "status", "detail", "retryable"} <= problem.keys()
    assert scan(dynamodb, resources.loans_table) == []


def test_an_unknown_journey_or_route_is_a_404_problem(loans_api):
    for response in (
        loans_api.get("/journeys/nobody"),
        loans_api.get("/no/such/route"),
    ):
        assert response.status == 404
        assert response.headers["Content-Type"] == "application/problem+json"


def test_the_ledger_route_answers_where_the_journey_stands_in_one_read(loans_api):
    assert loans_api.get(f"/journeys/{JOURNEY}/ledger").status == 404
    _, acceptance = accepted_journey(loans_api)
    ledger = json_of(loans_api.get(f"/journeys/{JOURNEY}/ledger"))
    assert (ledger["seq"], ledger["state"]) == (2, "accepted")
    assert ledger["lastEvent"]["snapshot"]["acceptance"]["acceptanceId"] == acceptance["acceptanceId"]


def test_an_unreadable_event_item_is_logged_at_warning_with_its_key_and_the_history_stops_above_it(
    loans_api, dynamodb: DynamoDBClient, resources, caplog: pytest.LogCaptureFixture
):
    # Given a journey of two quotes whose older event item holds no event this version can read
    simulate(loans_api, "k-1")
    simulate(loans_api, "k-2", amount=6000)
    key = {"pk": journey_pk(JOURNEY), "sk": event_sk(1)}
    dynamodb.update_item(
        TableName=resources.loans_table,
        Key=to_item(key),
        UpdateExpression="REMOVE #snapshot",
        ExpressionAttributeNames={"#snapshot": "snapshot"},
    )
    # When its truth is read
    with caplog.at_level("WARNING"):
        truth = json_of(loans_api.get(f"/journeys/{JOURNEY}"))
    # Then the item is logged at WARNING by its key, and the answer lists the newest event alone
    [record] = [r for r in caplog.records if r.getMessage().startswith("Unreadable event item")]
    assert record.levelname == "WARNING"
    assert (record.__dict__["pk"], record.__dict__["sk"]) == (key["pk"], key["sk"])
    assert [e["seq"] for e in truth["events"]] == [2]
    assert sorted(truth["olderOmitted"]) == ["acceptances", "events", "simulations"]
