"""The fault proxy's control API (Toxiproxy's, the supported subset): proxies created, changed and
deleted, toxics added and removed, over HTTP, while the proxies run on their own asyncio loop."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict
from typing import Any, Self

from werkzeug import Request, Response

from saga.faultproxy.proxy import STREAMS, TOXIC_TYPES, Proxy, ProxyError, Toxic
from saga.threaded_http import ThreadedHttpServer


class FaultProxyServer(ThreadedHttpServer):
    """Proxies on an asyncio loop in a thread, managed through the HTTP control API."""

    def __init__(self, host: str = "127.0.0.1", control_port: int = 8474) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self._loop.run_forever, name="faultproxy", daemon=True)
        self.proxies: dict[str, Proxy] = {}
        self._lock = threading.Lock()
        super().__init__(self._serve, host, control_port, "faultproxy-api")

    def _serve(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        request = Request(environ)
        try:
            raw = request.get_data()
            body = json.loads(raw) if raw else {}
            status, payload = self.control(request.method, request.path, body)
        except ProxyError as error:
            status, payload = error.status, {"error": str(error), "status": error.status}
        except (ValueError, KeyError, TypeError) as error:
            status, payload = 400, {"error": f"bad request: {error}", "status": 400}
        data = b"" if payload is None else json.dumps(payload).encode()
        return Response(data, status, content_type="application/json")(environ, start_response)

    @property
    def control_url(self) -> str:
        """Where the control API listens."""
        return self.url

    def start(self) -> Self:
        """The proxies' loop, then the control API."""
        self._loop_thread.start()
        return super().start()

    def stop(self) -> None:
        """Every proxy, the control API, then the loop."""
        for proxy in list(self.proxies.values()):
            self._run(proxy.stop())
        super().stop()
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
