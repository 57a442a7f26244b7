"""The local runtime's AWS endpoint in a child process (saga/local/moto_server.py MotoProcess): it serves,
its faults are set and counted through the control API, and a port already taken is a clear error."""

from __future__ import annotations

import socket

import pytest

from saga.local.aws_faults import FaultRule
from saga.local.moto_server import MotoProcess
from shared import aws


def test_the_endpoint_in_a_child_serves_and_its_faults_are_set_and_counted_from_the_parent():
    # Given the endpoint in its own process, with one fault rule set from here
    endpoint = MotoProcess().start()
    try:
        endpoint.faults.add(FaultRule("sqs", "ListQueues", "InternalError", limit=1))
        sqs = aws.client("sqs", "us-east-1", endpoint.url, aws.AwsCallBudget(max_attempts=1))
        # When a call meets the fault, and the next one does not
        with pytest.raises(Exception, match="InternalError"):
            sqs.list_queues()
        sqs.list_queues()
        # Then the parent reads the count, and clearing the rules is seen by the child
        assert endpoint.faults.injected == {"sqs:ListQueues:InternalError": 1}
        endpoint.faults.clear()
    finally:
        endpoint.stop()
    port = int(endpoint.url.rsplit(":", 1)[1])
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), 1):
        pass  # nothing listens there any more


def test_a_port_already_taken_is_an_error_that_names_it():
    # Given a port something else listens on
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # When the endpoint is started there, Then the error says where and why
        with pytest.raises(OSError, match=f"could not serve on 127.0.0.1:{port}: .*in use"):
            MotoProcess(port=port).start()
