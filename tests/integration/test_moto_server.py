"""The local runtime's AWS endpoint (saga/local/moto_server.py): a request it cannot frame is refused at
once, and a stopped endpoint answers no one, not even on a connection a client kept (its connections are
kept alive: tests/integration/test_keep_alive.py)."""

from __future__ import annotations

import os
import socket
from typing import Any

import pytest

from saga.local.moto_server import MotoServer
from shared import aws

HANG_GUARD_SECONDS = 60  # only an endpoint waiting for a body that never comes takes this long


@pytest.mark.parametrize("length", ["-1", "abc", "1e3"])
def test_a_request_whose_content_length_is_not_a_length_is_answered_400_not_left_waiting(
    moto_server: MotoServer, length: str
):
    # Given a client whose request says a Content-Length that is no length, and then waits
    with socket.create_connection(("127.0.0.1", moto_server.port), timeout=HANG_GUARD_SECONDS) as client:
        client.sendall(f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode())
        # When the endpoint answers
        try:
            answer = client.recv(200)
        except TimeoutError:
            answer = b"<nothing: the endpoint still reads a body that has no length>"
    # Then it is a 400 (not a read to the end of the connection, nor a dropped connection)
    assert answer.startswith(b"HTTP/1.1 400"), answer


def test_a_stopped_endpoint_answers_no_one():
    # Given an endpoint of its own, and a client that made a call
    server = MotoServer().start()
    dynamodb = aws.client("dynamodb", "us-east-1", server.url, aws.AwsCallBudget(max_attempts=1))
    dynamodb.list_tables()
    # When the endpoint stops
    server.stop()
    # Then the client's next call is refused, not answered by what is left of the stopped endpoint
    try:
        answer: Any = dynamodb.list_tables()
    except Exception as error:  # a connection error, of whichever kind botocore raises
        answer = error
    assert "Connection" in type(answer).__name__, f"a stopped endpoint answered: {answer!r}"


def test_moto_answers_its_dispatch_lookups_once_and_the_same_as_before(moto_server: MotoServer, monkeypatch):
    # Given the endpoint, which has served calls already (saga/local/moto_dispatch.py kept moto's answers)
    from moto.dynamodb.responses import DynamoHandler

    from saga.local import moto_dispatch
    from saga.local.moto_dispatch import backends, responses

    dynamodb = aws.client("dynamodb", "us-east-1", moto_server.url, aws.AwsCallBudget(max_attempts=1))
    dynamodb.list_tables()
    # When it serves more calls, with every folder listing counted
    listed: list[str] = []
    real_listdir = os.listdir

    def listdir(path: str) -> list[str]:
        listed.append(path)
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", listdir)
    for _ in range(3):
        dynamodb.list_tables()
    # Then it listed no folder to find the service, and its answers are moto's own
    assert listed == []
    assert tuple(backends.list_of_moto_modules()) == tuple(moto_dispatch._original_modules())
    assert responses.method_names_from_class(DynamoHandler) == moto_dispatch._original_methods(DynamoHandler)
