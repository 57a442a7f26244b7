"""The sweeper (functions/relay/sweeper.py, D7) on a moto server: it finds PENDING events through the
journey-changes index from a cursor per partition, republishes the stale ones, keeps what it cannot
settle in a short revisit list (so one bad item never pins the cursor), re-reads a margin behind the
cursor for events that committed late, and never moves a cursor back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from functions.relay import bootstrap as relay_bootstrap
from functions.relay.settings import RelaySettings
from functions.relay.sweeper import PARTITIONS, Cursor, DynamoSweepStore
from shared import event_ids, outbox
from shared.dynamo import to_item
from shared.events import LoanEvent
from shared.keys import changes_partition, event_sk, journey_pk
from tests.integration.test_backstop import received, stale_event, unreadable_pending_item
from tests.support import quiet_metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

# The partition of the events stale_event makes, at the default shard count (one per event type)
CANCELLED = changes_partition("JourneyCancelled", 0)
SIMULATED = changes_partition("SimulationCreated", 0)  # unreadable_pending_item's
THRESHOLD = timedelta(seconds=RelaySettings.model_fields["sweep_threshold_seconds"].default)


def cursors(dynamodb: DynamoDBClient, resources) -> dict[str, Cursor]:
    return DynamoSweepStore(dynamodb, resources.loans_table).cursors(PARTITIONS)


def put(dynamodb: DynamoDBClient, resources, *items: dict) -> None:
    for item in items:
        dynamodb.put_item(TableName=resources.loans_table, Item=item)


def status_of(dynamodb: DynamoDBClient, resources, event: LoanEvent) -> str:
    key = to_item({"pk": journey_pk(event.journeyId), "sk": event_sk(event.seq)})
    return dynamodb.get_item(TableName=resources.loans_table, Key=key, ConsistentRead=True)["Item"]["status"]["S"]


def published_ids(sqs: SQSClient, resources) -> list[str]:
    return sorted(json.loads(m["Body"])["eventId"] for m in received(sqs, resources.events_queue_url))


def test_the_sweeper_republishes_a_stale_pending_event_it_found_through_the_changes_index(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings
):
    # Given a PENDING event committed five minutes ago that the stream never delivered
    event = stale_event("found", 1, minutes_ago=5)
    put(dynamodb, resources, outbox.outbox_item(event))
    metrics = quiet_metrics("sweeper")
    metrics.clear_metrics()
    # When the sweeper runs
    now = datetime.now(UTC)
    report = relay_bootstrap.build_sweeper(relay_settings, metrics, clock=lambda: now).sweep()
    # Then it republished the event, marked it NOTIFIED, and reported it as the oldest pending
    assert (report.pending, report.republished, report.failed, report.revisits) == (1, 1, 0, 0)
    assert report.oldest_age_seconds >= 5 * 60 - 1
    assert metrics.metric_set["OldestPendingOutboxAgeSeconds"]["Value"] == [report.oldest_age_seconds]
    assert published_ids(sqs, resources) == [event.eventId]
    assert status_of(dynamodb, resources, event) == outbox.NOTIFIED
    # And every partition's cursor now stands at the horizon (now less the threshold), past the event
    horizon = event_ids.lower_bound(now - THRESHOLD)
    assert {c.after for c in cursors(dynamodb, resources).values()} == {horizon}
    assert event.eventId < horizon


def test_a_notified_event_is_not_republished(dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings):
    # Given a stale event the relay already published and marked
    event = stale_event("done", 1, minutes_ago=5)
    put(dynamodb, resources, {**outbox.outbox_item(event), "status": {"S": outbox.NOTIFIED}})
    # When the sweeper runs
    report = relay_bootstrap.build_sweeper(relay_settings, quiet_metrics("sweeper")).sweep()
    # Then nothing is pending, nothing was published, and the outbox age is zero
    assert (report.pending, report.republished, report.oldest_age_seconds) == (0, 0, 0.0)
    assert published_ids(sqs, resources) == []


def test_the_cursor_survives_an_unreadable_item_which_is_revisited_and_still_counted_in_the_outbox_age(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings
):
    # Given an unreadable PENDING item (the oldest) and a stale event behind it
    bad = unreadable_pending_item("bad", minutes_ago=6)
    event = stale_event("good", 1, minutes_ago=5)
    put(dynamodb, resources, bad, outbox.outbox_item(event))
    now = datetime.now(UTC)
    # When the sweeper runs
    first = relay_bootstrap.build_sweeper(relay_settings, quiet_metrics("sweeper"), clock=lambda: now).sweep()
    # Then the event was republished, the bad item kept to revisit, and the cursor moved past both
    assert (first.republished, first.unreadable, first.pending, first.revisits) == (1, 1, 2, 1)
    assert first.oldest_age_seconds >= 6 * 60 - 1
    cursor = cursors(dynamodb, resources)[SIMULATED]
    assert [e.event_id for e in cursor.revisits] == [bad["eventId"]["S"]]
    assert cursor.after is not None
    assert cursor.after > bad["eventId"]["S"]
    # When the sweeper runs again ten minutes later, the bad item now far behind the cursor's margin,
    # with a newer stale event of the same partition to sweep
    later = now + timedelta(minutes=10)
    newer = stale_event("newer", 1, minutes_ago=-8).model_copy(update={"type": "SimulationCreated"})
    put(dynamodb, resources, outbox.outbox_item(newer))
    metrics = quiet_metrics("sweeper")
    metrics.clear_metrics()
    second = relay_bootstrap.build_sweeper(relay_settings, metrics, clock=lambda: later).sweep()
    # Then the cursor moved on past the newer event, which was republished
    assert second.republished == 1
    moved = cursors(dynamodb, resources)[SIMULATED]
    assert moved.after is not None
    assert moved.after > newer.eventId > cursor.after
    # And the bad item was read again from the revisit list: still kept, counted, and the oldest pending
    assert [e.event_id for e in moved.revisits] == [bad["eventId"]["S"]]
    assert (second.unreadable, second.pending) == (1, 2)
    assert second.oldest_age_seconds >= 16 * 60 - 1
    assert metrics.metric_set["UnreadableOutboxItems"]["Value"] == [1]


def test_an_event_whose_id_sorts_before_the_cursor_but_committed_late_within_the_margin_is_still_swept(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings
):
    # Given a sweep that moved every cursor to its horizon (now less the threshold)
    now = datetime.now(UTC)
    sweeper = relay_bootstrap.build_sweeper(relay_settings, quiet_metrics("sweeper"), clock=lambda: now)
    assert sweeper.sweep().pending == 0
    horizon = event_ids.lower_bound(now - THRESHOLD)
    # And an event whose id was minted 10 s before that horizon but whose transaction commits only now
    # (a slow loans-api attempt; the margin is 30 s)
    late = stale_event("late", 1, minutes_ago=(THRESHOLD.total_seconds() + 10) / 60)
    assert late.eventId < horizon
    put(dynamodb, resources, outbox.outbox_item(late))
    # When the sweeper runs again
    report = sweeper.sweep()
    # Then it found the late event behind its cursor and republished it
    assert (report.pending, report.republished) == (1, 1)
    assert published_ids(sqs, resources) == [late.eventId]
    # And a further run, with nothing new in the margin, finds nothing to do
    assert (sweeper.sweep().pending, sweeper.sweep().republished) == (0, 0)


class _SweepsInTheMiddle:
    """A publisher that, on its first call, lets another sweep run to its end (as an overlapping Lambda
    instance would, were the lease not there) before publishing."""

    def __init__(self, inner, other) -> None:
        self._inner = inner
        self._other = other

    def publish(self, events: Sequence[LoanEvent]) -> dict[str, str]:
        if self._other is not None:
            other, self._other = self._other, None
            other.sweep()
        return dict(self._inner.publish(events))


def test_two_overlapping_sweeps_never_move_the_cursor_back(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings
):
    # Given a stale event, and a sweep (`early`) that started first and, while it publishes, another
    # sweep (`late`, whose clock is ten minutes further) runs from start to end
    put(dynamodb, resources, outbox.outbox_item(stale_event("overlap", 1, minutes_ago=5)))
    now = datetime.now(UTC)
    late = relay_bootstrap.build_sweeper(
        relay_settings, quiet_metrics("sweeper"), clock=lambda: now + timedelta(minutes=10)
    )
    publisher = _SweepsInTheMiddle(relay_bootstrap.sns_publisher(relay_settings), late)
    early = relay_bootstrap.build_sweeper(relay_settings, quiet_metrics("sweeper"), clock=lambda: now,
                                          publisher=publisher)  # fmt: skip
    # When the early sweep ends after the late one
    early.sweep()
    # Then every cursor stands where the late sweep left it: the early one's older position was refused
    late_horizon = event_ids.lower_bound(now + timedelta(minutes=10) - THRESHOLD)
    assert {c.after for c in cursors(dynamodb, resources).values()} == {late_horizon}


def test_when_the_revisit_list_is_full_the_cursor_waits_and_nothing_is_dropped(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings: RelaySettings
):
    # Given four unreadable PENDING items of one partition and room to revisit two
    bad = [unreadable_pending_item(f"bad-{n}", minutes_ago=10 - n) for n in range(4)]
    put(dynamodb, resources, *bad)
    settings = relay_settings.model_copy(update={"sweep_max_revisits": 2})
    now = datetime.now(UTC)
    # When the sweeper runs
    report = relay_bootstrap.build_sweeper(settings, quiet_metrics("sweeper"), clock=lambda: now).sweep()
    # Then all four were counted, two are kept to revisit, and the cursor waits before the third
    assert (report.unreadable, report.pending, report.revisits, report.cursor_held) == (4, 4, 2, True)
    ids = [item["eventId"]["S"] for item in bad]
    cursor = cursors(dynamodb, resources)[SIMULATED]
    assert [e.event_id for e in cursor.revisits] == ids[:2]
    assert cursor.after is not None
    assert ids[1] <= cursor.after < ids[2]
    # And the next run, much later, still reads and counts all four: none was dropped
    later = now + timedelta(hours=1)
    again = relay_bootstrap.build_sweeper(settings, quiet_metrics("sweeper"), clock=lambda: later).sweep()
    assert (again.unreadable, again.pending, again.cursor_held) == (4, 4, True)


def test_a_bounded_sweep_stops_its_cursor_where_it_stopped_counts_what_is_ahead_and_the_next_goes_on(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings: RelaySettings
):
    # Given three stale events of one partition, all NOTIFIED, and runs that read two index entries each
    events = [stale_event(f"bounded-{n}", 1, minutes_ago=10 - n) for n in range(3)]
    put(dynamodb, resources, *({**outbox.outbox_item(e), "status": {"S": outbox.NOTIFIED}} for e in events))
    settings = relay_settings.model_copy(update={"sweep_max_entries_per_partition": 2})
    now = datetime.now(UTC)
    sweeper = relay_bootstrap.build_sweeper(settings, quiet_metrics("sweeper"), clock=lambda: now)
    # When the sweeper runs
    first = sweeper.sweep()
    # Then its cursor stops at the second event, and what lies ahead (unexamined, maybe PENDING) is in the age
    assert cursors(dynamodb, resources)[CANCELLED].after == events[1].eventId
    assert (first.pending, first.republished) == (0, 0)
    assert first.oldest_age_seconds >= 9 * 60 - 1
    # And the next run goes on from there to the horizon: nothing is pending, the age is zero
    second = sweeper.sweep()
    assert cursors(dynamodb, resources)[CANCELLED].after == event_ids.lower_bound(now - THRESHOLD)
    assert (second.pending, second.oldest_age_seconds) == (0, 0.0)


def test_a_sweep_out_of_time_keeps_its_revisits_and_its_cursor_and_still_counts_them(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings: RelaySettings
):
    # Given an unreadable item a first sweep kept to revisit, and a newer stale event it has not seen
    put(dynamodb, resources, unreadable_pending_item("slow", minutes_ago=6))
    now = datetime.now(UTC)
    relay_bootstrap.build_sweeper(relay_settings, quiet_metrics("sweeper"), clock=lambda: now).sweep()
    before = cursors(dynamodb, resources)[CANCELLED]
    put(dynamodb, resources, outbox.outbox_item(stale_event("unseen", 1, minutes_ago=-3)))
    # When a sweep runs with no time left at all (its budget spent before its first batch)
    spent = relay_settings.model_copy(update={"sweep_budget_seconds": 0.0})
    later = now + timedelta(minutes=5)
    report = relay_bootstrap.build_sweeper(spent, quiet_metrics("sweeper"), clock=lambda: later).sweep()
    # Then it republished nothing, kept the revisit, left the unseen event's cursor before it, and the age
    # still counts the item
    assert (report.republished, report.revisits) == (0, 1)
    assert [e.event_id for e in cursors(dynamodb, resources)[SIMULATED].revisits] != []
    assert cursors(dynamodb, resources)[CANCELLED].after == before.after
    assert report.oldest_age_seconds >= 11 * 60 - 1
