"""tools/ports.py draws from a generator of its own: a test that seeds `random` does not make every
process hand out the same ports."""

from __future__ import annotations

import random

from tools import ports


def draws_after_seeding(monkeypatch, seed: int) -> list[int]:
    monkeypatch.setattr(ports, "_given", set())  # as a fresh process
    random.seed(seed)
    return [ports.free_port() for _ in range(5)]


def test_a_test_that_seeds_random_does_not_fix_the_ports_every_process_draws(monkeypatch):
    state = random.getstate()
    try:
        first, second = draws_after_seeding(monkeypatch, 8), draws_after_seeding(monkeypatch, 8)
    finally:
        random.setstate(state)
    assert first != second, f"two processes seeded alike draw the same ports: {first}"
