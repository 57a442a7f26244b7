"""The wall clock. Services take a clock (a test passes its own); the composition roots pass this one."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    """Now, timezone-aware, in UTC."""
    return datetime.now(UTC)
