"""How both APIs read a JSON body: exactly, within limits an adversary cannot push into a 500, and in
time proportional to the body's size, whatever it holds (bench/input_guard.py holds the worst bodies
found and times them; tests/unit/test_json_input.py asserts how each is answered).

- Numbers are never floats: a fraction or exponent becomes a `Decimal` as written, so
  `499.99999999999999999` stays below the 500 minimum instead of rounding to it, and a fraction with
  more than 2 places is refused by the model, not rounded. An integer too long for Python's `int`
  (4,300 digits) becomes a `Decimal` too, so the model refuses it as out of range (422), not the
  parser with a ValueError. A number beyond what `Decimal` holds (`1e9999999999999999999`) is refused.
- Nesting deeper than `MAX_DEPTH` is refused before parsing (the parser would recurse into a
  RecursionError on `[[[[...`), by one pass over the text that never backtracks.
- `NaN`, `Infinity` and `-Infinity` are not JSON: refused.
- A name twice in one object (`{"amount": 500, "amount": 100000}`) is refused: RFC 8259 section 4
  leaves which one counts to each reader, so two readers of one request could see two amounts (I-JSON,
  RFC 7493 section 2.3, forbids them).

A body is parsed once per request: the guard in front of the resolver parses it (`shared/guards.py`),
and the resolver reads that value back (`body`), not a second parse.
"""

from __future__ import annotations

import gc
import json
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from itertools import accumulate
from typing import Any

MAX_DEPTH = 32
# Integers up to this many characters are `int`; longer ones `Decimal` (no model accepts them).
_MAX_INT_CHARS = 18
# A JSON string, matched without backtracking (possessive `*+`, `++`): one never closed, even by a lone
# backslash at the very end, runs to the end of the text, so each quote starts at most one scan and no
# scan covers a character another one did. A pattern that can fail at the end of an unterminated string
# retries from every quote inside it: quadratic (`"` then 32,000 `\"` took 51 s to refuse).
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class UnreadableJson(ValueError):
    """The body is not JSON this API reads; `detail` says why, in words an agent can act on."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def depth(text: str) -> int:
    """The deepest nesting of arrays and objects in `text`, brackets inside strings not counted."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _decimal(literal: str) -> Decimal:
    try:
        return Decimal(literal)
    except InvalidOperation:  # an exponent beyond Decimal's: it would escape the parser as a 500
        raise UnreadableJson(f"the number {literal[:40]} is beyond the range this API reads") from None


def _integer(literal: str) -> int | Decimal:
    return int(literal) if len(literal) <= _MAX_INT_CHARS else _decimal(literal)


def _not_a_number(literal: str) -> Any:
    raise UnreadableJson(f"{literal} is not a JSON number")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) < len(pairs):
        twice = next(name for name, count in Counter(name for name, _ in pairs).items() if count > 1)
        raise UnreadableJson(f"the body names {json.dumps(twice[:40])} twice in one object; send each name once")
    return found


@contextmanager
def _no_collection() -> Iterator[None]:
    """The garbage collector paused: a parse allocates one container per array and object and makes no
    reference cycle, so a collection during it frees nothing, yet each full one traverses every object
    the process holds (its whole composition root). 31,000 nested arrays parsed in 6 ms with it paused,
    26 ms without, in a process holding both APIs' handlers."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def loads(text: str | bytes) -> Any:
    """Parse a request body exactly (see the module's docstring); UnreadableJson when it cannot be."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if depth(text) > MAX_DEPTH:
        raise UnreadableJson(f"the body nests arrays and objects deeper than {MAX_DEPTH} levels")
    try:
        with _no_collection():
            return json.loads(
                text, parse_float=_decimal, parse_int=_integer, parse_constant=_not_a_number, object_pairs_hook=_object
            )
    except json.JSONDecodeError as error:
        raise UnreadableJson(f"the request body is not valid JSON ({error.msg} at character {error.pos})") from None
    except RecursionError:  # only if the depth scan were wrong: still the client's input, still 400
        raise UnreadableJson(f"the body nests arrays and objects deeper than {MAX_DEPTH} levels") from None


@dataclass(frozen=True)
class Parsed:
    """A request body's text and the value `loads` read from it."""

    text: str
    value: Any


# The body the guard parsed for the request this thread serves (a context variable: the local runtime
# serves requests on several threads at once).
_PARSED: ContextVar[Parsed | None] = ContextVar("parsed_body", default=None)


@contextmanager
def parsed(body: Parsed | None) -> Iterator[None]:
    """While the block runs, `body` answers this thread's reads of its text (the request's resolve)."""
    token = _PARSED.set(body)
    try:
        yield
    finally:
        _PARSED.reset(token)


def body(text: str | bytes) -> Any:
    """The resolver's reader of a request body: the value the guard parsed from this text (`parsed`),
    else `loads` (a resolver called without the guard in front)."""
    known = _PARSED.get()
    if known is not None and known.text == text:
        return known.value
    return loads(text)
