"""moto in server mode, in this process, as the local AWS endpoint.

moto's backends are not transactional under concurrent requests (a TransactWriteItems checks and
writes item by item, and rolls back by restoring a copy of the whole table), so every request is
served under one lock, and transactions are made all-or-nothing (moto_transactions): the endpoint
then behaves like DynamoDB's serializable transactions. In front of it, an AwsFaultInjector answers
chosen calls with the errors real AWS gives and moto never does (aws_faults)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import urllib3
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import BaseWSGIServer, make_server

from saga.local import moto_transactions
from saga.local.aws_faults import AwsFaultInjector, FaultRule


class _Serialized:
    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with self._lock:
            return list(self._app(environ, start_response))


class _QuietHandler(MotoRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """One line per AWS call would drown the runtime's own logs."""


class MotoServer:
    """A moto server on host:port (port 0 picks a free one), served by a daemon thread."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: tuple[FaultRule, ...] = (),
        fault_seed: int | None = None,
    ) -> None:
        moto_transactions.install()
        self._host = host
        self.faults = AwsFaultInjector(_Serialized(DomainDispatcherApplication(create_backend_app)), faults, fault_seed)
        app = self.faults
        self._server: BaseWSGIServer = make_server(host, port, app, threaded=True, request_handler=_QuietHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._server.server_port}"

    def start(self) -> MotoServer:
        self._thread.start()
        return self

    def reset(self) -> None:
        """Forget every resource (moto's backends are shared by the whole process)."""
        urllib3.request("POST", f"{self.url}/moto-api/reset")

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
