"""An HTTP server that serves on a daemon thread: the local runtime's APIs and the fault proxy's
control API, each started and stopped by whoever runs it, and the request handler both build on."""

from __future__ import annotations

import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

from shared.problems import PROBLEM_CONTENT_TYPE, problem_body


class ProblemRequestHandler(BaseHTTPRequestHandler):
    """A request handler whose own refusals are RFC 9457 problem+json, as every other error of this
    system is, not http.server's HTML page: a request line over 64 KiB (414), a header line over 64 KiB
    or more than 100 header lines (431), a request line it cannot parse (400), an HTTP version it does
    not speak (505). Each closes the connection: where the next request starts is unknown."""

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        status = HTTPStatus(code)
        slug = status.phrase.lower().replace(" ", "-")
        body = problem_body(code, slug, status.phrase, explain or message or status.description, False).encode()
        self.log_error("code %d, message %s", code, message or status.phrase)
        if self.request_version == "HTTP/0.9":
            # http.server's version until it has read one: it would send the body bare, with no status line.
            self.request_version = self.protocol_version
        self.send_response(code, message)
        self.send_header("Connection", "close")
        self.send_header("Content-Type", PROBLEM_CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class ThreadedHttpServer:
    """`server` (already bound) served on a daemon thread named `name` once started."""

    def __init__(self, server: ThreadingHTTPServer, name: str) -> None:
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)

    @property
    def url(self) -> str:
        """Where it listens: `http://host:port`."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        """Serve, on the thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
