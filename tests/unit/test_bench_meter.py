"""The benchmark's meter (bench/meter.py) counts the calls of every client made while it is open, and
leaves no hook behind when it is closed: not on the shared session, not on the clients it counted."""

from __future__ import annotations

from collections import Counter

from botocore.client import BaseClient
from botocore.stub import Stubber

from bench.meter import Meter
from shared import aws


def _get_queue_url(client: BaseClient) -> None:
    """One SQS call answered by a stub (no endpoint): botocore still runs every hook around it."""
    with Stubber(client) as stub:
        stub.add_response("get_queue_url", {"QueueUrl": "http://q"}, {"QueueName": "q"})
        client.get_queue_url(QueueName="q")  # type: ignore[attr-defined]


def test_an_open_meter_counts_the_calls_of_a_client_made_while_it_was_open():
    with Meter(bill=False) as meter:
        client = aws.client("sqs", "us-east-1", "http://127.0.0.1:9")
        _get_queue_url(client)
        _get_queue_url(client)
    assert meter.calls == Counter({"sqs:GetQueueUrl": 2}), f"counted {dict(meter.calls)}"


def test_a_closed_meter_counts_no_call_of_the_clients_it_counted_nor_of_clients_made_after():
    # Given a meter that counted one call of a client, then was closed
    with Meter(bill=False) as meter:
        counted = aws.client("sqs", "us-east-1", "http://127.0.0.1:9")
        _get_queue_url(counted)
    # When that client and a client made afterwards make calls
    _get_queue_url(counted)
    _get_queue_url(aws.client("sqs", "us-east-1", "http://127.0.0.1:9"))
    # Then the meter saw only the call made while it was open: its hooks are gone from the session and
    # from the copy of them the client was given
    assert meter.calls == Counter({"sqs:GetQueueUrl": 1}), f"counted {dict(meter.calls)} after being closed"
