"""The shell every function's Lambda entry wears (the entries are named in shared/entry_points.py): the
function's settings read from its environment and its composition root built once per container, at the
first invocation, and Powertools' logger, tracer and metrics around every invocation."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from aws_lambda_powertools import Logger, Metrics

from shared.entry_points import Handler
from shared.settings import BaseSettings
from shared.tracing import LazyTracer

S = TypeVar("S", bound=BaseSettings)


class LambdaEntry(Generic[S]):
    """A Lambda entry point: `build(settings, metrics)` (the function's composition root, with its settings
    from the environment) made at the first invocation and kept for the container's life (`built`, which
    the cold-start benchmark calls to time it apart), answering every invocation inside Powertools'
    decorators. `name` is the entry's in its handler module (the tracer's "## name" subsegment)."""

    def __init__(
        self,
        settings: type[S],
        build: Callable[[S, Metrics], Handler],
        correlation_id_path: str | None = None,
        name: str = "lambda_handler",
    ) -> None:
        # Made as the handler module is imported: in the container, after its environment is set.
        logger, tracer, metrics = Logger(), LazyTracer(), Metrics()
        self.built: Callable[[], Handler] = functools.cache(lambda: build(settings.from_env(os.environ), metrics))

        def entry(event: dict[str, Any], context: Any) -> dict[str, Any]:
            return self.built()(event, context)

        entry.__name__ = entry.__qualname__ = name
        # Powertools' decorators, outermost first: the Lambda context in every log line, the invocation
        # traced, the metrics flushed as it ends.
        self._entry: Handler = logger.inject_lambda_context(correlation_id_path=correlation_id_path)(
            tracer.capture_lambda_handler(metrics.log_metrics(entry))
        )

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        return self._entry(event, context)
