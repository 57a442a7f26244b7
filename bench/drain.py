"""Figure 4 of BENCHMARKS.md: how fast one consumer process applies a backlog of queued events."""

from __future__ import annotations

import json
import time
from typing import Any

from aws_lambda_powertools import Metrics

from bench.cost import SIMULATE, invoke
from functions.consumer import bootstrap as consumer_bootstrap
from functions.consumer.settings import ConsumerSettings
from functions.loans_api import bootstrap as loans_bootstrap
from functions.loans_api.settings import LoansSettings
from functions.orchestrator import bootstrap as orchestrator_bootstrap
from functions.orchestrator.settings import OrchestratorSettings
from functions.relay import bootstrap as relay_bootstrap
from functions.relay.settings import RelaySettings
from saga.links import link_body
from saga.local.apigw import LambdaContextStub
from saga.local.inprocess import InProcessHttp
from saga.local.moto_server import MotoServer
from saga.local.pollers import StreamPoller
from saga.local.resources import LocalResources, provision
from shared import aws

BATCH_SIZE = 10  # the stack's SQS batch size


def drain_rate(moto: MotoServer, backlog: int, journeys: int = 5) -> tuple[float, int]:
    """Events/s one consumer process applies from a backlog of already-applied events (duplicates of the
    events of `journeys` journeys), and how many it applied."""
    moto.reset()
    r: LocalResources = provision(moto.url)
    metrics = Metrics(namespace="Bench", service="drain")
    loans = loans_bootstrap.build(
        LoansSettings(aws_endpoint_url=r.endpoint_url, loans_table_name=r.loans_table), metrics
    )
    orchestrator = orchestrator_bootstrap.build(
        OrchestratorSettings(
            aws_endpoint_url=r.endpoint_url, journeys_table_name=r.journeys_table, loans_api_url="http://loans"
        ),
        metrics,
        http=InProcessHttp(loans),
    )
    for _ in range(journeys):
        journey_id = json.loads(invoke(orchestrator, "POST", "/journeys", {"customerId": "drain"}).body)["journeyId"]
        record: dict[str, Any] = {}
        for command in ("simulate", "simulate", "accept", "disburse"):
            body = SIMULATE if command == "simulate" else link_body(record, command)
            reply = invoke(orchestrator, "POST", f"/journeys/{journey_id}/{command}", body)
            assert reply.status == 200
            record = json.loads(reply.body)
    # The events as the relay publishes them, repeated into a backlog.
    stream = StreamPoller(
        aws.client("dynamodbstreams", r.region, r.endpoint_url),
        r.loans_stream_arn,
        relay_bootstrap.build_stream_handler(
            RelaySettings(
                aws_endpoint_url=r.endpoint_url, loans_table_name=r.loans_table, events_topic_arn=r.topic_arn
            ),
            metrics,
        ),
    )
    stream.poll_once()
    sqs = aws.client("sqs", r.region, r.endpoint_url)
    published = []
    while batch := sqs.receive_message(QueueUrl=r.events_queue_url, MaxNumberOfMessages=10).get("Messages"):
        published += [m["Body"] for m in batch]
        sqs.delete_message_batch(
            QueueUrl=r.events_queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)],
        )
    consumer = consumer_bootstrap.build(
        ConsumerSettings(
            aws_endpoint_url=r.endpoint_url, journeys_table_name=r.journeys_table, loans_api_url="http://loans"
        ),
        metrics,
        http=InProcessHttp(loans),  # duplicates need no ledger read: a read here would be a regression
    )
    # Lambda's own poller receives and deletes the messages; what one consumer process sustains is the
    # function on Lambda-shaped batches of the stack's size.
    batches = [
        {"Records": [_sqs_record(published[(start + i) % len(published)], start + i) for i in range(BATCH_SIZE)]}
        for start in range(0, backlog, BATCH_SIZE)
    ]
    started = time.monotonic()
    for records in batches:
        assert consumer(records, LambdaContextStub("consumer"))["batchItemFailures"] == []
    applied = BATCH_SIZE * len(batches)
    return applied / (time.monotonic() - started), applied


def _sqs_record(body: str, index: int) -> dict[str, Any]:
    return {
        "messageId": str(index),
        "receiptHandle": str(index),
        "body": body,
        "attributes": {},
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:loan-events",
        "awsRegion": "us-east-1",
    }
