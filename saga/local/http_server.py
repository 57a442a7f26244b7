"""A real threaded HTTP server in front of a Lambda proxy handler, as API Gateway (REST, proxy
integration) would put it: each request becomes a proxy event, the handler's result the response."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aws_lambda_powertools import Logger

from saga.local.apigw import LambdaContextStub, http_response, proxy_event
from saga.threaded_http import ProblemRequestHandler, ThreadedHttpServer
from shared.entry_points import Handler
from shared.problems import PROBLEM_CONTENT_TYPE, problem_body

logger = Logger(service="saga-local", child=True)
# API Gateway refuses payloads over 10 MB before the function sees them.
MAX_PAYLOAD_BYTES = 10 * 1024 * 1024
_HEX = re.compile(rb"[0-9a-fA-F]{1,16}")


class _Unframed(Exception):
    """A request whose body cannot be delimited: answered with a problem, then the connection closes."""

    def __init__(self, status: int, slug: str, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.slug, self.title, self.detail = status, slug, title, detail


def _read_body(request: BaseHTTPRequestHandler) -> bytes | None:
    """The request body, framed by Content-Length or chunked transfer coding (as API Gateway accepts
    both); _Unframed when neither frames it validly or it exceeds API Gateway's payload limit."""
    encodings = [value.strip().lower() for value in request.headers.get_all("Transfer-Encoding") or []]
    lengths = request.headers.get_all("Content-Length") or []
    if encodings:
        if lengths:
            raise _Unframed(400, "bad-framing", "Bad request framing", "send Content-Length or chunked, not both")
        if encodings != ["chunked"]:
            raise _Unframed(
                501, "unsupported-transfer-encoding", "Transfer encoding not supported", "only chunked is supported"
            )
        return _read_chunked(request)
    if not lengths:
        return None
    if len(set(lengths)) != 1 or not lengths[0].strip().isdigit():
        raise _Unframed(400, "bad-framing", "Bad request framing", "Content-Length must be one non-negative integer")
    length = int(lengths[0])
    if length > MAX_PAYLOAD_BYTES:
        raise _Unframed(413, "too-large", "Request body too large", f"the limit is {MAX_PAYLOAD_BYTES} bytes")
    return request.rfile.read(length) if length else None


def _read_chunked(request: BaseHTTPRequestHandler) -> bytes | None:
    body = bytearray()
    while True:
        size_line = request.rfile.readline(1026).split(b";")[0].strip()
        if not _HEX.fullmatch(size_line):
            raise _Unframed(400, "bad-framing", "Bad request framing", "a chunk size is not hexadecimal")
        size = int(size_line, 16)
        if len(body) + size > MAX_PAYLOAD_BYTES:
            raise _Unframed(413, "too-large", "Request body too large", f"the limit is {MAX_PAYLOAD_BYTES} bytes")
        if size == 0:
            while request.rfile.readline(65537).strip():  # trailer fields, up to the blank line
                pass
            return bytes(body) or None
        body += request.rfile.read(size)
        if request.rfile.read(2) != b"\r\n":
            raise _Unframed(400, "bad-framing", "Bad request framing", "a chunk is not followed by CRLF")


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: a burst of concurrent agents would be reset.
    request_queue_size = 128
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A caller that went away (an agent's timeout, a cut reply) is routine: one line, not a traceback."""
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            logger.info("caller went away", extra={"client": client_address, "error": repr(error)})
            return
        super().handle_error(request, client_address)


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
        outer = self

        class _Request(ProblemRequestHandler):
            protocol_version = "HTTP/1.1"

            def __getattr__(self, name: str) -> Any:
                # Every method goes to the function, as API Gateway's ANY method does.
                if name.startswith("do_"):
                    return lambda: outer._serve(self)
                raise AttributeError(name)

            def log_message(self, format: str, *args: Any) -> None:
                """The functions log each request themselves."""

        self._handler = handler
        self._health = health
        self._served = served
        super().__init__(_Server((host, port), _Request), f"http-{name}")

    def _serve(self, request: BaseHTTPRequestHandler) -> None:
        try:
            body = _read_body(request)
        except _Unframed as refused:
            # The request's framing is unknown, so is where the next one starts: answer and close.
            request.close_connection = True
            problem = problem_body(refused.status, refused.slug, refused.title, refused.detail, False)
            self._write(request, refused.status, {"Content-Type": PROBLEM_CONTENT_TYPE}, problem.encode())
            return
        if request.command == "GET" and request.path.split("?")[0] == "/health" and self._health is not None:
            parts = self._health()
            if not all(parts.values()):
                down = sorted(name for name, up in parts.items() if not up)
                problem = problem_body(503, "unhealthy", "Not ready", f"down: {', '.join(down)}", True, parts=parts)
                self._write(request, 503, {"Content-Type": PROBLEM_CONTENT_TYPE}, problem.encode())
                return
        event = proxy_event(request.command, request.path, dict(request.headers.items()), body)
        try:
            result = http_response(self._handler(event, LambdaContextStub(self.name)))
        except Exception:
            # What API Gateway answers when the function itself fails.
            logger.exception("function error", extra={"function": self.name})
            self._write(request, 502, {"Content-Type": "application/json"}, b'{"message": "Internal server error"}')
            return
        finally:
            if self._served is not None:  # before the reply is written: a reply that cannot be is a lost one
                self._served()
        self._write(request, result.status, result.headers, result.body)

    @staticmethod
    def _write(request: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes) -> None:
        """The response; to a HEAD, its head alone (RFC 9110 9.3.2: no content, whatever the status).
        Content-Length still says what a GET would carry, as the RFC allows."""
        request.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "connection"):
                request.send_header(name, value)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        if request.command != "HEAD":
            request.wfile.write(body)
