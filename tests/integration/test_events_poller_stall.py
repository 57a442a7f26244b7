"""The events queue's poller (saga/local/runtime.py events_poller) against a local AWS endpoint that answers
late: a receive that outlived its client's read timeout still hid its messages for the queue's visibility
timeout (minutes), so a poller that gave up on it left them unapplied that long (the soak's "in flight after
drain"). The poller's client waits past such a stall, and the stalled receive's messages are applied."""

from __future__ import annotations

import threading
import uuid
from typing import Any

from saga.local.moto_server import MotoServer
from saga.local.runtime import POLLER_SQS_BUDGET, events_poller
from shared import aws, topology

# Longer than every attempt the default budget makes (3 x 2 s read timeouts and botocore's backoff), far
# shorter than the poller's read timeout: on a loaded machine the endpoint has answered this late.
STALL_SECONDS = 9.0


def stalled(server: MotoServer, seconds: float) -> threading.Event:
    """Hold the endpoint's one lock (every AWS call waits for it) for `seconds`, on a thread; the event is
    set once it is held."""
    serialized: Any = server.faults._app  # the _Serialized moto behind the fault injector
    held = threading.Event()

    def hold() -> None:
        with serialized._lock:
            held.set()
            threading.Event().wait(seconds)

    threading.Thread(target=hold, daemon=True).start()
    return held


def test_a_receive_the_endpoint_answers_after_a_stall_is_applied_not_stranded(moto_server: MotoServer):
    # Given an events queue with the deployed visibility timeout, one message in it, and the runtime's poller
    sqs = aws.client("sqs", "us-east-1", moto_server.url, POLLER_SQS_BUDGET)
    visibility = str(topology.EVENTS_QUEUE_VISIBILITY_SECONDS)
    url = sqs.create_queue(QueueName=f"events-{uuid.uuid4().hex[:8]}", Attributes={"VisibilityTimeout": visibility})[
        "QueueUrl"
    ]
    sqs.send_message(QueueUrl=url, MessageBody='{"event": 1}')
    applied: list[str] = []

    def consumer(event: dict[str, Any], context: Any) -> dict[str, Any]:
        applied.extend(record["body"] for record in event["Records"])
        return {"batchItemFailures": []}

    poller = events_poller(sqs, url, "arn:aws:sqs:us-east-1:123456789012:events", consumer, redelivery_seconds=1)
    try:
        # When the endpoint stalls past the default read timeout while the poller receives
        assert stalled(moto_server, STALL_SECONDS).wait(timeout=60), "the stall never began"
        try:
            polled: Any = poller.poll_once()
        except Exception as error:  # a receive given up on: its message hidden for the visibility timeout
            polled = error
    finally:
        poller.close()
    # Then the poller got the message the receive hid, applied it and deleted it: nothing left in flight
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    in_flight = int(attributes["ApproximateNumberOfMessagesNotVisible"])
    assert (polled, applied, in_flight) == (1, ['{"event": 1}'], 0), (
        f"poll_once gave {polled!r}, applied {applied}, {in_flight} message(s) hidden for {visibility} s"
    )
