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


def naming(record: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The body that names what `record` holds for accept (its quote) or disburse (its acceptance), also
    where the link is gone because it is done (a repeat names the same); {} where the record holds none.
    `record` may be a Control Record or an event (its `snapshot`)."""
    part = "simulation" if name == "accept" else "acceptance"
    held = record.get(part) or (record.get("snapshot") or {}).get(part)
    return {} if not held else {f"{part}Id": held[f"{part}Id"]}
