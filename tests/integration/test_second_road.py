"""Road 2 on moto: stream -> relay -> SNS -> SQS -> consumer, with handlers invoked by pollers that
give them real-shaped Lambda events and Lambda's batch semantics."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from functions.consumer import bootstrap as consumer_bootstrap
from functions.consumer import service as consumer_service
from functions.relay import bootstrap as relay_bootstrap
from functions.relay.publisher import SnsPublisher
from saga.ops import road2
from saga.ops.target import local_target
from shared import aws
from shared.events import LoanEvent, parse_event
from tests.crashes import RelayDiesAfterPublish, once
from tests.integration.aws_calls import scan
from tests.integration.journeys import journey_in, new_journey, simulate, truth
from tests.support import PATIENT_AWS, json_of, quiet_metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient


def drain(stream_poller, sqs_poller, rounds: int = 20) -> None:
    for _ in range(rounds):
        if stream_poller.poll_once() + sqs_poller.poll_once() == 0:
            return


def record_of(orchestrator, journey) -> Any:
    return json_of(orchestrator.get(f"/journeys/{journey['journeyId']}"))


def outbox_items(dynamodb: DynamoDBClient, resources) -> list[dict]:
    return [i for i in scan(dynamodb, resources.loans_table) if i["sk"].startswith("EVENT#")]


def queue_depth(sqs: SQSClient, url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])


def test_road_one_lost_the_backstop_alone_brings_the_record_to_the_truth(
    orchestrator, loans_api, stream_poller, sqs_poller, dynamodb: DynamoDBClient, sqs: SQSClient, resources
):
    # Given a journey, and loans-api committing a simulation whose reply never reached the orchestrator
    journey = new_journey(orchestrator)
    reply = json_of(
        loans_api.post(
            "/simulations",
            {"journeyId": journey["journeyId"], "amount": 5000, "termMonths": 12},
            key="crashed-orchestrator",
        )
    )
    assert record_of(orchestrator, journey)["version"] == 0
    # When road 2 runs: stream record -> relay -> SNS -> SQS -> consumer
    drain(stream_poller, sqs_poller)
    # Then the Control Record holds the truth
    record = record_of(orchestrator, journey)
    assert record["currentState"] == "simulated"
    assert record["version"] == 1
    assert record["lastAppliedSeq"] == 1
    assert record["lastAppliedEventId"] == reply["eventId"]
    assert record["simulation"]["simulationId"] == reply["simulationId"]
    # And the outbox item is NOTIFIED and kept as the journey's history (no TTL)
    [item] = outbox_items(dynamodb, resources)
    assert item["status"] == "NOTIFIED"
    assert "expiresAt" not in item
    assert queue_depth(sqs, resources.events_queue_url) == 0
    assert queue_depth(sqs, resources.events_dlq_url) == 0


def test_when_road_one_applied_the_backstop_is_a_noop(orchestrator, loans_http, stream_poller, sqs_poller):
    journey = journey_in(orchestrator, "accepted")
    before = record_of(orchestrator, journey)
    assert before["version"] == 2
    drain(stream_poller, sqs_poller)
    assert record_of(orchestrator, journey) == before
    assert {e["status"] for e in truth(loans_http, journey["journeyId"])["events"]} == {"NOTIFIED"}


def test_relay_crash_between_publish_and_mark_republishes_and_the_consumer_dedups(
    orchestrator,
    loans_api,
    relay_settings,
    stream_poller,
    sqs_poller,
    sqs: SQSClient,
    resources,
    dynamodb: DynamoDBClient,
):
    # Given a relay that dies once right after publishing
    sns = aws.client("sns", resources.region, resources.endpoint_url, PATIENT_AWS)
    publisher = RelayDiesAfterPublish(SnsPublisher(sns, resources.topic_arn), once())
    stream_poller.handler = relay_bootstrap.build_stream_handler(relay_settings, quiet_metrics("relay"), publisher)
    delivered: Counter[str] = Counter()
    consume = sqs_poller.handler

    def counting(event, context):
        delivered.update(json.loads(r["body"])["eventId"] for r in event["Records"])
        return consume(event, context)

    sqs_poller.handler = counting
    journey = new_journey(orchestrator)
    reply = json_of(
        loans_api.post("/simulations", {"journeyId": journey["journeyId"], "amount": 5000, "termMonths": 12}, key="k")
    )
    # When road 2 runs
    drain(stream_poller, sqs_poller)
    # Then the event was published twice, applied once, and the item ends NOTIFIED
    assert publisher.crashes == 1
    assert delivered[reply["eventId"]] == 2
    assert record_of(orchestrator, journey)["version"] == 1
    assert [i["status"] for i in outbox_items(dynamodb, resources)] == ["NOTIFIED"]
    assert queue_depth(sqs, resources.events_dlq_url) == 0


def noting_answers(stream_poller) -> list[Any]:
    """The relay's answers from now on, one per batch: its outbox INSERTs' eventIds by sequence number, and
    the sequence numbers it failed (the poller here has no filter: the relay also sees its own marks)."""
    answers: list[Any] = []
    handler = stream_poller.handler

    def noting(event: dict[str, Any], context: Any) -> Any:
        answer = handler(event, context)
        ids = {
            r["dynamodb"]["SequenceNumber"]: r["dynamodb"]["NewImage"]["eventId"]["S"]
            for r in event["Records"]
            if r["eventName"] == "INSERT" and "eventId" in r["dynamodb"].get("NewImage", {})
        }
        answers.append((ids, [f["itemIdentifier"] for f in answer["batchItemFailures"]]))
        return answer

    stream_poller.handler = noting
    return answers


def journey_events(orchestrator, loans_api) -> tuple[dict, list[LoanEvent]]:
    """A journey whose events were committed by loans-api but never applied to the record."""
    journey = new_journey(orchestrator)
    jid = journey["journeyId"]
    replies = [json_of(loans_api.post("/simulations", {"journeyId": jid, "amount": 5000, "termMonths": 12}, key="s1"))]
    replies.append(
        json_of(
            loans_api.post("/acceptances", {"journeyId": jid, "simulationId": replies[0]["simulationId"]}, key="a1")
        )
    )
    for key, amount in (("s2", 6000), ("s3", 8000)):  # the first re-simulation cancels the acceptance
        body = {"journeyId": jid, "amount": amount, "termMonths": 24}
        replies.append(json_of(loans_api.post("/simulations", body, key=key)))
    return journey, [LoanEvent.model_validate(r["event"]) for r in replies]


def test_duplicates_and_reverse_order_converge_with_nothing_in_the_dlq(
    orchestrator, loans_api, sqs_poller, sqs: SQSClient, resources
):
    # Given a journey's events delivered newest first, each one three times
    journey, events = journey_events(orchestrator, loans_api)
    for event in reversed(events):
        for _ in range(3):
            sqs.send_message(QueueUrl=resources.events_queue_url, MessageBody=event.model_dump_json())
    # When the consumer drains the queue
    while sqs_poller.poll_once():
        pass
    # Then the record equals the truth of the last event, and nothing failed
    record = record_of(orchestrator, journey)
    last = events[-1]
    assert record["lastAppliedSeq"] == last.seq
    assert record["currentState"] == last.snapshot.state == "simulated"
    assert record["simulation"] == last.snapshot.model_dump(mode="json")["simulation"]
    assert record["version"] == 1  # the newest event came first; everything after it was a no-op
    assert queue_depth(sqs, resources.events_queue_url) == 0
    assert queue_depth(sqs, resources.events_dlq_url) == 0


def test_a_poison_message_reaches_the_dlq_after_exactly_three_receives_and_the_batch_goes_on(
    orchestrator, loans_api, sqs_poller, sqs: SQSClient, resources
):
    # Given valid events mixed with three kinds of poison in one queue
    journey, events = journey_events(orchestrator, loans_api)
    unknown = events[0].model_copy(update={"journeyId": "no-such-journey"})
    poison = ["not json at all", json.dumps({"eventId": "x", "type": "Nope"}), unknown.model_dump_json()]
    for body in [poison[0], *(e.model_dump_json() for e in events), poison[1], poison[2]]:
        sqs.send_message(QueueUrl=resources.events_queue_url, MessageBody=body)
    receives: Counter[str] = Counter()
    consume = sqs_poller.handler

    def counting(event, context):
        receives.update(r["body"] for r in event["Records"])
        return consume(event, context)

    sqs_poller.handler = counting
    # When the consumer polls until the queue is empty
    for _ in range(50):
        if not sqs_poller.poll_once():
            break
    # Then every valid event was applied, and each poison message was received exactly 3 times
    assert record_of(orchestrator, journey)["lastAppliedSeq"] == events[-1].seq
    assert [receives[body] for body in poison] == [3, 3, 3]
    assert queue_depth(sqs, resources.events_queue_url) == 0
    dead = sqs.receive_message(QueueUrl=resources.events_dlq_url, MaxNumberOfMessages=10)["Messages"]
    assert sorted(m["Body"] for m in dead) == sorted(poison)


def test_the_sweeper_republishes_a_stale_pending_event_and_reports_its_age(
    orchestrator, loans_api, relay_settings, stream_poller, sqs_poller, dynamodb: DynamoDBClient, resources
):
    # Given a committed event the stream never delivered (no relay ran)
    journey = new_journey(orchestrator)
    loans_api.post("/simulations", {"journeyId": journey["journeyId"], "amount": 5000, "termMonths": 12}, key="k")
    # When the sweeper runs two minutes later
    metrics = quiet_metrics("sweeper")
    metrics.clear_metrics()  # Powertools shares one metric set per process: start from none
    later = datetime.now(UTC) + timedelta(seconds=120)
    sweeper = relay_bootstrap.build_sweeper(relay_settings, metrics, clock=lambda: later)
    report = sweeper.sweep()
    # Then it saw one pending event about two minutes old, and republished it
    assert report.pending == 1
    assert report.oldest_age_seconds >= 119
    assert report.republished == 1
    assert metrics.metric_set["OldestPendingOutboxAgeSeconds"]["Value"] == [report.oldest_age_seconds]
    assert metrics.metric_set["PendingOutboxCount"]["Value"] == [1]
    # And after a relay pass and the consumer, nothing is pending and the record holds the truth
    drain(stream_poller, sqs_poller)
    assert sweeper.sweep().pending == 0
    assert [i["status"] for i in outbox_items(dynamodb, resources)] == ["NOTIFIED"]
    assert record_of(orchestrator, journey)["version"] == 1


def test_a_fresh_pending_event_is_left_to_the_stream_until_it_is_older_than_the_threshold(
    orchestrator, loans_api, relay_settings, dynamodb: DynamoDBClient, resources
):
    # Given an event committed just now, not yet relayed
    journey = new_journey(orchestrator)
    loans_api.post("/simulations", {"journeyId": journey["journeyId"], "amount": 5000, "termMonths": 12}, key="k")
    # When the sweeper runs now, Then it leaves it alone: the sweeper's cursor stops at now less the
    # threshold, so an event younger than that is not yet examined (the stream's relay publishes it)
    report = relay_bootstrap.build_sweeper(relay_settings, quiet_metrics("sweeper")).sweep()
    assert (report.pending, report.republished) == (0, 0)
    assert [i["status"] for i in outbox_items(dynamodb, resources)] == ["PENDING"]
    # And a run past the threshold examines it and republishes it
    later = datetime.now(UTC) + timedelta(seconds=relay_settings.sweep_threshold_seconds + 1)
    report = relay_bootstrap.build_sweeper(relay_settings, quiet_metrics("sweeper"), clock=lambda: later).sweep()
    assert (report.pending, report.republished) == (1, 1)


def test_the_relay_ignores_everything_but_outbox_inserts(
    orchestrator, loans_api, stream_poller, sqs: SQSClient, resources
):
    # Given a journey with events (the stream also carries ledger, receipts, and the relay's own MODIFYs)
    journey_events(orchestrator, loans_api)
    # When the stream is read twice over
    stream_poller.poll_once()
    stream_poller.poll_once()
    # Then exactly one message per event was published: no loop on the NOTIFIED updates
    assert queue_depth(sqs, resources.events_queue_url) == 4


def test_a_cancelled_transaction_leaves_no_phantom_in_the_stream(
    orchestrator, loans_api, stream_poller, sqs: SQSClient, resources
):
    # Given a committed simulation, its replay (a transaction cancelled on the receipt) and a later commit
    journey = new_journey(orchestrator)
    body = {"journeyId": journey["journeyId"], "amount": 5000, "termMonths": 12}
    stream_poller.poll_once()  # the iterator now exists
    loans_api.post("/simulations", body, key="k1")
    assert loans_api.post("/simulations", body, key="k1").headers.get("Idempotent-Replayed") == "true"
    loans_api.post("/simulations", {**body, "amount": 6000}, key="k2")
    # When the relay reads the stream
    stream_poller.poll_once()
    # Then it published exactly the two committed events: no phantom, nothing missed
    messages = []
    while batch := sqs.receive_message(QueueUrl=resources.events_queue_url, MaxNumberOfMessages=10).get("Messages"):
        messages += batch
    published = sorted((json.loads(m["Body"])["seq"], json.loads(m["Body"])["eventId"]) for m in messages)
    committed = json_of(loans_api.get(f"/journeys/{journey['journeyId']}"))["events"]
    assert published == [(e["seq"], e["eventId"]) for e in committed]


# -- road 2 applies only what loans-api committed (D15) ---------------------------------------------


def drain_queue(sqs_poller, rounds: int = 50) -> None:
    for _ in range(rounds):
        if not sqs_poller.poll_once():
            return


def disbursement_of_another_journey(orchestrator, loans_api, to: dict, seq: int) -> LoanEvent:
    """A real LoanDisbursed event of another journey, rewritten to name `to`, at `seq` (the attack)."""
    other = journey_in(orchestrator, "disbursed")
    real = LoanEvent.model_validate(json_of(loans_api.get(f"/journeys/{other['journeyId']}/ledger"))["lastEvent"])
    assert real.type == "LoanDisbursed"
    snapshot = real.snapshot.model_copy(update={"journeyId": to["journeyId"]})
    return real.model_copy(update={"journeyId": to["journeyId"], "seq": seq, "snapshot": snapshot})


def dlq_reasons(resources) -> list[dict[str, Any]]:
    target = local_target(resources.endpoint_url, resources.region, "http://orchestrator", "http://loans-api")
    return road2.dlq_list(target)


def test_a_forged_disbursement_published_on_the_topic_changes_no_record_and_lands_in_the_dlq_with_its_reason(
    orchestrator, loans_api, sqs_poller, sqs: SQSClient, resources
):
    # Given a simulated journey, and another journey's disbursement rewritten to name it with the next seq
    journey = journey_in(orchestrator, "simulated")
    before = record_of(orchestrator, journey)
    forged = disbursement_of_another_journey(orchestrator, loans_api, journey, seq=before["lastAppliedSeq"] + 1)
    # When it is published on the events topic and the consumer drains the queue
    sns = aws.client("sns", resources.region, resources.endpoint_url, PATIENT_AWS)
    sns.publish(TopicArn=resources.topic_arn, Message=forged.model_dump_json())
    drain_queue(sqs_poller)
    # Then the record is exactly as it was: nothing was disbursed
    assert record_of(orchestrator, journey) == before
    # And the message is in the DLQ, and `saga dlq list` says why
    [entry] = dlq_reasons(resources)
    assert entry["eventId"] == forged.eventId
    assert entry["reason"] == (
        f"rejected: seq 2 is beyond loans-api's ledger for journey {journey['journeyId']} (at seq 1)"
    )
    assert queue_depth(sqs, resources.events_queue_url) == 0


def test_a_seq_of_a_billion_sent_straight_to_the_queue_wedges_nothing(
    orchestrator, loans_api, sqs_poller, sqs: SQSClient, resources
):
    # Given a simulated journey, and a copy of its own simulation event claiming seq 10^9
    journey = journey_in(orchestrator, "simulated")
    before = record_of(orchestrator, journey)
    ledger = json_of(loans_api.get(f"/journeys/{journey['journeyId']}/ledger"))["lastEvent"]
    wedge = {**ledger, "seq": 10**9}
    # When it is sent straight to the events queue and the consumer drains it
    sqs.send_message(QueueUrl=resources.events_queue_url, MessageBody=json.dumps(wedge))
    drain_queue(sqs_poller)
    # Then the record keeps its seq, the message is set aside with its reason, and the journey goes on
    assert record_of(orchestrator, journey) == before
    [entry] = dlq_reasons(resources)
    assert entry["reason"].startswith("rejected: seq 1000000000 is beyond loans-api's ledger")
    assert simulate(orchestrator, journey).status == 200


def test_an_older_message_applies_the_ledgers_newest_event_and_a_redrive_as_the_redrive_role_is_a_noop(
    orchestrator, loans_api, sqs_poller, sqs: SQSClient, resources
):
    # Given a journey whose simulation and acceptance loans-api committed, none applied (road 1 lost)
    journey = new_journey(orchestrator)
    jid = journey["journeyId"]
    simulation = json_of(loans_api.post("/simulations", {"journeyId": jid, "amount": 5000, "termMonths": 12}, key="s"))
    acceptance = json_of(loans_api.post("/acceptances", {"journeyId": jid, "simulationId": simulation["simulationId"]},
                                        key="a"))  # fmt: skip
    # When only the simulation's message arrives
    sqs.send_message(QueueUrl=resources.events_queue_url, MessageBody=json.dumps(simulation["event"]))
    drain_queue(sqs_poller)
    # Then the record shows the ledger's newest event (the acceptance), applied by road 2
    record = record_of(orchestrator, journey)
    assert (record["currentState"], record["lastAppliedEventId"]) == ("accepted", acceptance["eventId"])
    assert record["appliedBy"][-1]["road"] == "outbox"
    # And a DLQ message redriven as the redrive role (assumed through STS) comes back and is a no-op
    sqs.send_message(QueueUrl=resources.events_dlq_url, MessageBody=json.dumps(simulation["event"]))
    target = local_target(resources.endpoint_url, resources.region, "http://orchestrator", "http://loans-api")
    as_role = dataclasses.replace(target, redrive_role_arn="arn:aws:iam::123456789012:role/redrive")
    assert len(road2.dlq_redrive(as_role, dry_run=False, limit=10)) == 1
    drain_queue(sqs_poller)
    assert record_of(orchestrator, journey) == record
    assert queue_depth(sqs, resources.events_dlq_url) == 0


def sqs_record(body: str) -> dict[str, Any]:
    """One SQS record as Lambda's event source mapping delivers it (received once)."""
    return {"messageId": "m-1", "receiptHandle": "r-1", "body": body, "attributes": {"ApproximateReceiveCount": "1"},
            "messageAttributes": {}, "md5OfBody": "", "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:loan-events", "awsRegion": "us-east-1"}  # fmt: skip


def test_a_rejected_message_is_logged_with_its_reason_and_no_stack_trace(
    orchestrator, consumer_settings, consumer_loans_http, caplog
):
    # Given a simulated journey, and a message claiming its seq 2
    journey = journey_in(orchestrator, "simulated")
    ledger = json_of(orchestrator.get(f"/journeys/{journey['journeyId']}"))
    body = json.dumps({"eventId": ledger["lastAppliedEventId"], "journeyId": journey["journeyId"], "seq": 2,
                       "type": "LoanDisbursed", "occurredAt": "2026-01-01T00:00:00Z",
                       "snapshot": {"journeyId": journey["journeyId"], "state": "disbursed"}})  # fmt: skip
    handler = consumer_bootstrap.build(consumer_settings, quiet_metrics("consumer"), http=consumer_loans_http)
    caplog.clear()
    # When the consumer's batch handler is given it
    answer = handler({"Records": [sqs_record(body)]}, None)
    # Then the message is reported failed (retried, then the DLQ), logged at ERROR with the reason, no stack
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    [logged] = [r for r in caplog.records if r.getMessage().startswith("message rejected")]
    assert logged.levelname == "ERROR"
    assert logged.reason.startswith("seq 2 is beyond loans-api's ledger")
    assert logged.exc_info is None


def test_a_batch_of_duplicates_reads_each_message_once_and_only_the_heads_of_their_records(
    orchestrator, loans_api, consumer_settings, consumer_loans_http, monkeypatch
):
    # Given a journey whose newest event road 2 applied, and a batch of 10 redeliveries of its events
    _, events = journey_events(orchestrator, loans_api)
    handler = consumer_bootstrap.build(consumer_settings, quiet_metrics("consumer"), http=consumer_loans_http)
    assert handler({"Records": [sqs_record(events[-1].model_dump_json())]}, None) == {"batchItemFailures": []}
    bodies = [events[i % len(events)].model_dump_json() for i in range(10)]
    parsed: list[str] = []

    def counting_parse(body: str) -> LoanEvent:
        parsed.append(body)
        return parse_event(body)

    monkeypatch.setattr(consumer_service, "parse_event", counting_parse)
    calls: list[tuple[str, dict[str, Any]]] = []

    def record(**kwargs: Any) -> None:
        calls.append((kwargs["event_name"], kwargs.get("parsed") or {}))

    hooks = aws.session()
    hooks.register("after-call.dynamodb", record, unique_id="test-heads")
    try:
        handler = consumer_bootstrap.build(consumer_settings, quiet_metrics("consumer"), http=consumer_loans_http)
        # When the consumer's batch handler is given them
        records = [{**sqs_record(body), "messageId": f"m-{i}"} for i, body in enumerate(bodies)]
        answer = handler({"Records": records}, None)
    finally:
        hooks.unregister("after-call.dynamodb", unique_id="test-heads")
    # Then every one is a no-op, each body was validated once (not once for the prefetch and again to apply),
    # and the batch's one DynamoDB call read the stale check's fields of the record, not the whole record
    assert answer == {"batchItemFailures": []}
    assert sorted(parsed) == sorted(bodies), f"{len(parsed)} validations for {len(bodies)} messages"
    assert [name.rsplit(".", 1)[-1] for name, _ in calls] == ["BatchGetItem"], calls
    [items] = calls[0][1]["Responses"].values()
    assert [set(item) for item in items] == [{"journeyId", "version", "lastAppliedSeq"}], items


def test_dlq_list_says_an_event_loans_api_committed_but_road_2_could_not_apply_is_to_be_redriven(
    orchestrator, loans_api, sqs: SQSClient, resources
):
    # Given an event loans-api committed that the record has not applied, set aside in the DLQ (as a
    # loans-api outage leaves it after its receives)
    journey = new_journey(orchestrator)
    body = {"journeyId": journey["journeyId"], "amount": 5000, "termMonths": 12}
    simulation = json_of(loans_api.post("/simulations", body, key="outage"))
    sqs.send_message(QueueUrl=resources.events_dlq_url, MessageBody=json.dumps(simulation["event"]))
    # When the operator lists the DLQ, Then it says loans-api committed it and a redrive applies it
    [entry] = dlq_reasons(resources)
    assert entry["reason"].startswith("committed by loans-api, not applied")
    assert entry["reason"].endswith("redrive it")


def test_dlq_list_says_the_cause_the_consumer_recorded_for_the_message_never_a_guess(
    orchestrator, loans_api, consumer_settings, consumer_loans_http, resources, faults, sqs: SQSClient, tmp_path
):
    from functions.consumer.failure_notes import read_notes
    from saga.local.aws_faults import FaultRule

    # Given an event loans-api committed that the record has not applied, and a consumer that notes its failures
    journey = new_journey(orchestrator)
    body = {"journeyId": journey["journeyId"], "amount": 5000, "termMonths": 12}
    event = json.dumps(json_of(loans_api.post("/simulations", body, key="ddb-500"))["event"])
    notes = tmp_path / "consumer-failures.jsonl"
    settings = consumer_settings.model_copy(update={"failure_notes_file": str(notes)})
    handler = consumer_bootstrap.build(settings, quiet_metrics("consumer"), http=consumer_loans_http)
    # When the journeys table answers the consumer's read with a DynamoDB 500, on every try
    faults.add(FaultRule("dynamodb", "BatchGetItem", "InternalServerError", match=resources.journeys_table))
    with pytest.raises(Exception, match="InternalServerError"):
        handler({"Records": [sqs_record(event)]}, None)
    faults.clear()
    # And the message is set aside in the DLQ (as its last receive leaves it), under the id the consumer noted
    sqs.send_message(QueueUrl=resources.events_dlq_url, MessageBody=event)
    [listed] = road2.peek(local_target(resources.endpoint_url, resources.region, "http://o", "http://l"),
                          resources.events_dlq_url, 10)  # fmt: skip
    causes = {listed["MessageId"]: read_notes(notes)["m-1"]}
    target = local_target(resources.endpoint_url, resources.region, "http://orchestrator", "http://loans-api")
    [entry] = road2.dlq_list(target, causes=causes, log="the output of `saga local`")
    # Then its "why" is that cause: the DynamoDB error on the journeys table, not a guess about loans-api
    assert "the consumer recorded: failed before it was applied" in entry["reason"], entry["reason"]
    assert f"DynamoDB BatchGetItem on {resources.journeys_table} answered InternalServerError" in entry["reason"]
    assert "unreachable?" not in entry["reason"]
    # And with no note of it, the "why" says the cause is unknown here and where the consumer's log is
    [unknown] = road2.dlq_list(target, log="the output of `saga local` (pid 7)")
    assert "not recorded where saga can read it; it is in the output of `saga local` (pid 7)" in unknown["reason"]
    assert "unreachable?" not in unknown["reason"]


def test_a_failed_mark_call_fails_its_records_and_the_retry_republishes_them_harmlessly(
    orchestrator, loans_api, stream_poller, sqs_poller, dynamodb: DynamoDBClient, sqs: SQSClient, resources, faults
):
    from saga.local.aws_faults import FaultRule

    # Given four committed events of one journey, and the call marking them failing (every one of botocore's
    # attempts) once
    journey, events = journey_events(orchestrator, loans_api)
    from shared.keys import event_sk

    mark = FaultRule("dynamodb", "BatchWriteItem", "InternalServerError", match=event_sk(events[1].seq), limit=3)
    faults.add(mark)
    noted = noting_answers(stream_poller)
    # When road 2 runs (the stream retries from the lowest failed record, as Lambda does)
    drain(stream_poller, sqs_poller)
    # (each batch's outbox eventIds, and those it reported failed; the stream also carries the journey's other
    # items)
    answers = [(list(outbox.values()), [outbox.get(f, f) for f in failed]) for outbox, failed in noted if outbox]
    # Then the first answer failed the four records the failed call held (their events were published)
    ids = [e.eventId for e in events]
    assert answers[0] == (ids, ids), answers
    # And the retry republished them and failed none
    assert answers[1] == (ids, []), answers
    # And every item ends NOTIFIED, the record at the truth, nothing in the DLQ
    assert sorted(i["status"] for i in outbox_items(dynamodb, resources)) == ["NOTIFIED"] * 4
    assert record_of(orchestrator, journey)["lastAppliedSeq"] == events[-1].seq
    assert queue_depth(sqs, resources.events_dlq_url) == 0


def test_a_batch_with_one_unreadable_record_fails_only_the_message_about_it(
    orchestrator, loans_api, consumer_settings, consumer_loans_http, dynamodb: DynamoDBClient, resources
):
    from shared.control_store import control_key

    # Given a journey whose events road 2 already applied, and another whose Control Record was damaged (its
    # version gone: an operator's hand edit, a bad restore)
    _, events = journey_events(orchestrator, loans_api)
    handler = consumer_bootstrap.build(consumer_settings, quiet_metrics("consumer"), http=consumer_loans_http)
    assert handler({"Records": [sqs_record(events[-1].model_dump_json())]}, None) == {"batchItemFailures": []}
    other = new_journey(orchestrator)["journeyId"]
    body = {"journeyId": other, "amount": 5000, "termMonths": 12}
    damaged = LoanEvent.model_validate(json_of(loans_api.post("/simulations", body, key="damaged"))["event"])
    dynamodb.update_item(TableName=resources.journeys_table, Key=control_key(other), UpdateExpression="REMOVE version")
    # When one batch brings a redelivery of the healthy journey's event and an event of the damaged one
    records = [
        {**sqs_record(events[-1].model_dump_json()), "messageId": "healthy"},
        {**sqs_record(damaged.model_dump_json()), "messageId": "damaged"},
    ]
    answer = handler({"Records": records}, None)
    # Then only the message about the damaged record fails (retried, then the DLQ): not the whole batch
    assert answer == {"batchItemFailures": [{"itemIdentifier": "damaged"}]}, answer
