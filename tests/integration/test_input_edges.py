"""The input edges of both APIs: every input below once answered 500 `retryable: true`,
was priced wrong, answered a body hundreds of times its own size, or took up to 51 s to be refused. Each
must be a small problem+json 4xx that changes nothing, on both APIs, through the same guard (how long
each takes is bench/input_guard.py's to measure, not a test's)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from bench.input_guard import WORST, Body
from shared.json_input import MAX_DEPTH
from shared.problems import MAX_LISTED_ERRORS, PROBLEM_CONTENT_TYPE
from tests.integration.aws_calls import scan
from tests.support import ApiClient, json_of
from tools.inprocess import InProcessHttp

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# No error body may grow with the input: a few KB at most.
MAX_PROBLEM_BYTES = 4096


@dataclass
class Api:
    """One API, and how to send it a simulation whose `amount`/`termMonths` are raw JSON text."""

    client: ApiClient
    path: str
    extra: dict[str, Any]

    def simulate_raw(self, amount: str = "10000", term: str = "36", **headers: str | None) -> Any:
        fields = [f'"{name}": {json.dumps(value)}' for name, value in self.extra.items()]
        raw = "{" + ", ".join([*fields, f'"amount": {amount}', f'"termMonths": {term}']) + "}"
        return self.post_raw(raw.encode(), **headers)

    def post_raw(self, raw: bytes, **headers: str | None) -> Any:
        all_headers = {"Idempotency-Key": f"k-{len(raw)}-{hash(raw)}", **headers}
        return self.client.post(self.path, raw=raw, headers=all_headers)


@pytest.fixture(params=["orchestrator", "loans-api"])
def api(request, orchestrator: ApiClient, loans_api: ApiClient) -> Api:
    if request.param == "loans-api":
        return Api(loans_api, "/simulations", {"journeyId": "j-edges"})
    created = orchestrator.post("/journeys", {"customerId": "c-edges"}, key="edges")
    return Api(orchestrator, f"/journeys/{json_of(created)['journeyId']}/simulate", {})


@pytest.fixture
def unchanged(dynamodb: DynamoDBClient, resources, loans_http: InProcessHttp) -> Callable[[], None]:
    """Call once the fixtures set up what they need; returns a check that nothing was written since."""
    tables = (resources.loans_table, resources.journeys_table)
    before = [scan(dynamodb, table) for table in tables]
    calls = len(loans_http.calls)

    def check() -> None:
        assert [scan(dynamodb, table) for table in tables] == before
        assert len(loans_http.calls) == calls

    return check


def assert_problem(response: Any, status: int, slug: str) -> dict[str, Any]:
    assert response.status == status, response.body[:300]
    assert response.headers["Content-Type"] == PROBLEM_CONTENT_TYPE
    assert len(response.body) <= MAX_PROBLEM_BYTES
    body = json_of(response)
    assert body["status"] == status
    assert body["type"].endswith(slug)
    assert body["retryable"] is False
    return dict(body)


@pytest.mark.parametrize(
    "content_type",
    [
        "application/vnd.api+json",
        "application/problem+json",
        "application/merge-patch+json",
        "application/json; charset=latin-1",
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/xml",
    ],
)
def test_a_body_that_is_not_plain_json_is_415(api, unchanged, content_type):
    # Given a valid simulation sent as another media type
    # When it is posted
    response = api.simulate_raw(**{"Content-Type": content_type})
    # Then 415, and nothing is written
    assert_problem(response, 415, "unsupported-media-type")
    unchanged()


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "Application/Json; Charset=UTF-8",
        'application/json;charset="utf-8"',
        None,  # no Content-Type header at all: read as JSON
    ],
    ids=repr,
)
def test_json_in_any_case_with_a_utf8_charset_or_without_a_content_type_is_accepted(api, content_type):
    # Given a valid simulation sent with this Content-Type (or none), When it is posted, Then it is priced
    response = api.simulate_raw(**{"Content-Type": content_type})
    assert response.status in (200, 201), response.body[:300]
    assert (json_of(response).get("simulation") or json_of(response))["amount"] == "10000.00"


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("[" * 30000 + "]" * 30000, "30,000 nested arrays"),
        ('{"amount": ' + "[" * 20000 + "]" * 20000 + ', "termMonths": 36}', "a 20,000-deep value"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "one level past the limit"),
        ('{"amount": NaN, "termMonths": 36}', "NaN is not JSON"),
        ('{"amount": Infinity, "termMonths": 36}', "Infinity is not JSON"),
        ('{"amount": 10000, "termMonths": 36', "truncated"),
    ],
    ids=["30000-nested-arrays", "a-20000-deep-value", "one-level-past-the-limit", "NaN", "Infinity", "truncated"],
)
def test_json_that_cannot_be_read_exactly_is_400(api, unchanged, raw, why):
    response = api.post_raw(raw.encode())
    assert_problem(response, 400, "malformed-json")
    unchanged()


def test_a_body_over_64_kib_is_413_and_nothing_is_written(api, unchanged):
    # Given a simulation padded past 64 KiB with an unknown field (which alone would be a 422)
    raw = json.dumps({**api.extra, "amount": 10000, "termMonths": 36, "pad": "x" * 70000}).encode()
    # When it is posted, Then 413 before the body is read, and nothing is written
    assert_problem(api.post_raw(raw), 413, "too-large")
    unchanged()


def test_nesting_up_to_the_limit_is_read_and_validated(api):
    # Given a value nested exactly MAX_DEPTH - 1 levels inside the body (the body is one more)
    nested = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    # Then it is parsed, and refused by the model as the wrong type, not as unreadable
    response = api.simulate_raw(amount=nested)
    assert_problem(response, 422, "validation")


@pytest.mark.parametrize(
    ("amount", "term"),
    [
        ("9" * 5000, "36"),  # beyond Python's int-digits limit
        ("10000", "9" * 5000),
        ("499.99999999999999999", "36"),  # a float rounds it to 500.0, the minimum
        ("9999.999999999999999", "36"),  # a float rounds it to 10000.0
        ("1000." + "1" * 400, "36"),  # a 400-digit fraction
        ("1000.001", "36"),
        ("100000.01", "36"),
        ("499.99", "36"),
        ("1e999999999", "36"),
        ("10000", "1e999999999"),
        ("10000", "36.5"),
    ],
    ids=[
        "5000-digit-amount",
        "5000-digit-term",
        "rounds-up-to-the-minimum",
        "rounds-up-to-10000",
        "400-digit-fraction",
        "three-decimals",
        "over-the-maximum",
        "under-the-minimum",
        "huge-exponent-amount",
        "huge-exponent-term",
        "fractional-term",
    ],
)
def test_money_and_terms_are_validated_exactly_never_rounded(api, unchanged, amount, term):
    response = api.simulate_raw(amount, term)
    body = assert_problem(response, 422, "validation")
    assert {error["field"].split(".")[-1] for error in body["errors"]} <= {"amount", "termMonths"}
    unchanged()


@pytest.mark.parametrize(
    ("amount", "priced_as"),
    [
        ("500", "500.00"),
        ("1000.10", "1000.10"),
        ("1e4", "10000.00"),
        ("100000", "100000.00"),
        ("5" + "0" * 60000 + "e-59998", "500.00"),  # 500 in 60 KB: no arithmetic on 60,001 digits blows up
    ],
    ids=["500", "1000.10", "1e4", "100000", "500-in-60-kb"],
)
def test_every_valid_amount_is_priced_exactly_as_sent(api, amount, priced_as):
    response = api.simulate_raw(amount)
    assert response.status in (200, 201), response.body[:300]
    body = json_of(response)
    simulation = body.get("simulation") or body
    assert simulation["amount"] == priced_as


def test_thousands_of_unknown_keys_answer_a_small_422(api, unchanged):
    # Given a 59 KB body with 6,000 unknown keys (and one 4 KB key)
    fields = {f"u{i}": 1 for i in range(6000)}
    fields["k" * 4000] = 1
    raw = json.dumps({**api.extra, "amount": 10000, "termMonths": 36, **fields}, separators=(",", ":")).encode()
    assert 58 * 1024 < len(raw) < 64 * 1024
    # When it is posted
    response = api.post_raw(raw)
    # Then a 422 of a few KB lists the first problems and counts the rest
    body = assert_problem(response, 422, "validation")
    assert len(body["errors"]) == MAX_LISTED_ERRORS
    assert body["errorsOmitted"] == 6001 - MAX_LISTED_ERRORS
    assert "(and 5998 more)" in body["detail"]
    unchanged()


@pytest.mark.parametrize("body", WORST, ids=lambda body: body.name)
def test_the_worst_bodies_found_are_each_a_small_problem_and_change_nothing(api, unchanged, body: Body):
    # Given one of the worst bodies of up to 64 KiB (bench/input_guard.py: unterminated strings, runs of
    # escapes, nesting at and past the limit, thousands of names, items, digits, exponents, surrogates)
    # When it is posted to the API's simulation route
    response = api.post_raw(body.text.encode())
    # Then the status the body calls for, as problem+json, and nothing is written
    assert_problem(response, body.status, "malformed-json" if body.status == 400 else "validation")
    unchanged()


@pytest.mark.parametrize(
    ("raw", "detail"),
    [
        ('{"amount": 500, "termMonths": 36, "amount": 100000}', '"amount" twice'),
        ('{"amount": 10000, "termMonths": 1e9999999999999999999}', "beyond the range"),
    ],
    ids=["a-name-twice", "an-exponent-beyond-decimal"],
)
def test_a_body_two_readers_could_read_apart_or_no_decimal_holds_is_400(api, unchanged, raw, detail):
    # Given an amount named twice (which one counts is each reader's choice), or a number no Decimal holds
    body = assert_problem(api.post_raw(raw.encode()), 400, "malformed-json")
    # Then 400 says which, and nothing is written
    assert detail in body["detail"]
    unchanged()


@pytest.mark.parametrize(
    ("customer", "admitted"),
    [("é" * 64, True), ("é" * 65, False), ("😀" * 32, True), ("😀" * 33, False), ("c" * 128, True)],
    ids=["64-two-byte", "65-two-byte", "32-four-byte", "33-four-byte", "128-ascii"],
)
def test_a_customer_id_is_bounded_in_bytes_so_its_record_stays_one_write_unit(
    orchestrator: ApiClient, dynamodb: DynamoDBClient, resources, customer: str, admitted: bool
):
    # Given a customerId of at most 128 characters, over or within 128 bytes in UTF-8
    before = scan(dynamodb, resources.journeys_table)
    # When a journey is created for it
    response = orchestrator.post("/journeys", {"customerId": customer}, key=f"customer-{len(customer.encode())}")
    # Then within 128 bytes it is created; past them, a 422 names the field and the rule, and nothing is written
    if admitted:
        assert response.status == 201, response.body[:300]
        return
    body = assert_problem(response, 422, "validation")
    assert [(e["field"], e["message"]) for e in body["errors"]] == [
        ("body.customerId", "customerId must be at most 128 bytes in UTF-8 (an accented letter takes 2)")
    ], body
    assert scan(dynamodb, resources.journeys_table) == before
