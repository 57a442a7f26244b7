"""The AWS endpoint keeps its connections alive (saga/threaded_http.py, `keep_alive=True`): one client's calls
share one connection, and keeping it never lets one request's bytes be read as the next one: a body the app
ignores, pipelined requests, chunked bodies, framing refusals, errors and cut replies each end where they
should. Idle connections end when the server stops, when they idle too long, and past the open limit."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from saga import threaded_http
from saga.local.aws_faults import FaultRule
from saga.local.moto_server import MotoServer
from saga.threaded_http import ThreadedHttpServer
from shared import aws

HANG_GUARD_SECONDS = 60  # a read or a stop that takes this long has hung: no healthy run comes near it

# A body shaped like a request: a server that read it as the next request would answer "/smuggled".
SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n"


def path_echo(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """An app that ignores every body and answers its request's path (or fails on /fail)."""
    if environ["PATH_INFO"] == "/fail":
        raise RuntimeError("the app failed")
    body = environ["PATH_INFO"].encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


@pytest.fixture
def kept() -> Iterator[ThreadedHttpServer]:
    server = ThreadedHttpServer(path_echo, "127.0.0.1", 0, "kept", keep_alive=True).start()
    yield server
    server.stop()


def connect(server: ThreadedHttpServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=HANG_GUARD_SECONDS)


class Answers:
    """The responses read off one connection, in order, each (status, headers, body)."""

    def __init__(self, sock: socket.socket) -> None:
        self._file = sock.makefile("rb")

    def next(self, to_head: bool = False) -> tuple[int, dict[str, str], bytes] | None:
        """The next response (`to_head`: an answer to HEAD, no body whatever its length), or None if the
        server closed the connection first."""
        status_line = self._file.readline()
        if not status_line:
            return None
        headers: dict[str, str] = {}
        while (line := self._file.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        length = 0 if to_head else int(headers.get("content-length", "0"))
        return int(status_line.split()[1]), headers, self._file.read(length)

    def closed(self) -> bool:
        """Whether the server ends the connection here (not one byte more)."""
        return self._file.read(1) == b""


def request(method: str, path: str, body: bytes = b"", extra: str = "") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    return head.encode() + body


def chunked(path: str, body: bytes) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    return head + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


@pytest.mark.parametrize("pipelined", [True, False], ids=["pipelined", "one-after-the-other"])
@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_body_the_app_ignores_is_not_read_as_the_next_request(kept, pipelined, framing):
    # Given a keep-alive server whose app never reads a body, and a first request whose body looks like a request
    first = request("POST", "/first", SMUGGLED) if framing == "content-length" else chunked("/first", SMUGGLED)
    second = request("GET", "/second", extra="Connection: close\r\n")
    with connect(kept) as sock:
        answers = Answers(sock)
        # When a second request follows on the same connection (sent with the first, or after its answer)
        if pipelined:
            sock.sendall(first + second)
            received = [answers.next(), answers.next()]
        else:
            sock.sendall(first)
            received = [answers.next()]
            sock.sendall(second)
            received.append(answers.next())
        # Then each request is answered once, in order: the body was dropped, not served as a request
        bodies = [answer[2] if answer else None for answer in received]
        assert bodies == [b"/first", b"/second"], f"answers on one connection: {received}"
        assert received[0] is not None
        assert "connection" not in received[0][1], f"the first answer closed the connection: {received[0]}"
        assert answers.closed(), "the server kept the connection after `Connection: close`"
    assert kept.connections_accepted == 1, f"{kept.connections_accepted} connections for one client's two requests"


def test_a_body_left_over_beyond_the_limit_closes_the_connection_instead_of_being_read(kept):
    # Given a request whose body the app ignores and which is larger than the server drains
    body = b"x" * (threaded_http.LEFTOVER_LIMIT + 1)
    with connect(kept) as sock:
        answers = Answers(sock)
        # When it is sent, with another request behind it
        sock.sendall(request("POST", "/big", body) + request("GET", "/after"))
        answer = answers.next()
        # Then it is answered and the connection closes: the next request is never read
        assert answer is not None
        assert answer[2] == b"/big", answer
        assert answer[1].get("connection") == "close", answer
        assert answers.closed(), "the server read on after a body it did not drain"


@pytest.mark.parametrize(
    "raw",
    [
        b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n",
        b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\nabc",
        b"GET /" + b"a" * 65540 + b" HTTP/1.1\r\n\r\n",
        b"GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        b"GET /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        b"GET /fail HTTP/1.1\r\nHost: t\r\n\r\n",
    ],
    ids=[
        "no-length",
        "length-and-chunked",
        "bad-chunk",
        "length-of-5000-digits",
        "request-line-too-long",
        "http-1.0",
        "close",
        "app-error",
    ],
)
def test_a_request_whose_end_is_unknown_or_that_asks_to_close_is_answered_and_the_connection_closed(kept, raw):
    # Given a keep-alive server, and a request after which the next one's start is unknown (or not wanted)
    with connect(kept) as sock:
        answers = Answers(sock)
        # When it is sent, with a request behind it
        sock.sendall(raw + request("GET", "/after"))
        answer = answers.next()
        # Then it alone is answered (a refusal as problem+json), and the connection closes
        assert answer is not None, f"no answer to {raw[:80]!r}"
        status, headers, body = answer
        assert headers.get("connection") == "close", answer
        if status >= 400:
            assert headers["content-type"] == "application/problem+json", answer
            assert json.loads(body)["status"] == status, answer
        assert answers.closed(), f"the server read on after {raw[:80]!r}"


def body_reader(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """An app that reads the whole body, as moto does, and answers its length."""
    body = str(len(environ["wsgi.input"].read())).encode()
    start_response("200 OK", [("Content-Length", str(len(body)))])
    return [body]


def test_a_client_gone_mid_body_leaves_no_traceback_and_the_next_is_served(capfd, caplog):
    # Given a keep-alive server whose app reads bodies, and a client that sends half its body and resets
    server = ThreadedHttpServer(body_reader, "127.0.0.1", 0, "kept", keep_alive=True).start()
    try:
        with connect(server) as gone:
            gone.sendall(request("POST", "/x", b"12345")[:-2])
            gone.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # When another client sends a whole request
        with connect(server) as sock:
            sock.sendall(request("POST", "/x", b"12345"))
            answer = Answers(sock).next()
    finally:
        server.stop()
    # Then it is answered, and the reset left no traceback behind
    assert answer is not None
    assert answer[2] == b"5", answer
    logged = capfd.readouterr().err + caplog.text
    assert "Traceback" not in logged, logged


def test_a_head_answer_on_a_kept_connection_is_its_head_alone(kept):
    # Given a HEAD and a GET sent at once on one kept connection
    with connect(kept) as sock:
        answers = Answers(sock)
        sock.sendall(request("HEAD", "/first") + request("GET", "/second"))
        # When both are answered
        head, get = answers.next(to_head=True), answers.next()
    # Then the HEAD's answer says the length a GET would carry and carries none: the next bytes are the GET's
    assert head is not None
    assert head[1]["content-length"] == "6", head
    assert get is not None
    assert get[2] == b"/second", f"after the HEAD's head: {get}"


def stopped_within_guard(server: ThreadedHttpServer) -> bool:
    stopping = threading.Thread(target=server.stop, daemon=True)
    stopping.start()
    stopping.join(HANG_GUARD_SECONDS)
    return not stopping.is_alive()


def test_stop_ends_idle_kept_connections_and_returns():
    # Given a keep-alive server and clients that each made a call and hold their connection, idle
    server = ThreadedHttpServer(path_echo, "127.0.0.1", 0, "kept", keep_alive=True).start()
    held = [connect(server) for _ in range(3)]
    for sock in held:
        sock.sendall(request("GET", "/x"))
        assert Answers(sock).next() is not None
    # When the server stops
    stopped = stopped_within_guard(server)
    # Then stop() returned, and each held connection was ended by the server (its client reads the end)
    assert stopped, f"stop() still waits after {HANG_GUARD_SECONDS} s with idle connections held"
    ends = [sock.recv(1) for sock in held]
    assert ends == [b"", b"", b""], f"held connections after stop: {ends}"
    for sock in held:
        sock.close()


def test_a_connection_idle_past_the_timeout_is_closed(monkeypatch):
    # Given a keep-alive server whose idle timeout is short, and a client that holds a connection and sends nothing
    # (a kept connection between two calls waits for its next request line the same way)
    monkeypatch.setattr(threaded_http._PersistentHandler, "timeout", 0.2)
    server = ThreadedHttpServer(path_echo, "127.0.0.1", 0, "kept", keep_alive=True).start()
    try:
        with connect(server) as sock:
            # When it idles (the read below waits for what the server does, up to the hang guard)
            # Then the server ends the connection: its thread does not wait for the client for ever
            assert Answers(sock).closed(), "an idle connection was answered with bytes, not closed"
    finally:
        server.stop()


def test_past_the_open_limit_each_answer_closes_its_connection(kept, monkeypatch):
    # Given a keep-alive server that holds at most one connection open, and one client holding it
    monkeypatch.setattr(threaded_http, "PERSISTENT_LIMIT", 1)
    with connect(kept) as first:
        first.sendall(request("GET", "/first"))
        kept_one = Answers(first).next()
        assert kept_one is not None
        assert "connection" not in kept_one[1], f"the only open connection was not kept: {kept_one}"
        # When a second connection asks
        with connect(kept) as second:
            second.sendall(request("GET", "/second"))
            answer = Answers(second).next()
    # Then it is answered, and told the connection closes (no thread is held for it)
    assert answer is not None
    assert answer[1].get("connection") == "close", answer


def test_one_clients_sequential_calls_to_the_aws_endpoint_share_one_connection(moto_server: MotoServer):
    # Given a botocore client of the AWS endpoint, as every function and poller holds
    dynamodb = aws.client("dynamodb", "us-east-1", moto_server.url)
    before = moto_server.connections_accepted
    # When it makes 200 calls one after the other
    for _ in range(200):
        dynamodb.list_tables()
    # Then the endpoint accepted one connection for them all (it had opened one per call)
    opened = moto_server.connections_accepted - before
    assert opened == 1, f"200 calls from one client opened {opened} connections to the AWS endpoint"


def test_a_reply_lost_fault_still_cuts_a_kept_connection_and_the_retry_gets_a_new_one(moto_server, faults):
    # Given a client whose calls share a kept connection, and a fault that cuts the next ListTables' reply
    dynamodb = aws.client("dynamodb", "us-east-1", moto_server.url, aws.AwsCallBudget(max_attempts=3))
    dynamodb.list_tables()
    before = moto_server.connections_accepted
    faults.add(FaultRule("dynamodb", "ListTables", "ReplyLost", limit=1))
    # When it calls again, and again
    dynamodb.list_tables()
    dynamodb.list_tables()
    # Then the reply was lost once (the connection cut), botocore's retry and the next call shared a new one
    assert faults.injected["dynamodb:ListTables:ReplyLost"] == 1, faults.injected
    opened = moto_server.connections_accepted - before
    assert opened == 1, f"after a cut reply, a retry and one more call opened {opened} connections (expected 1)"


def list_tables(extra: str = "") -> bytes:
    """A DynamoDB ListTables as botocore sends it, unsigned (moto reads the signature's scope, not its value)."""
    scope = "Credential=testing/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0"
    headers = (
        f"X-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Type: application/x-amz-json-1.0\r\n"
        f"Authorization: AWS4-HMAC-SHA256 {scope}\r\n{extra}"
    )
    return request("POST", "/", b"{}", headers)


def test_on_the_aws_endpoint_a_pipelined_pair_is_answered_in_order_whatever_the_app_reads(moto_server):
    # Given the AWS endpoint, a GET of its faults' control API with a body it ignores (shaped like a request),
    # and a DynamoDB call whose body moto reads
    first = request("GET", "/_saga/faults", SMUGGLED)
    with socket.create_connection(("127.0.0.1", moto_server.port), timeout=HANG_GUARD_SECONDS) as sock:
        answers = Answers(sock)
        # When both are sent at once on one connection, then another call after their answers
        sock.sendall(first + list_tables())
        received = [answers.next(), answers.next()]
        sock.sendall(list_tables("Connection: close\r\n"))
        received.append(answers.next())
    # Then each is answered once, in order, on the one connection
    assert all(answer is not None for answer in received), received
    statuses = [answer[0] for answer in received if answer]
    assert statuses == [200, 200, 200], received
    bodies = [json.loads(answer[2]) for answer in received if answer]
    assert "rules" in bodies[0], bodies
    assert "TableNames" in bodies[1], bodies
    assert "TableNames" in bodies[2], bodies
