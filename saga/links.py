"""Following a Control Record's links (`availableActions`) as an agent would: each link names its call, and
carries the exact body to send where the journey fixes it (accept names the quote, disburse the
acceptance, cancel takes `{}`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def link(record: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """The record's link for command `name` (simulate, accept, disburse, cancel), or None: not legal now."""
    return next((action for action in record.get("availableActions", []) if action.get("name") == name), None)


def link_body(record: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """The body the record's `name` link carries (None when the link is absent or the agent chooses it)."""
    found = link(record, name)
    return None if found is None else found.get("body")
