"""A free TCP port for a server another process will start (`saga local`, the docs' runtime, the bench).

Asking the kernel for port 0 and closing the socket hands out a port from the ephemeral range, the range
every outgoing connection takes its own port from: between the close and the server's bind, any client
on the machine may take it (under a parallel test run, one did, and `saga local` could not start). So
the ports come from below that range, where only listeners are, each tried by binding it first; parallel
test workers (pytest-xdist) each draw from a slice of their own."""

from __future__ import annotations

import os
import random
import socket
import threading
from collections.abc import Sequence

# Below Linux's default ephemeral range (32768-60999, /proc/sys/net/ipv4/ip_local_port_range) and
# macOS's (49152-65535); above the well-known and most registered services' ports.
LOWEST, HIGHEST = 20000, 32767

_given: set[int] = set()
# Its own generator: a test that seeds `random` must not make every process draw the same ports.
_random = random.SystemRandom()
_lock = threading.Lock()


def _slice() -> Sequence[int]:
    """This process's slice of the range: its xdist worker's (gw0, gw1, ...), or all of it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    size = (HIGHEST - LOWEST + 1) // max(workers, 1)
    start = LOWEST + (index % max(workers, 1)) * size
    return range(start, start + size)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now and this process has not handed out before."""
    ports = _slice()
    first = _random.randrange(len(ports))
    with _lock:
        for step in range(len(ports)):
            port = ports[(first + step) % len(ports)]
            if port in _given:
                continue
            with socket.socket() as sock:
                try:
                    sock.bind((host, port))
                except OSError:
                    continue
            _given.add(port)
            return port
    raise OSError(f"no free port in {ports[0]}-{ports[-1]}")
