"""The local HTTP servers (the APIs, the AWS endpoint, the fault proxy's control API, the dashboard): a
WSGI app served by werkzeug's threaded server on a daemon thread, started and stopped by whoever runs it.

werkzeug reads the request (Content-Length or chunked) and closes each connection after its answer, so no
request can be misframed into the next one. What this module adds, the same on every server: a request
whose body has no valid framing is refused as RFC 9457 problem+json, and so is a request line or header
werkzeug's handler cannot read (an HTML error page otherwise); a HEAD is answered with the
head alone, whatever app answers it; no line is logged per request."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any, Self

from werkzeug import Request, Response
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wsgi import ClosingIterator

from shared.problems import PROBLEM_CONTENT_TYPE, problem_body

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def problem_response(
    status: int, slug: str, title: str, detail: str, retryable: bool = False, **extra: Any
) -> Response:
    """An RFC 9457 answer, as every error of this system is."""
    body = problem_body(status, slug, title, detail, retryable, **extra)
    return Response(body, status, content_type=PROBLEM_CONTENT_TYPE)


def framing_refusal(request: Request) -> Response | None:
    """The answer to a request whose body cannot be delimited as sent, or None. werkzeug would read a
    Content-Length that is no length as 0 and chunked beside a Content-Length as chunked: the app would
    see a body other than the one sent. Only chunked is a transfer coding anyone sends here."""
    codings = [c.strip().lower() for c in request.headers.get("Transfer-Encoding", "").split(",") if c.strip()]
    lengths = request.headers.getlist("Content-Length")
    if codings and lengths:
        return problem_response(400, "bad-framing", "Bad request framing", "send Content-Length or chunked, not both")
    if codings and codings != ["chunked"]:
        return problem_response(
            501, "unsupported-transfer-encoding", "Transfer encoding not supported", "only chunked is supported"
        )
    if lengths and (len(lengths) != 1 or not lengths[0].strip(" \t").isdigit() or not lengths[0].isascii()):
        detail = "Content-Length must be one non-negative integer"
        return problem_response(400, "bad-framing", "Bad request framing", detail)
    return None


class _Handler(WSGIRequestHandler):
    """werkzeug's request handler, quiet, its own refusals problem+json: a request line over 64 KiB
    (414), a header line over 64 KiB or more than 100 header lines (431), a request line it cannot parse
    (400), an HTTP version it does not speak (505). Each closes the connection."""

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        status = HTTPStatus(code)
        slug = status.phrase.lower().replace(" ", "-")
        body = problem_body(code, slug, status.phrase, explain or message or status.description, False).encode()
        if self.request_version == "HTTP/0.9":
            # The handler's version until it has read one: it would send the body bare, with no status line.
            self.request_version = self.protocol_version
        self.send_response(code, message)
        self.send_header("Connection", "close")
        self.send_header("Content-Type", PROBLEM_CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """One line per request would drown the runtime's own logs."""

    def log_error(self, format: str, *args: Any) -> None:
        """werkzeug's own (a refused request line) are answered in problem+json; nothing to add."""


def _framed(app: WsgiApp) -> WsgiApp:
    """`app` behind the refusals every local server makes, its answer to a HEAD cut to the head."""

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        refused = framing_refusal(Request(environ))
        if refused is not None:
            return refused(environ, start_response)
        answer = app(environ, start_response)
        if environ["REQUEST_METHOD"] != "HEAD":
            return answer
        # RFC 9110 9.3.2: no content, whatever the status; Content-Length still says what a GET would carry.
        return ClosingIterator([], getattr(answer, "close", None))

    return serve


class ThreadedHttpServer:
    """`app` served on host:port (port 0 picks a free one) by a daemon thread named `name` once started."""

    def __init__(self, app: WsgiApp, host: str, port: int, name: str) -> None:
        # Bound here, not by werkzeug: on a busy port werkzeug prints its own lines and exits; this raises.
        # A backlog of 128, not socketserver's 5: a burst of concurrent agents would be reset.
        self._socket = socket.create_server((host, port), backlog=128)
        self._server: BaseWSGIServer = make_server(
            host, port, _framed(app), threaded=True, request_handler=_Handler, fd=self._socket.fileno()
        )
        self._thread = threading.Thread(target=self._server.serve_forever, name=name, daemon=True)

    @property
    def port(self) -> int:
        return int(self._socket.getsockname()[1])

    @property
    def url(self) -> str:
        """Where it listens: `http://host:port`."""
        return f"http://{self._socket.getsockname()[0]}:{self.port}"

    def start(self) -> Self:
        """Serve, on the thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._socket.close()
        self._thread.join(timeout=5)
