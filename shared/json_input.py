"""How both APIs read a JSON body: exactly, and within limits an adversary cannot push into a 500.

- Numbers are never floats: a fraction or exponent becomes a `Decimal` as written, so
  `499.99999999999999999` stays below the 500 minimum instead of rounding to it, and a fraction with
  more than 2 places is refused by the model, not rounded. An integer too long for Python's `int`
  (4,300 digits) becomes a `Decimal` too, so the model refuses it as out of range (422), not the
  parser with a ValueError.
- Nesting deeper than `MAX_DEPTH` is refused before parsing (the parser would recurse into a
  RecursionError on `[[[[...`).
- `NaN`, `Infinity` and `-Infinity` are not JSON: refused.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

MAX_DEPTH = 32
# Integers up to this many characters are `int`; longer ones `Decimal` (no model accepts them).
_MAX_INT_CHARS = 18
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


class UnreadableJson(ValueError):
    """The body is not JSON this API reads; `detail` says why, in words an agent can act on."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def depth(text: str) -> int:
    """The deepest nesting of arrays and objects in `text`, brackets inside strings not counted."""
    deepest = current = 0
    for bracket in _BRACKET.findall(_STRING.sub("", text)):
        current += 1 if bracket in "[{" else -1
        deepest = max(deepest, current)
    return deepest


def _integer(literal: str) -> int | Decimal:
    return int(literal) if len(literal) <= _MAX_INT_CHARS else Decimal(literal)


def _not_a_number(literal: str) -> Any:
    raise UnreadableJson(f"{literal} is not a JSON number")


def loads(text: str | bytes) -> Any:
    """Parse a request body exactly (see the module's docstring); UnreadableJson when it cannot be."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if depth(text) > MAX_DEPTH:
        raise UnreadableJson(f"the body nests arrays and objects deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text, parse_float=Decimal, parse_int=_integer, parse_constant=_not_a_number)
    except json.JSONDecodeError as error:
        raise UnreadableJson(f"the request body is not valid JSON ({error.msg} at character {error.pos})") from None
    except RecursionError:  # only if the depth scan were wrong: still the client's input, still 400
        raise UnreadableJson(f"the body nests arrays and objects deeper than {MAX_DEPTH} levels") from None
