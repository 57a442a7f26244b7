"""A real threaded HTTP server in front of a Lambda proxy handler, as API Gateway (REST, proxy
integration) would put it: each request becomes a proxy event, the handler's result the response."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from aws_lambda_powertools import Logger
from werkzeug import Request, Response
from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge

from saga.local.apigw import LambdaContextStub, http_response, proxy_event
from saga.threaded_http import ThreadedHttpServer, problem_response
from shared.entry_points import Handler

logger = Logger(service="saga-local", child=True)
# API Gateway refuses payloads over 10 MB before the function sees them.
MAX_PAYLOAD_BYTES = 10 * 1024 * 1024


class _Request(Request):
    max_content_length = MAX_PAYLOAD_BYTES


class _Response(Response):
    default_mimetype = None  # the function's headers alone say what the body is, as API Gateway passes them


class ApiServer(ThreadedHttpServer):
    """Serves `handler` on host:port. `health` (when given) must say True for GET /health to reach
    the handler; otherwise the server answers 503 itself, naming the parts that are down. `served` (when
    given) is called once the handler has run for a request, whether it answered or failed, before its
    reply is written (a reply lost on the way out changes nothing that was committed)."""

    def __init__(
        self,
        name: str,
        handler: Handler,
        host: str,
        port: int,
        health: Callable[[], dict[str, bool]] | None = None,
        served: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self._handler = handler
        self._health = health
        self._served = served
        super().__init__(self._serve, host, port, f"http-{name}")

    def _serve(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        return self._answer(_Request(environ))(environ, start_response)

    def _answer(self, request: Request) -> Response:
        try:
            body = request.get_data() or None
        except RequestEntityTooLarge:
            return problem_response(
                413, "too-large", "Request body too large", f"the limit is {MAX_PAYLOAD_BYTES} bytes"
            )
        except (ClientDisconnected, OSError):  # how werkzeug's reading of a chunked body says a chunk is not one
            return problem_response(400, "bad-framing", "Bad request framing", "a chunk is malformed")
        if request.method == "GET" and request.path == "/health" and self._health is not None:
            parts = self._health()
            if not all(parts.values()):
                down = sorted(name for name, up in parts.items() if not up)
                return problem_response(503, "unhealthy", "Not ready", f"down: {', '.join(down)}", True, parts=parts)
        # The request line's target as sent (werkzeug's REQUEST_URI): the query string and escapes as they came.
        event = proxy_event(request.method, request.environ["REQUEST_URI"], dict(request.headers.items()), body)
        try:
            result = http_response(self._handler(event, LambdaContextStub(self.name)))
        except Exception:
            # What API Gateway answers when the function itself fails.
            logger.exception("function error", extra={"function": self.name})
            return _Response(b'{"message": "Internal server error"}', 502, content_type="application/json")
        finally:
            if self._served is not None:  # before the reply is written: a reply that cannot be is a lost one
                self._served()
        headers = {k: v for k, v in result.headers.items() if k.lower() not in ("content-length", "connection")}
        return _Response(result.body, result.status, headers)
