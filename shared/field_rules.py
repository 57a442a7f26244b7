"""A validation error in words an agent can act on: "amount must be at least 500", not pydantic's
"Input should be greater than or equal to Decimal('500')" (D10). Both APIs' 422s and 400s (and so the
MCP tools and the Bedrock executor, which answer the APIs' problems) say each invalid field this way.

`RULES` is every pydantic error type the request models, path parameters and headers can raise
(tests/unit/test_field_rules.py walks every constrained field of every request model and checks each
error it meets is one of these). Another type says only that the field is not valid, never in Python's
words."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from shared.loan_terms import ID_PATTERN

# Where a value was read: a location's first part that names no field of the body.
_PLACES = {"body", "path", "query", "header"}
# pydantic renders a Decimal bound in an error's context as its repr: Decimal('500').
_DECIMAL_REPR = re.compile(r"^Decimal\('([^']*)'\)$")
# A pattern an agent cannot be expected to read, in words.
_PATTERNS = {ID_PATTERN: "an id of 1 to 64 letters, digits and dashes"}
_FIELD_LIMIT = 80


def value(raw: Any) -> str:
    """A bound as a person writes it: 500, 0.01, 120; never Decimal('500') or 5E+2."""
    if isinstance(raw, str) and (match := _DECIMAL_REPR.match(raw)):
        raw = Decimal(match.group(1))
    if isinstance(raw, Decimal):
        text = format(raw, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    return str(raw)


def _length(count: Any) -> str:
    return f"{count} character" + ("" if value(count) == "1" else "s")


def _value_error(context: Mapping[str, Any]) -> str:
    """Our own validators raise ValueError("must ..."): the rule, in the words they wrote."""
    said = str(context.get("error", "")).strip()
    return said if said.startswith("must") else f"is not valid: {said}" if said else "is not valid"


def _pattern(context: Mapping[str, Any]) -> str:
    pattern = str(context.get("pattern", ""))
    return f"must be {_PATTERNS[pattern]}" if pattern in _PATTERNS else f"must match the regular expression {pattern}"


def _literal(context: Mapping[str, Any]) -> str:
    return f"must be one of {context.get('expected', 'the values the schema lists')}".replace("'", "")


# pydantic error type -> the rule it broke, said of the field (its context holds the bound).
RULES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "missing": lambda _: "is required",
    "extra_forbidden": lambda _: "is not a field of this request: remove it",
    "model_type": lambda _: "must be a JSON object",
    "dict_type": lambda _: "must be a JSON object",
    "model_attributes_type": lambda _: "must be a JSON object",
    "string_type": lambda _: "must be a string",
    "string_too_short": lambda c: (
        "must not be empty"
        if value(c.get("min_length")) == "1"
        else f"must be at least {_length(c.get('min_length'))} long"
    ),
    "string_too_long": lambda c: f"must be at most {_length(c.get('max_length'))} long",
    "string_pattern_mismatch": _pattern,
    "greater_than_equal": lambda c: f"must be at least {value(c.get('ge'))}",
    "greater_than": lambda c: f"must be greater than {value(c.get('gt'))}",
    "less_than_equal": lambda c: f"must be at most {value(c.get('le'))}",
    "less_than": lambda c: f"must be less than {value(c.get('lt'))}",
    "decimal_max_places": lambda c: f"must have at most {value(c.get('decimal_places'))} decimal places",
    "decimal_max_digits": lambda c: f"must have at most {value(c.get('max_digits'))} digits",
    "decimal_whole_digits": lambda c: f"must have at most {value(c.get('whole_digits'))} digits before the point",
    "decimal_type": lambda _: "must be a number",
    "decimal_parsing": lambda _: "must be a number",
    "finite_number": lambda _: "must be a finite number",
    "int_type": lambda _: "must be a whole number",
    "int_parsing": lambda _: "must be a whole number",
    "int_from_float": lambda _: "must be a whole number",
    "bool_type": lambda _: "must be true or false",
    "list_type": lambda _: "must be a JSON array",
    "literal_error": _literal,
    "value_error": _value_error,
}


def field_name(location: tuple[Any, ...] | list[Any]) -> str:
    """The field as the agent spells it: `amount`, `the Idempotency-Key header`, `the request body`."""
    parts = [str(part) for part in location]
    where = parts[0] if parts and parts[0] in _PLACES else ""
    named = ".".join(parts[1:] if where else parts)
    if len(named) > _FIELD_LIMIT:  # a field name is whatever key the client sent
        named = named[: _FIELD_LIMIT - 3] + "..."
    if where == "header":
        spelled = "-".join(word.capitalize() for word in named.split("-"))  # HTTP's spelling: Idempotency-Key
        return f"the {spelled} header" if named else "a header"
    return named or "the request body"


def in_words(error: Mapping[str, Any]) -> str:
    """One pydantic error as `<field> <rule>`: "termMonths must be at most 120"."""
    rule = RULES.get(str(error.get("type", "")))
    context = error.get("ctx") or {}
    said = rule(context) if rule is not None else "is not valid"
    return f"{field_name(tuple(error.get('loc', ())))} {said}"
