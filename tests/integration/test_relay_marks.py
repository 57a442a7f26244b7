"""The NOTIFIED mark on a moto server (functions/relay/outbox_store.py, D6): BatchWriteItem puts of each event
item as read from the table (never as an invocation says it is) with `status` NOTIFIED and `publishedAt`.
Safe because nothing else writes an event item after its commit: the relay and the sweeper marking the same
event both leave it NOTIFIED and otherwise as committed; an event item's attributes other than `status` and
`publishedAt` never change after its commit, whatever road 2 does; what DynamoDB leaves unprocessed is a
failed mark for its record alone, retried; and a mark costs one write unit and no write of the changes index
(bench/meter.py counts it), the relay's read one read unit an event."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from botocore.awsrequest import AWSResponse, HTTPHeaders

from bench.meter import Meter
from functions.relay import bootstrap as relay_bootstrap
from functions.relay.outbox_store import DynamoOutboxStore, StoredEvent, read_outbox_item
from functions.relay.service import OutboxRelay
from functions.relay.stream import StreamRelay
from saga.local.aws_faults import FaultRule
from shared import aws, outbox
from shared.batch_read import ROUNDS
from shared.dynamo import to_item
from shared.events import LoanEvent
from shared.keys import EVENT_PREFIX, event_sk, journey_pk
from shared.tables import CHANGES_INDEX
from tests.integration.journeys import journey_in, simulate
from tests.integration.test_backstop import stale_event
from tests.integration.test_second_road import drain, noting_answers
from tests.support import quiet_metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

MARK = {"status", "publishedAt"}  # what a mark writes; every other attribute is as committed


def key_of(event: LoanEvent) -> dict[str, Any]:
    return to_item({"pk": journey_pk(event.journeyId), "sk": event_sk(event.seq)})


def item_of(dynamodb: DynamoDBClient, resources, event: LoanEvent) -> dict[str, Any]:
    found = dynamodb.get_item(TableName=resources.loans_table, Key=key_of(event), ConsistentRead=True)
    return dict(found["Item"])


def committed(dynamodb: DynamoDBClient, resources, *events: LoanEvent) -> list[dict[str, Any]]:
    """Commit `events` PENDING, as loans-api's transaction puts them; their items as committed."""
    for event in events:
        dynamodb.put_item(TableName=resources.loans_table, Item=outbox.outbox_item(event))
    return [item_of(dynamodb, resources, event) for event in events]


def but_the_mark(item: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in item.items() if name not in MARK}


def stored(item: dict[str, Any]) -> StoredEvent:
    read = read_outbox_item(item)
    assert isinstance(read, StoredEvent), read
    return read


def test_the_relay_and_the_sweeper_both_marking_leave_the_item_notified_and_otherwise_as_committed(
    dynamodb: DynamoDBClient, resources, relay_settings, stream_poller
):
    # Given a stale PENDING event whose stream record the relay has not handled yet
    event = stale_event("raced", 1, minutes_ago=5)
    [image] = committed(dynamodb, resources, event)
    seen: list[str] = []

    class RelayFirst:
        """The sweeper's publisher: before it publishes, the stream's relay publishes and marks the same
        event, between the sweeper's read (PENDING) and its mark."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def publish(self, events: Sequence[LoanEvent]) -> dict[str, str]:
            drain_stream(stream_poller)
            seen.append(item_of(dynamodb, resources, event)["status"]["S"])
            return dict(self.inner.publish(events))

    later = datetime.now(UTC) + timedelta(minutes=1)
    publisher = RelayFirst(relay_bootstrap.sns_publisher(relay_settings))
    sweeper = relay_bootstrap.build_sweeper(relay_settings, quiet_metrics("sweeper"), lambda: later, publisher)
    # When the sweeper republishes it, the relay marking it in between
    report = sweeper.sweep()
    # Then both marked it (the relay first), the sweeper's mark was no failure, and the item is NOTIFIED,
    # published at the sweeper's time, every other attribute as committed
    assert seen == [outbox.NOTIFIED], seen
    assert (report.republished, report.failed, report.revisits) == (1, 0, 0), report
    final = item_of(dynamodb, resources, event)
    assert final == {**image, "status": {"S": outbox.NOTIFIED}, "publishedAt": {"S": later.isoformat()}}, final


def test_a_late_relay_mark_after_the_sweepers_leaves_the_item_notified_and_otherwise_as_committed(
    dynamodb: DynamoDBClient, resources, relay_settings, stream_poller
):
    # Given a stale PENDING event the sweeper republished and marked before the stream's relay saw it
    event = stale_event("late", 1, minutes_ago=5)
    [image] = committed(dynamodb, resources, event)
    later = datetime.now(UTC) + timedelta(minutes=1)
    report = relay_bootstrap.build_sweeper(relay_settings, quiet_metrics("sweeper"), lambda: later).sweep()
    assert report.republished == 1, report
    # When the relay handles its INSERT record now
    answers = noting_answers(stream_poller)
    drain_stream(stream_poller)
    # Then the relay's mark succeeded too (no record failed) and the item is still NOTIFIED, published at the
    # relay's (later) time, every other attribute as committed
    assert answers, "the relay was not invoked"
    assert [failed for _, failed in answers if failed] == [], answers
    final = item_of(dynamodb, resources, event)
    assert final["status"] == {"S": outbox.NOTIFIED}, final
    assert final["publishedAt"]["S"] < later.isoformat(), (final, later)  # a repeated mark rewrites it (D6)
    assert but_the_mark(final) == but_the_mark(image), (final, image)


class Unprocessing:
    """A DynamoDB client whose BatchWriteItem leaves the items of `held` unprocessed, their first
    `rounds` times each (the rest reaches moto), as DynamoDB does when a partition is throttled."""

    def __init__(self, client: DynamoDBClient, held: set[str], rounds: int) -> None:
        self.client, self.held, self.rounds = client, held, rounds
        self.left: dict[str, int] = {}

    def batch_get_item(self, **kwargs: Any) -> Any:
        return self.client.batch_get_item(**kwargs)

    def batch_write_item(self, RequestItems: dict[str, list[dict[str, Any]]]) -> Any:  # noqa: N803
        processed: dict[str, list[dict[str, Any]]] = {}
        unprocessed: dict[str, list[dict[str, Any]]] = {}
        for table, requests in RequestItems.items():
            for request in requests:
                event_id = request["PutRequest"]["Item"]["eventId"]["S"]
                self.left.setdefault(event_id, self.rounds if event_id in self.held else 0)
                holding = self.left[event_id] > 0
                self.left[event_id] -= 1
                (unprocessed if holding else processed).setdefault(table, []).append(request)
        if processed:
            answer = self.client.batch_write_item(RequestItems=cast(Any, processed))
            assert not answer.get("UnprocessedItems"), answer
        return {"UnprocessedItems": unprocessed}


def test_a_partially_processed_mark_fails_the_records_left_unprocessed_alone_and_their_retry_marks_them(
    dynamodb: DynamoDBClient, resources, relay_settings, stream_poller
):
    # Given five PENDING events of one journey, and a BatchWriteItem that leaves two of them unprocessed
    # through every round of the relay's first mark (then takes them)
    events = [stale_event("partial", seq, minutes_ago=0) for seq in range(1, 6)]
    images = committed(dynamodb, resources, *events)
    held = {events[1].eventId, events[3].eventId}
    client = Unprocessing(dynamodb, held, ROUNDS.attempts)
    store = DynamoOutboxStore(client, resources.loans_table, sleep=lambda _: None)  # type: ignore[arg-type]
    relay = OutboxRelay(relay_bootstrap.sns_publisher(relay_settings), store, quiet_metrics("relay"), _now)
    stream_poller.handler = StreamRelay(relay).handle
    answers = noting_answers(stream_poller)
    # When the stream's relay handles their records (Lambda retrying from the lowest failed one)
    drain_stream(stream_poller)
    # Then the first answer failed exactly the two unmarked events' records; the retry, from the first of them
    # on, failed none
    unmarked = [[ids[s] for s in failed] for ids, failed in answers if any(i in held for i in ids.values())]
    assert unmarked == [[events[1].eventId, events[3].eventId], []], answers
    # And every item ends NOTIFIED, otherwise as committed
    for event, image in zip(events, images, strict=True):
        final = item_of(dynamodb, resources, event)
        assert final["status"] == {"S": outbox.NOTIFIED}, final
        assert but_the_mark(final) == but_the_mark(image), (final, image)


def test_after_the_first_mark_the_unprocessed_items_are_still_pending(dynamodb: DynamoDBClient, resources):
    # Given three committed events and a BatchWriteItem that never processes one of them
    events = [stale_event("left", seq, minutes_ago=0) for seq in range(1, 4)]
    images = committed(dynamodb, resources, *events)
    client = Unprocessing(dynamodb, {events[2].eventId}, rounds=99)
    store = DynamoOutboxStore(client, resources.loans_table, sleep=lambda _: None)  # type: ignore[arg-type]
    # When they are marked
    failed = store.mark_notified([stored(image) for image in images], _now())
    # Then that one is a failed mark, still PENDING as committed; the others are NOTIFIED
    assert list(failed) == [events[2].eventId], failed
    assert item_of(dynamodb, resources, events[2]) == images[2]
    assert [item_of(dynamodb, resources, e)["status"]["S"] for e in events[:2]] == [outbox.NOTIFIED] * 2


def test_a_mark_bills_one_write_unit_an_item_and_no_write_of_the_changes_index(dynamodb: DynamoDBClient, resources):
    # Given three committed events (each under 1 KB)
    images = committed(dynamodb, resources, *[stale_event("billed", seq, minutes_ago=0) for seq in range(1, 4)])
    # When the relay's store marks them under the benchmark's meter
    with Meter() as meter:
        store = DynamoOutboxStore(
            aws.client("dynamodb", resources.region, resources.endpoint_url), resources.loans_table
        )
        assert store.mark_notified([stored(image) for image in images], _now()) == {}
    usage = meter.snapshot()
    # Then it was one BatchWriteItem, billed one unit an item on the table and nothing on the keys-only index
    # (its key and projection did not change)
    assert usage.calls == {"dynamodb:BatchWriteItem": 1}, usage.calls
    assert usage.wcu_by.get((resources.loans_table, "table")) == 3.0, usage.wcu_by
    assert usage.index_wcu() == 0.0, usage.wcu_by
    assert usage.wcu_by.get((resources.loans_table, CHANGES_INDEX), 0.0) == 0.0, usage.wcu_by


def test_the_meter_bills_no_write_dynamodb_left_unprocessed(dynamodb: DynamoDBClient, resources):
    # Given two events, and a BatchWriteItem of both answered (in place of the endpoint) with the second
    # unprocessed and the first written
    images = [outbox.outbox_item(stale_event("unbilled", seq, minutes_ago=0)) for seq in (1, 2)]
    puts = [{"PutRequest": {"Item": image}} for image in images]

    def answer(request: Any, **_: Any) -> AWSResponse:
        dynamodb.put_item(TableName=resources.loans_table, Item=images[0])
        body = json.dumps({"UnprocessedItems": {resources.loans_table: puts[1:]}}).encode()
        return AWSResponse(request.url, 200, HTTPHeaders(), Raw(body))

    with Meter() as meter:
        client = aws.client("dynamodb", resources.region, resources.endpoint_url)
        client.meta.events.register("before-send.dynamodb.BatchWriteItem", cast(Any, answer))
        client.batch_write_item(RequestItems={resources.loans_table: cast(Any, puts)})
    # Then the meter billed the first put alone (a new item: its entry in the changes index too)
    billed = meter.snapshot().wcu_by
    assert billed == {(resources.loans_table, "table"): 1.0, (resources.loans_table, CHANGES_INDEX): 1.0}, billed


def test_no_attribute_of_an_event_item_but_its_mark_ever_changes_after_its_commit(
    orchestrator, dynamodb: DynamoDBClient, resources, relay_settings, stream_poller, sqs_poller, faults
):
    # Given journeys through every command (disbursed, cancelled, re-simulated after an acceptance)
    for state in ("disbursed", "cancelled", "accepted"):
        journey = journey_in(orchestrator, state)
    assert simulate(orchestrator, journey, amount=7000).status == 200
    # And road 2 at its most repetitive: the sweeper republishing and marking every event first (its clock
    # ten minutes on), then the stream's relay, its first mark call failing, marking them all again
    later = datetime.now(UTC) + timedelta(minutes=10)
    report = relay_bootstrap.build_sweeper(relay_settings, quiet_metrics("sweeper"), lambda: later).sweep()
    assert report.republished == 7, report  # 3 + 1 + 2 + 1 events
    faults.add(FaultRule("dynamodb", "BatchWriteItem", "InternalServerError", limit=3))
    drain(stream_poller, sqs_poller)
    # When every change ever made to an event item is read back from the table's stream (new images)
    inserted: dict[str, dict[str, Any]] = {}
    changes: list[tuple[str, str, dict[str, Any]]] = []
    for record in stream_records(resources):
        change = record["dynamodb"]
        sort_key = change["Keys"]["sk"]["S"]
        if sort_key.startswith(EVENT_PREFIX):
            key = f"{change['Keys']['pk']['S']}/{sort_key}"
            if record["eventName"] == "INSERT":
                inserted[key] = change["NewImage"]
            else:
                changes.append((key, record["eventName"], change.get("NewImage", {})))
    # Then each event item was inserted PENDING, and every later change of it was a mark: NOTIFIED, published
    # at some time, every other attribute as committed (never removed, never another attribute)
    assert len(inserted) == 7, inserted
    assert {i["status"]["S"] for i in inserted.values()} == {outbox.PENDING}, inserted
    assert len(changes) >= 2 * len(inserted), f"{len(changes)} changes of {len(inserted)} events: marked twice each"
    for key, name, image in changes:
        assert name == "MODIFY", (key, name)
        assert image["status"] == {"S": outbox.NOTIFIED}, (key, image)
        assert "publishedAt" in image, (key, image)
        assert but_the_mark(image) == but_the_mark(inserted[key]), (key, image, inserted[key])


class Raw:
    """An HTTP body, as botocore reads one."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Any:
        yield self.body


def stream_records(resources) -> list[dict[str, Any]]:
    """Every record of the loans table's stream so far, from its start."""
    streams = aws.client("dynamodbstreams", resources.region, resources.endpoint_url)
    found: list[dict[str, Any]] = []
    shards = streams.describe_stream(StreamArn=resources.loans_stream_arn)["StreamDescription"]["Shards"]
    for shard in shards:
        iterator = streams.get_shard_iterator(StreamArn=resources.loans_stream_arn, ShardId=shard["ShardId"],
                                              ShardIteratorType="TRIM_HORIZON")["ShardIterator"]  # fmt: skip
        while iterator:
            page = streams.get_records(ShardIterator=iterator, Limit=1000)
            if not page["Records"]:
                break
            found += [dict(r) for r in page["Records"]]
            iterator = page.get("NextShardIterator", "")
    return found


def drain_stream(stream_poller) -> None:
    while stream_poller.poll_once():
        pass


def _now() -> datetime:
    return datetime.now(UTC)


def lambda_image(item: dict[str, Any]) -> dict[str, Any]:
    """An item as Lambda delivers it in a DynamoDB stream event (JSON): binaries as base64 text, as in the
    stream's wire form (the local poller hands the function botocore's parsed records, with bytes)."""

    def value(typed: dict[str, Any]) -> dict[str, Any]:
        [(kind, inner)] = typed.items()
        if kind == "B":
            return {"B": base64.b64encode(inner).decode()}
        if kind == "BS":
            return {"BS": [base64.b64encode(one).decode() for one in inner]}
        if kind == "M":
            return {"M": {name: value(one) for name, one in inner.items()}}
        if kind == "L":
            return {"L": [value(one) for one in inner]}
        return typed

    return {name: value(typed) for name, typed in item.items()}


# Attributes a newer loans-api might add to an event item, which this relay does not know: binaries, a set of
# them, a number of 37 digits (a float would not keep it), nested.
FUTURE: dict[str, Any] = {
    "signature": {"B": b"\x00\x01\xfe\xff"},
    "digests": {"BS": [b"\x10", b"\x20\x21"]},
    "extra": {"M": {"blob": {"B": b"\x7f"}, "n": {"N": "0.1000000000000000000000000000000000001"}}},
}


def test_a_stream_mark_keeps_binary_attributes_a_newer_writer_added_as_they_were_committed(
    dynamodb: DynamoDBClient, resources, relay_settings
):
    # Given an event committed with attributes this relay does not know, binary ones among them (a newer
    # loans-api's), and its INSERT record as Lambda delivers it (JSON: binaries as base64 text)
    event = stale_event("binary", 1, minutes_ago=0)
    dynamodb.put_item(TableName=resources.loans_table, Item={**outbox.outbox_item(event), **FUTURE})
    image = item_of(dynamodb, resources, event)
    insert = {"eventName": "INSERT", "dynamodb": {"SequenceNumber": "1", "Keys": lambda_image(key_of(event)),
                                                  "NewImage": lambda_image(image)}}  # fmt: skip
    store = DynamoOutboxStore(aws.client("dynamodb", resources.region, resources.endpoint_url), resources.loans_table)
    relay = OutboxRelay(relay_bootstrap.sns_publisher(relay_settings), store, quiet_metrics("relay"), _now)
    # When the stream's relay publishes and marks it
    answer = StreamRelay(relay).handle({"Records": [insert]}, None)
    # Then it is NOTIFIED and every other attribute is as committed: the same bytes the table holds (the item
    # read back), not the record's base64 text
    assert answer == {"batchItemFailures": []}, answer
    final = item_of(dynamodb, resources, event)
    assert final["status"] == {"S": outbox.NOTIFIED}, final
    assert but_the_mark(final) == but_the_mark(image), (final, image)


class Noting:
    """A publisher that notes the events it is given, then publishes them through `inner`."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.events = inner, list[LoanEvent]()

    def publish(self, events: Sequence[LoanEvent]) -> dict[str, str]:
        self.events += events
        return cast(dict[str, str], self.inner.publish(events))


def test_an_invocation_carrying_a_forged_image_of_a_committed_event_does_not_rewrite_it(
    dynamodb: DynamoDBClient, resources, relay_settings
):
    # Given an event committed and already marked NOTIFIED
    event = stale_event("forged", 1, minutes_ago=0)
    [image] = committed(dynamodb, resources, event)
    store = DynamoOutboxStore(aws.client("dynamodb", resources.region, resources.endpoint_url), resources.loans_table)
    assert store.mark_notified([stored(image)], _now()) == {}
    marked = item_of(dynamodb, resources, event)
    # When someone invokes the relay with an INSERT record of the same key whose image says another thing, and
    # one of a key where nothing was ever committed
    forged = {**image, "type": {"S": "LoanDisbursed"}, "occurredAt": {"S": "2020-01-01T00:00:00Z"}}
    insert = {"eventName": "INSERT", "dynamodb": {"SequenceNumber": "1", "Keys": key_of(event), "NewImage": forged}}
    never = stale_event("forged", 2, minutes_ago=0)
    invented = {"eventName": "INSERT", "dynamodb": {"SequenceNumber": "2", "Keys": key_of(never),
                                                    "NewImage": outbox.outbox_item(never)}}  # fmt: skip
    publisher = Noting(relay_bootstrap.sns_publisher(relay_settings))
    relay = OutboxRelay(publisher, store, quiet_metrics("relay"), _now)
    answer = StreamRelay(relay).handle({"Records": [insert, invented]}, None)
    # Then the committed event is as it was: a mark changes its status and publication time alone
    assert answer == {"batchItemFailures": []}, answer
    final = item_of(dynamodb, resources, event)
    assert but_the_mark(final) == but_the_mark(marked), (final, marked)
    # And what was published is the committed event alone, not the forged content nor the invented event
    assert publisher.events == [event], publisher.events
    # And nothing was written where nothing was committed
    absent = dynamodb.get_item(TableName=resources.loans_table, Key=key_of(never), ConsistentRead=True)
    assert "Item" not in absent, absent


def test_the_stream_relay_reads_a_batch_in_one_batchgetitem_one_read_unit_an_event(
    dynamodb: DynamoDBClient, resources, relay_settings
):
    # Given ten committed events (each under 4 KB), and their INSERT records
    events = [stale_event("read", seq, minutes_ago=0) for seq in range(1, 11)]
    images = committed(dynamodb, resources, *events)
    records = [{"eventName": "INSERT", "dynamodb": {"SequenceNumber": str(n), "Keys": key_of(e), "NewImage": i}}
               for n, (e, i) in enumerate(zip(events, images, strict=True))]  # fmt: skip
    # When the stream's relay handles them under the benchmark's meter
    with Meter() as meter:
        handle = relay_bootstrap.build_stream_handler(relay_settings, quiet_metrics("relay"))
        answer = handle({"Records": records}, None)
    usage = meter.snapshot()
    # Then it read them in one strongly consistent BatchGetItem, one read unit an event, and marked them
    assert answer == {"batchItemFailures": []}, answer
    assert usage.calls["dynamodb:BatchGetItem"] == 1, usage.calls
    assert usage.rcu_by.get((resources.loans_table, "table")) == 10.0, usage.rcu_by
    assert usage.calls["dynamodb:BatchWriteItem"] == 1, usage.calls


def test_a_record_whose_item_the_read_left_unprocessed_fails_alone_and_its_retry_publishes_it(
    dynamodb: DynamoDBClient, resources, relay_settings, faults
):
    # Given two committed events, and a BatchGetItem refused through every round of the relay's read
    events = [stale_event("unread", seq, minutes_ago=0) for seq in (1, 2)]
    images = committed(dynamodb, resources, *events)
    records = [{"eventName": "INSERT", "dynamodb": {"SequenceNumber": str(n), "Keys": key_of(e), "NewImage": i}}
               for n, (e, i) in enumerate(zip(events, images, strict=True))]  # fmt: skip
    store = DynamoOutboxStore(
        aws.client("dynamodb", resources.region, resources.endpoint_url), resources.loans_table, sleep=lambda _: None
    )
    publisher = Noting(relay_bootstrap.sns_publisher(relay_settings))
    relay = StreamRelay(OutboxRelay(publisher, store, quiet_metrics("relay"), _now))
    faults.add(FaultRule("dynamodb", "BatchGetItem", "InternalServerError", limit=99))
    # When the relay handles them
    answer = relay.handle({"Records": records}, None)
    # Then both records fail (Lambda retries them), nothing was published, both still PENDING
    assert answer == {"batchItemFailures": [{"itemIdentifier": "0"}, {"itemIdentifier": "1"}]}, answer
    assert publisher.events == [], publisher.events
    assert [item_of(dynamodb, resources, e) for e in events] == images
    # And once the table answers, the retry publishes and marks both
    faults.clear()
    assert relay.handle({"Records": records}, None) == {"batchItemFailures": []}
    assert publisher.events == events, publisher.events
    assert [item_of(dynamodb, resources, e)["status"]["S"] for e in events] == [outbox.NOTIFIED] * 2


def test_a_sweeper_mark_keeps_every_attribute_it_does_not_know_as_committed(
    dynamodb: DynamoDBClient, resources, relay_settings
):
    # Given a stale PENDING event committed with attributes this relay does not know
    event = stale_event("unknown", 1, minutes_ago=5)
    dynamodb.put_item(TableName=resources.loans_table, Item={**outbox.outbox_item(event), **FUTURE})
    image = item_of(dynamodb, resources, event)
    # When the sweeper republishes and marks it (its read of the item is what it puts back)
    later = datetime.now(UTC) + timedelta(minutes=1)
    report = relay_bootstrap.build_sweeper(relay_settings, quiet_metrics("sweeper"), lambda: later).sweep()
    # Then it is NOTIFIED and every other attribute is as committed (a read of fewer attributes would drop them)
    assert (report.republished, report.failed) == (1, 0), report
    final = item_of(dynamodb, resources, event)
    assert final["status"] == {"S": outbox.NOTIFIED}, final
    assert but_the_mark(final) == but_the_mark(image), (final, image)


def test_the_local_stream_relay_keeps_binary_attributes_as_committed(
    dynamodb: DynamoDBClient, resources, stream_poller
):
    # Given an event committed with attributes this relay does not know, binary ones among them
    event = stale_event("local-binary", 1, minutes_ago=0)
    dynamodb.put_item(TableName=resources.loans_table, Item={**outbox.outbox_item(event), **FUTURE})
    image = item_of(dynamodb, resources, event)
    # When the local runtime's stream poller delivers its INSERT to the relay (as Lambda does: JSON)
    answers = noting_answers(stream_poller)
    drain_stream(stream_poller)
    # Then the relay marked it, every other attribute as committed
    assert [failed for _, failed in answers if failed] == [], answers
    final = item_of(dynamodb, resources, event)
    assert final["status"] == {"S": outbox.NOTIFIED}, final
    assert but_the_mark(final) == but_the_mark(image), (final, image)
