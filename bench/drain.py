"""Figure 4 of BENCHMARKS.md: how fast one consumer process applies a backlog of queued events, and what the
relay spends per event, each by CPU time (the function's process and the AWS endpoint's) beside wall time."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Metrics

from bench.cost import SIMULATE, invoke, relay_lane
from bench.cpu import Stopwatch, reference_ms
from bench.meter import HARNESS_BUDGET
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
from saga.local.moto_server import MotoProcess
from saga.local.pollers import StreamPoller
from saga.local.resources import LocalResources, provision
from shared import aws
from shared.dynamo import to_item
from shared.keys import CONTROL_SK, journey_pk
from tools.inprocess import InProcessHttp

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BATCH_SIZE = 10  # the stack's SQS batch size


@dataclass(frozen=True)
class Timed:
    """A stretch of one function's work over `events` events: wall seconds, the function's CPU seconds, the
    AWS endpoint's CPU seconds, in how many invocations; and its process's whole CPU seconds, which for the
    relay also holds the stream poller's (Lambda's own in AWS, here in the same process)."""

    events: int
    invocations: int
    wall: float
    cpu: float
    endpoint_cpu: float
    reference_ms: float  # bench/cpu.py `reference_ms`, just before and just after (the mean)
    process_cpu: float
    # The endpoint's CPU seconds for the least request it serves (one GetItem of one attribute), measured
    # right after: what any request costs the endpoint, whatever it reads (the drain's only).
    endpoint_floor: float | None = None

    def figures(self) -> dict[str, float]:
        return {
            "events": self.events,
            "invocations": self.invocations,
            "wallSeconds": self.wall,
            "cpuSeconds": self.cpu,
            "endpointCpuSeconds": self.endpoint_cpu,
            "referenceMs": self.reference_ms,
            "processCpuSeconds": self.process_cpu,
            **({} if self.endpoint_floor is None else {"endpointFloorCpuSeconds": self.endpoint_floor}),
        }


def _timed(
    moto: MotoProcess,
    events: Callable[[], int],
    invocations: Callable[[], int],
    function_cpu: Callable[[], float] | None = None,
) -> Timed:
    """Time `events()` (which returns how many events it handled): this process's CPU and the endpoint's,
    and the function's alone by `function_cpu()` (CPU seconds so far) when more than it runs here."""
    reference = reference_ms()
    watch = Stopwatch({"process": [os.getpid()], "endpoint": [moto.pid]}).start()
    before, function_before = invocations(), function_cpu() if function_cpu else 0.0
    handled = events()
    taken = watch.stop()
    cpu = function_cpu() - function_before if function_cpu else taken.cpu["process"]
    reference = (reference + reference_ms()) / 2
    process = taken.cpu["process"]
    return Timed(handled, invocations() - before, taken.wall, cpu, taken.cpu["endpoint"], reference, process)


def drain_rate(moto: MotoProcess, backlog: int, journeys: int) -> tuple[Timed, Timed]:
    """The relay over the stream records of `journeys` journeys' events (the stack's batch size, one lane),
    and one consumer process over a backlog of `backlog` already-applied events (duplicates of those
    events, as Lambda's poller hands them over: batches of 10), each timed by CPU and wall."""
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
        orchestrator_bootstrap.Ports(http=InProcessHttp(loans)),
    )
    relay_invocations = relay_events = 0
    relay_cpu = 0.0
    relay_handler = relay_bootstrap.build_stream_handler(
        RelaySettings(aws_endpoint_url=r.endpoint_url, loans_table_name=r.loans_table, events_topic_arn=r.topic_arn),
        metrics,
    )

    def relay(event: dict[str, Any], context: Any) -> dict[str, Any]:
        """The function's invocation, its CPU counted apart from the poller's: the poller waits while a lane
        runs it, so the process's CPU meanwhile is the invocation's (its marking threads included)."""
        nonlocal relay_invocations, relay_events, relay_cpu
        relay_invocations += 1
        relay_events += len(event["Records"])
        started = time.process_time()
        try:
            return relay_handler(event, context)
        finally:
            relay_cpu += time.process_time() - started

    # The events as the relay publishes them: its mapping's filter (only events reach it, as in AWS), one
    # lane, the stack's batch size.
    stream = relay_lane(r, relay)
    stream.poll_once()  # open the iterator
    _journey(orchestrator)
    _drain_stream(stream)  # warm: the relay's first connections and first validations are not timed
    for _ in range(journeys):
        _journey(orchestrator)
    relayed = _timed(
        moto, lambda: _drain_stream(stream, lambda: relay_events), lambda: relay_invocations, lambda: relay_cpu
    )
    sqs = aws.client("sqs", r.region, r.endpoint_url, HARNESS_BUDGET)
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
        for start in range(0, backlog + BATCH_SIZE, BATCH_SIZE)
    ]
    warm, timed = batches[0], batches[1:]
    assert consumer(warm, LambdaContextStub("consumer"))["batchItemFailures"] == []
    applied = 0

    def apply() -> int:
        nonlocal applied
        for records in timed:
            failures = consumer(records, LambdaContextStub("consumer"))["batchItemFailures"]
            assert failures == [], f"a duplicate failed: {failures}"
            applied += 1
            metrics.clear_metrics()  # what the entry's flush does each invocation (locally: printed at 100)
        return BATCH_SIZE * len(timed)

    drained = _timed(moto, apply, lambda: applied)
    journeys_client = aws.client("dynamodb", r.region, r.endpoint_url, HARNESS_BUDGET)
    floor = _endpoint_floor(moto, journeys_client, r.journeys_table, json.loads(published[0])["journeyId"])
    return relayed, dataclasses.replace(drained, endpoint_floor=floor)


FLOOR_REQUESTS = 50


def _endpoint_floor(moto: MotoProcess, client: DynamoDBClient, table: str, journey_id: str) -> float:
    """The endpoint's CPU seconds per request for the least one: a GetItem of one attribute of one Control
    Record (the drain's BatchGetItem is the only request a duplicate costs; what the endpoint spends on it
    above this is what the read itself costs it)."""
    key = to_item({"pk": journey_pk(journey_id), "sk": CONTROL_SK})
    client.get_item(TableName=table, Key=key, ProjectionExpression="version")  # the connection, not timed
    watch = Stopwatch({"endpoint": [moto.pid]}).start()
    for _ in range(FLOOR_REQUESTS):
        client.get_item(TableName=table, Key=key, ProjectionExpression="version")
    return watch.stop().cpu["endpoint"] / FLOOR_REQUESTS


def _journey(orchestrator: Any) -> None:
    journey_id = json.loads(invoke(orchestrator, "POST", "/journeys", {"customerId": "drain"}).body)["journeyId"]
    record: dict[str, Any] = {}
    for command in ("simulate", "simulate", "accept", "disburse"):
        body = SIMULATE if command == "simulate" else link_body(record, command)
        reply = invoke(orchestrator, "POST", f"/journeys/{journey_id}/{command}", body)
        assert reply.status == 200, reply.body
        record = json.loads(reply.body)


def _drain_stream(stream: StreamPoller, delivered: Callable[[], int] = lambda: 0) -> int:
    """Poll until the stream has nothing new; how many records reached the relay meanwhile."""
    before = delivered()
    while stream.poll_once():
        pass
    return delivered() - before


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
