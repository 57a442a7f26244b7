"""Validation problems in words an agent can act on (D10): every constrained field of every request model,
broken each way its constraints allow, answers "<field> <rule>" with the bound as a person writes it, never
pydantic's English or a Python repr; and so do both APIs over HTTP, the MCP tools and the Bedrock executor,
which all answer the same problems."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import annotated_types
import pytest
from pydantic import BaseModel, ValidationError

from functions.loans_api import models as loans_models
from functions.orchestrator import bedrock
from functions.orchestrator import models as orchestrator_models
from saga.local.apigw import LambdaContextStub
from shared import field_rules
from shared.events import Message
from tests.bedrock_events import action_event
from tests.fakes import InProcessOrchestrator
from tests.unit.test_mcp_server import tools_over

# What pydantic or Python say that an agent should never read.
PYTHONIC = re.compile(r"Input should|String should|Field required|Extra inputs|Value error|Decimal\(|\[|'|\"|E\+")


def request_models() -> list[type[Message]]:
    """Every request body of both APIs: each Message whose name ends in Request."""
    found = []
    for module in (orchestrator_models, loans_models):
        for _, model in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(model, Message)
                and model.__name__.endswith("Request")
                and model.__module__ == module.__name__
            ):
                found.append(model)
    return found


def _bounds(model: type[BaseModel], name: str) -> dict[str, Any]:
    bounds: dict[str, Any] = {}
    for item in model.model_fields[name].metadata:
        for attribute in ("ge", "gt", "le", "lt", "min_length", "max_length", "pattern", "decimal_places"):
            if getattr(item, attribute, None) is not None:
                bounds[attribute] = getattr(item, attribute)
        if isinstance(item, annotated_types.Interval):
            bounds.update({k: v for k, v in vars(item).items() if v is not None})
    return bounds


def valid_value(model: type[BaseModel], name: str) -> Any:
    """The smallest value each field takes (its lower bound, or a one-character id)."""
    annotation = model.model_fields[name].annotation
    bounds = _bounds(model, name)
    if annotation in (Decimal, int):
        return bounds.get("ge", 1)
    return "a"


def breakages(model: type[BaseModel]) -> Iterator[tuple[str, str, dict[str, Any], str]]:
    """(field, how, body, what the answer must say) for each way a field's constraints can be broken, from
    a body that is valid but for that field."""
    valid = {name: valid_value(model, name) for name in model.model_fields}
    for name, info in model.model_fields.items():
        bounds = _bounds(model, name)
        numeric = info.annotation in (Decimal, int)
        one = Decimal(1) if info.annotation is Decimal else 1
        cases: list[tuple[str, Any, str]] = [("an object", {"x": 1}, "must be")]
        if "ge" in bounds:
            cases.append(
                ("below its minimum", bounds["ge"] - one, f"must be at least {field_rules.value(bounds['ge'])}")
            )
        if "le" in bounds:
            cases.append(
                ("above its maximum", bounds["le"] + one, f"must be at most {field_rules.value(bounds['le'])}")
            )
        if "decimal_places" in bounds:
            places = bounds["decimal_places"]
            cases.append(
                ("too many places", bounds["ge"] + Decimal(1).scaleb(-places - 1), f"at most {places} decimal")
            )
        if numeric:
            cases.append(("a string", "12", "must be"))
            cases.append(("a fraction", Decimal("12.5"), "must be"))
        if bounds.get("min_length") == 1:
            cases.append(("empty", "", "must not be empty"))
        if "max_length" in bounds:
            cases.append(("too long", "a" * (bounds["max_length"] + 1), f"at most {bounds['max_length']} characters"))
        if "pattern" in bounds:
            cases.append(("off its pattern", "a b", "must be an id of 1 to 64 letters, digits and dashes"))
            cases.append(("over its pattern's length", "a" * 65, "must be an id of 1 to 64"))
        if not numeric:
            cases.append(("a number", 5, "must be a string"))
        for how, broken, says in cases:
            yield name, how, {**valid, name: broken}, says
        if info.is_required():
            yield name, "missing", {k: v for k, v in valid.items() if k != name}, "is required"
    yield "surplus", "an unknown field", {**valid, "surplus": 1}, "is not a field of this request"
    yield "the request body", "not an object", [valid], "must be a JSON object"  # type: ignore[misc]


CASES = [
    pytest.param(model, field, body, says, id=f"{model.__name__}.{field}-{how}")
    for model in request_models()
    for field, how, body, says in breakages(model)
]


def test_the_walk_covers_every_request_model_of_both_apis():
    names = {model.__name__ for model in request_models()}
    assert {"SimulateRequest", "CreateJourneyRequest", "SimulationRequest", "DisbursementRequest"} <= names, names


@pytest.mark.parametrize(("model", "field", "body", "says"), CASES)
def test_each_broken_constraint_is_said_in_words_naming_the_field(model, field, body, says):
    # Given a body valid but for one field, broken one way its constraints allow
    with pytest.raises(ValidationError) as raised:
        model.model_validate(body)
    # When each error is said in words, as the APIs' problems say it (loc as the resolver reports a body's)
    errors = raised.value.errors(include_url=False)
    said = [field_rules.in_words({**error, "loc": ("body", *error["loc"])}) for error in errors]
    # Then every error is one of the rules translated, names the field first, and carries no Python
    untranslated = [error["type"] for error in errors if error["type"] not in field_rules.RULES]
    assert not untranslated, f"pydantic error types with no words: {untranslated} ({said})"
    assert any(sentence.startswith(f"{field} ") and says in sentence for sentence in said), (
        f"{model.__name__}: {body!r} should say '{field} ... {says}', said {said}"
    )
    pythonic = [sentence for sentence in said if PYTHONIC.search(sentence)]
    assert not pythonic, f"said in Python's words: {pythonic}"


@pytest.mark.parametrize(
    ("location", "named"),
    [
        (("body", "amount"), "amount"),
        (("body",), "the request body"),
        (("path", "journeyId"), "journeyId"),
        (("header", "idempotency-key"), "the Idempotency-Key header"),
        (("body", "x" * 200), "x" * 77 + "..."),
    ],
)
def test_a_field_is_named_as_the_agent_spells_it(location, named):
    assert field_rules.field_name(location) == named


def test_a_header_out_of_its_bounds_is_said_in_words():
    said = field_rules.in_words({"type": "greater_than_equal", "loc": ("header", "expected-seq"), "ctx": {"ge": 0}})
    assert said == "the Expected-Seq header must be at least 0"


# -- the same words on every channel ------------------------------------------------------------

TOO_SMALL = {"amount": 1, "termMonths": 500}
SAYS = ["amount must be at least 500", "termMonths must be at most 120"]


def _assert_plain(problem: dict[str, Any], channel: str) -> None:
    messages = [error["message"] for error in problem["errors"]]
    assert sorted(messages) == sorted(SAYS), f"{channel} said {messages}"
    assert all(say in problem["detail"] for say in SAYS), f"{channel}'s detail: {problem['detail']}"
    assert not PYTHONIC.search(problem["detail"].replace('"', "")), f"{channel}'s detail: {problem['detail']}"


def test_a_too_small_amount_is_said_in_words_over_http_mcp_and_bedrock():
    orchestrator = InProcessOrchestrator()
    journey = orchestrator.system.new_journey()
    headers = {"Content-Type": "application/json", "Idempotency-Key": "k-1"}
    # Over HTTP, to the orchestrator and to loans-api
    answered = orchestrator.request(
        "POST", f"http://o.invalid/journeys/{journey}/simulate", json.dumps(TOO_SMALL).encode(), headers
    )
    assert answered.status == 422, answered.data
    _assert_plain(json.loads(answered.data), "the orchestrator")
    loans = orchestrator.system.wire.request(
        "POST", "http://l.invalid/simulations", json.dumps({"journeyId": journey, **TOO_SMALL}).encode(), headers
    )
    assert loans.status == 422, loans.data
    _assert_plain(json.loads(loans.data), "loans-api")
    # As an MCP tool
    outcome = tools_over(orchestrator).call("simulateLoan", {"journeyId": journey, **TOO_SMALL})
    assert outcome.status == 422, outcome.guidance
    _assert_plain(dict(outcome.document), "the MCP tool")
    assert all(say in outcome.guidance for say in SAYS), outcome.guidance
    # As a Bedrock action (the executor answers the orchestrator's own handler's problem)
    event = action_event("/journeys/{journeyId}/simulate", "POST", {"journeyId": journey}, TOO_SMALL)
    proxy = bedrock.request(event, "arn:aws:bedrock:eu-west-1:111111111111:agent/A")
    reply = bedrock.response(event, orchestrator.wire.handler(proxy, LambdaContextStub("bedrock-executor")))
    assert reply["response"]["httpStatusCode"] == 422, reply
    _assert_plain(json.loads(reply["response"]["responseBody"]["application/json"]["body"]), "the Bedrock executor")
