"""A real threaded HTTP server in front of a Lambda proxy handler, as API Gateway (REST, proxy
integration) would put it: each request becomes a proxy event, the handler's result the response."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aws_lambda_powertools import Logger

from saga.local.apigw import LambdaContextStub, http_response, proxy_event

logger = Logger(service="saga-local", child=True)
ProxyHandler = Callable[[dict[str, Any], Any], dict[str, Any]]
# API Gateway refuses payloads over 10 MB before the function sees them.
MAX_PAYLOAD_BYTES = 10 * 1024 * 1024


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: a burst of concurrent agents would be reset.
    request_queue_size = 128
    daemon_threads = True


class ApiServer:
    """Serves `handler` on host:port. `health` (when given) must say True for GET /health to reach
    the handler; otherwise the server answers 503 itself, naming the parts that are down."""

    def __init__(
        self,
        name: str,
        handler: ProxyHandler,
        host: str,
        port: int,
        health: Callable[[], dict[str, bool]] | None = None,
    ) -> None:
        self.name = name
        outer = self

        class _Request(BaseHTTPRequestHandler):
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
        self._server = _Server((host, port), _Request)
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"http-{name}", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ApiServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _serve(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        if length > MAX_PAYLOAD_BYTES:
            self._write(request, 413, {"Content-Type": "application/json"}, b'{"message":"Request Too Long"}')
            request.close_connection = True
            return
        body = request.rfile.read(length) if length else None
        if request.command == "GET" and request.path.split("?")[0] == "/health" and self._health is not None:
            parts = self._health()
            if not all(parts.values()):
                down = sorted(name for name, up in parts.items() if not up)
                payload = {
                    "type": "urn:loan-saga:problem:unhealthy",
                    "title": "Not ready",
                    "status": 503,
                    "detail": f"down: {', '.join(down)}",
                    "retryable": True,
                    "parts": parts,
                }
                self._write(request, 503, {"Content-Type": "application/problem+json"}, json.dumps(payload).encode())
                return
        event = proxy_event(request.command, request.path, dict(request.headers.items()), body)
        try:
            result = http_response(self._handler(event, LambdaContextStub(self.name)))
        except Exception:
            # What API Gateway answers when the function itself fails.
            logger.exception("function error", extra={"function": self.name})
            self._write(request, 502, {"Content-Type": "application/json"}, b'{"message": "Internal server error"}')
            return
        self._write(request, result.status, result.headers, result.body)

    @staticmethod
    def _write(request: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes) -> None:
        request.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "connection"):
                request.send_header(name, value)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)
