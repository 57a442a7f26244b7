"""A customer's journeys (GET /journeys) over moto: newest first, paged by an opaque cursor, bounded per
page, only the caller's own, and bad input answered as problems. The index costs one write per journey."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from bench.meter import Meter
from functions.orchestrator.api import MAX_PAGE
from shared import aws
from shared.tables import CUSTOMER_INDEX
from tests.support import ApiClient, json_of

ALICE = "arn:aws:iam::111111111111:user/alice-agent"
BOB = "arn:aws:iam::111111111111:user/bob-agent"


def create(orchestrator: ApiClient, customer: str, key: str, caller: str = ALICE) -> str:
    headers = {"Idempotency-Key": key, "X-Saga-Caller": caller}
    created = orchestrator.request("POST", "/journeys", {"customerId": customer}, headers=headers)
    assert created.status == 201, f"createJourney answered {created.status}: {created.body!r}"
    return str(json_of(created)["journeyId"])


def list_page(orchestrator: ApiClient, query: str, caller: str = ALICE) -> tuple[int, dict]:
    response = orchestrator.request("GET", f"/journeys?{query}", headers={"X-Saga-Caller": caller})
    return response.status, json_of(response)


def every_page(orchestrator: ApiClient, customer: str, limit: int, caller: str = ALICE) -> list[list[str]]:
    pages, cursor = [], ""
    while True:
        status, page = list_page(orchestrator, f"customerId={quote(customer)}&limit={limit}{cursor}", caller)
        assert status == 200, f"listJourneys answered {status}: {page}"
        pages.append([record["journeyId"] for record in page["journeys"]])
        if "nextCursor" not in page:
            return pages
        cursor = f"&cursor={page['nextCursor']}"


def test_a_customers_journeys_come_newest_first_in_pages_that_cover_each_journey_once(orchestrator):
    # Given five journeys for one customer (and one for another), created one after the other
    created = [create(orchestrator, "c-1", f"k{n}") for n in range(5)]
    create(orchestrator, "c-2", "other")
    # When they are listed two at a time
    pages = every_page(orchestrator, "c-1", limit=2)
    # Then the pages hold every journey once, newest first, and the last page says no more follow
    assert pages == [created[4:2:-1], created[2:0:-1], created[0:1]], f"pages {pages} for journeys {created}"
    # And a page that holds them all has no cursor at all (not a cursor to an empty page)
    assert every_page(orchestrator, "c-1", limit=5) == [created[::-1]]


def test_each_listed_journey_is_its_current_control_record_with_its_links(orchestrator):
    journey = create(orchestrator, "c-1", "k")
    quoted = orchestrator.request(
        "POST", f"/journeys/{journey}/simulate", {"amount": 5000, "termMonths": 12}, headers={"X-Saga-Caller": ALICE}
    )
    assert quoted.status == 200, quoted.body
    status, page = list_page(orchestrator, "customerId=c-1")
    assert status == 200, page
    (listed,) = page["journeys"]
    current = json_of(orchestrator.get(f"/journeys/{journey}"))
    assert listed == current, f"listed {listed} differs from getJourney's {current}"
    assert (listed["currentState"], bool(listed["availableActions"])) == ("simulated", True), listed


def test_a_caller_lists_only_the_journeys_it_created(orchestrator):
    alices = create(orchestrator, "c-1", "k", caller=ALICE)
    bobs = create(orchestrator, "c-1", "k", caller=BOB)
    assert every_page(orchestrator, "c-1", limit=10, caller=ALICE) == [[alices]]
    assert every_page(orchestrator, "c-1", limit=10, caller=BOB) == [[bobs]]
    # And an assumed role lists what it created in an earlier session of the same role
    session = "arn:aws:sts::111111111111:assumed-role/agent/session-1"
    mine = create(orchestrator, "c-9", "k", caller=session)
    assert every_page(orchestrator, "c-9", limit=10, caller=session.replace("session-1", "session-2")) == [[mine]]


def test_a_cursor_from_another_list_is_refused_as_no_page_of_it_gave_it(orchestrator):
    # Given Bob's cursor into his list of c-1, and Alice's own journeys of c-1
    for n in range(3):
        create(orchestrator, "c-1", f"k{n}", caller=BOB)
    _, page = list_page(orchestrator, "customerId=c-1&limit=1", caller=BOB)
    create(orchestrator, "c-1", "mine")
    # When Alice sends it for her own customer, or Bob for another customer of his
    alices = orchestrator.request("GET", f"/journeys?customerId=c-1&cursor={page['nextCursor']}")
    bobs = orchestrator.request(
        "GET", f"/journeys?customerId=c-2&cursor={page['nextCursor']}", headers={"X-Saga-Caller": BOB}
    )
    # Then each is the 422 of a cursor that does not decode, word for word: it names no place in their list
    # (the list sorts by creation time, read from the journey the cursor names) and tells nothing of Bob's
    undecodable = orchestrator.request("GET", "/journeys?customerId=c-1&cursor=not-base64!")
    for refused in (alices, bobs):
        assert (refused.status, json_of(refused)) == (422, json_of(undecodable)), refused.body


@pytest.mark.parametrize(
    ("query", "status", "field"),
    [
        ("", 422, "query.customerId"),
        ("customerId=", 422, "query.customerId"),
        (f"customerId={'c' * 129}", 422, "query.customerId"),
        ("customerId=c-1&limit=0", 422, "query.limit"),
        (f"customerId=c-1&limit={MAX_PAGE + 1}", 422, "query.limit"),
        ("customerId=c-1&limit=ten", 422, "query.limit"),
        ("customerId=c-1&cursor=not%20base64", 422, "query.cursor"),
        ("customerId=c-1&cursor=" + base64.urlsafe_b64encode(b"\xff\xfe").decode(), 422, "query.cursor"),
        ("customerId=c-1&cursor=" + base64.urlsafe_b64encode(b"a/b").decode(), 422, "query.cursor"),
        ("customerId=c-1&cursor=" + "A" * 89, 422, "query.cursor"),
        ("customerId=c-1&cursor=", 422, "query.cursor"),
    ],
)
def test_bad_input_is_a_problem_naming_the_parameter(orchestrator, query, status, field):
    create(orchestrator, "c-1", "k")
    response = orchestrator.request("GET", f"/journeys?{query}")
    problem = json_of(response)
    assert (response.status, response.headers.get("Content-Type")) == (status, "application/problem+json"), problem
    assert field in [e["field"] for e in problem.get("errors", [])], f"{field} not named in {problem}"


@pytest.fixture
def meter() -> Iterator[Meter]:
    """A meter on every AWS call of this process (bench/meter.py: DynamoDB's billing rules), for one test."""
    meter = Meter()
    yield meter
    events = aws.session().get_component("event_emitter")
    events.unregister("provide-client-params", meter._remember)
    events.unregister("before-call", meter._before)
    events.unregister("after-call", meter._count)


def test_the_index_is_written_once_per_journey_whatever_the_journey_does_after(meter, orchestrator, resources):
    # Given a meter on every AWS call the orchestrator makes (its clients are made after the meter)
    start = meter.snapshot()
    journey = create(orchestrator, "c-1", "k")
    for n in range(3):
        body = {"amount": 5000 + n, "termMonths": 12}
        assert orchestrator.post(f"/journeys/{journey}/simulate", body).status == 200
    record = json_of(orchestrator.get(f"/journeys/{journey}"))
    accepted = orchestrator.post(f"/journeys/{journey}/accept", record["availableActions"][1]["body"])
    assert accepted.status == 200, accepted.body
    assert orchestrator.post(f"/journeys/{journey}/cancel", {}).status == 200
    index_units = meter.since(start).wcu_by.get((resources.journeys_table, CUSTOMER_INDEX), 0)
    assert index_units == 1, f"the customer index cost {index_units} write units over the journey, not 1"


def test_a_well_formed_cursor_naming_no_journey_is_refused(orchestrator):
    create(orchestrator, "c-1", "k")
    for named in (b"0", b"z", b"00000000-0000-8000-8000-000000000000"):
        cursor = base64.urlsafe_b64encode(named).decode().rstrip("=")
        status, problem = list_page(orchestrator, f"customerId=c-1&cursor={cursor}")
        assert (status, [e["field"] for e in problem.get("errors", [])]) == (422, ["query.cursor"]), (named, problem)


def test_journeys_with_ids_derived_from_their_keys_still_list_newest_first(orchestrator):
    # Given journeys whose ids, derived from their keys, sort in another order than their creation
    created = [create(orchestrator, "c-1", f"key-{n}") for n in range(6)]
    assert sorted(created) not in (created, created[::-1]), f"the ids sort as they were created: {created}"
    # When they are listed a page at a time, Then each page follows the last, newest first
    pages = every_page(orchestrator, "c-1", limit=1)
    assert pages == [[journey] for journey in created[::-1]], f"pages {pages} for journeys created as {created}"


@pytest.mark.parametrize(
    "cursor",
    [
        "A" * 88,  # base64url of zero bytes: no journeyId
        base64.urlsafe_b64encode(b"a/b").decode(),
        "not-base64!",
    ],
)
def test_a_cursor_no_page_gave_is_answered_in_words_that_say_what_to_send(orchestrator, cursor):
    response = orchestrator.request("GET", f"/journeys?customerId=c-1&cursor={quote(cursor)}")
    problem = json_of(response)
    messages = [e["message"] for e in problem.get("errors", []) if e["field"] == "query.cursor"]
    assert response.status == 422, problem
    assert messages, f"the problem names no cursor: {problem}"
    assert all("nextCursor" in m for m in messages), f"the cursor's problem says {messages}: {problem}"
    assert "nextCursor" in problem["detail"], problem
