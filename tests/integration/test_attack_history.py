"""Adversarial review of issue 25 over moto: the journey's history is its events, every status derived from
them (functions/loans_api/history.py), and each of a command's three items stays under 1 KB. Straight at
loans-api (tests/integration/conftest.py). Each test is named for the property it holds loans-api to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.billing import KB, item_size
from shared.dynamo import from_item, to_item
from shared.idempotency import MAX_KEY_LENGTH
from shared.keys import LEDGER_SK, event_sk, journey_pk
from shared.loan_terms import MAX_AMOUNT, MAX_TERM_MONTHS
from tests.integration.test_loans_api_items import Recorded, _kind, _longest, recorded  # noqa: F401 (fixture)
from tests.support import ApiClient, json_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

JOURNEY = "j-history"


def _simulate(api: ApiClient, key: str, amount: int = 5000) -> dict[str, Any]:
    response = api.post("/simulations", {"journeyId": JOURNEY, "amount": amount, "termMonths": 12}, key=key)
    assert response.status == 201, response.body
    return dict(json_of(response))


def _accept(api: ApiClient, key: str, simulation_id: str) -> dict[str, Any]:
    response = api.post("/acceptances", {"journeyId": JOURNEY, "simulationId": simulation_id}, key=key)
    assert response.status == 201, response.body
    return dict(json_of(response))


def _event_key(seq: int) -> dict[str, Any]:
    return to_item({"pk": journey_pk(JOURNEY), "sk": event_sk(seq)})


def test_a_quote_is_never_listed_active_beside_another_when_an_old_layout_event_expired_out_of_order(
    loans_api: ApiClient, dynamodb: DynamoDBClient, resources: Any
):
    # Given a journey of the old layout: quote A (seq 1), its acceptance (seq 2), then quote B (seq 3), which
    # superseded A and cancelled the acceptance. Under the old layout every NOTIFIED event carried a TTL
    # (`expiresAt`, 7 days after publishing); DynamoDB deletes expired items "on a best-effort basis ...
    # typically within two days of expiration", in no order it promises
    # (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html), and an event
    # the sweeper republished later expires later. So seq 3 can be gone while seq 1 and 2 are still there.
    quote_a = _simulate(loans_api, "k-a")
    _accept(loans_api, "k-acc", quote_a["simulationId"])
    quote_b = _simulate(loans_api, "k-b")
    dynamodb.delete_item(TableName=resources.loans_table, Key=_event_key(3))  # TTL's deletion of seq 3
    # When its truth is read
    truth = json_of(loans_api.get(f"/journeys/{JOURNEY}"))
    # Then its item says quote B is the active quote and no acceptance is active...
    assert truth["lastEvent"]["snapshot"]["simulation"]["simulationId"] == quote_b["simulationId"]
    assert truth["lastEvent"]["snapshot"]["acceptance"] is None
    # ...and the history it lists does not contradict it: no other quote, and no acceptance, is ACTIVE
    # (a window with a hole in its seqs cannot say what the missing event ended: it must stop at the hole)
    active = [s["simulationId"] for s in truth["simulations"] if s["status"] == "ACTIVE"]
    assert set(active) <= {quote_b["simulationId"]}, truth["simulations"]
    assert [a for a in truth["acceptances"] if a["status"] == "ACTIVE"] == [], truth["acceptances"]


def _strip_counts(item: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """`item` as an event written before quotes were counted (issue 23) holds it: no simulationCount/Left."""
    values = from_item(item)
    snapshot = values
    for name in path:
        snapshot = snapshot[name]
    snapshot.pop("simulationCount", None)
    snapshot.pop("simulationsLeft", None)
    return to_item(values)


def test_older_omitted_names_nothing_when_every_event_of_a_journey_counted_late_is_listed(
    loans_api: ApiClient, dynamodb: DynamoDBClient, resources: Any
):
    # Given a journey whose first events were written before quotes were counted (D14: "an event written
    # before quotes were counted is bounded by its seq"): a quote and its acceptance (seq 1, 2)
    quote = _simulate(loans_api, "k-1")
    _accept(loans_api, "k-2", quote["simulationId"])
    table = resources.loans_table
    for seq in (1, 2):
        found = dynamodb.get_item(TableName=table, Key=_event_key(seq), ConsistentRead=True)["Item"]
        dynamodb.put_item(TableName=table, Item=_strip_counts(found, ("snapshot",)))
    ledger_key = to_item({"pk": journey_pk(JOURNEY), "sk": LEDGER_SK})
    ledger = dynamodb.get_item(TableName=table, Key=ledger_key, ConsistentRead=True)["Item"]
    dynamodb.put_item(TableName=table, Item=_strip_counts(ledger, ("lastEvent", "snapshot")))
    # And a re-price under this code, which starts counting from its seq (2 quotes "had", so count 3)
    _simulate(loans_api, "k-3", amount=6000)
    # When its truth is read: all three events are still in the table, and all are listed
    truth = json_of(loans_api.get(f"/journeys/{JOURNEY}"))
    assert [e["seq"] for e in truth["events"]] == [1, 2, 3]
    assert (len(truth["simulations"]), len(truth["acceptances"])) == (2, 1)
    # Then olderOmitted names nothing: no older simulation exists to leave out (the item's "counts" say 3
    # quotes and 0 acceptances, and the answer believed them over the events it had read)
    assert truth["olderOmitted"] == []


def test_every_receipt_stays_under_1_kb_with_the_largest_origin_request_id_loans_api_accepts(
    recorded: Recorded,  # noqa: F811 (the fixture imported above)
):
    # Given the largest inputs loans-api accepts: the longest key (255 printable ASCII characters, all a key
    # may hold) and an Origin-Request-Id of 64 characters, the header's only rule: its characters are not
    # limited to ASCII (the key's are, shared/idempotency.py read_key), and DynamoDB sizes strings by their
    # UTF-8 bytes (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html)
    origin = "\U00010000" * 64  # 64 characters, 4 bytes each
    body = {"journeyId": _longest(64), "amount": float(MAX_AMOUNT), "termMonths": MAX_TERM_MONTHS}
    # When a simulate carries them
    response = recorded.api.post(
        "/simulations", body, key=_longest(MAX_KEY_LENGTH), headers={"Origin-Request-Id": origin}
    )
    # Then either loans-api refuses an origin it cannot keep within its budget (400), or it keeps every one
    # of the three items under 1 KB, as D1 and tests/integration/test_loans_api_items.py claim
    if response.status == 400:
        return
    assert response.status == 201, response.body
    [items] = recorded.transactions
    sizes = {_kind(op): item_size(op["Put"]["Item"]) for op in items}
    assert max(sizes.values()) < KB, sizes


def test_one_unreadable_event_in_the_history_does_not_make_the_journeys_truth_a_500(
    loans_api: ApiClient, dynamodb: DynamoDBClient, resources: Any
):
    # Given a journey of two quotes whose older event item can no longer be read as an event (edited by hand,
    # restored from elsewhere, or of a type this version does not know: issue 25 itself expects unreadable
    # event items, "one unreadable or stuck item never pins the cursor"). Its item (seq 2) reads fine.
    _simulate(loans_api, "k-1")
    newest = _simulate(loans_api, "k-2", amount=6000)
    dynamodb.update_item(
        TableName=resources.loans_table,
        Key=_event_key(1),
        UpdateExpression="SET #type = :type",
        ExpressionAttributeNames={"#type": "type"},
        ExpressionAttributeValues=to_item({":type": "SomethingNewer"}),
    )
    assert loans_api.get(f"/journeys/{JOURNEY}/ledger").status == 200
    # When an operator reads its truth (`saga journey show`)
    response = loans_api.get(f"/journeys/{JOURNEY}")
    # Then it is answered from what is readable (the newest quote, ACTIVE), not with a 500 that says
    # `retryable: true` although no retry will ever read that item
    assert response.status == 200, response.body
    truth = json_of(response)
    assert truth["simulations"][-1]["simulationId"] == newest["simulationId"]
    assert truth["simulations"][-1]["status"] == "ACTIVE"
