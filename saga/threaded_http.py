"""An HTTP server that serves on a daemon thread: the local runtime's APIs and the fault proxy's
control API, each started and stopped by whoever runs it."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Self


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
