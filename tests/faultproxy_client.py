"""A client of the fault proxy's control API, ours or a real Toxiproxy's."""

from __future__ import annotations

import json
from typing import Any

import urllib3

from saga.faultproxy.proxy import ProxyError


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
