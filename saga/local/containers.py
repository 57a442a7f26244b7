"""Lambda's concurrency model, locally: each container is a process that serves one request at a
time; more concurrent requests take more containers, started on demand (cold starts).

The handlers depend on it: Powertools' event handler keeps the request being handled in a class
attribute (`BaseRouter.current_event`), shared by every resolver in a process. In Lambda a process
never serves two requests at once; a threaded local server calling handlers in-process would mix
requests up. So each API's handler runs in its own pool of single-threaded worker processes."""

from __future__ import annotations

import importlib
import multiprocessing
import signal
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from aws_lambda_powertools import Metrics

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

_handler: Handler | None = None
_metrics: Metrics | None = None


def _start_container(factory: str, settings: Any, name: str) -> None:
    """Worker initializer: build the function once per container, as its cold start would."""
    global _handler, _metrics  # noqa: PLW0603 - one handler per worker process, like a Lambda container
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runtime stops its containers itself
    module, attribute = factory.split(":")
    _metrics = Metrics(namespace="LoanSaga", service=name)
    _handler = getattr(importlib.import_module(module), attribute)(settings, _metrics)


def _invoke(event: dict[str, Any], name: str, function_timeout: float) -> dict[str, Any]:
    from saga.local.apigw import LambdaContextStub

    if _handler is None or _metrics is None:
        raise RuntimeError("the container was not started")
    try:
        # The context's remaining time starts at the deployed function's timeout, as in Lambda.
        return _handler(event, LambdaContextStub(name, function_timeout))
    finally:
        if _metrics.metric_set:
            _metrics.flush_metrics()


class ContainerPool:
    """Invokes a function built by `factory` ("module:callable" taking Settings and Metrics) in up
    to `max_containers` worker processes, each invocation with the function's timeout."""

    def __init__(self, name: str, factory: str, settings: Any, max_containers: int = 4,
                 function_timeout: float = 30.0) -> None:  # fmt: skip
        self.name = name
        self._function_timeout = function_timeout
        self._timeout = function_timeout + 30.0
        self._pool = ProcessPoolExecutor(
            max_workers=max_containers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_container,
            initargs=(factory, settings, name),
        )

    def warm(self) -> None:
        """Start one container now, so the first request is not a cold start."""
        from saga.local.apigw import proxy_event

        event = proxy_event("GET", "/health", {}, None)
        self._pool.submit(_invoke, event, self.name, self._function_timeout).result(timeout=self._timeout)

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        return self._pool.submit(_invoke, event, self.name, self._function_timeout).result(timeout=self._timeout)

    def stop(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
