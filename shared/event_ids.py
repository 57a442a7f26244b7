"""Event ids are UUIDv7 (D4): the first 48 bits are the Unix time in milliseconds, so their strings
sort by time. One module, one secret: how an id is minted, how a time is read from one, and the smallest id of
a time."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache

_VERSION = 7


@cache
def _uuid7() -> Callable[[], uuid.UUID]:
    """The standard library's UUIDv7 where it has one (Python 3.14, Lambda's runtime), else the uuid6
    package's, imported at the first id rather than at a function's init."""
    found: Callable[[], uuid.UUID] | None = getattr(uuid, "uuid7", None)
    if found is not None:
        return found
    from uuid6 import uuid7

    return uuid7


def new_id() -> str:
    """A new UUIDv7 string: time-ordered, and monotonic within the process."""
    return str(_uuid7()())


def time_of(event_id: str) -> datetime | None:
    """When a UUIDv7 id was minted (to the millisecond); None for anything else."""
    try:
        parsed = uuid.UUID(event_id)
    except (ValueError, TypeError, AttributeError):
        return None
    if parsed.version != _VERSION:
        return None
    return datetime.fromtimestamp((parsed.int >> 80) / 1000, tz=UTC)


def lower_bound(moment: datetime) -> str:
    """The smallest UUIDv7 string of `moment`'s millisecond: every id minted at or after `moment`
    sorts at or above it, every id minted before it sorts below."""
    millis = f"{int(moment.timestamp() * 1000):012x}"
    return f"{millis[:8]}-{millis[8:]}-0000-0000-000000000000"
