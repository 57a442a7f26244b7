"""loans-api on a moto server: atomic command receipts, replays, and the one-disbursement rule."""

from __future__ import annotations

import json

import pytest

from bench.billing import item_size
from shared.dynamo import from_item, to_item
from tests.support import ApiClient, json_of

JOURNEY = "j-0001"


def scan(dynamodb, table: str) -> list[dict]:
    items, kwargs = [], {"TableName": table, "ConsistentRead": True}
    while True:
        page = dynamodb.scan(**kwargs)
        items += [from_item(item) for item in page["Items"]]
        if "LastEvaluatedKey" not in page:
            return sorted(items, key=lambda i: (i["pk"], i["sk"]))
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def simulate(api: ApiClient, key: str, amount: int = 10000, term: int = 36, journey: str = JOURNEY):
    return api.post("/simulations", {"journeyId": journey, "amount": amount, "termMonths": term}, key=key)


def accepted_journey(api: ApiClient) -> tuple[dict, dict]:
    simulation = json_of(simulate(api, "k-sim"))
    acceptance = json_of(
        api.post("/acceptances", {"journeyId": JOURNEY, "simulationId": simulation["simulationId"]}, key="k-acc")
    )
    return simulation, acceptance


def test_simulation_commits_domain_receipt_ledger_and_outbox_together(loans_api, dynamodb, resources):
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
    # And the table holds exactly: ledger, simulation, receipt, one PENDING outbox item
    kinds = sorted(item["sk"].split("#")[0] for item in scan(dynamodb, resources.loans_table))
    assert kinds == ["EVENT", "LEDGER", "RECEIPT", "SIMULATION"]
    events = [i for i in scan(dynamodb, resources.loans_table) if i["sk"].startswith("EVENT#")]
    assert events[0]["status"] == "PENDING"
    assert events[0]["pendingShard"].startswith("PENDING#")
    assert events[0]["eventId"] == body["eventId"]


def test_replay_returns_the_recorded_body_byte_for_byte(loans_api):
    # Given a committed simulation
    first = simulate(loans_api, "k1")
    # When the same key and body arrive again (with keys in another order)
    again = loans_api.post("/simulations", {"termMonths": 36, "amount": 10000, "journeyId": JOURNEY}, key="k1")
    # Then the recorded status and body come back, marked as a replay
    assert again.status == first.status == 201
    assert again.body == first.body
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert "Idempotent-Replayed" not in first.headers


def test_same_key_with_a_different_body_is_422_and_writes_nothing(loans_api, dynamodb, resources):
    simulate(loans_api, "k1")
    before = scan(dynamodb, resources.loans_table)
    response = simulate(loans_api, "k1", amount=20000)
    assert response.status == 422
    assert response.headers["Content-Type"] == "application/problem+json"
    assert json_of(response)["type"].endswith("idempotency-key-reused")
    assert scan(dynamodb, resources.loans_table) == before


@pytest.mark.parametrize("path", ["/simulations", "/acceptances", "/disbursements"])
def test_a_write_without_a_key_is_400(loans_api, dynamodb, resources, path):
    bodies = {
        "/simulations": {"journeyId": JOURNEY, "amount": 1000, "termMonths": 12},
        "/acceptances": {"journeyId": JOURNEY, "simulationId": "s1"},
        "/disbursements": {"journeyId": JOURNEY, "acceptanceId": "a1"},
    }
    response = loans_api.post(path, bodies[path])
    assert response.status == 400
    assert json_of(response)["retryable"] is False
    assert scan(dynamodb, resources.loans_table) == []


def test_a_business_violation_writes_nothing_at_all(loans_api, dynamodb, resources):
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


def test_one_disbursement_per_journey_even_with_a_fresh_key_and_no_receipt(loans_api, dynamodb, resources):
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
    # Then both are refused: the domain itself allows one disbursement, ever
    assert second.status == 409
    assert replay_without_receipt.status == 409
    items = scan(dynamodb, resources.loans_table)
    assert len([i for i in items if i["sk"] == "DISBURSEMENT"]) == 1


def test_the_disbursement_condition_holds_inside_the_transaction(loans_api, dynamodb, resources):
    # Given a disbursed journey whose ledger was rolled back to claim no disbursement
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
    # Then the transaction's attribute_not_exists refuses it, and nothing at all is written
    assert response.status == 409
    assert scan(dynamodb, resources.loans_table) == before


def test_seq_grows_by_one_per_event_and_each_command_has_one_outbox_item(loans_api, dynamodb, resources):
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
    assert {r["eventId"] for r in receipts} == {e["eventId"] for e in truth["events"]}
    # And the superseded / cancelled statuses are recorded
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


def test_re_simulating_cancels_the_active_acceptance_in_the_same_transaction(loans_api, dynamodb, resources):
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


def test_the_fingerprint_is_over_the_validated_request(loans_api):
    # Given a simulation keyed k1 for 10000
    first = simulate(loans_api, "k1", amount=10000)
    # When the same amount arrives spelled 10000.0 and 1e4, Then both replay; 10000.5 is another request
    for spelled in (b"10000.0", b"1e4"):
        raw = b'{"journeyId": "' + JOURNEY.encode() + b'", "amount": ' + spelled + b', "termMonths": 36}'
        again = loans_api.post("/simulations", raw=raw, key="k1")
        assert (again.status, again.body) == (201, first.body)
    assert simulate(loans_api, "k1", amount=10000.5).status == 422  # type: ignore[arg-type]


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
)
def test_invalid_input_is_a_422_problem_and_writes_nothing(loans_api, dynamodb, resources, path, body):
    response = loans_api.post(path, body, key="k")
    assert response.status == 422
    problem = json_of(response)
    assert response.headers["Content-Type"] == "application/problem+json"
    assert {"type", "title", "status", "detail", "retryable"} <= problem.keys()
    assert scan(dynamodb, resources.loans_table) == []


def test_malformed_json_is_400_and_oversized_body_is_413(loans_api, dynamodb, resources):
    assert loans_api.post("/simulations", raw=b'{"journeyId": ', key="k").status == 400
    huge = json.dumps({"journeyId": JOURNEY, "amount": 1000, "termMonths": 12, "pad": "x" * 70000}).encode()
    response = loans_api.post("/simulations", raw=huge, key="k")
    assert response.status == 413
    assert json_of(response)["status"] == 413
    assert scan(dynamodb, resources.loans_table) == []


def test_unknown_things_are_404_problems(loans_api):
    for response in (
        loans_api.get("/journeys/nobody"),
        loans_api.get("/no/such/route"),
    ):
        assert response.status == 404
        assert response.headers["Content-Type"] == "application/problem+json"


def test_a_transaction_retried_with_its_token_succeeds_again(dynamodb, resources):
    # Given a committed transaction (botocore retries a timed-out call with the same token)
    items = [{"Put": {"TableName": resources.loans_table, "Item": to_item({"pk": "T#1", "sk": "T"}),
                      "ConditionExpression": "attribute_not_exists(pk)"}}]  # fmt: skip
    dynamodb.transact_write_items(TransactItems=items, ClientRequestToken="token-1")
    # When it arrives again with the same token, Then it succeeds (as in DynamoDB), writing nothing new
    dynamodb.transact_write_items(TransactItems=items, ClientRequestToken="token-1")
    # And without the token its condition fails, as it should
    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(TransactItems=items, ClientRequestToken="token-2")


def test_a_command_decided_on_another_ledger_position_is_412_after_the_replay_check(loans_api, dynamodb, resources):
    # Given a journey at seq 1
    first = simulate(loans_api, "k1")
    before = scan(dynamodb, resources.loans_table)
    body = {"journeyId": JOURNEY, "amount": 9000, "termMonths": 12}
    # When a new command says it was decided at seq 0
    moved = loans_api.post("/simulations", body, key="k2", headers={"Expected-Ledger-Seq": "0"})
    # Then it is refused with 412 and nothing is written
    assert moved.status == 412
    assert json_of(moved)["type"].endswith("ledger-moved")
    assert scan(dynamodb, resources.loans_table) == before
    # But a repeat of k1 decided at seq 0 is still answered from its receipt (the precondition is not the request)
    raw = json.dumps({"journeyId": JOURNEY, "amount": 10000, "termMonths": 36}).encode()
    replay = loans_api.post("/simulations", raw=raw, key="k1", headers={"Expected-Ledger-Seq": "0"})
    assert (replay.status, replay.body) == (201, first.body)
    # And decided at the right position it commits
    assert loans_api.post("/simulations", body, key="k2", headers={"Expected-Ledger-Seq": "1"}).status == 201


def test_the_ledger_route_answers_where_the_journey_stands_in_one_read(loans_api):
    assert loans_api.get(f"/journeys/{JOURNEY}/ledger").status == 404
    _, acceptance = accepted_journey(loans_api)
    ledger = json_of(loans_api.get(f"/journeys/{JOURNEY}/ledger"))
    assert (ledger["seq"], ledger["state"]) == (2, "accepted")
    assert ledger["lastEvent"]["snapshot"]["acceptance"]["acceptanceId"] == acceptance["acceptanceId"]


def test_a_receipt_is_written_in_under_1_kb_and_its_replay_is_the_recorded_body(loans_api, dynamodb, resources):
    # Given a committed simulation, whose answer carries its whole event
    first = simulate(loans_api, "k-small")
    # Then its receipt holds the body compressed to under half its size, and fits one write unit
    raw = dynamodb.get_item(TableName=resources.loans_table, Key=to_item({"pk": "RECEIPT#k-small", "sk": "RECEIPT"}))
    assert "body" not in raw["Item"]
    assert len(raw["Item"]["bodyZ"]["B"]) < len(first.body) / 2
    assert item_size(raw["Item"]) < 1024
    # And a replay answers the recorded body, byte for byte
    again = simulate(loans_api, "k-small")
    assert (again.status, again.body) == (first.status, first.body)
