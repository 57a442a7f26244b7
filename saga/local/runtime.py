"""`saga local`: the whole system on one machine. moto in server mode is the AWS endpoint; both APIs
are real HTTP servers calling the same Lambda handler code; pollers drive the relay and the
consumer as Lambda event source mappings would; the sweeper runs on a short interval. Each function
gets its own Settings, passed explicitly (no shared environment), and runs with the entry point,
timeout and event source settings shared/topology.py declares for the deployed one. This is the local
system's composition root: which server, container pool and poller stands for which deployed resource,
in the order they must start (and stop)."""

from __future__ import annotations

import errno
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from aws_lambda_powertools import Logger, Metrics

from functions.consumer.settings import ConsumerSettings
from functions.loans_api.settings import LoansSettings
from functions.orchestrator.settings import OrchestratorSettings
from functions.relay import bootstrap as relay_bootstrap
from functions.relay.publisher import EventPublisher
from functions.relay.settings import RelaySettings
from saga.local.apigw import proxy_event
from saga.local.aws_faults import FaultRule
from saga.local.containers import ContainerPool, forget_metrics
from saga.local.dashboard import OFF, RUNNING, STOPPED, DashboardServer, LocalBoard
from saga.local.http_server import ApiServer
from saga.local.local_metrics import LocalMetrics
from saga.local.moto_server import AwsFaultsClient, MotoProcess
from saga.local.pollers import PollingLoop, SqsPoller, StreamPoller
from saga.local.resources import LocalResources, provision
from saga.ops.target import Target
from shared import aws, topology
from shared import metric_names as names
from shared.entry_points import Handler
from shared.settings import BaseSettings
from shared.topology import Function

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_sqs import SQSClient

logger = Logger(service="saga-local", child=True)
T = TypeVar("T")
# The pollers `saga local` runs, by the names `saga local --disable` takes, in the order they start.
POLLERS = ("relay", "consumer", "sweeper")


class PortInUse(OSError):
    """A part of the runtime ("orchestrator", "loans-api", "aws") cannot listen: its port is taken."""

    def __init__(self, part: str, host: str, port: int) -> None:
        super().__init__(errno.EADDRINUSE, f"{host}:{port} is in use")
        self.part, self.host, self.port = part, host, port


def _listening(part: str, host: str, port: int, start: Callable[[], T]) -> T:
    """`start()`, with a busy port reported as PortInUse for `part`."""
    try:
        return start()
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise PortInUse(part, host, port) from error
        raise


@dataclass(frozen=True)
class RuntimeConfig:
    host: str = "127.0.0.1"
    port: int = 3000
    loans_port: int = 3001
    aws_port: int = 4566
    # The dashboard's page (saga/local/dashboard.py); any free port when this one is taken.
    dashboard_port: int = 3002
    # Where the orchestrator reaches loans-api: put a fault proxy here to cut road 1.
    loans_api_url: str | None = None
    region: str = "us-east-1"
    # An idle poller waits poll_idle_seconds, doubling up to poll_max_idle_seconds (a stream shard's
    # four polls a second in Lambda); each request loans-api's handler ran wakes the relay at once, and what the
    # relay or the sweeper published wakes the consumer (saga.local.pollers.PollingLoop).
    poll_idle_seconds: float = 0.05
    poll_max_idle_seconds: float = 0.25
    sweep_interval_seconds: float = 5.0
    sweep_threshold_seconds: float = 60.0
    # A failed message comes back after this long locally (the queue's own timeout in AWS).
    redelivery_seconds: int = 1
    # Concurrent requests per API, as Lambda containers: each serves one request at a time.
    max_containers: int = 4
    # Fault-injection hooks for the chaos suite (in-process runtimes only): wrap the relay's publisher
    # (e.g. die between publish and mark) or the consumer's batch handler (e.g. die mid-batch).
    relay_publisher_wrapper: Callable[[EventPublisher], EventPublisher] | None = None
    consumer_wrapper: Callable[[Handler], Handler] | None = None
    # Pollers left off ("relay", "consumer", "sweeper"): e.g. without the consumer, road 2 stops at
    # the queue, so a write straight to loans-api leaves its journey out of sync for the audit to find.
    disabled: frozenset[str] = frozenset()
    # AWS-side faults (saga.local.aws_faults): the local endpoint answers a fraction of chosen calls with
    # real AWS errors. They start once the resources exist; the control API changes them at run time.
    aws_faults: tuple[FaultRule, ...] = ()
    aws_fault_seed: int | None = None
    # Where the consumer also appends each failed message's cause (functions/consumer/failure_notes.py), for
    # `saga dlq list`; None: only its log says.
    consumer_failure_notes: Path | None = None


def _environment(settings: BaseSettings, service: str) -> dict[str, str]:
    """A function's environment: its settings, and the Powertools variables infra sets for it."""
    return {**settings.to_env(), **topology.powertools_environment(service)}


def function_pool(
    declared: Function, settings: BaseSettings, max_containers: int, metrics: LocalMetrics | None = None
) -> ContainerPool:
    """The containers of a deployed function: its entry point, its environment (from `settings`) and its
    timeout, as shared/topology.py declares them; what they emit goes to `metrics`."""
    return ContainerPool(
        declared.service,
        declared.entry_point,
        _environment(settings, declared.service),
        max_containers,
        function_timeout=declared.timeout_seconds,
        on_metrics=None if metrics is None else metrics.record,
    )


def relay_stream_poller(
    streams: DynamoDBStreamsClient,
    stream_arn: str,
    relay: Handler,
    on_failure: Callable[[dict[str, Any]], None],
    on_iterator_age: Callable[[float], None] | None = None,
) -> StreamPoller:
    """The loans table's stream feeding the relay, as its deployed event source mapping does."""
    source = topology.RELAY_STREAM
    return StreamPoller(
        streams,
        stream_arn,
        relay,
        function_name=source.function.service,
        batch_size=source.batch_size,
        max_retries=source.retries,
        bisect_on_error=source.bisect_on_error,
        on_failure=on_failure,
        admits=source.admits,
        max_record_age_seconds=source.max_record_age_seconds,
        parallelization_factor=source.parallelization_factor,
        on_iterator_age=on_iterator_age,
    )


# The event source mapping's own calls to SQS. A receive answered after the client's read timeout has
# still hidden its messages, for the queue's visibility timeout (topology.EVENTS_QUEUE_VISIBILITY_SECONDS,
# minutes), from everyone, this poller's retry included: nothing applies them until they come back. The
# local endpoint serves one call at a time (saga/local/moto_server.py), so on a loaded machine a receive
# can wait seconds behind others: a read timeout past any such wait keeps it from stranding its messages.
POLLER_SQS_BUDGET = aws.AwsCallBudget(read_timeout=60.0)


def events_poller(
    sqs: SQSClient, queue_url: str, queue_arn: str, consumer: Handler, redelivery_seconds: int | None
) -> SqsPoller:
    """The events queue feeding the consumer, as its deployed event source mapping does."""
    source = topology.EVENTS_QUEUE_SOURCE
    return SqsPoller(
        sqs,
        queue_url,
        queue_arn,
        consumer,
        function_name=source.function.service,
        batch_size=source.batch_size,
        redelivery_seconds=redelivery_seconds,
        max_concurrency=source.max_concurrency,
    )


def scheduled_event(region: str) -> dict[str, Any]:
    """What EventBridge's schedule sends a function."""
    return {"version": "0", "id": str(uuid.uuid4()), "detail-type": "Scheduled Event", "source": "aws.events",
            "account": "000000000000", "region": region, "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "resources": [], "detail": {}}  # fmt: skip


def _flush(metrics: Metrics) -> None:
    if metrics.metric_set:
        metrics.flush_metrics()
    forget_metrics()  # off (locally), the flush keeps them: see forget_metrics


def _with_metrics_flushed(handler: Handler, metrics: Metrics) -> Handler:
    """Flush each invocation's metrics (as the Lambda entry's log_metrics does), so they do not pile up."""

    def invoke(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            return handler(event, context)
        finally:
            _flush(metrics)

    return invoke


class LocalRuntime:
    def __init__(self, config: RuntimeConfig) -> None:
        self.config = config
        self._moto: MotoProcess | None = None
        self._servers: list[ApiServer] = []
        self._loops: list[PollingLoop] = []
        self._pollers: list[StreamPoller | SqsPoller] = []
        self._pools: list[ContainerPool] = []
        self.resources: LocalResources | None = None
        self._ready = threading.Event()
        self._probe: DynamoDBClient | None = None
        self._relay: PollingLoop | None = None
        # What the functions emitted (and the relay's poller measured), for the dashboard.
        self.metrics = LocalMetrics()
        self._dashboard: DashboardServer | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> LocalRuntime:
        """Start every part; a part that fails to start stops the ones already running."""
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> LocalRuntime:
        c = self.config
        self._moto = MotoProcess(c.host, c.aws_port, fault_seed=c.aws_fault_seed)
        _listening("aws", c.host, c.aws_port, self._moto.start)
        resources = self.resources = provision(self._moto.url, c.region)
        endpoint = resources.endpoint_url
        self._probe = aws.client(
            "dynamodb", c.region, endpoint, aws.AwsCallBudget(connect_timeout=0.5, read_timeout=1.0, max_attempts=1)
        )
        metrics = Metrics(namespace="LoanSaga", service="saga-local")

        loans_settings = LoansSettings(
            region=c.region, aws_endpoint_url=endpoint, loans_table_name=resources.loans_table
        )
        loans = function_pool(topology.LOANS_API, loans_settings, c.max_containers, self.metrics)
        self._pools.append(loans)
        loans_server = _listening(
            "loans-api",
            c.host,
            c.loans_port,
            lambda: ApiServer("loans-api", loans, c.host, c.loans_port, self.health, served=self._loans_api_served),
        ).start()
        self._servers.append(loans_server)
        orchestrator_settings = OrchestratorSettings(
            region=c.region,
            aws_endpoint_url=endpoint,
            journeys_table_name=resources.journeys_table,
            loans_api_url=c.loans_api_url or loans_server.url,
        )
        orchestrator = function_pool(topology.ORCHESTRATOR, orchestrator_settings, c.max_containers, self.metrics)
        self._pools.append(orchestrator)
        orchestrator_server = _listening(
            "orchestrator", c.host, c.port, lambda: ApiServer("orchestrator", orchestrator, c.host, c.port, self.health)
        )
        self._servers.insert(0, orchestrator_server.start())
        health = proxy_event("GET", "/health", {}, None)
        warming = [threading.Thread(target=pool.warm, args=(health,)) for pool in self._pools]
        for thread in warming:
            thread.start()
        for thread in warming:
            thread.join()
        for rule in c.aws_faults:
            self._moto.faults.add(rule)
        self._start_pollers(resources, metrics, loans_server.url)
        self._dashboard = self._serve_dashboard(resources, orchestrator_server.url, loans_server.url).start()
        self._ready.set()
        return self

    def _start_pollers(self, resources: LocalResources, metrics: Metrics, loans_api_url: str) -> None:
        c = self.config
        endpoint = resources.endpoint_url
        relay_settings = RelaySettings(
            region=c.region,
            aws_endpoint_url=endpoint,
            loans_table_name=resources.loans_table,
            events_topic_arn=resources.topic_arn,
            sweep_threshold_seconds=c.sweep_threshold_seconds,
        )
        sqs = aws.client("sqs", c.region, endpoint, POLLER_SQS_BUDGET)

        def to_relay_failures(record: dict[str, Any]) -> None:
            sqs.send_message(QueueUrl=resources.relay_failures_url, MessageBody=json.dumps(record))

        relay: Handler
        if c.relay_publisher_wrapper is None:
            relay = self._container(topology.RELAY, relay_settings, topology.RELAY_STREAM.parallelization_factor)
        else:  # a fault hook inside the composition (chaos): the composition root, in this process
            publisher = c.relay_publisher_wrapper(relay_bootstrap.sns_publisher(relay_settings))
            relay = _with_metrics_flushed(
                relay_bootstrap.build_stream_handler(relay_settings, metrics, publisher), metrics
            )
        stream = relay_stream_poller(
            aws.client("dynamodbstreams", c.region, endpoint),
            resources.loans_stream_arn,
            relay,
            to_relay_failures,
            on_iterator_age=lambda age_ms: self.metrics.record(names.RELAY, {"IteratorAge": [age_ms]}),
        )
        queue_arn = sqs.get_queue_attributes(QueueUrl=resources.events_queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        # The consumer confirms what it would apply against loans-api's ledger over real HTTP, straight to
        # loans-api's server (a fault proxy set in `loans_api_url` cuts road 1 only).
        consumer_settings = ConsumerSettings(
            region=c.region,
            aws_endpoint_url=endpoint,
            journeys_table_name=resources.journeys_table,
            loans_api_url=loans_api_url,
            **({} if c.consumer_failure_notes is None else {"failure_notes_file": str(c.consumer_failure_notes)}),
        )
        consumer: Handler = self._container(
            topology.CONSUMER, consumer_settings, topology.EVENTS_QUEUE_SOURCE.max_concurrency
        )
        if c.consumer_wrapper is not None:
            consumer = c.consumer_wrapper(consumer)
        events = events_poller(sqs, resources.events_queue_url, queue_arn, consumer, c.redelivery_seconds)
        self._pollers = [stream, events]
        sweeper = self._container(topology.SWEEPER, relay_settings)

        consumer_loop = PollingLoop("consumer", events.poll_once, c.poll_idle_seconds, c.poll_max_idle_seconds)

        def relay_tick() -> int:
            read = stream.poll_once()
            if read:
                consumer_loop.nudge()  # what the relay published waits in the events queue
            return read

        def sweep() -> int:
            for lane in range(relay_settings.sweep_lanes):  # each lane's schedule, in turn (1 lane by default)
                sweeper({**scheduled_event(c.region), "lane": lane}, None)
            consumer_loop.nudge()  # whatever it republished
            return 0

        relay_loop = PollingLoop("relay", relay_tick, c.poll_idle_seconds, c.poll_max_idle_seconds)
        loops = [relay_loop, consumer_loop, PollingLoop("sweeper", sweep, c.sweep_interval_seconds)]
        self._loops = [loop.start() for loop in loops if loop.name not in c.disabled]
        self._relay = relay_loop

    def _loans_api_served(self) -> None:
        """After each request loans-api's handler ran: a command's outbox event is in the stream by then,
        whether or not its reply reaches the caller, so the relay polls now rather than at its next idle tick."""
        if self._relay is not None:
            self._relay.nudge()

    def _container(self, declared: Function, settings: BaseSettings, max_containers: int = 1) -> ContainerPool:
        """A poller's function, run through its Lambda entry point in containers of its own: as many as
        its poller invokes it at once (one warmed now, the others started when first needed)."""
        pool = function_pool(declared, settings, max_containers=max_containers, metrics=self.metrics)
        pool.warm()
        self._pools.append(pool)
        return pool

    def _serve_dashboard(self, resources: LocalResources, api_url: str, loans_api_url: str) -> DashboardServer:
        """The dashboard's page, on its port or, when that is taken, any free one (the URL says which)."""
        c = self.config
        target = Target(
            c.region, resources.endpoint_url, resources.loans_table, resources.journeys_table,
            resources.events_queue_url, resources.events_dlq_url, resources.relay_failures_url, api_url, loans_api_url,
        )  # fmt: skip
        local_board = LocalBoard(self.metrics, lambda: target, self.pollers)
        try:
            return DashboardServer(local_board, c.host, c.dashboard_port)
        except OSError as error:
            if error.errno != errno.EADDRINUSE:
                raise
            logger.warning("the dashboard's port is taken: it listens on another", extra={"port": c.dashboard_port})
            return DashboardServer(local_board, c.host, 0)

    def pollers(self) -> dict[str, str]:
        """Each poller of road 2 ("relay", "consumer", "sweeper"): running, stopped (its loop ended, or its
        last tick failed), or off (`disabled`)."""
        loops = {loop.name: loop for loop in self._loops}
        return {
            name: OFF if loop is None else RUNNING if loop.alive and loop.healthy else STOPPED
            for name in POLLERS
            for loop in [loops.get(name)]
        }

    def warm_every_container(self) -> dict[str, frozenset[int]]:
        """Start every container of every function now, all functions at once (the APIs' each serving
        /health, so their composition roots are built): the process ids of each function's containers."""
        warming: dict[str, frozenset[int]] = {}

        def warm(pool: ContainerPool) -> None:
            warming[pool.name] = pool.warm_all()

        _all_at_once([partial(warm, pool) for pool in self._pools])
        return warming

    @property
    def aws_pid(self) -> int:
        """The local AWS endpoint's process."""
        if self._moto is None:
            raise RuntimeError("the runtime was not started")
        return self._moto.pid

    def stop(self) -> None:
        """Stop the loops and the servers, then every function's containers, then the AWS endpoint they
        call: each stage's parts at once (each takes a moment to wind down, more on a loaded machine, and
        one after another they added up to tens of seconds)."""
        self._ready.clear()
        servers = [*self._servers, *([self._dashboard] if self._dashboard is not None else [])]
        _all_at_once([loop.stop for loop in self._loops] + [server.stop for server in servers])
        for poller in self._pollers:
            poller.close()
        _all_at_once([pool.stop for pool in self._pools])
        if self._moto is not None:
            self._moto.stop()

    # -- health -------------------------------------------------------------------------------

    def health(self) -> dict[str, bool]:
        parts = {"ready": self._ready.is_set()}
        parts.update({loop.name: loop.alive and loop.healthy for loop in self._loops})
        parts["aws"] = self._aws_reachable()
        return parts

    def _aws_reachable(self) -> bool:
        if self.resources is None or self._probe is None:
            return False
        try:
            self._probe.describe_table(TableName=self.resources.loans_table)
        except Exception:
            return False
        return True

    @property
    def aws_faults(self) -> AwsFaultsClient | None:
        return None if self._moto is None else self._moto.faults

    @property
    def pollers_on(self) -> dict[str, bool]:
        """Each of the runtime's pollers (relay, consumer, sweeper): True while it runs, False when it is off
        (`--disable`) or stopped. What the state file records (saga/local_state.py `pollers`)."""
        return {name: state == RUNNING for name, state in self.pollers().items()}

    @property
    def urls(self) -> dict[str, str]:
        found = {server.name: server.url for server in self._servers}
        if self._moto is not None:
            found["aws"] = self._moto.url
        if self._dashboard is not None:
            found["dashboard"] = self._dashboard.url
        return found


def _all_at_once(stops: list[Callable[[], None]]) -> None:
    """Every `stop` on a thread of its own; the first that raised is raised once all are done."""
    failed: list[BaseException] = []

    def run(stop: Callable[[], None]) -> None:
        try:
            stop()
        except BaseException as error:  # re-raised below, once the other parts stopped
            failed.append(error)

    threads = [threading.Thread(target=run, args=(stop,), name="stop", daemon=True) for stop in stops]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failed:
        raise failed[0]
