"""The local HTTP servers (the APIs, the AWS endpoint, the fault proxy's control API, the dashboard): a
WSGI app served by werkzeug's threaded server on a daemon thread, started and stopped by whoever runs it.

werkzeug reads the request (Content-Length or chunked) and closes each connection after its answer, so no
request can be misframed into the next one: the servers that face agents and untrusted input (the APIs, the
fault proxy's control API, the dashboard) keep it so. The AWS endpoint, which only our own botocore clients
call, keeps its connections alive (`keep_alive=True`, HTTP/1.1 persistent connections): a connection opened
per call cost the endpoint and every client a connect, an accept and a thread each time. werkzeug's handler
cannot keep one (after each answer it reads whatever the socket holds, the next request included), so
_PersistentHandler answers instead: it gives the app the body alone (werkzeug's input stream, delimited by
the Content-Length or dechunked), reads what the app left of it (up to 64 KiB: more, and the connection
closes rather than read it), and answers with a Content-Length. A request with no valid framing, an HTTP/1.0
one, one that says `Connection: close`, an app that failed, and every answer while more than 256 connections
are open close the connection; one idle for 120 s is closed, and `stop()` ends the held ones.

What this module adds, the same on every server: a request whose body has no valid framing is refused as
RFC 9457 problem+json, and so is a request line or header werkzeug's handler cannot read (an HTML error
page otherwise); a HEAD is answered with the head alone, whatever app answers it; no line is logged per
request."""

from __future__ import annotations

import contextlib
import socket
import threading
import traceback
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import IO, Any, Self

from werkzeug import Request, Response
from werkzeug.exceptions import ClientDisconnected
from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler
from werkzeug.wsgi import ClosingIterator, get_input_stream

from shared.problems import PROBLEM_CONTENT_TYPE, problem_body

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

IDLE_SECONDS = 120  # a kept connection unused this long is closed (its thread ends)
PERSISTENT_LIMIT = 256  # past this many open connections, each answer closes its own
LEFTOVER_LIMIT = 64 * 1024  # what of a body the app did not read is read and dropped, up to this
STOP_SECONDS = 5.0  # how long stop() lets the requests in flight finish before it cuts their connections


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


class _PersistentHandler(_Handler):
    """_Handler, whose connection stays open after an answer when nothing about the request says otherwise
    (module docstring). The answer is buffered whole: it goes out with its Content-Length."""

    protocol_version = "HTTP/1.1"
    timeout = IDLE_SECONDS  # StreamRequestHandler sets it on the socket: an idle read ends the connection
    disable_nagle_algorithm = True  # an answer's head and body go out at once, not after a delayed ACK
    server: _Server

    def run_wsgi(self) -> None:
        if self.headers.get("Expect", "").lower().strip(" \t") == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        environ = self.make_environ()
        # A length of more than 18 digits (an exabyte) is no body anyone sends, and werkzeug reads one of more than
        # 4,300 as 0: the connection closes after its answer.
        framed = framing_refusal(Request(environ)) is None and len(environ.get("CONTENT_LENGTH", "")) <= 18
        if framed:  # the body alone, as werkzeug delimits it: what the app leaves of it is read below
            environ["wsgi.input"] = get_input_stream(environ)
            environ["wsgi.input_terminated"] = True
        body: IO[bytes] = environ["wsgi.input"]
        try:
            status, headers, content = _answer(self.server.app, environ)
        except (ConnectionError, TimeoutError, ClientDisconnected):  # gone mid-request: no one to answer
            self.close_connection = True
            return
        except Exception:
            self.server.log("error", f"Error on request:\n{traceback.format_exc()}")
            status, headers, content = _answer(
                problem_response(500, "internal-server-error", "Internal error", "the endpoint failed to answer", True),
                environ,
            )
            framed = False
        keep = (
            framed
            and self.request_version == "HTTP/1.1"  # HTTP/1.0 would need `Connection: keep-alive` said back
            and not self.close_connection  # `Connection: close`
            and self.server.may_hold()
            and _read_to_end(body, LEFTOVER_LIMIT)
        )
        try:
            self._send(status, headers, content, keep)
        except OSError:  # the client is gone, or a fault cut the connection (aws_faults ReplyLost)
            self.close_connection = True

    def _send(self, status: str, headers: list[tuple[str, str]], content: bytes, keep: bool) -> None:
        code, _, reason = status.partition(" ")
        self.send_response(int(code), reason or None)
        bodiless = self.command == "HEAD" or int(code) in (204, 304) or int(code) < 200
        for name, value in headers:
            if name.lower() not in _HOP_BY_HOP and (bodiless or name.lower() != "content-length"):
                self.send_header(name, value)
        if not bodiless:
            self.send_header("Content-Length", str(len(content)))
        if not keep:
            self.send_header("Connection", "close")  # the handler then ends the connection after this answer
        self.end_headers()
        if not bodiless:
            self.wfile.write(content)


_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding"})


def _answer(app: WsgiApp, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
    """What `app` answers to `environ`: status, headers and the whole body."""
    started: list[Any] = []
    written: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
        started[:] = [status, headers]
        return written.append

    iterable = app(environ, start_response)
    try:
        written.extend(iterable)
    finally:
        close = getattr(iterable, "close", None)
        if close is not None:
            close()
    if not started:
        raise RuntimeError("the app answered without calling start_response")
    return started[0], started[1], b"".join(written)


def _read_to_end(body: IO[bytes], limit: int) -> bool:
    """Read and drop what is left of a request's body, up to `limit` bytes: True if it ended there, so the
    next bytes on the connection are the next request's."""
    try:
        while limit >= 0:
            chunk = body.read(min(limit + 1, 65536))
            if not chunk:
                return True
            limit -= len(chunk)
    except Exception:  # a chunk werkzeug cannot read, a client gone mid-body: where the next request starts is unknown
        return False
    return False


class _Server(ThreadedWSGIServer):
    """werkzeug's threaded server, which knows its open connections: how many it has accepted (tests read it),
    whether one more may stay open, and which to end when it stops."""

    block_on_close = False  # stop() waits for the connections itself, with a guard: a kept one never ends alone

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.accepted = 0
        self._open: set[socket.socket] = set()
        self._changed = threading.Condition()
        self._stopping = False

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._changed:
            self.accepted += 1
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        with self._changed:
            self._open.discard(request)
            self._changed.notify_all()

    def may_hold(self) -> bool:
        """Whether the connection being answered may stay open."""
        with self._changed:
            return not self._stopping and len(self._open) <= PERSISTENT_LIMIT

    def end_connections(self, guard: float) -> None:
        """End every open connection: an idle one at once (its next read sees the end), one in flight after its
        answer; whatever is still open after `guard` seconds (a request that never finishes) is cut."""
        with self._changed:
            self._stopping = True
            for connection in self._open:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RD)
            if not self._changed.wait_for(lambda: not self._open, guard):
                for connection in self._open:
                    with contextlib.suppress(OSError):
                        connection.shutdown(socket.SHUT_RDWR)


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
    """`app` served on host:port (port 0 picks a free one) by a daemon thread named `name` once started;
    `keep_alive`: connections stay open between requests (the AWS endpoint's: module docstring)."""

    def __init__(self, app: WsgiApp, host: str, port: int, name: str, keep_alive: bool = False) -> None:
        # Bound here, not by werkzeug: on a busy port werkzeug prints its own lines and exits; this raises.
        # A backlog of 128, not socketserver's 5: a burst of concurrent agents would be reset.
        self._socket = socket.create_server((host, port), backlog=128)
        handler = _PersistentHandler if keep_alive else _Handler
        self._server = _Server(host, port, _framed(app), handler, fd=self._socket.fileno())
        self._thread = threading.Thread(target=self._server.serve_forever, name=name, daemon=True)

    @property
    def port(self) -> int:
        return int(self._socket.getsockname()[1])

    @property
    def connections_accepted(self) -> int:
        """How many connections it has accepted since it started."""
        return self._server.accepted

    @property
    def url(self) -> str:
        """Where it listens: `http://host:port`."""
        return f"http://{self._socket.getsockname()[0]}:{self.port}"

    def start(self) -> Self:
        """Serve, on the thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, end the open connections (module docstring) and close the socket."""
        self._server.shutdown()
        self._server.end_connections(STOP_SECONDS)
        self._server.server_close()
        self._socket.close()
        self._thread.join(timeout=5)
