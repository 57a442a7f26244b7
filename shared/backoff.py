"""The pause before deciding a command again after losing a race for the journey (the ledger or the
record moved under it): short, random, and longer with each loss, so concurrent deciders spread out
instead of colliding again. loans-api and the orchestrator both decide again this way."""

from __future__ import annotations

import random


def after_lost_race(losses: int) -> float:
    """Seconds to pause after the `losses`-th lost race in a row (1 for the first)."""
    return random.uniform(0.005, 0.05) * losses
