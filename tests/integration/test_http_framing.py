"""The local HTTP server's framing: a request whose body cannot be delimited is answered
with a problem and the connection closed, never a hang or a silent drop; a chunked body reaches the
function whole. The local servers' own refusals of a request line or
headers too large to read are problem+json too, not http.server's HTML page. werkzeug frames every
request (saga/threaded_http.py) and closes each connection after its answer, except the AWS endpoint's, which it
keeps alive (tests/integration/test_keep_alive.py)."""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest

from saga.faultproxy.server import FaultProxyServer
from saga.local.http_server import ApiServer
from saga.threaded_http import ThreadedHttpServer
from shared.idempotency import read_key
from tests.support import ApiClient


def echo(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    """A function that answers what it received, so a test sees the body the server framed."""
    return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": json.dumps(event["body"])}


@pytest.fixture
def server() -> Iterator[ApiServer]:
    api = ApiServer("echo", echo, "127.0.0.1", 0).start()
    yield api
    api.stop()


@pytest.fixture(params=["api", "faultproxy-control"])
def any_server(request) -> Iterator[ThreadedHttpServer]:
    """Each local server that speaks HTTP to a client: an API, and the fault proxy's control API."""
    started: ThreadedHttpServer
    started = ApiServer("echo", echo, "127.0.0.1", 0) if request.param == "api" else FaultProxyServer("127.0.0.1", 0)
    started.start()
    yield started
    started.stop()


def exchange(server: ThreadedHttpServer, raw: bytes) -> bytes:
    """Send raw bytes, read until the server closes the connection or goes quiet for 3 s."""
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=3) as sock:
        sock.sendall(raw)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except TimeoutError:
            pass
        return received


def responses(received: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """The HTTP/1.1 responses in `received`, in order."""
    found = []
    while received:
        head, _, rest = received.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode().split("\r\n")
        headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in header_lines)}
        length = int(headers["content-length"])
        found.append((int(status_line.split()[1]), headers, rest[:length]))
        received = rest[length:]
    return found


@pytest.mark.parametrize("length", ["-1", "abc", "1e3", "10, 20"])
def test_an_invalid_content_length_is_a_400_problem_and_the_connection_closes(server, length):
    # Given a request whose Content-Length frames nothing
    raw = f"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: {length}\r\n\r\n{{}}".encode()
    # When it is sent
    [(status, headers, body)] = responses(exchange(server, raw))
    # Then 400 problem+json, at once (the exchange ends because the server closed the connection)
    assert status == 400
    assert headers["content-type"] == "application/problem+json"
    assert json.loads(body)["type"].endswith("bad-framing")


def test_content_length_and_chunked_together_are_refused(server):
    raw = b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    [(status, _, body)] = responses(exchange(server, raw))
    assert status == 400
    assert json.loads(body)["status"] == 400


def test_a_chunked_body_reaches_the_function_whole_and_the_answer_closes_the_connection(server):
    # Given a chunked request, then a second request on the same connection
    chunked = b'POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\n3\r\n 1}\r\n0\r\n\r\n'
    second = b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}"
    # When both are sent at once
    received = responses(exchange(server, chunked + second))
    # Then the function saw the body exactly, and the answer closed the connection: werkzeug serves one
    # request per connection, so no body can be misread into the next request (the client sends it again)
    assert [(status, headers["connection"], json.loads(body)) for status, headers, body in received] == [
        (200, "close", '{"a": 1}')
    ]


@pytest.mark.parametrize(
    "chunks",
    [b"zz\r\n{}\r\n0\r\n\r\n", b"-1\r\n{}\r\n0\r\n\r\n", b"\r\n{}\r\n0\r\n\r\n", b"2\r\n{}0\r\n\r\n",
     # werkzeug's reading of a chunked body knows no chunk extensions nor trailer fields, which no client
     # of these servers sends: refused as malformed, not passed on wrong
     b"2;ext=1\r\n{}\r\n0\r\n\r\n", b"2\r\n{}\r\n0\r\nX-T: 1\r\n\r\n"],
    ids=["not-hex", "negative", "empty-size", "no-crlf-after-chunk", "extension", "trailer"],
)  # fmt: skip
def test_a_malformed_chunk_is_a_400_problem(server, chunks):
    raw = b"POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks
    [(status, _, body)] = responses(exchange(server, raw))
    assert status == 400, body
    assert json.loads(body)["type"].endswith("bad-framing")


def test_an_unknown_transfer_coding_is_501(server):
    raw = b"POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
    [(status, _, _)] = responses(exchange(server, raw))
    assert status == 501


def test_a_caller_that_resets_mid_request_leaves_one_log_line_not_a_traceback(server, capfd):
    # Given a caller that sends half a request line, then resets the connection (as a cut reply does)
    host, port = server.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=3)
    sock.sendall(b"POST /x HT")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    # When the next caller sends a whole request
    answered = responses(
        exchange(server, b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
    )
    # Then it is served, and the reset left no traceback behind
    assert [status for status, _, _ in answered] == [200]
    assert "Traceback" not in capfd.readouterr().err


# http.server reads a request line and each header line up to 65,536 bytes, and at most 100 header lines.
LINE_LIMIT = 65536


@pytest.mark.parametrize(
    ("raw", "status", "slug"),
    [
        # Exactly one byte over, and nothing after it: the server reads all that was sent before it answers.
        (b"GET /" + b"a" * (LINE_LIMIT - 4), 414, "request-uri-too-long"),
        (b"GET / HTTP/1.1\r\nX-Big: " + b"a" * (LINE_LIMIT - 6), 431, "request-header-fields-too-large"),
        (
            b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(101)),
            431,
            "request-header-fields-too-large",
        ),
        (b"GET / HTTP/1.1 extra\r\n\r\n", 400, "bad-request"),
        (b"GET / HTTP/2.0\r\n\r\n", 505, "http-version-not-supported"),
    ],
    ids=["request-line-over-64-kib", "header-line-over-64-kib", "101-header-lines", "malformed-request-line", "http-2"],
)
def test_a_request_the_server_cannot_read_is_refused_with_a_problem_and_the_connection_closes(
    any_server, raw, status, slug
):
    # Given a request line or headers werkzeug's handler (http.server's parsing) refuses before any app sees them
    # When it is sent over a real socket
    [(answered, headers, body)] = responses(exchange(any_server, raw))
    # Then the status is RFC 9457 problem+json, and the server closed the connection (the exchange ended)
    assert answered == status
    assert headers["content-type"] == "application/problem+json"
    assert headers["connection"] == "close"
    problem = json.loads(body)
    assert problem["type"] == f"urn:loan-saga:problem:{slug}"
    assert problem["status"] == status
    assert problem["retryable"] is False
    assert problem["detail"]


def test_the_local_server_passes_a_keys_trailing_whitespace_on_and_the_key_rule_drops_it():
    # Given the local API server in front of a function that answers the Idempotency-Key it received
    def key_echo(event: dict[str, Any], _context: Any) -> dict[str, Any]:
        return {"statusCode": 200, "headers": {}, "body": json.dumps(event["headers"]["Idempotency-Key"])}

    server = ApiServer("keys", key_echo, "127.0.0.1", 0).start()
    try:
        # When a key is sent between spaces and tabs (optional whitespace, RFC 9110 section 5.5)
        raw = b"POST /x HTTP/1.1\r\nHost: t\r\nIdempotency-Key: \t k-1 \t\r\nConnection: close\r\n\r\n"
        [(_, _, body)] = responses(exchange(server, raw))
    finally:
        server.stop()
    # Then werkzeug (http.server's header parsing) dropped the leading whitespace but passed the trailing on (a
    # compliant server drops both), and the APIs' one key rule reads the key without it
    received = json.loads(body)
    assert received == "k-1 \t"
    assert read_key(received) == "k-1"


class _Started:
    """A server another fixture runs (the AWS endpoint): started and stopped there."""

    def __init__(self, url: str) -> None:
        self.url = url

    def start(self) -> _Started:
        return self

    def stop(self) -> None:
        """Its own fixture stops it."""


def _head_servers(name: str, orchestrator: ApiClient, loans_api: ApiClient, aws_url: str) -> Any:
    """Each local server, serving what `saga local` serves: the two APIs' real handlers (with and without
    a health check that says a part is down), the fault proxy's control API and the AWS endpoint (moto, behind
    the faults' control API)."""
    if name == "faultproxy-control":
        return FaultProxyServer("127.0.0.1", 0)
    if name == "aws":
        return _Started(aws_url)
    client = orchestrator if name.startswith("orchestrator") else loans_api
    health = (lambda: {"loansApi": True, "aws": False}) if name.endswith("down") else None
    return ApiServer(name, client.handler, "127.0.0.1", 0, health)


@pytest.mark.parametrize(
    "name", ["orchestrator", "orchestrator-down", "loans-api", "loans-api-down", "faultproxy-control", "aws"]
)
@pytest.mark.parametrize("path", ["/health", "/journeys", "/nowhere", "/_saga/faults"])
def test_a_head_answer_carries_no_body_on_each_local_server(name, path, orchestrator, loans_api, moto_server):
    # Given a local server (a refusal, a 503 of its own health check, or whatever the handler answers)
    server = _head_servers(name, orchestrator, loans_api, moto_server.url).start()
    try:
        # When it is asked HEAD, then GET on the same connection
        raw = f"HEAD {path} HTTP/1.1\r\nHost: t\r\n\r\nGET /version HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        received = exchange(server, raw.encode())
    finally:
        server.stop()
    # Then the HEAD's answer is a head alone: what follows its blank line is the next response's status line
    head, _, rest = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1."), f"no answer to HEAD {path} on {name}: {received[:300]!r}"
    assert rest.startswith(b"HTTP/1.") or rest == b"", (
        f"HEAD {path} on {name} answered content after its head: {rest[:300]!r}"
    )


@pytest.mark.parametrize("name", ["orchestrator", "faultproxy-control"])
def test_each_local_server_that_faces_agents_closes_the_connection_after_its_answer(
    name, orchestrator, loans_api, moto_server
):
    # Given a local server, and two requests sent at once on one connection
    server = _head_servers(name, orchestrator, loans_api, moto_server.url).start()
    try:
        # When both are sent
        raw = b"GET /version HTTP/1.1\r\nHost: t\r\n\r\nGET /version HTTP/1.1\r\nHost: t\r\n\r\n"
        received = responses(exchange(server, raw))
    finally:
        server.stop()
    # Then the first alone is answered, and the answer says the connection closes: what framing_refusal lets
    # through cannot shift where the next request starts, as no next request is read
    assert [headers.get("connection") for _, headers, _ in received] == ["close"], received
