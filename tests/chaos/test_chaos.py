"""Chaos at real boundaries: faults injected into the TCP link between the orchestrator and loans-api
(fault proxy), into the relay between publish and mark, and into the consumer mid-batch. Every test
drives `saga local` over real HTTP and checks that nothing is lost and nothing is applied twice."""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from functions.loans_api.domain import new_id
from functions.orchestrator.settings import OrchestratorSettings
from saga.local.runtime import LocalRuntime, RuntimeConfig
from saga.ops.journeys import compare
from shared import aws, tables
from shared.control_record import new_control_record
from shared.control_store import control_item
from shared.events import LoanEvent, LoanSnapshot
from tests.system import LOANS_PROXY, System, free_port, running_system

SIMULATE = {"amount": 10000, "termMonths": 36}
FIRST_BACKOFF = 1.0
READ_TIMEOUT = float(OrchestratorSettings.model_fields["loans_read_timeout"].default)  # per attempt


def journey(system: System) -> str:
    status, record = system.api("POST", "/journeys", {"customerId": "chaos"}, Idempotency_Key=str(uuid.uuid4()))
    assert status == 201
    return str(record["journeyId"])


def record_of(system: System, journey_id: str) -> Any:
    return system.api("GET", f"/journeys/{journey_id}")[1]


def drained(system: System, timeout: float = 15.0) -> dict[str, Any]:
    """Wait until every event is NOTIFIED and the events queue is empty; returns `saga status`."""

    def check() -> Any:
        code, out = system.saga("status", "--json")
        assert code == 0, out
        report = json.loads(out)
        events = report["queues"]["events"]
        empty = report["outbox"]["pending"] == 0 and events["visible"] == 0 and events["inFlight"] == 0
        return report if empty else None

    report = system.wait_for(check, timeout=timeout, interval=0.5)
    assert report, "road 2 did not drain"
    return dict(report)


def cut_replies(system: System, toxicity: float = 1.0) -> None:
    """The write commits and the reply is lost: the proxy closes the connection at its first byte."""
    system.toxiproxy.add_toxic(LOANS_PROXY, "limit_data", stream="downstream", toxicity=toxicity, name="cut", bytes=0)


def in_background(call: Any) -> Any:
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(call)
    pool.shutdown(wait=False)
    return future


# -- 1..4: faults on the orchestrator -> loans-api link ---------------------------------------


def test_1_a_reply_lost_once_is_retried_and_replayed(system, clean_proxy):
    jid = journey(system)
    cut_replies(system)
    started = time.monotonic()
    call = in_background(lambda: system.api("POST", f"/journeys/{jid}/simulate", SIMULATE))
    # The first attempt commits; lift the fault during the backoff, before the retry
    assert system.wait_for(lambda: system.truth(jid), timeout=5), "the first attempt never reached loans-api"
    clean_proxy.remove_toxic(LOANS_PROXY, "cut")
    status, record = call.result(timeout=30)
    elapsed = time.monotonic() - started
    assert status == 200
    assert elapsed >= FIRST_BACKOFF
    assert record["version"] == 1
    assert len(system.truth(jid)["simulations"]) == 1
    # The backstop delivers the same event later: a no-op
    drained(system)
    assert record_of(system, jid)["version"] == 1


def test_2_a_persistent_fault_is_503_then_the_backstop_and_the_agents_key_finish_the_job(system, clean_proxy):
    jid = journey(system)
    cut_replies(system)
    started = time.monotonic()
    status, problem = system.api("POST", f"/journeys/{jid}/simulate", SIMULATE, Idempotency_Key="agent-2")
    assert status == 503
    assert problem["retryable"] is True
    assert time.monotonic() - started > 12
    truth = system.truth(jid)
    assert len(truth["simulations"]) == 1, "loans-api must have committed exactly once"
    # The backstop brings the record to the truth within 5 s, with road 1 still cut
    applied = system.wait_for(lambda: record_of(system, jid)["currentState"] == "simulated", timeout=5)
    assert applied, "road 2 did not apply the committed simulation within 5 s"
    clean_proxy.remove_toxic(LOANS_PROXY, "cut")
    # The agent's retry with the same key returns the recorded simulation and creates nothing
    status, record = system.api("POST", f"/journeys/{jid}/simulate", SIMULATE, Idempotency_Key="agent-2")
    assert status == 200
    assert record["simulation"]["simulationId"] == truth["simulations"][0]["simulationId"]
    assert record["version"] == 1
    assert len(system.truth(jid)["simulations"]) == 1


def test_3_disburse_under_a_lost_reply_then_a_new_call_disburses_once(system, clean_proxy):
    jid = journey(system)
    system.api("POST", f"/journeys/{jid}/simulate", SIMULATE)
    system.api("POST", f"/journeys/{jid}/accept")
    cut_replies(system)
    status, _ = system.api("POST", f"/journeys/{jid}/disburse")
    assert status == 503
    clean_proxy.remove_toxic(LOANS_PROXY, "cut")
    status, record = system.api("POST", f"/journeys/{jid}/disburse")  # the agent tries again: a new call
    assert status == 200
    assert record["currentState"] == "disbursed"
    again_status, again = system.api("POST", f"/journeys/{jid}/disburse")
    assert again_status == 200
    assert again["disbursement"] == record["disbursement"]
    truth = system.truth(jid)
    assert truth["disbursement"]["disbursementId"] == record["disbursement"]["disbursementId"]
    assert [e["type"] for e in truth["events"]].count("LoanDisbursed") == 1


def test_4_latency_above_the_per_attempt_timeout_is_retried_with_one_effect(system, clean_proxy):
    jid = journey(system)
    clean_proxy.add_toxic(
        LOANS_PROXY, "latency", stream="downstream", name="slow", latency=int(1000 * READ_TIMEOUT) + 1000
    )
    started = time.monotonic()
    call = in_background(lambda: system.api("POST", f"/journeys/{jid}/simulate", SIMULATE))
    assert system.wait_for(lambda: system.truth(jid), timeout=5)
    time.sleep(READ_TIMEOUT - 0.5)  # let the slow reply outlive the attempt's read timeout
    clean_proxy.remove_toxic(LOANS_PROXY, "slow")
    status, record = call.result(timeout=30)
    assert status == 200
    assert time.monotonic() - started >= READ_TIMEOUT + FIRST_BACKOFF
    assert record["version"] == 1
    assert len(system.truth(jid)["simulations"]) == 1


# -- 5, 6: the relay and the consumer die at the worst moment ---------------------------------


class CrashAfterPublish:
    """The relay dies between publish and mark, once."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.crashes = 0

    def publish(self, events: Any) -> Any:
        failed = self.inner.publish(events)
        if not self.crashes:
            self.crashes += 1
            raise RuntimeError("relay killed between publish and mark")
        return failed


class CrashMidBatch:
    """The consumer applies half of its first batch, then dies before acknowledging anything."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.crashes = 0
        self.deliveries: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        records = event["Records"]
        with self.lock:
            self.deliveries.update(json.loads(r["body"]).get("eventId", "?") for r in records)
            crash = not self.crashes
            self.crashes += crash
        if crash:
            self.inner({"Records": records[: max(1, len(records) // 2)]}, context)
            raise RuntimeError("consumer killed mid-batch")
        return dict(self.inner(event, context))


@pytest.fixture
def hooked() -> Iterator[tuple[System, CrashAfterPublish, CrashMidBatch]]:
    """An in-process `saga local` whose relay and consumer die once each."""
    holders: dict[str, Any] = {}

    def wrap_publisher(inner: Any) -> Any:
        holders["relay"] = CrashAfterPublish(inner)
        return holders["relay"]

    def wrap_consumer(inner: Any) -> Any:
        holders["consumer"] = CrashMidBatch(inner)
        return holders["consumer"]

    config = RuntimeConfig(port=free_port(), loans_port=free_port(), aws_port=free_port(),
                           relay_publisher_wrapper=wrap_publisher, consumer_wrapper=wrap_consumer)  # fmt: skip
    runtime = LocalRuntime(config).start()
    try:
        yield (System(config.port, config.loans_port, config.aws_port, 0, None),  # type: ignore[arg-type]
               holders["relay"], holders["consumer"])  # fmt: skip
    finally:
        runtime.stop()


def commit_directly(system: System, jid: str) -> list[dict[str, Any]]:
    """loans-api commits a simulation and its acceptance; the orchestrator never hears of them."""
    status, simulation, _ = system.call("POST", f"{system.loans_url}/simulations",
                                        {"journeyId": jid, "amount": 5000, "termMonths": 12},
                                        {"Idempotency-Key": f"{jid}-1"})  # fmt: skip
    assert status == 201
    _, acceptance, _ = system.call("POST", f"{system.loans_url}/acceptances",
                                   {"journeyId": jid, "simulationId": simulation["simulationId"]},
                                   {"Idempotency-Key": f"{jid}-2"})  # fmt: skip
    return [simulation, acceptance]


def test_5_the_relay_killed_between_publish_and_mark_republishes_and_the_consumer_dedups(hooked):
    system, relay, consumer = hooked
    jid = journey(system)
    status, record = system.api("POST", f"/journeys/{jid}/simulate", SIMULATE)
    assert (status, record["version"]) == (200, 1)

    def notified() -> bool:
        return {e["status"] for e in system.truth(jid)["events"]} == {"NOTIFIED"}

    assert system.wait_for(notified, timeout=10), "the outbox item never became NOTIFIED"
    assert relay.crashes == 1
    event_id = system.truth(jid)["events"][0]["eventId"]
    assert system.wait_for(lambda: consumer.deliveries[event_id] >= 2, timeout=10), "not republished"
    assert record_of(system, jid)["version"] == 1, "the second delivery must be a no-op"


def test_6_the_consumer_killed_mid_batch_gets_its_batch_again_and_converges(hooked):
    system, _, consumer = hooked
    jid = journey(system)
    replies = commit_directly(system, jid)  # road 1 never ran: only road 2 can apply these

    def converged() -> Any:
        record = record_of(system, jid)
        return record if compare(record, system.truth(jid))["agree"] else None

    record = system.wait_for(converged, timeout=15)
    assert record, "the record never reached the truth"
    assert consumer.crashes == 1
    assert record["lastAppliedEventId"] == replies[-1]["eventId"]
    assert record["version"] <= len(replies)  # each event applied at most once (the newest may skip older)


# -- 7: poison, DLQ, status, redrive ----------------------------------------------------------


def test_7_a_poison_message_reaches_the_dlq_is_shown_and_is_redriven_once_fixed(system, clean_proxy):
    ghost = f"ghost-{new_id()}"
    snapshot = LoanSnapshot(journeyId=ghost, state="cancelled")
    event = LoanEvent(eventId=new_id(), journeyId=ghost, seq=1, type="JourneyCancelled",
                      occurredAt=datetime.now(UTC), snapshot=snapshot)  # fmt: skip
    sqs = aws.client("sqs", "us-east-1", system.aws_url)
    queue = sqs.get_queue_url(QueueName=tables.EVENTS_QUEUE.local_name)["QueueUrl"]
    sqs.send_message(QueueUrl=queue, MessageBody=event.model_dump_json())

    def listed() -> Any:
        code, out = system.saga("dlq", "list", "--json")
        return next((e for e in json.loads(out) if e["eventId"] == event.eventId), None) if code == 0 else None

    entry = system.wait_for(listed, timeout=20, interval=0.5)
    assert entry, "the poison message never reached the DLQ"
    assert entry["receiveCount"] >= 3
    assert entry["reason"] == "unknown journey"
    code, out = system.saga("status", "--json")
    assert json.loads(out)["queues"]["eventsDlq"]["visible"] >= 1
    # Fix the cause (the journey's Control Record exists now), then redrive
    dynamodb = aws.client("dynamodb", "us-east-1", system.aws_url)
    dynamodb.put_item(TableName=tables.JOURNEYS_TABLE.local_name,
                      Item=control_item(new_control_record(ghost, "ghost", datetime.now(UTC))))  # fmt: skip
    code, out = system.saga("dlq", "redrive")
    assert code == 0, out
    applied = system.wait_for(lambda: record_of(system, ghost)["lastAppliedEventId"] == event.eventId, timeout=10)
    assert applied, "the redriven event was not applied"
    assert record_of(system, ghost)["currentState"] == "cancelled"
    assert not system.wait_for(listed, timeout=3, interval=0.5)


# -- 8: many agents, random loss ---------------------------------------------------------------


class Agent:
    """A scripted agent: retries a retryable error, as an LLM told `retryable: true` would."""

    def __init__(self, system: System, stats: Counter[str], versions: dict[str, list[int]]) -> None:
        self.system = system
        self.stats = stats
        self.versions = versions

    def call(self, method: str, path: str, body: Any = None, **headers: str) -> Any:
        for _ in range(6):
            status, payload = self.system.api(method, path, body, **headers)
            self.stats[f"http {status}"] += 1
            if status in (200, 201):
                if isinstance(payload, dict) and "version" in payload:
                    self.versions[payload["journeyId"]].append(payload["version"])
                return payload
            if not payload.get("retryable"):
                jid = path.split("/")[2] if path.count("/") >= 2 else ""
                raise AssertionError(
                    f"{method} {path} -> {status} {payload}\nrecord: {self.system.api('GET', f'/journeys/{jid}')}"
                    f"\ntruth: {self.system.truth(jid)}"
                )
        raise AssertionError(f"{method} {path} kept failing")

    def run(self, index: int) -> str:
        record = self.call("POST", "/journeys", {"customerId": f"c-{index}"}, Idempotency_Key=f"create-{index}")
        jid = record["journeyId"]
        self.call("POST", f"/journeys/{jid}/simulate", {"amount": 1000 + index, "termMonths": 12})
        if index % 3 == 0:
            self.call("POST", f"/journeys/{jid}/simulate", {"amount": 2000 + index, "termMonths": 24})
        self.call("POST", f"/journeys/{jid}/accept")
        if index % 5 == 0:
            self.call("POST", f"/journeys/{jid}/cancel")
        else:
            self.call("POST", f"/journeys/{jid}/disburse")
            if index % 4 == 0:
                self.call("POST", f"/journeys/{jid}/disburse")  # an agent that repeats itself
        return str(jid)


def test_8_fifty_journeys_ten_clients_twenty_percent_loss(capsys):
    random.seed(8)
    with running_system() as system:
        cut_replies(system, toxicity=0.2)
        stats: Counter[str] = Counter()
        versions: dict[str, list[int]] = defaultdict(list)
        agent = Agent(system, stats, versions)
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=10) as pool:
            journeys = list(pool.map(agent.run, range(50)))
        elapsed = time.monotonic() - started
        injected = system.toxiproxy.toxic(LOANS_PROXY, "cut").get("applied", "n/a (real Toxiproxy)")
        system.toxiproxy.reset()
        report = drained(system, timeout=30)
        disagreements, disbursed, cancelled, duplicates, lost = [], 0, 0, 0, 0
        for index, jid in enumerate(journeys):
            record, truth = record_of(system, jid), system.truth(jid)
            verdict = compare(record, truth)
            if not verdict["agree"]:
                disagreements.append((jid, verdict["differences"]))
            disbursed += truth["disbursement"] is not None
            cancelled += truth["state"] == "cancelled"
            assert [e["type"] for e in truth["events"]].count("LoanDisbursed") <= 1
            # What the agent asked for, in loans-api events: anything more is a duplicate, less is lost
            expected = (2 if index % 3 == 0 else 1) + 1 + 1  # simulate(s), accept, then cancel or disburse
            duplicates += max(0, truth["seq"] - expected)
            lost += max(0, expected - truth["seq"])
            seen = versions[jid]
            assert seen == sorted(seen), (jid, seen)  # the record's version never goes back
            assert record["version"] >= max(seen)
        assert disagreements == []
        assert (duplicates, lost) == (0, 0)
        if isinstance(injected, int):
            assert injected > 10, "the fault proxy should have cut about one reply in five"
        assert report["outbox"]["pending"] == 0
        assert report["queues"]["eventsDlq"]["visible"] == 0
        assert (disbursed, cancelled) == (40, 10)
        figures = {"journeys": len(journeys), "disbursed": disbursed, "cancelled": cancelled,
                   "replies cut": injected, "agent calls": sum(stats.values()), "agent 503s": stats["http 503"],
                   "duplicates": duplicates, "lost": lost, "seconds": round(elapsed, 1)}  # fmt: skip
    with capsys.disabled():
        print(f"\nchaos 8: {figures}")
