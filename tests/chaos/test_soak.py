"""The soak: N journeys (SOAK_JOURNEYS, 16 in `make test`, 1,000 in `make soak`) driven by M agents
(SOAK_AGENTS, 16) that act on the SAME journeys at the same moment, with every fault at once: 20 % of
loans-api replies cut by the fault proxy after the commit, AWS faults at a few per cent on every
service (saga/local/aws_faults.py), the relay dying between publish and mark and the consumer dying
mid-batch now and then (as chaos 5/6). After the drain, every journey is checked against loans-api,
and the ledger of figures is printed (and appended to SOAK_LEDGER_FILE when set: `make soak`).

What `make test`'s 16 journeys still prove: every race the scripts make (soak_agents.RACES: the scripts of
seed 9 hold them all by the 5th journey, and the test refuses a SOAK_JOURNEYS and SOAK_SEED whose scripts
leave one out), with 16 agents busy (8 journeys at once, for two rounds), under every fault at once, each of
which struck (every AWS fault rule, cut replies, relay and consumer crashes: each AWS rule is also armed,
once the first journey exists, to strike the next call it matches, and each crash the first run, since at
0.5 % a rule may miss a short soak's calls), lose nothing, duplicate nothing and
leave no journey out of sync. What only `make soak`'s 1,000 show: the same at volume (a moto table of
20,000 items, hundreds of crashes, the rarer interleavings).

The agents are in soak_agents.py."""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pytest
import urllib3

from saga.faultproxy.server import FaultProxyServer
from saga.local.aws_faults import FaultRule
from saga.local.runtime import LocalRuntime, RuntimeConfig
from saga.ops.journeys import compare
from shared import aws
from shared.events import LoanEvent, parse_event
from tests.chaos.soak_agents import RACES, Agents, Command, Tally, VersionSampler, script
from tests.crashes import ConsumerDiesMidBatch, RelayDiesAfterPublish, Strike, at_rate, once
from tests.faultproxy_client import ToxiproxyClient
from tests.system import LOANS_PROXY, STALL_SECONDS, System, wait_draining
from tools.ports import free_port

JOURNEYS = int(os.environ.get("SOAK_JOURNEYS", "16"))
AGENTS = int(os.environ.get("SOAK_AGENTS", "16"))
SEED = int(os.environ.get("SOAK_SEED", "9"))
REPLY_LOSS = 0.2
CRASH_RATE = 0.03
# An agent retries what says `retryable: true` while the system makes progress, and every wait below
# fails only once nothing moved for STALL_SECONDS (tests/system.py): never on a count of tries or a fixed
# deadline, since how long the soak takes depends on the machine's load, and what it asserts must not.
AWS_FAULTS = (
    "dynamodb:TransactWriteItems:TransactionConflict@0.03",
    "dynamodb:TransactWriteItems:ReplyLost@0.02",
    "dynamodb:*:ThrottlingException@0.01",
    "dynamodb:*:ProvisionedThroughputExceededException@0.005",
    "dynamodb:*:InternalServerError@0.005",
    "dynamodb:*:ServiceUnavailable@0.005",
    "dynamodbstreams:GetRecords:InternalServerError@0.02",
    "sns:PublishBatch:PublishBatchFailed@0.03",
    "sns:PublishBatch:Throttled@0.02",
    "sqs:ReceiveMessage:RequestThrottled@0.02",
    "sqs:ReceiveMessage:InternalError@0.01",
    "sqs:DeleteMessageBatch:InternalError@0.01",
)


def sure_strikes(rules: tuple[FaultRule, ...]) -> tuple[FaultRule, ...]:
    """Each rule as one sure strike (rate 1, limit 1), armed once the first journey exists: the first call
    each matches from then on gets its fault (while the agents drive journeys: a command's call, or a poll
    that most likely carries their records; armed at the start, idle pollers spent most of them before any
    journey existed), so every kind strikes however few calls a short soak makes."""
    return tuple(replace(rule, rate=1.0, limit=1) for rule in rules)


def first_then(rate: Strike) -> Strike:
    """The first time asked, then at `rate`: a short soak crashes each function at least once."""
    first = once()
    return lambda: first() or rate()


def struck(injected: dict[str, int], rule: FaultRule) -> bool:
    """Did `rule` strike? (`injected` counts by "service:Operation:Kind", the operation a `*` rule hit.)"""
    calls = (name.split(":") for name in injected)
    return any(rule.matches(service, operation, b"") and kind == rule.kind for service, operation, kind in calls)


# -- the system under soak -----------------------------------------------------------------------


@dataclass
class Soaked:
    system: System
    runtime: LocalRuntime
    relay: RelayDiesAfterPublish
    consumer: ConsumerDiesMidBatch


@pytest.fixture
def soaked() -> Iterator[Soaked]:
    proxy = FaultProxyServer("127.0.0.1", free_port()).start()
    toxiproxy = ToxiproxyClient(proxy.control_url)
    loans_port, proxy_port = free_port(), free_port()
    toxiproxy.create_proxy(LOANS_PROXY, upstream=f"127.0.0.1:{loans_port}", listen=f"127.0.0.1:{proxy_port}")
    holders: dict[str, Any] = {}
    rng = random.Random(SEED)

    def wrap_publisher(inner: Any) -> Any:
        holders["relay"] = RelayDiesAfterPublish(inner, first_then(at_rate(rng, CRASH_RATE)))
        return holders["relay"]

    def wrap_consumer(inner: Any) -> Any:
        holders["consumer"] = ConsumerDiesMidBatch(inner, first_then(at_rate(rng, CRASH_RATE)))
        return holders["consumer"]

    config = RuntimeConfig(
        port=free_port(),
        loans_port=loans_port,
        aws_port=free_port(),
        loans_api_url=f"http://127.0.0.1:{proxy_port}",
        sweep_threshold_seconds=3.0,  # events a failed relay left PENDING come back within seconds
        sweep_interval_seconds=2.0,
        # Lambda gives each concurrent request its own container: with fewer, agents would queue behind
        # requests that sleep in their retry backoff, which no agent in AWS does.
        max_containers=AGENTS,
        relay_publisher_wrapper=wrap_publisher,
        consumer_wrapper=wrap_consumer,
        aws_faults=tuple(FaultRule.parse(spec) for spec in AWS_FAULTS),
        aws_fault_seed=SEED,
    )
    runtime = LocalRuntime(config).start()
    http = urllib3.PoolManager(maxsize=AGENTS + 2, timeout=urllib3.Timeout(connect=2, read=60), retries=False)
    system = System(config.port, config.loans_port, config.aws_port, proxy_port, toxiproxy, _http=http)
    try:
        yield Soaked(system, runtime, holders["relay"], holders["consumer"])
    finally:
        runtime.stop()
        proxy.stop()


# The test's own reads (not under test): a count of the whole loans table scans every item of 1,000
# journeys, which the serialized endpoint answered in over 2 s (the function's budget) on a loaded machine,
# so every look timed out and the drain looked stalled. A look waits for its answer; a hang is still caught.
LOOKING = aws.AwsCallBudget(read_timeout=120.0, max_attempts=10)


def drain(soaked: Soaked) -> dict[str, Any]:
    """Until the outbox has nothing PENDING and the events queue nothing visible: everything published
    was applied (AWS faults still on; the journeys are compared with loans-api afterwards). Fails once
    what is left stopped going down for STALL_SECONDS."""
    assert soaked.runtime.resources is not None
    resources = soaked.runtime.resources
    dynamodb = aws.client("dynamodb", resources.region, resources.endpoint_url, LOOKING)
    sqs = aws.client("sqs", resources.region, resources.endpoint_url, LOOKING)

    def look() -> tuple[int, Any]:
        try:
            pending = dynamodb.scan(TableName=resources.loans_table, Select="COUNT",
                                    FilterExpression="#s = :p", ExpressionAttributeNames={"#s": "status"},
                                    ExpressionAttributeValues={":p": {"S": "PENDING"}})["Count"]  # fmt: skip
            queue = sqs.get_queue_attributes(QueueUrl=resources.events_queue_url, AttributeNames=["All"])["Attributes"]
        except Exception:  # an injected fault: look again
            return -1, {}
        return pending, queue

    def left(seen: tuple[int, Any]) -> int:
        pending, queue = seen
        if pending < 0:  # not read this time: no progress seen
            return sys.maxsize
        return pending + int(queue["ApproximateNumberOfMessages"])

    pending, queue = wait_draining(look, left, STALL_SECONDS)
    return {"pending": pending, "inFlight": int(queue.get("ApproximateNumberOfMessagesNotVisible", "0"))}


def dead_letters(soaked: Soaked) -> list[LoanEvent]:
    """Every event in the DLQ (received and left there: the test only looks)."""
    resources = soaked.runtime.resources
    assert resources is not None
    sqs = aws.client("sqs", resources.region, resources.endpoint_url, LOOKING)
    events: dict[str, LoanEvent] = {}
    for _ in range(20):
        try:
            messages = sqs.receive_message(QueueUrl=resources.events_dlq_url, MaxNumberOfMessages=10,
                                           VisibilityTimeout=300).get("Messages", [])  # fmt: skip
        except Exception:  # an injected fault: look again
            continue
        if not messages:
            break
        events.update((m["MessageId"], parse_event(m["Body"])) for m in messages)
    return list(events.values())


def answered(response: tuple[int, Any]) -> Any:
    """The body of an answer the verification can use; a 5xx (an overloaded endpoint) is read again."""
    status, body = response
    if status >= 500:
        raise RuntimeError(f"answered {status}: read again")
    return body


def read(call: Any) -> Any:
    """A verification read, repeated with backoff for up to a minute: the endpoint that served a
    thousand journeys' faults is still busy with the drain's stragglers, and these reads are not under test."""
    pause, deadline = 0.2, time.monotonic() + 60
    while True:
        try:
            return call()
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 3.0)


@dataclass
class Findings:
    """What the verification found wrong with one journey (all empty: nothing)."""

    journey_id: str
    out_of_sync: tuple[str, Any] | None = None
    cancelled_active: bool = False
    multi_active: bool = False
    lost: list[Any] = field(default_factory=list)
    duplicates: list[Any] = field(default_factory=list)
    disbursements: int = 0


def verify(system: System, tally: Tally, jid: str, stall_seconds: float) -> Findings:
    """One journey after the drain: its Control Record against loans-api's truth (waiting while either
    still changes, up to `stall_seconds` without a change), and the invariants."""
    seen, moved = None, time.monotonic()
    while True:
        record = read(lambda: answered(system.api("GET", f"/journeys/{jid}")))
        truth = read(lambda: system.truth(jid))
        verdict = compare(record, truth)
        if verdict["agree"]:
            break
        now = ((record or {}).get("version"), (truth or {}).get("seq"))
        if now != seen:
            seen, moved = now, time.monotonic()
        elif time.monotonic() - moved > stall_seconds:
            break
        time.sleep(0.5)
    found = Findings(jid, out_of_sync=None if verdict["agree"] else (jid, verdict["differences"]))
    if truth is None:
        return found
    active = {kind: [x for x in truth[kind] if x["status"] == "ACTIVE"] for kind in ("simulations", "acceptances")}
    found.cancelled_active = truth["state"] == "cancelled" and bool(active["simulations"] or active["acceptances"])
    found.multi_active = len(active["simulations"]) > 1 or len(active["acceptances"]) > 1
    types = Counter(e["type"] for e in truth["events"])
    found.disbursements = types["LoanDisbursed"]
    asked = tally.asked[jid]
    # Duplicate effects: more events of a kind than commands that could have made them
    bounds = {"SimulationCreated": asked["simulate"], "AcceptanceCreated": asked["accept"],
              "LoanDisbursed": 1, "JourneyCancelled": 1}  # fmt: skip
    found.duplicates = [(jid, kind, types[kind]) for kind, bound in bounds.items() if types[kind] > bound]
    # Lost: a gap in the ledger, an event never published, or one an agent was shown that loans-api lacks
    seqs = sorted(e["seq"] for e in truth["events"])
    event_ids = {e["eventId"] for e in truth["events"]}
    if seqs != list(range(1, truth["seq"] + 1)) or any(e["status"] != "NOTIFIED" for e in truth["events"]):
        found.lost.append((jid, "ledger", seqs))
    found.lost += [(jid, "acknowledged", e) for e in tally.acknowledged[jid] - event_ids]
    return found


def counts(tally: dict[str, int]) -> str:
    """A count by kind, as one line of the ledger table."""
    return ", ".join(f"{kind} {n}" for kind, n in sorted(tally.items()))


@pytest.mark.slow
# A hang guard, far past any progress check above: 12 s a journey is four times a run beside six busy
# processes on two cores (100 journeys in 6 min), so only a hang reaches it, never a loaded machine.
@pytest.mark.timeout(max(1200, JOURNEYS * 12))
def test_soak_conflicting_agents_lost_replies_and_aws_faults_lose_nothing(soaked: Soaked, capsys) -> None:
    system = soaked.system
    rng = random.Random(SEED)
    system.toxiproxy.add_toxic(LOANS_PROXY, "limit_data", stream="downstream", toxicity=REPLY_LOSS, name="cut", bytes=0)
    tally = Tally()
    journeys: list[str] = []
    sampler = VersionSampler(system, journeys, SEED)
    sampler.thread.start()
    started = time.monotonic()
    scripts = [script(index, random.Random(rng.random())) for index in range(JOURNEYS)]
    missing = RACES - frozenset().union(*(s.races for s in scripts))
    assert not missing, f"{JOURNEYS} journeys' scripts (seed {SEED}) leave out {sorted(missing)}: raise SOAK_JOURNEYS"
    with ThreadPoolExecutor(max_workers=AGENTS) as agents_pool:
        agents = Agents(system, tally, agents_pool)

        faults, arming = soaked.runtime.aws_faults, threading.Lock()
        assert faults is not None
        arm = faults.add

        def drive(index: int) -> str | None:
            created = agents.burst("", [Command("create", {"customerId": f"soak-{index}"}, f"create-{index}")] * 2)
            ids = {answer["journeyId"] for answer in created if answer}
            if len(ids) != 1:
                agents.violation(f"journey {index}: one key, creations {ids}")
                return None
            jid = ids.pop()
            with arming:
                if not journeys:  # the first journey: now the sure strikes meet the journeys' calls
                    for rule in sure_strikes(tuple(FaultRule.parse(spec) for spec in AWS_FAULTS)):
                        arm(rule)
                journeys.append(jid)
            for burst in scripts[index].bursts:
                agents.burst(jid, burst)
            return str(jid)

        with ThreadPoolExecutor(max_workers=max(1, AGENTS // 2)) as drivers:
            driven = [jid for jid in drivers.map(drive, range(JOURNEYS)) if jid]
    commanding = time.monotonic() - started
    sampler.stop.set()
    sampler.thread.join()
    faults = soaked.runtime.aws_faults
    assert faults is not None
    cut = system.toxiproxy.toxic(LOANS_PROXY, "cut").get("applied", 0)
    system.toxiproxy.reset()
    drain_started = time.monotonic()
    drained = drain(soaked)
    injected = dict(faults.injected)
    faults.clear()  # the verification reads are not under test

    verifying = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as verifiers:
        findings = list(verifiers.map(lambda jid: verify(system, tally, jid, STALL_SECONDS / 4), driven))
    out_of_sync = [f.out_of_sync for f in findings if f.out_of_sync]
    cancelled_active = [f.journey_id for f in findings if f.cancelled_active]
    multi_active = [f.journey_id for f in findings if f.multi_active]
    lost = [item for f in findings for item in f.lost]
    duplicates = [item for f in findings for item in f.duplicates]
    disbursements = sum(f.disbursements for f in findings)
    dead = dead_letters(soaked)
    dlq_count = len(dead)
    # A message is only "explained" if its event reached the Control Record anyway (another delivery,
    # or road 1): transient faults and crashes failed it three times, and a redrive would be a no-op.
    unexplained = [
        (event.journeyId, event.seq, event.type)
        for event in dead
        if read(lambda event=event: answered(system.api("GET", f"/journeys/{event.journeyId}")))["lastAppliedSeq"]
        < event.seq
    ]
    elapsed = time.monotonic() - started
    agent_5xx = sum(n for status, n in tally.statuses.items() if status.startswith("http 5"))
    ledger = {
        "journeys": len(driven),
        "agents": AGENTS,
        "agent commands (distinct)": sum(sum(c.values()) for jid, c in tally.asked.items() if jid),
        "agent HTTP calls": sum(tally.statuses.values()),
        "answers": counts(tally.statuses),
        "refusals by problem type": counts(tally.refusals),
        "loans-api replies cut": cut,
        "AWS faults injected": counts(injected),
        "AWS faults total": sum(injected.values()),
        "relay crashes": soaked.relay.crashes,
        "consumer crashes": soaked.consumer.crashes,
        "agent-visible 5xx (all retryable, retried)": agent_5xx,
        "retried 5xx by problem type": counts(tally.retryable),
        "unconverged retries": tally.unconverged,
        "most sends of one command": tally.most_tries,
        "disbursed": disbursements,
        "version samples": sampler.samples,
        "versions went back": len(sampler.went_back),
        "duplicates": len(duplicates),
        "lost": len(lost),
        "out of sync": len(out_of_sync),
        "cancelled with something ACTIVE": len(cancelled_active),
        "more than one ACTIVE": len(multi_active),
        "outbox pending": drained["pending"],
        "in flight after drain (delete failed)": drained["inFlight"],
        "DLQ (each already applied: failed 3 times by injected faults and crashes)": dlq_count,
        "seconds commanding": round(commanding, 1),
        "seconds draining": round(verifying - drain_started, 1),
        "seconds verifying": round(time.monotonic() - verifying, 1),
        "seconds total": round(elapsed, 1),
    }
    with capsys.disabled():
        print("\nsoak ledger:\n" + json.dumps(ledger, indent=2))
    ledger_file = os.environ.get("SOAK_LEDGER_FILE")
    if ledger_file:
        with open(ledger_file, "a") as out:
            stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
            out.write(f"\n### Soak, {stamp}: {len(driven)} journeys, {AGENTS} agents (`make soak`)\n\n")
            out.write("| figure | value |\n|---|---|\n")
            out.writelines(f"| {name} | {value} |\n" for name, value in ledger.items())
    assert tally.violations == [], tally.violations[:10]
    assert len(driven) == JOURNEYS
    assert (out_of_sync, lost, duplicates) == ([], [], []), (out_of_sync[:5], lost[:5], duplicates[:5])
    assert (cancelled_active, multi_active, sampler.went_back) == ([], [], [])
    assert unexplained == [], f"DLQ messages whose event never reached the Control Record: {unexplained}"
    # Every fault struck, each AWS rule at least once
    assert cut > JOURNEYS * 0.5, "the proxy should have cut about one reply in five"
    assert sum(injected.values()) > JOURNEYS * 0.5, "AWS faults at a few per cent of the calls"
    rules = [FaultRule.parse(spec) for spec in AWS_FAULTS]
    assert [spec for spec, rule in zip(AWS_FAULTS, rules, strict=True) if not struck(injected, rule)] == []
    assert (soaked.relay.crashes > 0, soaked.consumer.crashes > 0) == (True, True)
