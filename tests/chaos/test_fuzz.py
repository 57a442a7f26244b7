"""Fuzzing both OpenAPI documents with schemathesis against `saga local`: no 5xx for any generated
input, every error is problem+json, every response conforms to the documented schema.

Each API is fuzzed with valid inputs (positive) and invalid ones (negative), FUZZ_EXAMPLES cases each
(default 75: about ten per operation, each API having seven; half the time goes to generating them,
half to answering). `FUZZ_EXAMPLES=500 pytest tests/chaos/test_fuzz.py` searches further."""

from __future__ import annotations

import json
import os
import uuid
from decimal import ROUND_DOWN, Decimal

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from shared.loan_terms import MAX_AMOUNT, MIN_AMOUNT
from tests.system import running_system

PROBLEM_FIELDS = {"type", "title", "status", "detail", "retryable"}
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "75"))


@schemathesis.check
def errors_are_problem_json(ctx, response, case):
    """Every 4xx/5xx is RFC 9457 problem+json carrying `retryable`."""
    if response.status_code < 400:
        return
    assert response.headers.get("content-type", [""])[0].startswith("application/problem+json"), response.headers
    body = json.loads(response.content)
    assert body.keys() >= PROBLEM_FIELDS, body
    assert body["status"] == response.status_code


ANSWER_TIMEOUT = 120  # seconds; schemathesis' default (10 s) fails on a loaded machine, not on a defect


def _fuzz(case, mode: GenerationMode) -> None:
    # A reused Idempotency-Key with another body is a documented 422, not a defect: give each
    # generated request its own key (key validation itself is covered by the integration tests).
    if "idempotency-key" in {name.lower() for name in (case.headers or {})}:
        case.headers = {k: v for k, v in case.headers.items() if k.lower() != "idempotency-key"}
        case.headers["Idempotency-Key"] = str(uuid.uuid4())
    _amount_in_cents(case)
    # A valid Expected-Ledger-Seq that is not the ledger's position is a documented 412 (the journey's
    # state decides, as for a 409): positive cases go without the precondition; negative ones keep it.
    if mode is GenerationMode.POSITIVE and case.headers:
        case.headers = {k: v for k, v in case.headers.items() if k.lower() != "expected-ledger-seq"}
    # A listJourneys cursor is opaque: only one a page gave is valid, and no schema can say which (a made-up
    # one is a documented 422; tests/integration/test_journey_list.py covers both). Positive cases go
    # without one; negative ones keep it.
    if mode is GenerationMode.POSITIVE and case.query and "cursor" in case.query:
        case.query = {k: v for k, v in case.query.items() if k != "cursor"}
    # The orchestrator may take its whole 26 s budget retrying a slow loans-api, and a loaded machine makes
    # every answer slower: the timeout only bounds a hang, it is not a speed check.
    case.call_and_validate(excluded_checks=[], additional_checks=[errors_are_problem_json], timeout=ANSWER_TIMEOUT)


def _amount_in_cents(case) -> None:
    """The 2-decimal rule of `amount` is in its description, not its schema (`multipleOf: 0.01` makes
    float-based validators refuse 1234.56), so schemathesis counts 58876.611 as valid and the 422 as
    a defect. Truncate generated amounts to cents (never out of [min, max]); the rule itself is tested
    in tests/integration/test_input_edges.py."""
    body = case.body
    amount = body.get("amount") if isinstance(body, dict) else None
    if isinstance(amount, float) and MIN_AMOUNT <= Decimal(repr(amount)) <= MAX_AMOUNT:
        body["amount"] = float(Decimal(repr(amount)).quantize(Decimal("0.01"), rounding=ROUND_DOWN))


@pytest.fixture(scope="module")
def fuzzed():
    """A system of its own: fuzzing loans-api directly leaves orphan events in the DLQ."""
    with running_system() as system:
        yield system


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=lambda m: m.value)
@pytest.mark.parametrize("api", ["orchestrator", "loans-api"])
def test_generated_requests_get_no_5xx_only_documented_answers_and_problem_json_errors(fuzzed, api, mode):
    url = fuzzed.api_url if api == "orchestrator" else fuzzed.loans_url
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", timeout=ANSWER_TIMEOUT)

    @given(case=schema.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    def fuzz(case) -> None:
        _fuzz(case, mode)

    fuzz()
