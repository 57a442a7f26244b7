"""A small fault-injecting TCP proxy (asyncio) with a compatible subset of Toxiproxy's HTTP control
API, so the chaos tests run against it here and against a real Toxiproxy where one exists.

Supported: proxies (create, read, update enabled/upstream, delete), toxics `latency`, `timeout`,
`reset_peer` and `limit_data` on the `upstream` or `downstream` stream with a `toxicity`
(probability), and `POST /reset`. One difference from Toxiproxy, on purpose: Toxiproxy draws a
toxic's toxicity once per connection, so with HTTP keep-alive a connection that drew "no fault"
stays clean for every later request; here it is drawn again per request/response exchange (a
request after a reply), so `toxicity: 0.2` means about one request in five.

"The write committed, and the response was lost" is a downstream `limit_data` with `bytes: 0`: the
request reaches the server in full; the connection closes when the first byte of the reply comes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import socket
import struct
import threading
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import urllib3

TOXIC_TYPES = frozenset({"latency", "timeout", "reset_peer", "limit_data"})
STREAMS = frozenset({"upstream", "downstream"})
_CHUNK = 64 * 1024


class ProxyError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Toxic:
    name: str
    type: str
    stream: str = "downstream"
    toxicity: float = 1.0
    attributes: dict[str, Any] = field(default_factory=dict)
    # Not in Toxiproxy's API (its clients ignore it): how many times the toxic struck.
    applied: int = 0

    def attribute(self, name: str, default: float = 0) -> float:
        return float(self.attributes.get(name, default))


class _Connection:
    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream = upstream
        self.closed = asyncio.Event()
        self.draws: dict[str, bool] = {}
        self.last_stream: str | None = None

    def saw(self, stream: str) -> None:
        """Track the direction of traffic: a request after a reply starts a new exchange, and the
        toxics' toxicity is drawn again (see the module docstring)."""
        if stream == "upstream" and self.last_stream == "downstream":
            self.draws.clear()
        self.last_stream = stream

    def close(self, reset: bool = False) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        if reset:
            sock = self.client.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        for writer in (self.client, self.upstream):
            with contextlib.suppress(Exception):
                writer.close()


class Proxy:
    def __init__(self, name: str, listen: str, upstream: str, enabled: bool = True) -> None:
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.enabled = enabled
        self.toxics: dict[str, Toxic] = {}
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            "toxics": [asdict(t) for t in self.toxics.values()],
        }

    async def start(self) -> None:
        host, port = _split(self.listen)
        self._server = await asyncio.start_server(self._accept, host, port)
        bound = self._server.sockets[0].getsockname()
        self.listen = f"{bound[0]}:{bound[1]}"

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for connection in list(self._connections):
            connection.close()

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        if not self.enabled:
            client_writer.close()
            return
        try:
            host, port = _split(self.upstream)
            upstream_reader, upstream_writer = await asyncio.open_connection(host, port)
        except OSError:
            client_writer.close()
            return
        connection = _Connection(client_writer, upstream_writer)
        self._connections.add(connection)
        try:
            await asyncio.gather(
                self._pipe(client_reader, upstream_writer, "upstream", connection),
                self._pipe(upstream_reader, client_writer, "downstream", connection),
            )
        finally:
            connection.close()
            self._connections.discard(connection)

    def _active(self, stream: str, connection: _Connection) -> list[Toxic]:
        active = []
        for toxic in list(self.toxics.values()):
            if toxic.stream != stream:
                continue
            if toxic.name not in connection.draws:
                connection.draws[toxic.name] = random.random() < toxic.toxicity
            if connection.draws[toxic.name]:
                active.append(toxic)
        return active

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stream: str, connection: _Connection
    ) -> None:
        sent = 0
        while not connection.closed.is_set():
            try:
                data = await reader.read(_CHUNK)
            except (ConnectionError, OSError):
                break
            if not data:
                break
            connection.saw(stream)
            for toxic in self._active(stream, connection):
                if not await self._apply(toxic, data, sent, writer, connection):
                    return
            try:
                writer.write(data)
                await writer.drain()
            except (ConnectionError, OSError):
                break
            sent += len(data)
        connection.close()

    async def _apply(
        self, toxic: Toxic, data: bytes, sent: int, writer: asyncio.StreamWriter, connection: _Connection
    ) -> bool:
        """Apply one toxic to a chunk; False when the connection is finished."""
        toxic.applied += 1
        if toxic.type == "latency":
            jitter = toxic.attribute("jitter")
            await asyncio.sleep(max(0.0, toxic.attribute("latency") + random.uniform(-jitter, jitter)) / 1000)
            return True
        if toxic.type == "timeout":
            wait = toxic.attribute("timeout")
            if wait > 0:
                await asyncio.sleep(wait / 1000)
            while wait <= 0 and toxic.name in self.toxics and not connection.closed.is_set():
                await asyncio.sleep(0.05)
            connection.close()
            return False
        if toxic.type == "reset_peer":
            await asyncio.sleep(toxic.attribute("timeout") / 1000)
            connection.close(reset=True)
            return False
        allowed = int(toxic.attribute("bytes")) - sent  # limit_data
        if len(data) < allowed:
            return True
        if allowed > 0:
            writer.write(data[:allowed])
            with contextlib.suppress(Exception):
                await writer.drain()
        connection.close()
        return False


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "127.0.0.1", int(port)


class FaultProxyServer:
    """Proxies on an asyncio loop in a thread, managed through the HTTP control API."""

    def __init__(self, host: str = "127.0.0.1", control_port: int = 8474) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self._loop.run_forever, name="faultproxy", daemon=True)
        self.proxies: dict[str, Proxy] = {}
        self._lock = threading.Lock()
        outer = self

        class _Control(BaseHTTPRequestHandler):
            def _dispatch(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                    status, payload = outer.control(self.command, self.path, body)
                except ProxyError as error:
                    status, payload = error.status, {"error": str(error), "status": error.status}
                except (ValueError, KeyError, TypeError) as error:
                    status, payload = 400, {"error": f"bad request: {error}", "status": 400}
                data = b"" if payload is None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _dispatch

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self._http = ThreadingHTTPServer((host, control_port), _Control)
        self._http_thread = threading.Thread(target=self._http.serve_forever, name="faultproxy-api", daemon=True)

    @property
    def control_url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FaultProxyServer:
        self._loop_thread.start()
        self._http_thread.start()
        return self

    def stop(self) -> None:
        for proxy in list(self.proxies.values()):
            self._run(proxy.stop())
        self._http.shutdown()
        self._http.server_close()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._loop_thread.join(timeout=5)

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=10)

    # -- the control API ----------------------------------------------------------------------

    def control(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        parts = [p for p in path.split("?", maxsplit=1)[0].split("/") if p]
        with self._lock:
            if parts == ["version"]:
                return 200, "2.x-compatible (loan-saga faultproxy)"
            if parts == ["reset"] and method == "POST":
                for proxy in self.proxies.values():
                    proxy.toxics.clear()
                    proxy.enabled = True
                return 204, None
            if parts == ["proxies"]:
                if method == "GET":
                    return 200, {name: p.describe() for name, p in self.proxies.items()}
                if method == "POST":
                    return 201, self._create(body)
            if len(parts) >= 2 and parts[0] == "proxies":
                found = self.proxies.get(parts[1])
                if found is None:
                    raise ProxyError(404, f"proxy {parts[1]} not found")
                return self._proxy_route(found, method, parts[2:], body)
        raise ProxyError(404, f"no route {method} {path}")

    def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        name = str(body["name"])
        if name in self.proxies:
            raise ProxyError(409, f"proxy {name} already exists")
        proxy = Proxy(
            name, str(body.get("listen", "127.0.0.1:0")), str(body["upstream"]), bool(body.get("enabled", True))
        )
        self._run(proxy.start())
        self.proxies[name] = proxy
        return proxy.describe()

    def _proxy_route(self, proxy: Proxy, method: str, rest: list[str], body: dict[str, Any]) -> tuple[int, Any]:
        if rest:
            return self._toxic_route(proxy, method, rest, body)
        if method == "GET":
            return 200, proxy.describe()
        if method == "DELETE":
            self._run(proxy.stop())
            del self.proxies[proxy.name]
            return 204, None
        if method == "POST":
            proxy.enabled = bool(body.get("enabled", proxy.enabled))
            proxy.upstream = str(body.get("upstream", proxy.upstream))
            return 200, proxy.describe()
        raise ProxyError(405, f"{method} not allowed here")

    def _toxic_route(self, proxy: Proxy, method: str, rest: list[str], body: dict[str, Any]) -> tuple[int, Any]:
        if rest == ["toxics"] and method == "GET":
            return 200, [asdict(t) for t in proxy.toxics.values()]
        if rest == ["toxics"] and method == "POST":
            toxic = _toxic(body)
            if toxic.name in proxy.toxics:
                raise ProxyError(409, f"toxic {toxic.name} already exists")
            proxy.toxics[toxic.name] = toxic
            return 200, asdict(toxic)
        if len(rest) != 2 or rest[0] != "toxics":
            raise ProxyError(404, f"no route {'/'.join(rest)}")
        existing = proxy.toxics.get(rest[1])
        if existing is None:
            raise ProxyError(404, f"toxic {rest[1]} not found")
        if method == "DELETE":
            del proxy.toxics[rest[1]]
            return 204, None
        if method == "POST":
            existing.attributes.update(body.get("attributes", {}))
            existing.toxicity = float(body.get("toxicity", existing.toxicity))
        return 200, asdict(existing)


def _toxic(body: dict[str, Any]) -> Toxic:
    kind = str(body["type"])
    stream = str(body.get("stream", "downstream"))
    if kind not in TOXIC_TYPES:
        raise ProxyError(400, f"toxic type {kind} is not supported (supported: {sorted(TOXIC_TYPES)})")
    if stream not in STREAMS:
        raise ProxyError(400, f"stream must be upstream or downstream, not {stream}")
    return Toxic(
        name=str(body.get("name") or f"{kind}_{stream}"),
        type=kind,
        stream=stream,
        toxicity=float(body.get("toxicity", 1.0)),
        attributes=dict(body.get("attributes", {})),
    )


class ToxiproxyClient:
    """A client of the control API, ours or a real Toxiproxy's."""

    def __init__(self, control_url: str) -> None:
        self._url = control_url.rstrip("/")
        self._http = urllib3.PoolManager(timeout=urllib3.Timeout(connect=2, read=10), retries=False)

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self._http.request(
            method,
            self._url + path,
            body=None if body is None else json.dumps(body),
            headers={"Content-Type": "application/json"},
        )
        if response.status >= 400:
            raise ProxyError(response.status, response.data.decode(errors="replace"))
        return json.loads(response.data) if response.data else None

    def create_proxy(self, name: str, upstream: str, listen: str = "127.0.0.1:0") -> dict[str, Any]:
        return dict(
            self._call("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream, "enabled": True})
        )

    def add_toxic(
        self,
        proxy: str,
        kind: str,
        stream: str = "downstream",
        toxicity: float = 1.0,
        name: str | None = None,
        **attributes: Any,
    ) -> dict[str, Any]:
        body = {
            "name": name or f"{kind}_{stream}",
            "type": kind,
            "stream": stream,
            "toxicity": toxicity,
            "attributes": attributes,
        }
        return dict(self._call("POST", f"/proxies/{proxy}/toxics", body))

    def toxic(self, proxy: str, name: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/proxies/{proxy}/toxics/{name}"))

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def reset(self) -> None:
        self._call("POST", "/reset")

    def delete_proxy(self, proxy: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}")
