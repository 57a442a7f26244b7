"""Figures 1 and 2 of BENCHMARKS.md: what one journey costs, and its critical path. The journey runs
in-process and single-threaded against a moto server in a process of its own, ours or the peer's loans-api
behind the same orchestrator: once with every AWS call billed by the meter (exact counts, not samples), then
again, unmetered, to time each function's CPU (this process's: the endpoint's is read apart) and model
Lambda's billed duration from it."""

from __future__ import annotations

import json
import math
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import botocore.session
from aws_lambda_powertools import Metrics

from bench import peer
from bench.billing import Usage, item_size
from bench.cpu import Stopwatch
from bench.meter import HARNESS_BUDGET, RAW_BUDGET, Meter
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
from saga.local.moto_server import MotoProcess
from saga.local.pollers import SqsPoller, StreamPoller
from saga.local.resources import LocalResources, provision
from shared import aws, topology
from shared.capacity import DEFAULT_TARGET_JOURNEYS_PER_SECOND
from shared.tables import CHANGES_INDEX, CHANGES_PARTITION_ATTRIBUTE
from tools.inprocess import InProcessHttp

_SWEEP_PERIOD_SECONDS = 60 * (topology.SWEEPER.schedule_minutes or 1)

JOURNEY = ("create", "simulate", "re-simulate", "accept", "disburse")
SIMULATE = {"amount": 10000, "termMonths": 36}


# The model of Lambda's billed duration (BENCHMARKS.md section 1, docs/COST.md): a function's own CPU time
# here, stretched by the share of a vCPU its memory buys (Lambda gives CPU in proportion to memory, one vCPU
# at 1,769 MB: https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory-console.html), plus one
# round trip for each AWS request it makes and each function it calls, plus the called function's own
# modelled duration (the caller is billed while it waits), rounded up to the ms per invocation.
LAMBDA_VCPU_MB = 1769
AWS_ROUND_TRIP_MS = 5.0  # one in-region request (DynamoDB's single-digit ms); the same for every design


def cpu_stretch(memory_mb: int) -> float:
    """How much longer CPU-bound work takes at `memory_mb` than on one whole vCPU."""
    return max(1.0, LAMBDA_VCPU_MB / memory_mb)


@dataclass
class Invocation:
    """One invocation as timed: CPU seconds of this process and AWS calls, each its own plus its callees'."""

    cpu: float = 0.0
    wall: float = 0.0
    calls: int = 0
    callees: list[tuple[str, Invocation]] = field(default_factory=list)

    @property
    def own_cpu(self) -> float:
        return self.cpu - sum(callee.cpu for _, callee in self.callees)

    @property
    def own_calls(self) -> int:
        return self.calls - sum(callee.calls for _, callee in self.callees)

    def modelled_ms(self, memory_mb: Mapping[str, int], name: str) -> int:
        """Lambda's billed ms for it, by the model above."""
        waited = sum(callee.modelled_ms(memory_mb, callee_name) + AWS_ROUND_TRIP_MS for callee_name, callee in
                     self.callees)  # fmt: skip
        own = self.own_cpu * 1000 * cpu_stretch(memory_mb[name]) + self.own_calls * AWS_ROUND_TRIP_MS
        return math.ceil(own + waited)


_running: list[Invocation] = []  # the invocations under way, outermost first (the driver is one thread)


@dataclass
class Counted:
    """Function invocations, wrapped around a handler: how many, and each one timed (this process's CPU
    time, wall time and the AWS calls `calls` counts), callees apart (loans-api called by the orchestrator
    or the consumer runs inside their invocation, in this thread)."""

    name: str
    handler: Callable[[dict[str, Any], Any], dict[str, Any]]
    calls: Callable[[], int] = lambda: 0
    runs: list[Invocation] = field(default_factory=list)

    @property
    def invocations(self) -> int:
        return len(self.runs)

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        run = Invocation()
        if _running:
            _running[-1].callees.append((self.name, run))
        _running.append(run)
        self.runs.append(run)
        calls, cpu, wall = self.calls(), time.process_time(), time.perf_counter()
        try:
            return self.handler(event, context)
        finally:
            run.cpu, run.wall = time.process_time() - cpu, time.perf_counter() - wall
            run.calls = self.calls() - calls
            _running.pop()


@dataclass
class JourneyCost:
    usage: Usage
    per_command: dict[str, int]
    invocations: Counter[str] = field(default_factory=Counter)
    # Per function, per journey (the mean of the timed journeys): modelled billed ms, own CPU ms, wall ms
    # (callees included, as Lambda bills a caller) and own AWS calls; and the AWS endpoint's CPU ms.
    timed: dict[str, dict[str, float]] = field(default_factory=dict)
    endpoint_cpu_ms: float = 0.0
    timed_journeys: int = 0
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
            "billedMs": {name: figures["modelledMs"] for name, figures in self.timed.items()},
            "timed": {"journeys": self.timed_journeys, "functions": self.timed, "endpointCpuMs": self.endpoint_cpu_ms},
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


FUNCTIONS = ("orchestrator", "loans-api", "relay", "consumer")


@dataclass
class Rig:
    """One design's functions on a fresh endpoint, each Counted, and road 2's pollers."""

    design: str
    resources: LocalResources
    metrics: Metrics
    functions: dict[str, Counted]
    loans_http: InProcessHttp
    stream: StreamPoller
    queue: SqsPoller


def rig(moto: MotoProcess, meter: Meter, design: str) -> Rig:
    """`design`'s functions ("ours" or "peer") on a fresh endpoint, their AWS calls counted by `meter`."""
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
    loans_fn = Counted("loans-api", loans, meter.total_calls)
    loans_http = InProcessHttp(loans_fn)
    # The orchestrator and the consumer: the journeys table, and loans-api at an address the in-process
    # transport ignores
    journeys = {
        "aws_endpoint_url": r.endpoint_url,
        "journeys_table_name": r.journeys_table,
        "loans_api_url": "http://loans",
    }
    handlers = {
        "orchestrator": orchestrator_bootstrap.build(
            OrchestratorSettings(**journeys),
            metrics,
            orchestrator_bootstrap.Ports(http=loans_http, sleep=lambda _: None),
        ),
        "relay": relay_bootstrap.build_stream_handler(
            RelaySettings(
                aws_endpoint_url=r.endpoint_url, loans_table_name=r.loans_table, events_topic_arn=r.topic_arn
            ),
            metrics,
        ),
        # its ledger reads are loans-api invocations too
        "consumer": consumer_bootstrap.build(ConsumerSettings(**journeys), metrics, http=InProcessHttp(loans_fn)),
    }
    orchestrator, relay, consumer = (Counted(name, handler, meter.total_calls) for name, handler in handlers.items())
    # The relay's mapping's filter (what reaches it in AWS), one lane: its invocations one after another,
    # so each is timed alone.
    stream = relay_lane(r, relay)
    sqs = aws.client("sqs", r.region, r.endpoint_url, HARNESS_BUDGET)
    arn = sqs.get_queue_attributes(QueueUrl=r.events_queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    queue = SqsPoller(sqs, r.events_queue_url, arn, consumer, redelivery_seconds=0, max_concurrency=1)
    if design == "ours":
        stream.poll_once()  # open the stream iterator before the journey (not part of its cost)
    functions = {"orchestrator": orchestrator, "loans-api": loans_fn, "relay": relay, "consumer": consumer}
    return Rig(design, r, metrics, functions, loans_http, stream, queue)


def walk(rig: Rig, meter: Meter, lose_one_reply: bool) -> dict[str, int]:
    """One journey through `rig`, road 2 drained; the AWS calls of each command. With `lose_one_reply`, the
    first reply of every loans-api command is lost after it committed."""
    per_command: dict[str, int] = {}
    journey_id = ""
    record: dict[str, Any] = {}
    orchestrator = rig.functions["orchestrator"]
    for step in JOURNEY:
        before = meter.total_calls()
        rig.loans_http.faults = ["lose"] if lose_one_reply and step != "create" else []
        if step == "create":
            record = json.loads(invoke(orchestrator, "POST", "/journeys", {"customerId": "bench"}).body)
            journey_id = record["journeyId"]
        else:
            command = {"re-simulate": "simulate"}.get(step, step)
            body = SIMULATE if command == "simulate" else link_body(record, command)
            response = invoke(orchestrator, "POST", f"/journeys/{journey_id}/{command}", body)
            assert response.status == 200, response.body
            record = json.loads(response.body)
        per_command[step] = meter.total_calls() - before
    for _ in range(100):  # drain road 2 completely: until a pass of both pollers reads nothing
        if (rig.stream.poll_once() if rig.design == "ours" else 0) + rig.queue.poll_once() == 0:
            break
    else:
        raise RuntimeError(f"road 2 of {rig.design} still had records after 100 passes")
    return per_command


def journey_cost(moto: MotoProcess, design: str, lose_one_reply: bool, timed_journeys: int) -> JourneyCost:
    """One journey of `design` ("ours" or "peer") on a fresh endpoint, road 2 drained, every AWS call
    billed by a meter; then, on another fresh endpoint with only calls counted, one journey to warm up and
    `timed_journeys` timed: each function's CPU time, wall time and calls, and the endpoint's CPU time."""
    with Meter() as meter:
        metered = rig(moto, meter, design)
        start = meter.snapshot()
        per_command = walk(metered, meter, lose_one_reply)
        usage = meter.since(start)
        # Each loans-api command commits one event, however many of its replies were lost.
        r = metered.resources
        swept = sweeper_cost(r, meter, metered.metrics, events=len(JOURNEY) - 1) if design == "ours" else {}
        tables = (r.loans_table, r.journeys_table) if design == "ours" else ()
        stored = {name: size for table in tables for name, size in meter.stored(r.endpoint_url, table).items()}
    invocations = Counter({name: fn.invocations for name, fn in metered.functions.items()})
    with Meter(bill=False) as counter:
        timed = rig(moto, counter, design)
        walk(timed, counter, lose_one_reply)  # warm: first connections, first validations
        for fn in timed.functions.values():
            fn.runs.clear()
        endpoint = Stopwatch({"endpoint": [moto.pid]}).start()
        for _ in range(timed_journeys):
            walk(timed, counter, lose_one_reply)
        endpoint_cpu = endpoint.stop().cpu["endpoint"]
    return JourneyCost(
        usage,
        per_command,
        invocations,
        {name: _timed(fn, timed_journeys) for name, fn in timed.functions.items()},
        endpoint_cpu * 1000 / timed_journeys,
        timed_journeys,
        stored,
        swept,
    )


def _timed(fn: Counted, journeys: int) -> dict[str, float]:
    """A function's figures per journey over `journeys` timed journeys (bench/measured.json's keys)."""
    memory = topology.memory_mb()
    return {
        "modelledMs": sum(run.modelled_ms(memory, fn.name) for run in fn.runs) / journeys,
        "cpuMs": sum(run.own_cpu for run in fn.runs) * 1000 / journeys,
        "wallMs": sum(run.wall for run in fn.runs) * 1000 / journeys,
        "awsCalls": sum(run.own_calls for run in fn.runs) / journeys,
    }


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


def relay_lane(r: LocalResources, relay: Callable[[dict[str, Any], Any], Any]) -> StreamPoller:
    """The loans table's stream as the relay's mapping reads it: its filter (only events reach the relay, as
    in AWS) and one lane, so the relay's invocations run one after another and each is timed alone."""
    return StreamPoller(
        aws.client("dynamodbstreams", r.region, r.endpoint_url, HARNESS_BUDGET),
        r.loans_stream_arn,
        relay,
        admits=topology.RELAY_STREAM.admits,
        parallelization_factor=1,
    )
