"""The backstop cannot be stopped by one item: the sweeper and the relay skip and count what they
cannot read; events are read tolerantly (unknown fields ignored), and an unknown event type goes to
the DLQ with its reason."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from functions.consumer import bootstrap as consumer_bootstrap
from functions.consumer.service import MalformedEvent
from functions.relay import bootstrap as relay_bootstrap
from saga.ops import road2
from shared import outbox, tables
from shared.control_store import DynamoControlRecordStore
from shared.dynamo import to_item
from shared.events import LoanEvent, LoanSnapshot, UnreadableEvent, parse_event
from shared.keys import changes_partition, event_sk, journey_pk
from tests.support import quiet_metrics, uuid7_at

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef


def stale_event(journey_id: str, seq: int, minutes_ago: float = 10) -> LoanEvent:
    """An event committed `minutes_ago` (its id minted then, as loans-api mints it)."""
    occurred = datetime.now(UTC) - timedelta(minutes=minutes_ago)
    return LoanEvent(
        eventId=uuid7_at(occurred),
        journeyId=journey_id,
        seq=seq,
        type="JourneyCancelled",
        occurredAt=occurred,
        snapshot=LoanSnapshot(journeyId=journey_id, state="cancelled"),
    )


def unreadable_pending_item(journey_id: str, minutes_ago: float = 6) -> dict:
    """A PENDING outbox item in the changes index that is not an event: no snapshot, a bad seq."""
    event_id = uuid7_at(datetime.now(UTC) - timedelta(minutes=minutes_ago))
    return to_item(
        {
            "pk": journey_pk(journey_id),
            "sk": event_sk(1),
            "eventId": event_id,
            "journeyId": journey_id,
            "seq": "one",
            "type": "SimulationCreated",
            tables.CHANGES_PARTITION_ATTRIBUTE: changes_partition("SimulationCreated", 0),
            "status": outbox.PENDING,
        }
    )


def received(sqs: SQSClient, url: str) -> list[MessageTypeDef]:
    messages: list[MessageTypeDef] = []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        messages += batch
    return messages


def test_an_unreadable_pending_item_does_not_stop_the_sweep(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings
):
    # Given an unreadable PENDING item among valid stale ones (the bad one the oldest)
    dynamodb.put_item(TableName=resources.loans_table, Item=unreadable_pending_item("bad-journey"))
    valid = [stale_event(f"good-{n}", 1, minutes_ago=5) for n in range(5)]
    for event in valid:
        dynamodb.put_item(TableName=resources.loans_table, Item=outbox.outbox_item(event))
    metrics = quiet_metrics("sweeper")
    metrics.clear_metrics()  # Powertools shares one metric set per process: start from none
    # When the sweeper runs
    report = relay_bootstrap.build_sweeper(relay_settings, metrics).sweep()
    # Then every valid event was republished and marked, and the bad one was counted and kept
    assert (report.republished, report.unreadable, report.pending) == (5, 1, 6)
    published = sorted(json.loads(m["Body"])["eventId"] for m in received(sqs, resources.events_queue_url))
    assert published == sorted(e.eventId for e in valid)
    assert metrics.metric_set["UnreadableOutboxItems"]["Value"] == [1]
    # And the outbox age still sees the bad item: it is pending, and it is the oldest
    assert report.oldest_age_seconds >= 5 * 60 - 1
    statuses = {
        item["pk"]["S"]: item["status"]["S"]
        for item in dynamodb.scan(TableName=resources.loans_table)["Items"]
        if item["sk"]["S"].startswith("EVENT#")
    }
    assert statuses == {"JOURNEY#bad-journey": "PENDING", **{f"JOURNEY#good-{n}": "NOTIFIED" for n in range(5)}}


def test_a_clean_sweep_reports_zero_unreadable_so_the_alarm_has_data(resources, relay_settings):
    metrics = quiet_metrics("sweeper")
    metrics.clear_metrics()
    relay_bootstrap.build_sweeper(relay_settings, metrics).sweep()
    assert metrics.metric_set["UnreadableOutboxItems"]["Value"] == [0]


def test_the_relay_skips_an_unreadable_insert_and_publishes_the_rest(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, stream_poller
):
    # Given a stream holding an unreadable outbox insert between two valid ones
    first, last = stale_event("relay-a", 1, 0), stale_event("relay-c", 1, 0)
    dynamodb.put_item(TableName=resources.loans_table, Item=outbox.outbox_item(first))
    dynamodb.put_item(TableName=resources.loans_table, Item=unreadable_pending_item("relay-b"))
    dynamodb.put_item(TableName=resources.loans_table, Item=outbox.outbox_item(last))
    # When the relay reads the stream (twice: a failed record would be retried, never skipped)
    stream_poller.poll_once()
    stream_poller.poll_once()
    # Then both valid events were published once, nothing went to the on-failure queue
    bodies = [json.loads(m["Body"])["eventId"] for m in received(sqs, resources.events_queue_url)]
    assert sorted(bodies) == sorted([first.eventId, last.eventId])
    assert received(sqs, resources.relay_failures_url) == []


def test_events_with_fields_a_newer_writer_added_are_read_and_applied_fields_ignored():
    event = stale_event("tolerant", 2)
    wire = json.loads(event.model_dump_json())
    wire["traceId"] = "added-by-a-newer-writer"
    wire["snapshot"]["riskScore"] = 7
    assert parse_event(json.dumps(wire)) == event


def test_an_unknown_event_type_is_refused_with_its_reason_and_dlq_list_says_so(dynamodb: DynamoDBClient, resources):
    wire = json.loads(stale_event("j-unknown", 1).model_dump_json()) | {"type": "JourneyArchived"}
    body = json.dumps(wire)
    with pytest.raises(UnreadableEvent) as refused:
        parse_event(body)
    assert refused.value.reason == "unknown event type 'JourneyArchived'"
    journeys = DynamoControlRecordStore(dynamodb, resources.journeys_table)
    assert road2.diagnose(body, journeys)["reason"] == "unknown event type 'JourneyArchived'"


def test_the_consumer_fails_an_unknown_type_so_it_lands_in_the_dlq(
    sqs_poller, sqs: SQSClient, resources, consumer_settings
):
    # Given an event of a type this consumer does not know
    wire = json.loads(stale_event("j-unknown", 1).model_dump_json()) | {"type": "JourneyArchived"}
    sqs.send_message(QueueUrl=resources.events_queue_url, MessageBody=json.dumps(wire))
    # When the consumer polls until the queue is empty
    for _ in range(10):
        if not sqs_poller.poll_once():
            break
    # Then the message is in the DLQ, untouched
    [dead] = received(sqs, resources.events_dlq_url)
    assert json.loads(dead["Body"]) == wire
    # And the consumer's failure names the reason
    consumer = consumer_bootstrap.build_consumer(consumer_settings, quiet_metrics("consumer"))
    with pytest.raises(MalformedEvent, match=r"^unknown event type 'JourneyArchived'$"):
        consumer.consume(json.dumps(wire))


def test_the_changes_index_holds_keys_only_and_the_sweeper_publishes_the_whole_event_of_each_pending_one(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings
):
    # Given stale PENDING events (one with a snapshot, which only the table item carries)
    events = [stale_event(f"keys-{n}", 1, minutes_ago=3 + n) for n in range(3)]
    for event in events:
        dynamodb.put_item(TableName=resources.loans_table, Item=outbox.outbox_item(event))
    # And one that was marked NOTIFIED already (it stays in the changes index: it is history)
    dynamodb.put_item(TableName=resources.loans_table, Item=outbox.outbox_item(stale_event("keys-done", 1)))
    done = journey_pk("keys-done")
    dynamodb.update_item(TableName=resources.loans_table, Key=to_item({"pk": done, "sk": event_sk(1)}),
                         UpdateExpression="SET #s = :n", ExpressionAttributeNames={"#s": "status"},
                         ExpressionAttributeValues=to_item({":n": outbox.NOTIFIED}))  # fmt: skip
    # Then the index entries carry keys only, no event, no status
    entries = dynamodb.query(
        TableName=resources.loans_table,
        IndexName=tables.CHANGES_INDEX,
        KeyConditionExpression="#partition = :partition",
        ExpressionAttributeNames={"#partition": tables.CHANGES_PARTITION_ATTRIBUTE},
        ExpressionAttributeValues=to_item({":partition": changes_partition("JourneyCancelled", 0)}),
    )["Items"]
    keys = {"pk", "sk", tables.CHANGES_PARTITION_ATTRIBUTE, "eventId"}
    assert {frozenset(item) for item in entries} == {frozenset(keys)}, f"index entries: {entries}"
    assert len(entries) == 4
    # When the sweeper runs
    report = relay_bootstrap.build_sweeper(relay_settings, quiet_metrics("sweeper")).sweep()
    # Then it republished exactly the three pending events, each whole (snapshot included), not the NOTIFIED one
    assert (report.pending, report.republished, report.unreadable) == (3, 3, 0)
    assert report.oldest_age_seconds >= 5 * 60 - 1
    published = [parse_event(m["Body"]) for m in received(sqs, resources.events_queue_url)]
    assert sorted(published, key=lambda e: e.eventId) == sorted(events, key=lambda e: e.eventId)
