"""The local runtime's AWS endpoint (saga/local/moto_server.py) keeps a client's connection open between
its calls, as AWS does: werkzeug's dev server closed it after every answer, so each call paid a TCP
connection (and a server thread) of its own."""

from __future__ import annotations

from typing import Any

from saga.local.aws_faults import AwsFaultInjector
from saga.local.moto_server import MotoServer
from shared import aws


def test_a_client_makes_its_calls_over_the_connection_it_opened_first(moto_server: MotoServer, monkeypatch):
    # Given the endpoint noting the client port of every call it serves
    ports: list[str] = []
    serve = AwsFaultInjector.__call__

    def noting(self: AwsFaultInjector, environ: dict[str, Any], start_response: Any) -> Any:
        ports.append(str(environ.get("REMOTE_PORT")))
        return serve(self, environ, start_response)

    monkeypatch.setattr(AwsFaultInjector, "__call__", noting)
    # When one botocore client (what every function uses) makes 20 calls, one after the other
    dynamodb = aws.client("dynamodb", "us-east-1", moto_server.url)
    for _ in range(20):
        dynamodb.list_tables()
    # Then all of them came over one connection
    assert len(ports) == 20, ports
    assert len(set(ports)) == 1, f"{len(set(ports))} connections for 20 calls"
