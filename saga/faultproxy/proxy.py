"""The fault proxy's data plane: TCP proxies on an asyncio loop, each piping both directions through
its toxics (latency, timeout, reset_peer, limit_data), drawn per request/response exchange."""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
from dataclasses import asdict, dataclass, field
from typing import Any

TOXIC_TYPES = frozenset({"latency", "timeout", "reset_peer", "limit_data"})
STREAMS = frozenset({"upstream", "downstream"})
_CHUNK = 64 * 1024


class ProxyError(Exception):
    """A refused control request, with the HTTP status the control API answers it with."""

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
