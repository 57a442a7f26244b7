"""CPU time, the figure a busy machine cannot inflate much: what the processes doing the work (a function's
process or containers, the AWS endpoint) spent on the CPU, read beside the wall time it took.

Another process's CPU time is read from /proc/<pid>/stat (Linux, where `make bench` runs; in clock ticks,
usually 10 ms: the figures that use it sum hundreds of ms or more). This process's is `time.process_time()`
(every thread of it, to the nanosecond)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process `pid` has used so far (its threads included, not its children)."""
    if pid == os.getpid():
        return time.process_time()
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError as missing:
        raise RuntimeError(
            f"cannot read process {pid}'s CPU time: /proc/{pid}/stat is missing (the benchmark's CPU figures "
            "need Linux's /proc, or the process has ended)"
        ) from missing
    # The command name (field 2) is in parentheses and may hold spaces: the fields after it start at its ")".
    fields = stat[stat.rindex(")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / _TICKS


def cpu_seconds(pids: Iterable[int]) -> float:
    return sum(process_cpu_seconds(pid) for pid in pids)


@dataclass(frozen=True)
class Interval:
    """What a stretch of work took: wall seconds, and CPU seconds of each group of processes watched."""

    wall: float
    cpu: dict[str, float]


class Stopwatch:
    """Wall time and the CPU time of named groups of processes, from `start()` to `stop()`."""

    def __init__(self, groups: Mapping[str, Iterable[int]]) -> None:
        self._groups = {name: tuple(pids) for name, pids in groups.items()}
        self._wall = 0.0
        self._cpu: dict[str, float] = {}

    def start(self) -> Stopwatch:
        self._cpu = {name: cpu_seconds(pids) for name, pids in self._groups.items()}
        self._wall = time.monotonic()
        return self

    def stop(self) -> Interval:
        wall = time.monotonic() - self._wall
        return Interval(wall, {name: cpu_seconds(pids) - self._cpu[name] for name, pids in self._groups.items()})


def load_average() -> list[float]:
    """The machine's 1, 5 and 15 minute load averages (what else was running, beside the figures)."""
    return [round(value, 2) for value in os.getloadavg()]


_REFERENCE_DOCUMENT = {"journeyId": "j" * 36, "seq": 7, "items": [{"amount": "10000.00", "term": 36}] * 20}


def reference_ms(runs: int = 7) -> float:
    """CPU ms of a fixed piece of pure-Python work (JSON in and out, dicts, integers), median of `runs`: the
    yardstick that no change to the system moves. A figure divided by it is in units of this machine's speed
    at the time (a core shared with a busy neighbour, a slower machine, read alike), so a figure recorded on
    one run can be compared with another's."""
    times = []
    for _ in range(runs):
        started = time.thread_time()
        for index in range(2000):
            document = json.loads(json.dumps({**_REFERENCE_DOCUMENT, "seq": index}))
            sum(item["term"] * index for item in document["items"])
        times.append(time.thread_time() - started)
    return sorted(times)[runs // 2] * 1000
