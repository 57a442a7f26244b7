"""Lambda's concurrency model, locally: each container is a process that serves one request at a
time; more concurrent requests take more containers, started on demand (cold starts).

The handlers depend on it: Powertools' event handler keeps the request being handled in a class
attribute (`BaseRouter.current_event`), shared by every resolver in a process. In Lambda a process
never serves two requests at once; a threaded local server calling handlers in-process would mix
requests up. So each API's handler runs in its own pool of single-threaded worker processes."""

from __future__ import annotations

import atexit
import importlib
import multiprocessing
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from aws_lambda_powertools import Metrics

from shared.entry_points import Handler

_handler: Handler | None = None
# What an invocation emitted: each metric's values, by name.
Emitted = dict[str, list[float]]


# How often a container looks for its runtime: at most this long after `saga local` dies (even of a
# kill -9, which runs no cleanup), its containers are gone too.
PARENT_CHECK_SECONDS = 0.5


def _end_with(parent_pid: int) -> None:
    """Exit as soon as the runtime (`parent_pid`) is gone: an orphan is re-parented, so its parent pid
    changes. Portable (Linux's PR_SET_PDEATHSIG follows the thread that started the worker, which here
    may be a request's, and macOS has none); the pid is the one the runtime passed, so a runtime that
    died before this worker got here is seen too."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(0)  # no cleanup is owed to a runtime that is gone

    threading.Thread(target=watch, name="end-with-runtime", daemon=True).start()


def _end_at_once() -> None:
    """A container asked to stop ends as a Lambda container does, without tearing its interpreter down:
    on a loaded machine unloading what the function imported took ~0.7 s a container, and with 16 of them
    that was most of `saga local`'s stop. Registered before the function's entry is imported, it runs after
    every exit handler that import registers (atexit is last-in first-out); those registered earlier, as
    logging's, do not run, so it flushes what was written itself."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _start_container(entry: str, environment: dict[str, str], parent_pid: int) -> None:
    """Worker initializer: the function's environment, then its Lambda entry point imported, as a
    Lambda container's init does (the entry builds its composition root on the first invocation)."""
    global _handler  # noqa: PLW0603 - one handler per worker process, like a Lambda container
    _end_with(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runtime stops its containers itself
    atexit.register(_end_at_once)
    # Locally metrics are off (no CloudWatch); the entry's log_metrics would warn on every invocation.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    os.environ.update(environment)
    module, attribute = entry.rsplit(".", 1)
    _handler = getattr(importlib.import_module(module), attribute)


def _invoke(event: dict[str, Any], name: str, function_timeout: float) -> tuple[dict[str, Any], Emitted]:
    """The handler's result, and the metrics it emitted (locally they reach no CloudWatch: the runtime
    keeps them for its dashboard, saga/local/local_metrics.py)."""
    from saga.local.apigw import LambdaContextStub

    if _handler is None:
        raise RuntimeError("the container was not started")
    try:
        # The context's remaining time starts at the deployed function's timeout, as in Lambda.
        return _handler(event, LambdaContextStub(name, function_timeout)), emitted_metrics()
    finally:
        forget_metrics()


def emitted_metrics() -> Emitted:
    """The metrics this process's Powertools Metrics hold (an invocation's, until forget_metrics), by name."""
    return {name: list(metric["Value"]) for name, metric in Metrics().metric_set.items()}


def forget_metrics() -> None:
    """End an invocation's metrics, as the entry's flush does in Lambda. Locally metrics are off, and
    Powertools' flush then leaves them in place (shared by every Metrics of the process), until a metric
    holds 100 values and add_metric prints them all, off or not: a line of 100 zeros from the sweeper's
    gauges after ~8 minutes of `saga local`."""
    Metrics().clear_metrics()


def _started() -> bool:
    return _handler is not None


def _warm_one(event: dict[str, Any] | None, name: str, function_timeout: float, hold_seconds: float) -> int:
    """Invoke this container with `event` (if any), then stay busy `hold_seconds` so the pool hands the
    other warming tasks to its other containers; its process id."""
    if event is not None:
        _invoke(event, name, function_timeout)
    time.sleep(hold_seconds)
    return os.getpid()


class ContainerPool:
    """Invokes a function's Lambda entry point (`entry`, "module.function", the handler infra deploys)
    with its `environment`, in up to `max_containers` worker processes, each invocation with the
    function's timeout: what runs locally is what runs in AWS, entry point included."""

    def __init__(
        self,
        name: str,
        entry: str,
        environment: dict[str, str],
        max_containers: int = 4,
        *,
        function_timeout: float,
        on_metrics: Callable[[str, Emitted], None] | None = None,
    ) -> None:
        self.name = name
        self._on_metrics = on_metrics
        self.entry = entry
        self.max_containers = max_containers
        self.function_timeout = function_timeout
        self._warm_event: dict[str, Any] | None = None
        self._timeout = function_timeout + 30.0
        self._pool = ProcessPoolExecutor(
            max_workers=max_containers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_container,
            initargs=(entry, environment, os.getpid()),
        )

    def warm(self, event: dict[str, Any] | None = None) -> None:
        """Start one container now (and invoke it with `event`, if given, so that its composition
        root is built), so the first request is not a cold start."""
        if event is None:
            self._pool.submit(_started).result(timeout=self._timeout)
        else:
            self._warm_event = event
            self(event, None)

    def warm_all(self, hold_seconds: float = 0.2, hang_guard_seconds: float = 600.0) -> frozenset[int]:
        """Start every container the pool may run (each invoked with the event `warm` was given, if any),
        and return their process ids: a benchmark then times no cold start, and can read their CPU time.
        Warming tasks go out one per container at a time, until each container has served one."""
        warmed: set[int] = set()
        deadline = time.monotonic() + hang_guard_seconds
        while len(warmed) < self.max_containers:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: {len(warmed)} of {self.max_containers} containers warmed")
            tasks = [
                self._pool.submit(_warm_one, self._warm_event, self.name, self.function_timeout, hold_seconds)
                for _ in range(self.max_containers)
            ]
            warmed |= {task.result(timeout=self._timeout) for task in tasks}
        return frozenset(warmed)

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        result, emitted = self._pool.submit(_invoke, event, self.name, self.function_timeout).result(
            timeout=self._timeout
        )
        if emitted and self._on_metrics is not None:
            self._on_metrics(self.name, emitted)
        return result

    def stop(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
