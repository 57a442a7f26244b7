"""How both APIs read a JSON body (shared/json_input.py): exactly, and never by a scan that
retries from inside what it already read. The worst bodies found (bench/input_guard.py, which times
them) each get the answer they must: the guard refuses the unreadable ones (400), and the request
models refuse the rest (422). No test here times anything: the benchmark does."""

from __future__ import annotations

import base64
import gc
import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from bench.input_guard import WORST, Body
from functions.loans_api.models import SimulationRequest
from functions.orchestrator.models import SimulateRequest
from saga.local.apigw import LambdaContextStub, proxy_event
from shared import json_input
from shared.entry_points import Handler
from shared.guards import MAX_BODY_BYTES, guarded, refusal
from shared.json_input import _STRING, MAX_DEPTH, UnreadableJson, depth, loads

REQUEST_MODELS: tuple[type[BaseModel], ...] = (SimulateRequest, SimulationRequest)


@pytest.mark.parametrize(
    "text",
    ['"' + '\\"' * 32000, '"' + '\\"' * 100 + "\\", '"abc', '"', '"\\', '"\\\\\\"[[[', '"a\nb'],
    ids=["escaped-quotes", "lone-backslash-at-the-end", "plain", "one-quote", "quote-backslash", "escapes", "newline"],
)
def test_an_unterminated_string_is_read_to_the_end_in_one_match(text):
    # Given a string that is never closed, When the scan's string pattern meets its opening quote,
    # Then one match takes it to the end of the text: no quote inside it starts a scan of its own (the
    # retry from every quote was what made 64 KB take 51 s)
    match = _STRING.match(text)
    assert match is not None
    assert match.end() == len(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab\n\u00e9'),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(alphabet='[]{}"\\k'), children, max_size=4)
    ),
    max_leaves=30,
)


def nesting(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(nesting, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(nesting, value.values()), default=0)
    return 0


@given(json_values)
def test_the_depth_scan_counts_the_nesting_of_arrays_and_objects_and_nothing_inside_strings(value):
    # Given any JSON value whose strings and names hold brackets, quotes and backslashes
    text = json.dumps(value)
    # Then the scan finds exactly its nesting
    assert depth(text) == nesting(value)


def test_nesting_up_to_the_limit_is_read_and_one_more_level_is_refused():
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(UnreadableJson, match=f"deeper than {MAX_DEPTH} levels"):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))


def test_numbers_are_exact_decimals_and_long_integers_are_decimals_too():
    # Given fractions a float would round, and an integer longer than Python's int reads from text
    value = loads('{"a": 499.99999999999999999, "b": 1e4, "c": 36, "d": ' + "9" * 5000 + "}")
    # Then each is read as written
    assert value["a"] == Decimal("499.99999999999999999")
    assert value["b"] == Decimal("1E+4")
    assert value["c"] == 36
    assert isinstance(value["c"], int)
    assert value["d"] == Decimal("9" * 5000)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused(literal):
    with pytest.raises(UnreadableJson, match="is not a JSON number"):
        loads(f'{{"amount": {literal}}}')


@pytest.mark.parametrize("literal", ["1e9999999999999999999", "1e-9999999999999999999", "-1E+9999999999999999999"])
def test_a_number_beyond_what_a_decimal_holds_is_refused_not_raised(literal):
    # Given an exponent Decimal cannot hold (it raised InvalidOperation out of the parser: a 500)
    # Then it is refused as unreadable
    with pytest.raises(UnreadableJson, match="beyond the range this API reads"):
        loads(f'{{"termMonths": {literal}}}')


@pytest.mark.parametrize(
    "text", ['{"amount": 500, "amount": 100000}', '{"a": [{"x": 1, "y": 2, "x": 1}]}'], ids=["top", "nested"]
)
def test_a_name_twice_in_one_object_is_refused(text):
    # Given an object that names a field twice (readers differ on which one counts), Then it is refused
    with pytest.raises(UnreadableJson, match="twice in one object"):
        loads(text)


def test_the_same_name_in_two_objects_is_read():
    assert loads('[{"a": 1}, {"a": 2}]') == [{"a": 1}, {"a": 2}]


def test_the_parse_leaves_the_garbage_collector_as_it_found_it():
    assert gc.isenabled()
    loads("[1, 2]")
    with pytest.raises(UnreadableJson):
        loads("[1, 2")
    assert gc.isenabled()


def test_every_worst_body_fits_the_limit_the_guard_admits():
    for body in WORST:
        assert len(body.text.encode()) <= MAX_BODY_BYTES, body.name
    assert max(len(body.text.encode()) for body in WORST) > MAX_BODY_BYTES - 64


@pytest.mark.parametrize("body", [b for b in WORST if b.status == 400], ids=lambda b: b.name)
def test_each_worst_unreadable_body_is_refused_by_the_guard(body: Body):
    with pytest.raises(UnreadableJson) as refused:
        loads(body.text)
    assert len(refused.value.detail) < 200  # the answer does not grow with the body


@pytest.mark.parametrize("body", [b for b in WORST if b.status == 422], ids=lambda b: b.name)
@pytest.mark.parametrize("model", REQUEST_MODELS, ids=lambda m: m.__name__)
def test_each_worst_readable_body_is_read_then_refused_by_the_request_models(body: Body, model: type[BaseModel]):
    # Given a worst-case body the guard reads, When each API's request model validates it, Then it is invalid
    value = loads(body.text)
    with pytest.raises(ValidationError):
        model.model_validate(value)


@pytest.mark.parametrize(
    "term",
    ["1e999999999", "9e-999999999", "36e999999999", "0e999999999", "3.6e1000000", "36." + "0" * 60000 + "1"],
)
def test_a_huge_or_tiny_exponent_in_a_term_is_refused_without_arithmetic(term):
    # Given a term whose value no int conversion or quantize could compute in time (int(Decimal('1e999999999')))
    # Then the model refuses it as out of range
    with pytest.raises(ValidationError, match="termMonths"):
        SimulateRequest.model_validate(loads(f'{{"amount": 10000, "termMonths": {term}}}'))


@pytest.mark.parametrize("amount", ["1e999999999", "9e-999999999", "0e-999999999", "1" + "0" * 60000])
def test_a_huge_or_tiny_exponent_in_an_amount_is_refused(amount):
    with pytest.raises(ValidationError, match="amount"):
        SimulateRequest.model_validate(loads(f'{{"amount": {amount}, "termMonths": 36}}'))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"amount": 10000, "termMonths": 36.' + "0" * 60000 + "}", 36),
        ('{"amount": 10000, "termMonths": 3.6e1}', 36),
        ('{"amount": 10000, "termMonths": 36' + " " * 60000 + "}", 36),
    ],
    ids=["60000-zeros", "exponent", "60000-spaces"],
)
def test_a_long_but_valid_term_is_accepted(text, expected):
    assert SimulateRequest.model_validate(loads(text)).termMonths == expected


def test_a_long_but_valid_amount_is_accepted_as_its_value():
    # Given 500 written with 60,000 zeros and an exponent that brings it back
    request = SimulateRequest.model_validate(loads('{"amount": 5' + "0" * 60000 + 'e-59998, "termMonths": 36}'))
    # Then it is 500
    assert request.amount == Decimal("500")


def test_an_escaped_lone_surrogate_is_read_and_refused_by_the_model_not_stored():
    # Given a journeyId of escaped lone surrogates (not Unicode text)
    value = loads('{"journeyId": "\\ud800", "amount": 10000, "termMonths": 36}')
    # Then the model refuses it (no store would take it)
    with pytest.raises(ValidationError, match="unicode"):
        SimulationRequest.model_validate(value)


def test_bytes_are_read_as_utf8():
    assert json_input.loads('{"a": "é"}'.encode()) == {"a": "é"}


def guarded_orchestrator(orchestrator: Any) -> Handler:
    from functions.orchestrator.api import create_app

    return guarded(create_app(orchestrator.system.service))


def _counting_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    texts: list[str] = []
    parse = json_input.loads

    def counted(text: str | bytes) -> Any:
        texts.append(text if isinstance(text, str) else text.decode())
        return parse(text)

    monkeypatch.setattr(json_input, "loads", counted)
    return texts


@pytest.mark.parametrize("encoded", [False, True], ids=["text", "base64"])
def test_the_orchestrator_parses_each_request_body_once(monkeypatch, encoded):
    # Given the orchestrator's app behind its guards, over fakes, and a journey
    from tests.fakes import InProcessOrchestrator

    orchestrator = InProcessOrchestrator()
    journey = orchestrator.system.new_journey()
    texts = _counting_parses(monkeypatch)
    # When a simulate is sent with a body (read by the guard, then by the resolver's validation)
    body = b'{"amount": 10000, "termMonths": 12}'
    event = proxy_event("POST", f"/journeys/{journey}/simulate", {"Content-Type": "application/json"}, body)
    if encoded:
        event = {**event, "body": base64.b64encode(body).decode(), "isBase64Encoded": True}
    answer = guarded_orchestrator(orchestrator)(event, LambdaContextStub("orchestrator"))
    # Then it succeeds, and its body was parsed once here (loans-api's, on the in-process wire, once there)
    assert answer["statusCode"] == 200, answer
    ours = [text for text in texts if text == body.decode()]
    assert len(ours) == 1, f"the request body was parsed {len(ours)} times: {texts}"
    assert len(texts) == 2, f"expected one parse per API (orchestrator, loans-api), got {texts}"


def test_a_resolver_without_the_guard_still_reads_the_body(monkeypatch):
    # Given the orchestrator's app called without its guards (so nothing parsed the body before it)
    from functions.orchestrator.api import create_app
    from tests.fakes import FakeSystem

    system = FakeSystem()
    journey = system.new_journey()
    texts = _counting_parses(monkeypatch)
    # When a simulate reaches the resolver directly
    body = b'{"amount":10000,"termMonths":12}'
    event = proxy_event("POST", f"/journeys/{journey}/simulate", {"Content-Type": "application/json"}, body)
    context: Any = LambdaContextStub("orchestrator")
    answer = create_app(system.service).resolve(event, context)
    # Then the resolver parses it itself, once
    assert answer["statusCode"] == 200, answer
    assert texts.count(body.decode()) == 1, texts


@pytest.mark.parametrize(
    "encoded", [base64.b64encode(b'{"amount": "\xff"}').decode(), "not base64!"], ids=["latin-1", "not-base64"]
)
def test_a_body_that_is_not_utf8_text_is_refused_by_the_guard(encoded):
    # Given a base64 body (as API Gateway passes bytes) that does not decode to UTF-8 text
    event = {"body": encoded, "isBase64Encoded": True, "headers": {"Content-Type": "application/json"}}
    # When the guard reads it
    refused = refusal(event)
    # Then it is a 400 saying so, before any parse
    assert refused is not None, "the guard let a body through that is not UTF-8 text"
    problem = json.loads(refused["body"])
    assert (refused["statusCode"], problem["detail"]) == (400, "the request body is not UTF-8 text"), problem
