"""X-Ray tracing of a Lambda entry, with the X-Ray SDK imported only when a traced invocation needs it.

Powertools' `Tracer()` imports `aws_xray_sdk.core` as it is constructed, even with tracing disabled
(`POWERTOOLS_TRACE_DISABLED` or outside Lambda), and outside Lambda the SDK's recorder also builds a
botocore X-Ray client: ~100 ms of every cold start here. `LazyTracer` builds the same Tracer at the
first invocation that is traced, so in AWS (active tracing) the function's segment gets the same
subsegments (the handler, and every DynamoDB/SNS/HTTP call, patched by the Tracer as before), and
where tracing is off the SDK is never imported."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Tracer

Handler = TypeVar("Handler", bound=Callable[[Any, Any], Any])


class LazyTracer:
    """A Powertools Tracer made on first use; `capture_lambda_handler` as Tracer's."""

    def __init__(self) -> None:
        self._tracer: Tracer | None = None

    @staticmethod
    def enabled() -> bool:
        """Tracer's own rule: on in Lambda unless POWERTOOLS_TRACE_DISABLED (or a SAM/Chalice emulator)."""
        return not Tracer._is_tracer_disabled()

    @property
    def tracer(self) -> Tracer:
        if self._tracer is None:
            self._tracer = Tracer()
        return self._tracer

    def capture_lambda_handler(self, handler: Handler) -> Handler:
        traced: Callable[[Any, Any], Any] | None = None

        @functools.wraps(handler)
        def wrapper(event: Any, context: Any) -> Any:
            nonlocal traced
            if traced is None:
                traced = self.tracer.capture_lambda_handler(handler) if self.enabled() else handler
            return traced(event, context)

        return wrapper  # type: ignore[return-value]
