"""The operator's side over `saga local`: the audit finds a journey out of sync and repairs it,
`saga status --check` fails on a DLQ message and passes after the redrive, every --json output is
one JSON document, and the commands find `saga local` through the state file it writes. Road 2's
tests run on the consumer-less runtime this module shares with test_attack_operator.py
(tests/e2e/road2_off.py), the others on the session's `system`."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import urllib3

from shared import aws, tables
from shared.events import LoanEvent, LoanSnapshot, SimulationSummary
from tests.e2e.road2_off import Answer, Road2Off, run_saga
from tests.support import PATIENT_AWS
from tests.system import free_port, queued
from tests.system import wait_for as system_wait_for

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


def http(method: str, url: str, body: dict | None = None, key: str | None = None) -> tuple[int, dict]:
    import urllib3

    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
    response = urllib3.request(method, url, body=json.dumps(body) if body else None, headers=headers)
    return response.status, json.loads(response.data)


def out_of_sync_journey(system: Road2Off, key: str) -> str:
    """A journey the orchestrator created, then simulated by a write straight to loans-api."""
    status, record = http("POST", f"{system.api_url}/journeys", {"customerId": "operator"}, key=f"create-{key}")
    assert status == 201, record
    body = {"journeyId": record["journeyId"], "amount": 10000, "termMonths": 36}
    status, reply = http("POST", f"{system.loans_url}/simulations", body, key=key)
    assert status == 201, reply
    return str(record["journeyId"])


def test_saga_local_records_where_it_listens(road2_off):
    recorded = json.loads(road2_off.state_file.read_text())
    assert (recorded["orchestrator"], recorded["loans-api"]) == (road2_off.api_url, road2_off.loans_url)


def test_the_audit_finds_an_out_of_sync_journey_repairs_it_and_then_all_agree(road2_off):
    # Given a journey whose simulation was written straight to loans-api, with road 2 switched off
    journey_id = out_of_sync_journey(road2_off, "audit-e2e-1")
    # When the audit runs with the default grace period, it is not yet listed (the roads may still come)
    within = road2_off.saga("audit", "--json")
    assert within.code == 0, within.stderr
    assert journey_id in within.json()["withinGrace"]
    # When the audit runs with no grace
    found = road2_off.saga("audit", "--grace", "0", "--json")
    # Then it exits 1 and lists the journey: behind, how, which road, and the repair command
    assert found.code == 1, found.stderr
    [finding] = [f for f in found.json()["outOfSync"] if f["journeyId"] == journey_id]
    assert finding["kind"] == "behind"
    assert "state: record 'created' != loans-api 'simulated'" in finding["differences"]
    assert "road 2" in finding["expectedRoad"]
    assert finding["repair"] == f"saga audit --repair --journey {journey_id}"
    assert road2_off.saga("journey", "show", journey_id).code == 1
    # When the operator repairs
    repaired = road2_off.saga("audit", "--grace", "0", "--repair", "--journey", journey_id, "--json")
    # Then the record was brought to the truth, and its audit after it exits 0 (this journey's: the runtime is
    # shared, and other tests leave journeys of their own out of sync on purpose)
    assert repaired.code == 0, repaired.stdout + repaired.stderr
    assert repaired.json()["repaired"] == [journey_id]
    after = road2_off.saga("audit", "--grace", "0", "--journey", journey_id)
    assert after.code == 0, after.stdout
    assert "no journey out of sync" in after.stdout
    shown = road2_off.saga("journey", "show", journey_id)
    assert shown.code == 0, shown.stdout
    assert "SimulationCreated" in shown.stdout
    assert "applied by repair at" in shown.stdout


def test_every_command_with_json_prints_one_json_document_and_unreachable_exits_2(road2_off):
    journey_id = out_of_sync_journey(road2_off, "json-e2e-1")
    commands = [
        ("status",),
        ("status", "--check"),
        ("dlq", "list"),
        ("dlq", "redrive", "--dry-run"),
        ("journey", "show", journey_id),
        ("journey", "show", "no-such-journey"),
        ("audit",),
        ("audit", "--since", "600"),
        ("audit", "--journey", "no-such-journey"),
        ("audit", "--rebuild"),
        ("relay-failures", "clear"),
        ("demo",),
        ("openapi",),
        ("openapi", "--api", "loans-api", "--format", "bedrock"),
    ]
    for command in commands:
        answer = road2_off.saga(*command, "--json")
        assert answer.code in (0, 1, 2, 3), (command, answer.stderr)
        assert isinstance(answer.json(), dict | list), command
    assert road2_off.saga("journey", "show", "no-such-journey", "--json").code == 3
    unreachable = run_saga("status", "--json", urls=("--endpoint-url", f"http://127.0.0.1:{free_port()}"))
    assert unreachable.code == 2
    assert unreachable.json()["title"] == "cannot reach the system"
    assert "cannot reach" in unreachable.stderr


def test_status_check_fails_on_a_dlq_message_and_passes_after_redrive(system, clean_proxy):
    urls = ("--endpoint-url", system.aws_url, "--api-url", system.api_url, "--loans-api-url", system.loans_url)
    sqs = aws.client("sqs", "us-east-1", system.aws_url, PATIENT_AWS)
    dlq = sqs.get_queue_url(QueueName=tables.EVENTS_DLQ.local_name)["QueueUrl"]
    sqs.purge_queue(QueueUrl=dlq)  # what other tests left there is theirs
    # Given a DLQ holding one event the consumer can apply (already applied: a harmless no-op)
    _, record = system.api("POST", "/journeys", {"customerId": "status-check"}, Idempotency_Key="status-check")
    _, record = system.api("POST", f"/journeys/{record['journeyId']}/simulate", {"amount": 5000, "termMonths": 12})
    event = LoanEvent(
        eventId=record["lastAppliedEventId"],
        journeyId=record["journeyId"],
        seq=record["lastAppliedSeq"],
        type="SimulationCreated",
        occurredAt=datetime.now(UTC),
        snapshot=LoanSnapshot(
            journeyId=record["journeyId"],
            state="simulated",
            simulation=SimulationSummary.model_validate(record["simulation"]),
        ),
    )
    sqs.send_message(QueueUrl=dlq, MessageBody=event.model_dump_json())
    # When the operator checks
    failing = run_saga("status", "--check", "--json", urls=urls)
    # Then it exits 1, says the DLQ is why, and what to run next
    assert failing.code == 1, failing.stderr
    [problem] = failing.json()["problems"]
    assert problem["check"] == "dlq"
    assert problem["next"].startswith("saga dlq list")
    human = run_saga("status", "--check", urls=urls)
    assert "FAIL dlq" in human.stdout
    # When the message is redriven, the check passes, and the consumer took the message
    moved = run_saga("dlq", "redrive", "--json", urls=urls)
    assert len(moved.json()["moved"]) == 1
    passing = run_saga("status", "--check", "--json", urls=urls)
    assert passing.code == 0, passing.stdout
    assert passing.json()["problems"] == []

    def consumed() -> bool:
        report = run_saga("status", "--json", urls=urls).json()
        return bool(report["queues"]["events"]["visible"] + report["queues"]["events"]["inFlight"] == 0)

    events = sqs.get_queue_url(QueueName=tables.EVENTS_QUEUE.local_name)["QueueUrl"]
    system.wait_for(lambda: queued(sqs, events) == 0)  # (looked at in SQS first: a `saga status` costs a second)
    assert system.wait_for(consumed, interval=0.5)
    assert run_saga("status", "--check", urls=urls).code == 0


# -- road 2 applies only what loans-api committed (D15), and a rebuild repairs what it did not --------


def records_table(system):
    from shared.control_store import DynamoControlRecordStore

    return DynamoControlRecordStore(
        aws.client("dynamodb", "us-east-1", system.aws_url, PATIENT_AWS), tables.JOURNEYS_TABLE.local_name
    )


def test_forged_events_on_the_local_topic_and_queue_change_no_record_and_land_in_the_dlq_with_the_reason(
    system, clean_proxy
):
    urls = ("--endpoint-url", system.aws_url, "--api-url", system.api_url, "--loans-api-url", system.loans_url)
    sqs = aws.client("sqs", "us-east-1", system.aws_url, PATIENT_AWS)
    dlq = sqs.get_queue_url(QueueName=tables.EVENTS_DLQ.local_name)["QueueUrl"]
    # Given a simulated journey, and a disbursed one whose real disbursement event is rewritten to name it
    _, target = system.api("POST", "/journeys", {"customerId": "forged"}, Idempotency_Key="forged-target")
    jid = target["journeyId"]
    _, target = system.api("POST", f"/journeys/{jid}/simulate", {"amount": 5000, "termMonths": 12})
    code, demo = system.saga("demo")
    assert code == 0, demo
    paid = demo.split("journey ")[1].split()[0]
    ledger = json.loads(urllib3.request("GET", f"{system.loans_url}/journeys/{paid}/ledger").data)["lastEvent"]
    assert ledger["type"] == "LoanDisbursed"
    forged = {**ledger, "journeyId": jid, "seq": 2, "snapshot": {**ledger["snapshot"], "journeyId": jid}}
    wedge = {**ledger, "journeyId": jid, "seq": 10**9, "eventId": "01900000-0000-7000-8000-00000000ffff",
             "snapshot": {**ledger["snapshot"], "journeyId": jid}}  # fmt: skip
    # When the first is published on the local events topic and the second sent straight to the queue
    sns = aws.client("sns", "us-east-1", system.aws_url, PATIENT_AWS)
    [topic] = [
        t["TopicArn"] for t in sns.list_topics()["Topics"] if t["TopicArn"].endswith(tables.EVENTS_TOPIC_LOCAL_NAME)
    ]
    before = queued(sqs, dlq)
    sns.publish(TopicArn=topic, Message=json.dumps(forged))
    queue = sqs.get_queue_url(QueueName=tables.EVENTS_QUEUE.local_name)["QueueUrl"]
    sqs.send_message(QueueUrl=queue, MessageBody=json.dumps(wedge))

    def both_in_dlq():
        answer = run_saga("dlq", "list", "--json", urls=urls)
        entries = [e for e in answer.json() if e["journeyId"] == jid] if answer.code == 0 else []
        return entries if len(entries) == 2 else None

    # Then both land in the DLQ, each with the reason the consumer rejected it for
    system.wait_for(lambda: queued(sqs, dlq) >= before + 2)  # (looked at in SQS first: a listing costs a second)
    entries = system.wait_for(both_in_dlq, interval=0.5)
    assert entries, "the forged messages never reached the DLQ"
    reasons = sorted(e["reason"] for e in entries)
    assert reasons == [
        f"rejected: seq 1000000000 is beyond loans-api's ledger for journey {jid} (at seq 1)",
        f"rejected: seq 2 is beyond loans-api's ledger for journey {jid} (at seq 1)",
    ]
    # And the journey's Control Record is exactly what it was: simulated, never disbursed
    _, now = system.api("GET", f"/journeys/{jid}")
    assert now == target
    # And the journey goes on (a simulate is answered, not wedged)
    status, answer = system.api("POST", f"/journeys/{jid}/simulate", {"amount": 6000, "termMonths": 12})
    assert status == 200, answer
    # (the DLQ is left as other tests expect it: without this test's messages)
    for _ in range(10):
        batch = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, VisibilityTimeout=0).get("Messages", [])
        mine = [m for m in batch if jid in m["Body"]]
        for message in mine:
            sqs.delete_message(QueueUrl=dlq, ReceiptHandle=message["ReceiptHandle"])
        if not mine:
            break


def test_a_record_made_ahead_is_repaired_by_audit_repair_rebuild_which_says_what_changed(system, clean_proxy):
    urls = ("--endpoint-url", system.aws_url, "--api-url", system.api_url, "--loans-api-url", system.loans_url)
    # Given a simulated journey whose record was then written ahead of loans-api (a forged lastAppliedSeq)
    _, record = system.api("POST", "/journeys", {"customerId": "ahead"}, Idempotency_Key="ahead-e2e")
    jid = record["journeyId"]
    system.api("POST", f"/journeys/{jid}/simulate", {"amount": 5000, "termMonths": 12})
    records = records_table(system)
    stored = records.get(jid)
    assert stored is not None
    records.replace(stored.model_copy(update={"lastAppliedSeq": 10**9}), expected_version=stored.version)
    # When the audit lists it, Then it is ahead, and the repair it names is the rebuild
    found = run_saga("audit", "--grace", "0", "--journey", jid, "--json", urls=urls)
    assert found.code == 1, found.stderr
    [finding] = found.json()["outOfSync"]
    assert finding["kind"] == "ahead"
    assert finding["repair"].endswith(f"saga audit --repair --rebuild --journey {jid}")
    # And a plain repair leaves it as it is
    plain = run_saga("audit", "--grace", "0", "--repair", "--journey", jid, "--json", urls=urls)
    assert (plain.code, plain.json()["repaired"], plain.json()["rebuilt"]) == (1, [], [])
    # When the operator rebuilds it
    rebuilt = run_saga("audit", "--grace", "0", "--repair", "--rebuild", "--journey", jid, urls=urls)
    # Then it says what changed, and the record agrees with loans-api again
    assert rebuilt.code == 0, rebuilt.stdout + rebuilt.stderr
    assert f"rebuilt {jid} from loans-api's ledger: state simulated -> simulated, seq 1000000000 -> 1" in rebuilt.stdout
    after = records.get(jid)
    assert after is not None
    assert (after.lastAppliedSeq, after.version, after.appliedBy[-1].road) == (1, stored.version + 1, "rebuild")
    assert run_saga("journey", "show", jid, urls=urls).code == 0
    # And --rebuild alone is refused: it is a kind of repair
    assert run_saga("audit", "--rebuild", "--journey", jid, urls=urls).code == 2


def test_a_record_loans_api_never_saw_wedges_no_agent_and_the_rebuild_takes_it_back_to_created(system, clean_proxy):
    urls = ("--endpoint-url", system.aws_url, "--api-url", system.api_url, "--loans-api-url", system.loans_url)
    # Given a record claiming simulated at seq 3 for a journey loans-api has no ledger of (a restored table)
    _, record = system.api("POST", "/journeys", {"customerId": "ghost"}, Idempotency_Key="ghost-e2e")
    jid = record["journeyId"]
    records = records_table(system)
    stored = records.get(jid)
    assert stored is not None
    records.replace(stored.model_copy(update={"currentState": "simulated", "lastAppliedSeq": 3}), stored.version)
    # When the agent simulates or cancels, Then it is told at once, not to retry, and how an operator repairs it
    for command, body in (("simulate", {"amount": 5000, "termMonths": 12}), ("cancel", {})):
        status, problem = system.api("POST", f"/journeys/{jid}/{command}", body)
        assert (status, problem["type"], problem["retryable"]) == (
            500, "urn:loan-saga:problem:journey-needs-repair", False
        ), problem  # fmt: skip
        assert f"saga audit --repair --rebuild --journey {jid}" in problem["detail"], problem
    # And the audit lists it with its own finding
    found = run_saga("audit", "--grace", "0", "--journey", jid, "--json", urls=urls)
    assert found.code == 1, found.stdout + found.stderr
    assert [(f["kind"], f["recordSeq"], f["truthSeq"]) for f in found.json()["outOfSync"]] == [("no-ledger", 3, 0)]
    # When the operator rebuilds it, Then it is the journey before any command, and the agent goes on
    rebuilt = run_saga("audit", "--grace", "0", "--repair", "--rebuild", "--journey", jid, urls=urls)
    assert rebuilt.code == 0, rebuilt.stdout + rebuilt.stderr
    assert f"rebuilt {jid} from loans-api's ledger: state simulated -> created, seq 3 -> 0" in rebuilt.stdout
    status, simulated = system.api("POST", f"/journeys/{jid}/simulate", {"amount": 5000, "termMonths": 12})
    assert (status, simulated["currentState"], simulated["lastAppliedSeq"]) == (200, "simulated", 1), simulated


# -- operator tools that tell the truth (issue 27) ----------------------------------------------------------


def _queue(system_aws_url: str, spec: tables.QueueSpec) -> tuple[Any, str]:
    sqs = aws.client("sqs", "us-east-1", system_aws_url, PATIENT_AWS)
    return sqs, sqs.get_queue_url(QueueName=spec.local_name)["QueueUrl"]


def _receives(sqs: SQSClient, url: str, message_id: str) -> int:
    """The message's ApproximateReceiveCount, read by a receive (counted in it) that finds it visible."""
    batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0, AttributeNames=["All"])
    [message] = [m for m in batch.get("Messages", []) if m["MessageId"] == message_id]
    return int(message["Attributes"]["ApproximateReceiveCount"])


def test_listing_the_dlq_counts_one_receive_per_message_and_says_so(road2_off):
    aws_url = json.loads(road2_off.state_file.read_text())["aws"]
    sqs, dlq = _queue(aws_url, tables.EVENTS_DLQ)
    road2_off.empty(tables.EVENTS_DLQ)
    # Given a message in the DLQ (alone there), received twice by a consumer
    message_id = sqs.send_message(QueueUrl=dlq, MessageBody='{"eventId": "dlq-listing"}')["MessageId"]
    for _ in range(2):
        sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, VisibilityTimeout=0)
    left = _receives(sqs, dlq, message_id)
    try:
        # When the operator lists the DLQ twice
        first = road2_off.saga("dlq", "list", "--json")
        human = road2_off.saga("dlq", "list")
        # Then each listing received it once: the count rose by at most 1 per listing (+1 for the read here)
        assert first.code == 0, first.stderr
        [entry] = [e for e in first.json() if e["messageId"] == message_id]
        assert entry["receiveCount"] <= left + 1
        assert entry["receiveCountBeforeListing"] == entry["receiveCount"] - 1
        assert _receives(sqs, dlq, message_id) <= left + 2 + 1  # and it is visible again at once
        # And the output says its own receive is counted
        assert "counts this listing's own receive" in human.stdout, human.stdout
    finally:
        for m in sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10).get("Messages", []):
            if m["MessageId"] == message_id:
                sqs.delete_message(QueueUrl=dlq, ReceiptHandle=m["ReceiptHandle"])


def test_status_check_fails_on_a_message_waiting_in_the_events_queue_with_the_consumer_stopped(road2_off):
    # Given a journey whose event road 2 carried to the events queue (alone there), where the stopped consumer
    # leaves it
    road2_off.empty(tables.EVENTS_QUEUE)
    out_of_sync_journey(road2_off, "queue-age-1")

    def queued() -> dict | None:
        report = road2_off.saga("status", "--json").json()
        waiting = report["queues"]["events"]
        return report if waiting["visible"] + waiting["inFlight"] and waiting["oldestMessageAgeSeconds"] else None

    report = wait_for(queued)
    assert report, "no message reached the events queue"
    age = report["queues"]["events"]["oldestMessageAgeSeconds"]
    # When the operator checks with a threshold it has passed
    failing = road2_off.saga("status", "--check", "--max-queue-age", f"{age / 2:.3f}", "--json")
    # Then the check fails on the events queue's age, and says what clears it
    assert failing.code == 1, failing.stdout + failing.stderr
    [problem] = [p for p in failing.json()["problems"] if p["check"] == "events-queue-age"]
    assert "consumer" in problem["next"]
    assert "passes once the queue drains" in problem["next"]
    # And under the default threshold it fails at once all the same, since the consumer is off (its table says
    # so), and never says the outbox is moving while messages wait
    human = road2_off.saga("status", "--check")
    assert human.code == 1, human.stdout
    assert "FAIL consumer-off" in human.stdout
    assert "FAIL events-queue-age" not in human.stdout
    assert re.search(r"^local pollers running / off +relay, sweeper / consumer$", human.stdout, re.M), human.stdout
    assert "the outbox is moving" not in human.stdout
    assert "events queue oldest message (s)" in human.stdout
    [off] = [
        p for p in road2_off.saga("status", "--check", "--json").json()["problems"] if p["check"] == "consumer-off"
    ]
    assert "--disable consumer" in off["next"], off


def wait_for(predicate):
    return system_wait_for(predicate, interval=0.3)


def test_an_unknown_journey_exits_3_wherever_a_journey_is_named(road2_off):
    # Given a journey neither the orchestrator nor loans-api knows, and one they know
    known = out_of_sync_journey(road2_off, "unknown-3")
    # When the operator names it to journey show (text and JSON)
    shown = road2_off.saga("journey", "show", "no-such-journey", "--json")
    # Then it exits 3, and the JSON does not say it agrees
    assert shown.code == 3, shown.stderr
    assert shown.json()["found"] is False
    assert shown.json()["agree"] is False
    assert road2_off.saga("journey", "show", "no-such-journey").code == 3
    # When the operator names it to the audit (alone, or next to a known journey, with --repair too)
    for extra in ((), ("--journey", known), ("--repair",)):
        audited = road2_off.saga("audit", "--journey", "no-such-journey", *extra, "--json")
        # Then it exits 3 and lists it as unknown
        assert audited.code == 3, (extra, audited.stdout, audited.stderr)
        assert audited.json()["unknown"] == ["no-such-journey"]
    human = road2_off.saga("audit", "--journey", "no-such-journey")
    assert "unknown (neither the orchestrator nor loans-api knows this journey): no-such-journey" in human.stdout
    # And a known journey alone is not unknown
    assert road2_off.saga("audit", "--journey", known, "--json").json()["unknown"] == []


def test_cannot_reach_names_what_to_start_and_is_the_only_exit_2_for_silence():
    # Given no system where the commands look
    nowhere = ("--endpoint-url", f"http://127.0.0.1:{free_port()}", "--api-url", f"http://127.0.0.1:{free_port()}")
    # When the operator runs a command
    answer = run_saga("status", *nowhere)
    # Then it exits 2 in one line that names what to start, and prints no traceback
    assert answer.code == 2
    [line] = answer.stderr.strip().splitlines()
    assert "cannot reach the system" in line
    assert "make run" in line
    assert "saga local" in line
    assert "Traceback" not in answer.stderr


def test_a_relay_failure_fails_the_check_until_the_sweeper_republishes_then_is_cleared(road2_off: Road2Off):
    from saga.local.aws_faults import FaultRule
    from saga.local.moto_server import AwsFaultsClient

    # Given a journey whose events SNS refuses to publish: the relay's stream batches exhaust their retries
    # (and queues with nothing else in them: what other tests left there is theirs)
    for queue in (tables.EVENTS_QUEUE, tables.EVENTS_DLQ):
        road2_off.empty(queue)
    status, record = http("POST", f"{road2_off.api_url}/journeys", {"customerId": "relay"}, key=f"relay-{uuid.uuid4()}")
    assert status == 201, record
    journey_id = record["journeyId"]
    faults = AwsFaultsClient(road2_off.aws_url)
    faults.add(FaultRule("sns", "PublishBatch", "PublishBatchFailed", match=journey_id))
    try:
        terms = {"amount": 5000, "termMonths": 12}
        status, _ = http("POST", f"{road2_off.api_url}/journeys/{journey_id}/simulate", terms)
        assert status == 200  # loans-api committed it, with its outbox event

        def check() -> Answer:
            return road2_off.saga("status", "--check", "--json")

        def failing() -> Answer | None:
            answer = check()
            return answer if any(p["check"] == "relay-failures" for p in answer.json().get("problems", [])) else None

        # When the operator checks while the journey's event is still PENDING
        failed = wait_for(failing)
        # Then the check fails on the relay failure, and what clears it is not the check itself
        assert failed, check().stdout
        [problem] = [p for p in failed.json()["problems"] if p["check"] == "relay-failures"]
        assert "saga status" not in problem["next"]
        assert "sweeper" in problem["next"]
        # When the cause is gone (SNS publishes again) and the sweeper republishes the event
        faults.clear()

        def relay_over() -> Answer | None:
            answer = check()
            return None if any(p["check"] == "relay-failures" for p in answer.json().get("problems", [])) else answer

        passed = wait_for(relay_over)
        # Then the relay failure's check passes by itself (what still fails is the consumer this runtime leaves
        # off, with the republished event waiting for it), and says the record is over and how to remove it
        assert passed, check().stdout
        assert {p["check"] for p in passed.json()["problems"]} <= {"consumer-off"}, passed.stdout
        assert passed.json()["queues"]["relayFailures"]["open"] == 0
        assert passed.json()["queues"]["relayFailures"]["resolved"] >= 1
        human = road2_off.saga("status", "--check")
        assert "`saga relay-failures clear` removes them" in human.stdout, human.stdout
        # When the operator clears the records, Then they are gone, and the check still passes
        cleared = road2_off.saga("relay-failures", "clear", "--json")
        assert cleared.code == 0, cleared.stderr
        assert cleared.json()["cleared"] >= 1
        assert cleared.json()["kept"] == 0
        after = check()
        assert after.json()["queues"]["relayFailures"] == {"visible": 0, "open": 0, "resolved": 0}, after.stdout
        assert {p["check"] for p in after.json()["problems"]} <= {"consumer-off"}, after.stdout
    finally:
        faults.clear()


def test_saga_journey_list_pages_a_customers_journeys_newest_first_for_the_caller_that_created_them(road2_off):
    # Given two journeys the local agent created for a customer, and one another caller created
    customer = f"c-list-{uuid.uuid4()}"
    created = [
        http("POST", f"{road2_off.api_url}/journeys", {"customerId": customer}, key=f"list-{n}-{customer}")[1]
        for n in range(2)
    ]
    other = urllib3.request(
        "POST", f"{road2_off.api_url}/journeys", json={"customerId": customer},
        headers={"Idempotency-Key": f"other-{customer}", "X-Saga-Caller": "arn:aws:iam::000000000000:user/other"},
    )  # fmt: skip
    assert other.status == 201, other.data
    # When the operator lists them one page at a time
    first = road2_off.saga("journey", "list", "--customer", customer, "--limit", "1", "--json")
    assert first.code == 0, first.stderr
    cursor = first.json()["nextCursor"]
    second = road2_off.saga("journey", "list", "--customer", customer, "--limit", "1", "--cursor", cursor, "--json")
    # Then the local agent's journeys come newest first, the other caller's not at all
    listed = [r["journeyId"] for page in (first, second) for r in page.json()["journeys"]]
    assert listed == [created[1]["journeyId"], created[0]["journeyId"]], listed
    assert "nextCursor" not in second.json(), second.json()
    # And --caller lists the other caller's; a human reads one line per journey; a page too large is a usage error
    other_caller = "arn:aws:iam::000000000000:user/other"
    theirs = road2_off.saga("journey", "list", "--customer", customer, "--caller", other_caller)
    assert theirs.code == 0, theirs.stderr
    assert json.loads(other.data)["journeyId"] in theirs.stdout, theirs.stdout
    assert theirs.stdout.splitlines()[0].split() == ["journey", "state", "created", "next"], theirs.stdout
    assert road2_off.saga("journey", "list", "--customer", customer, "--limit", "11").code == 2
