"""What a loan request may ask for: bounds and input types shared by loans-api and the orchestrator."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated

from pydantic import BeforeValidator, Field, WithJsonSchema

MIN_AMOUNT = Decimal("500")
MAX_AMOUNT = Decimal("100000")
MIN_TERM_MONTHS = 3
MAX_TERM_MONTHS = 120
ID_PATTERN = r"^[A-Za-z0-9-]{1,64}$"
_INT_DIGITS = 18


def _number_only(value: object) -> object:
    """Money comes in as a JSON number (the schema says so); a string or a boolean is refused."""
    if isinstance(value, str | bool):
        raise ValueError("must be a JSON number, such as 10000 or 10000.50")
    return value


Amount = Annotated[
    Decimal,
    BeforeValidator(_number_only),
    Field(ge=MIN_AMOUNT, le=MAX_AMOUNT, decimal_places=2),
    WithJsonSchema(
        {
            "type": "number",
            "minimum": float(MIN_AMOUNT),
            "maximum": float(MAX_AMOUNT),
            # No `multipleOf: 0.01`: validators that use binary floats refuse 1234.56 with it. The server
            # checks the 2 places on the exact decimal (shared/json_input.py).
            "description": "Principal in the loan's currency: a JSON number from 500 to 100000 with at most "
            "2 decimal places (10000, 2500.5 and 1234.56 are valid; 1234.567 is refused, never rounded). Amounts "
            "in responses are decimal strings with 2 places.",
            "examples": [10000, 1234.56],
        }
    ),
]


def _whole_number(value: object) -> object:
    """A JSON integer: 12, or 12.0 (JSON Schema counts it as an integer); never "12" or 12.5. Bodies
    parse numbers as Decimal (shared/json_input.py): a whole one in int's range becomes an int, any
    other fails here, before anything converts a 60,000-digit number."""
    if isinstance(value, Decimal):
        # adjusted() is the exponent of the leading digit: a bound checked without arithmetic, which
        # would overflow the decimal context for 1e999999999.
        if value.is_finite() and value.adjusted() < _INT_DIGITS and value == value.to_integral_value():
            return int(value)
        raise ValueError(f"must be a whole number of months from {MIN_TERM_MONTHS} to {MAX_TERM_MONTHS}")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("must be a whole number of months, such as 36")
    return value


TermMonths = Annotated[
    int,
    BeforeValidator(_whole_number),
    Field(ge=MIN_TERM_MONTHS, le=MAX_TERM_MONTHS),
    WithJsonSchema(
        {
            "type": "integer",
            "minimum": MIN_TERM_MONTHS,
            "maximum": MAX_TERM_MONTHS,
            "description": "Term in whole months, 3 to 120.",
            "examples": [36],
        }
    ),
]
EntityId = Annotated[str, Field(pattern=ID_PATTERN, description="An id: letters, digits and dashes, 1..64.")]
