"""The ports handed to servers started in other processes: never one a client may hold, never twice."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tools import ports


def test_no_port_is_handed_out_twice_and_each_can_be_bound():
    given = [ports.free_port() for _ in range(200)]
    assert len(set(given)) == len(given)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", given[-1]))


def test_a_port_something_listens_on_is_never_handed_out(monkeypatch):
    taken, free = ports.free_port(), ports.free_port()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", taken))
        busy.listen()
        monkeypatch.setattr(ports, "_slice", lambda: [taken, free])
        monkeypatch.setattr(ports, "_given", set())
        assert ports.free_port() == free
        with pytest.raises(OSError, match="no free port"):
            ports.free_port()


def test_parallel_workers_draw_from_slices_of_their_own_below_the_ephemeral_range(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    slices = []
    for worker in ("gw0", "gw1", "gw2"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        slices.append(set(ports._slice()))
    assert sum(len(s) for s in slices) == len(set().union(*slices))  # no port in two slices
    assert all(len(s) > 4000 for s in slices)
    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range")
    lowest_ephemeral = int(ephemeral.read_text().split()[0]) if ephemeral.exists() else 32768
    assert max(max(s) for s in slices) < lowest_ephemeral
