"""The fault proxy: each toxic does what Toxiproxy's does, behind a compatible control API."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import urllib3

from saga.faultproxy.proxy import ProxyError
from saga.faultproxy.server import FaultProxyServer
from tests.faultproxy_client import ToxiproxyClient
from tests.system import free_port


class _Upstream(BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        body = b"hello" * 100
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def upstream():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def proxied(upstream):
    server = FaultProxyServer("127.0.0.1", free_port()).start()
    client = ToxiproxyClient(server.control_url)
    proxy = client.create_proxy("up", upstream=upstream)
    yield client, f"http://{proxy['listen']}"
    server.stop()


def get(url: str, read_timeout: float = 60.0):  # a hang guard: the toxics that cut a reply close the connection
    return urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=2, read=read_timeout)).request(
        "GET", url + "/x"
    )


def test_without_toxics_a_reply_passes_whole(proxied):
    _, url = proxied
    assert get(url).data == b"hello" * 100


def test_limit_data_downstream_zero_loses_the_reply_after_the_request_arrived(proxied):
    client, url = proxied
    client.add_toxic("up", "limit_data", stream="downstream", bytes=0)
    before = _Upstream.hits
    with pytest.raises(urllib3.exceptions.ProtocolError):
        get(url)
    assert _Upstream.hits == before + 1  # the server handled it: the write "committed"


def test_latency_delays_a_reply_and_timeout_and_reset_peer_cut_the_connection(proxied):
    client, url = proxied
    client.add_toxic("up", "latency", stream="downstream", latency=300)
    started = time.monotonic()
    get(url)
    assert time.monotonic() - started >= 0.3
    client.reset()
    client.add_toxic("up", "timeout", stream="upstream", timeout=200)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        get(url)
    client.reset()
    client.add_toxic("up", "reset_peer", stream="upstream", timeout=0)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        get(url)


def test_a_toxicity_of_zero_never_applies(proxied):
    client, url = proxied
    client.add_toxic("up", "limit_data", stream="downstream", toxicity=0.0, bytes=0)
    assert get(url).status == 200


def test_the_control_api_answers_409_for_a_second_proxy_400_for_an_unknown_toxic_404_for_a_missing_one(proxied):
    client, _ = proxied
    with pytest.raises(ProxyError) as duplicate:
        client.create_proxy("up", upstream="127.0.0.1:1")
    assert duplicate.value.status == 409
    with pytest.raises(ProxyError) as unsupported:
        client.add_toxic("up", "bandwidth", rate=1)
    assert unsupported.value.status == 400
    with pytest.raises(ProxyError) as missing:
        client.remove_toxic("up", "nope")
    assert missing.value.status == 404


def test_toxicity_is_drawn_per_exchange_on_a_kept_alive_connection(proxied):
    client, url = proxied
    client.add_toxic("up", "limit_data", stream="downstream", toxicity=0.5, bytes=0)
    pool = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=2, read=60), maxsize=1)
    outcomes = []
    for _ in range(60):
        try:
            pool.request("GET", url + "/x")
            outcomes.append(True)
        except urllib3.exceptions.ProtocolError:
            outcomes.append(False)
    # Both outcomes happen many times, though a surviving connection is reused
    assert 10 < outcomes.count(False) < 50
