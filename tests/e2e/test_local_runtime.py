"""`saga local` driven over real HTTP, as a user (or their agent) would drive it."""

from __future__ import annotations

import json
import signal
import time
import uuid
from typing import Any

from saga.ops.journeys import compare
from tests.support import PATIENT_AWS
from tests.system import LOANS_PROXY, free_port, queued, read_log, start_local, stop_local


def new_journey(system) -> dict:
    status, record = system.api("POST", "/journeys", {"customerId": "e2e"}, Idempotency_Key=str(uuid.uuid4()))
    assert status == 201, record
    return dict(record)


def follow(system, record: dict, name: str, body: dict | None = None) -> tuple[int, dict]:
    """Call the command through its HATEOAS link, as an agent would."""
    link = next(a for a in record["availableActions"] if a["name"] == name)
    status, payload = system.api(link["method"], link["href"], link.get("body") if body is None else body)
    return status, payload


def test_an_agent_following_the_links_disburses_a_journey_that_agrees_with_loans_api_and_drains(system, clean_proxy):
    record = new_journey(system)
    status, record = follow(system, record, "simulate", {"amount": 10000, "termMonths": 36})
    assert (status, record["currentState"], record["simulation"]["monthlyPayment"]) == (200, "simulated", "312.90")
    status, record = follow(system, record, "simulate", {"amount": 12000, "termMonths": 48})
    status, record = follow(system, record, "accept")
    assert record["currentState"] == "accepted"
    status, record = follow(system, record, "disburse")
    assert (status, record["currentState"], record["availableActions"]) == (200, "disbursed", [])
    truth = system.truth(record["journeyId"])
    assert compare(record, truth)["agree"], compare(record, truth)
    # The outbox drains: every event is NOTIFIED shortly after
    assert system.wait_for(lambda: {e["status"] for e in system.truth(record["journeyId"])["events"]} == {"NOTIFIED"})


def test_the_backstop_alone_applies_the_event_when_road_one_is_cut(system, clean_proxy):
    # Given a journey, and a proxy that drops every loans-api reply after the request went through
    record = new_journey(system)
    clean_proxy.add_toxic(LOANS_PROXY, "limit_data", stream="downstream", bytes=0)
    # When the agent simulates
    started = time.monotonic()
    status, problem = system.api(
        "POST", f"/journeys/{record['journeyId']}/simulate", {"amount": 5000, "termMonths": 12}
    )
    elapsed = time.monotonic() - started
    # Then it is told to retry after the whole schedule, and loans-api committed exactly once
    assert status == 503, problem
    assert problem["retryable"] is True
    assert elapsed > 12
    truth = system.truth(record["journeyId"])
    assert len(truth["simulations"]) == 1

    # And road 2 alone brings the Control Record to the truth
    def applied():
        _, current = system.api("GET", f"/journeys/{record['journeyId']}")
        return current if current["currentState"] == "simulated" else None

    current = system.wait_for(applied)
    assert current, "the backstop did not apply the event (its lag is measured by bench/, not here)"
    assert current["simulation"]["simulationId"] == truth["simulations"][0]["simulationId"]
    assert current["lastAppliedSeq"] == truth["seq"]


def test_saga_status_shows_an_empty_outbox_queue_and_dlq_once_road_2_drained(system, clean_proxy):
    record = new_journey(system)
    follow(system, record, "simulate", {"amount": 5000, "termMonths": 12})

    def drained():
        code, out = system.saga("status", "--json")
        assert code == 0, out
        report = json.loads(out)
        return report if report["outbox"]["pending"] == 0 and report["queues"]["events"]["visible"] == 0 else None

    report = system.wait_for(drained, interval=0.5)
    assert report, "the outbox did not drain"
    assert report["queues"]["eventsDlq"]["visible"] == 0
    code, human = system.saga("status")
    assert code == 0, human
    assert "outbox pending" in human


def test_a_poison_message_shows_in_dlq_list_and_a_redrive_dry_run_leaves_it_there(system, clean_proxy):
    from shared import aws, tables

    sqs = aws.client("sqs", "us-east-1", system.aws_url, PATIENT_AWS)
    queue = sqs.get_queue_url(QueueName=tables.EVENTS_QUEUE.local_name)["QueueUrl"]
    dlq = sqs.get_queue_url(QueueName=tables.EVENTS_DLQ.local_name)["QueueUrl"]
    before = queued(sqs, dlq)
    sqs.send_message(QueueUrl=queue, MessageBody="this is not an event")

    def in_dlq():
        code, out = system.saga("dlq", "list", "--json")
        return [e for e in json.loads(out) if e["reason"] == "not JSON"] if code == 0 else None

    system.wait_for(lambda: queued(sqs, dlq) > before)  # (looked at in SQS first: a listing costs a second)
    entries = system.wait_for(in_dlq, interval=0.5)
    assert entries, "the poison message never reached the DLQ"
    assert entries[0]["receiveCount"] >= 3
    code, out = system.saga("dlq", "redrive", "--dry-run")
    assert code == 0, out
    assert "would move" in out
    assert entries[0]["messageId"] in out
    code, out = system.saga("dlq", "list", "--json")
    assert entries[0]["messageId"] in out, "a dry run must leave the message in the DLQ"


def test_saga_demo_disburses_a_journey_and_journey_show_says_it_agrees(system, clean_proxy):
    code, out = system.saga("demo")
    assert code == 0, out
    assert "disbursed" in out
    journey_id = out.split("journey ")[1].split()[0]
    code, out = system.saga("journey", "show", journey_id)
    assert code == 0, out
    assert "agree: yes" in out


def test_saga_local_becomes_ready_and_stops_cleanly_on_sigterm(tmp_path):
    # (How soon it is ready depends on the machine's load: no verdict here rests on it.)
    log_path = str(tmp_path / "local.log")
    process, _ = start_local(free_port(), free_port(), free_port(), log_path=log_path)
    assert stop_local(process, signal.SIGTERM) == 0
    output = read_log(log_path)
    assert "ready in" in output
    assert "stopped" in output


def test_twenty_concurrent_requests_with_one_key_make_one_simulation(system, clean_proxy):
    # (Over HTTP: Powertools' event handler keeps the current request in a class attribute, so
    # concurrent requests are only faithful with one request per process, as in Lambda.)
    from concurrent.futures import ThreadPoolExecutor

    journey_id = f"concurrent-{time.monotonic_ns()}"
    body = {"journeyId": journey_id, "amount": 10000, "termMonths": 36}

    def post(_: int) -> Any:
        return system.call("POST", f"{system.loans_url}/simulations", body, {"Idempotency-Key": f"{journey_id}-k"})

    with ThreadPoolExecutor(max_workers=20) as pool:
        responses = list(pool.map(post, range(20)))
    assert {status for status, _, _ in responses} == {201}
    assert len({json.dumps(payload, sort_keys=True) for _, payload, _ in responses}) == 1
    replays = [headers.get("Idempotent-Replayed") for _, _, headers in responses]
    assert replays.count("true") == 19
    truth = system.truth(journey_id)
    assert len(truth["simulations"]) == 1
    assert len(truth["events"]) == 1
