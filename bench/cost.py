"""Figures 1 and 2 of BENCHMARKS.md: what one journey costs, and its critical path. The journey runs
in-process and single-threaded against a moto server, ours or the peer's loans-api behind the same
orchestrator, with every AWS call counted by the meter (exact counts, not samples)."""

from __future__ import annotations

import json
import math
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import botocore.session
from aws_lambda_powertools import Metrics

from bench import peer
from bench.billing import Usage, item_size
from bench.meter import RAW_BUDGET, Meter
from functions.consumer import bootstrap as consumer_bootstrap
from functions.consumer.settings import ConsumerSettings
from functions.loans_api import bootstrap as loans_bootstrap
from functions.loans_api.settings import LoansSettings
from functions.orchestrator import bootstrap as orchestrator_bootstrap
from functions.orchestrator.settings import OrchestratorSettings
from functions.relay import bootstrap as relay_bootstrap
from functions.relay.settings import RelaySettings
from functions.relay.sweeper import PARTITIONS
from saga.links import link_body
from saga.local.apigw import HttpResponse, LambdaContextStub, http_response, proxy_event
from saga.local.inprocess import InProcessHttp
from saga.local.moto_server import MotoServer
from saga.local.pollers import SqsPoller, StreamPoller
from saga.local.resources import LocalResources, provision
from shared import aws, topology
from shared.capacity import DEFAULT_TARGET_JOURNEYS_PER_SECOND
from shared.tables import CHANGES_INDEX, CHANGES_PARTITION_ATTRIBUTE

_SWEEP_PERIOD_SECONDS = 60 * (topology.SWEEPER.schedule_minutes or 1)

JOURNEY = ("create", "simulate", "re-simulate", "accept", "disburse")
SIMULATE = {"amount": 10000, "termMonths": 36}


@dataclass
class Counted:
    """Function invocations, wrapped around a handler, with each one's duration as Lambda bills it
    (wall time, rounded up to the millisecond)."""

    handler: Callable[[dict[str, Any], Any], dict[str, Any]]
    invocations: int = 0
    billed_ms: list[int] = field(default_factory=list)

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.invocations += 1
        started = time.perf_counter()
        try:
            return self.handler(event, context)
        finally:
            self.billed_ms.append(math.ceil((time.perf_counter() - started) * 1000))


@dataclass
class JourneyCost:
    usage: Usage
    per_command: dict[str, int]
    invocations: Counter[str] = field(default_factory=Counter)
    billed_ms: dict[str, list[int]] = field(default_factory=dict)  # per function
    # What the journey leaves stored in loans-api's table once drained (bench/meter.py `stored`).
    stored_bytes: dict[str, int] = field(default_factory=dict)
    # The sweeper's reads at steady state (ours only: `sweeper_cost`); not part of the journey's units.
    sweeper: dict[str, float] = field(default_factory=dict)

    def figures(self) -> dict[str, Any]:
        """What was counted, as bench/measured.json keeps it (bench/report.py bills it)."""
        return {
            "calls": dict(sorted(self.usage.calls.items())),
            "writeUnits": _by_bucket(self.usage.wcu_by),
            "readUnits": _by_bucket(self.usage.rcu_by),
            "billedRequests": {kind: self.usage.requests[kind] for kind in ("sns", "sqs", "streams")},
            "invocations": dict(self.invocations),
            "billedMs": {name: sum(ms) for name, ms in self.billed_ms.items()},
            "perCommand": dict(self.per_command),
            "storedBytes": dict(self.stored_bytes),
            **({"sweeper": dict(self.sweeper)} if self.sweeper else {}),
        }


def _by_bucket(units: dict[tuple[str, str], float]) -> dict[str, float]:
    """`{(table, bucket): units}` keyed `table/bucket` (bucket: an index's name, or "table" for the table's own)."""
    return {f"{table}/{bucket}": value for (table, bucket), value in sorted(units.items())}


def request_headers(path: str) -> dict[str, str]:
    """JSON, and on createJourney the Idempotency-Key it requires (a new one: each call a new journey)."""
    headers = {"Content-Type": "application/json"}
    if path == "/journeys":
        headers["Idempotency-Key"] = str(uuid.uuid4())
    return headers


def invoke(handler: Any, method: str, path: str, body: Any = None) -> HttpResponse:
    """One API Gateway request to a function's handler, in-process."""
    event = proxy_event(method, path, request_headers(path), None if body is None else json.dumps(body).encode())
    return http_response(handler(event, LambdaContextStub("bench")))


def journey_cost(moto: MotoServer, meter: Meter, design: str, lose_one_reply: bool) -> JourneyCost:
    """One journey of `design` ("ours" or "peer") on a fresh endpoint, road 2 drained; with
    `lose_one_reply`, the first reply of every loans-api command is lost after it committed."""
    moto.reset()
    r = provision(moto.url)
    metrics = Metrics(namespace="Bench", service=design)
    if design == "ours":
        loans: Any = loans_bootstrap.build(
            LoansSettings(aws_endpoint_url=r.endpoint_url, loans_table_name=r.loans_table), metrics
        )
    else:
        peer.create_tables(r.endpoint_url)
        loans = peer.build(r.endpoint_url, r.topic_arn)
    loans_fn = Counted(loans)
    loans_http = InProcessHttp(loans_fn)
    orchestrator = Counted(
        orchestrator_bootstrap.build(
            OrchestratorSettings(
                aws_endpoint_url=r.endpoint_url, journeys_table_name=r.journeys_table, loans_api_url="http://loans"
            ),
            metrics,
            http=loans_http,
            sleep=lambda _: None,
        )
    )
    relay = Counted(
        relay_bootstrap.build_stream_handler(
            RelaySettings(
                aws_endpoint_url=r.endpoint_url, loans_table_name=r.loans_table, events_topic_arn=r.topic_arn
            ),
            metrics,
        )
    )
    consumer = Counted(
        consumer_bootstrap.build(
            ConsumerSettings(
                aws_endpoint_url=r.endpoint_url, journeys_table_name=r.journeys_table, loans_api_url="http://loans"
            ),
            metrics,
            http=InProcessHttp(loans_fn),  # its ledger reads are loans-api invocations too
        )
    )
    stream = StreamPoller(aws.client("dynamodbstreams", r.region, r.endpoint_url), r.loans_stream_arn, relay)
    sqs = aws.client("sqs", r.region, r.endpoint_url)
    arn = sqs.get_queue_attributes(QueueUrl=r.events_queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    queue = SqsPoller(sqs, r.events_queue_url, arn, consumer, redelivery_seconds=0)
    if design == "ours":
        stream.poll_once()  # open the stream iterator before the journey (not part of its cost)

    start = meter.snapshot()
    per_command: dict[str, int] = {}
    journey_id = ""
    record: dict[str, Any] = {}
    for step in JOURNEY:
        before = meter.snapshot()
        loans_http.faults = ["lose"] if lose_one_reply and step != "create" else []
        if step == "create":
            record = json.loads(invoke(orchestrator, "POST", "/journeys", {"customerId": "bench"}).body)
            journey_id = record["journeyId"]
        else:
            command = {"re-simulate": "simulate"}.get(step, step)
            body = SIMULATE if command == "simulate" else link_body(record, command)
            response = invoke(orchestrator, "POST", f"/journeys/{journey_id}/{command}", body)
            assert response.status == 200, response.body
            record = json.loads(response.body)
        per_command[step] = sum(meter.since(before).calls.values())
    for _ in range(20):  # drain road 2 completely
        if (stream.poll_once() if design == "ours" else 0) + queue.poll_once() == 0:
            break
    usage = meter.since(start)
    # Each loans-api command commits one event, however many of its replies were lost.
    swept = sweeper_cost(r, meter, metrics, events=len(JOURNEY) - 1) if design == "ours" else {}
    functions = {"orchestrator": orchestrator, "loans-api": loans_fn, "relay": relay, "consumer": consumer}
    invocations = Counter({name: fn.invocations for name, fn in functions.items()})
    tables = (r.loans_table, r.journeys_table) if design == "ours" else ()
    stored = {name: size for table in tables for name, size in meter.stored(r.endpoint_url, table).items()}
    billed = {name: fn.billed_ms for name, fn in functions.items()}
    return JourneyCost(usage, per_command, invocations, billed, stored, swept)


# The events one sweep finds at the stack's default rate: 20 journeys/s (shared/capacity.py), 4 events each,
# one run a minute (shared/topology.py SWEEPER).
EVENTS_PER_RUN_AT_DEFAULT_RATE = int(DEFAULT_TARGET_JOURNEYS_PER_SECOND * (len(JOURNEY) - 1) * _SWEEP_PERIOD_SECONDS)


def sweeper_cost(r: LocalResources, meter: Meter, metrics: Metrics, events: int) -> dict[str, float]:
    """What the sweeper reads per event at steady state: a run over the journey's events once they are past
    its threshold (all NOTIFIED by then, as nearly every event is), less a run that finds nothing new (its
    cursors and its pages of the changes index, the same whatever the rate); that idle cost is then spread
    over a run's events at the default rate. A first run, while the events are still younger than the
    threshold, saves the cursors, so both measured runs start from saved cursors as every later run does."""
    settings = RelaySettings(
        aws_endpoint_url=r.endpoint_url, loans_table_name=r.loans_table, events_topic_arn=r.topic_arn
    )
    relay_bootstrap.build_sweeper(settings, metrics).sweep()
    later = datetime.now(UTC) + timedelta(seconds=settings.sweep_threshold_seconds + 1)
    sweeper = relay_bootstrap.build_sweeper(settings, metrics, clock=lambda: later)
    before = meter.snapshot()
    found = sweeper.sweep()
    first = meter.since(before)
    before = meter.snapshot()
    sweeper.sweep()
    idle = meter.since(before)
    per_event = (first.rcu - idle.rcu) / events
    # Both runs read the same index pages (each under 4 KB here), so the difference leaves the index's keys
    # out: each event's entry is read by the run that examines it and again by the runs whose margin behind
    # the cursor still holds it, billed by size (4 KB per half unit, eventually consistent).
    entries = _changes_entries(r)
    entry_bytes = sum(item_size(entry) for entry in entries) / max(1, len(entries))
    run_seconds = _SWEEP_PERIOD_SECONDS
    index_per_event = entry_bytes * (1 + settings.sweep_margin_seconds / run_seconds) / (4 * 1024) / 2
    return {
        "events": float(events),
        "republished": float(found.republished),
        "readUnitsPerEvent": per_event,
        "readUnitsPerIdleRun": idle.rcu,
        "writeUnitsPerRun": idle.wcu,
        "indexEntryBytes": entry_bytes,
        "indexReadUnitsPerEvent": index_per_event,
        "readUnitsPerEventAtDefaultRate": per_event + index_per_event + idle.rcu / EVENTS_PER_RUN_AT_DEFAULT_RATE,
    }


def _changes_entries(r: LocalResources) -> list[dict[str, Any]]:
    """The journey-changes index's entries, as a Query returns them (not metered: a separate client)."""
    # A session of its own, as the meter's own reads (bench/meter.py): no hook of the meter sees it.
    client = aws.client("dynamodb", r.region, r.endpoint_url, RAW_BUDGET, from_session=botocore.session.Session())
    return [
        item
        for partition in PARTITIONS
        for item in client.query(
            TableName=r.loans_table,
            IndexName=CHANGES_INDEX,
            KeyConditionExpression="#type = :type",
            ExpressionAttributeNames={"#type": CHANGES_PARTITION_ATTRIBUTE},
            ExpressionAttributeValues={":type": {"S": partition}},
        )["Items"]
    ]
