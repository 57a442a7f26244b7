"""The sweeper spread over lanes (functions/relay/sweeper.py lane_partitions, docs/ARCHITECTURE.md D7) on a
moto server: three lanes together republish every stale PENDING event of every partition, each exactly
once, and each walks only its own partitions; a change of the lane count between deploys neither loses a
partition nor republishes twice; each lane has its own lease."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from functions.relay import bootstrap as relay_bootstrap
from functions.relay.settings import RelaySettings
from functions.relay.sweeper import DynamoSweepStore, OutboxSweeper, lane_partitions, partitions
from shared import outbox
from shared.events import LoanEvent
from shared.tables import CHANGES_PARTITION_ATTRIBUTE
from tests.integration.test_backstop import stale_event
from tests.integration.test_sweeper import published_ids, put, status_of
from tests.support import quiet_metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

SHARDS = 5  # 20 partitions (4 event types): 7, 7 and 6 to each of 3 lanes


def lane_sweeper(relay_settings: RelaySettings, lanes: int, now: datetime | None = None) -> OutboxSweeper:
    settings = relay_settings.model_copy(update={"changes_index_shards": SHARDS, "sweep_lanes": lanes})
    clock = (lambda: now) if now is not None else (lambda: datetime.now(UTC))
    return relay_bootstrap.build_sweeper(settings, quiet_metrics("sweeper"), clock=clock)


def stale_in_every_partition(dynamodb: DynamoDBClient, resources, per_partition: int, tag: str) -> list[LoanEvent]:
    """`per_partition` stale PENDING events in each partition of the index under SHARDS shards (an item's
    partition is its `changesKey`, whatever its type: the sweeper walks partitions, not types)."""
    events: list[LoanEvent] = []
    for partition in partitions(SHARDS):
        for n in range(per_partition):
            event = stale_event(f"{tag}-{partition.replace('#', '-')}-{n}", 1, minutes_ago=5)
            put(dynamodb, resources, {**outbox.outbox_item(event), CHANGES_PARTITION_ATTRIBUTE: {"S": partition}})
            events.append(event)
    return events


def walked(dynamodb: DynamoDBClient, resources) -> set[str]:
    """The partitions that have a cursor (some run walked them)."""
    cursors = DynamoSweepStore(dynamodb, resources.loans_table).cursors(partitions(SHARDS))
    return {p for p, cursor in cursors.items() if cursor.after is not None}


def test_three_lanes_together_republish_every_stale_event_of_every_partition_once_each_walking_only_its_own(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings
):
    # Given two stale PENDING events in each of the 20 partitions, and a sweeper of 3 lanes
    events = stale_in_every_partition(dynamodb, resources, 2, "three")
    sweeper = lane_sweeper(relay_settings, 3)
    # When each lane runs once, one after the other
    for lane in range(3):
        before = walked(dynamodb, resources)
        report = sweeper.sweep(lane)
        # Then each lane walked exactly its own partitions (and republished exactly their events)
        mine = set(lane_partitions(SHARDS, 3, lane))
        now_walked = walked(dynamodb, resources) - before
        assert now_walked == mine, f"lane {lane} walked {sorted(now_walked)}, its own are {sorted(mine)}"
        assert (report.lane, report.republished) == (lane, 2 * len(mine)), f"lane {lane}: {report}"
    # And together they republished every event exactly once (a list: a duplicate would show), none skipped
    assert published_ids(sqs, resources) == sorted(e.eventId for e in events)
    assert {status_of(dynamodb, resources, e) for e in events} == {outbox.NOTIFIED}
    # And a second round republishes nothing
    assert [sweeper.sweep(lane).republished for lane in range(3)] == [0, 0, 0]


def test_a_lane_count_changed_between_deploys_loses_no_partition_and_republishes_nothing_twice(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings
):
    # Given a stack whose 2 lanes ran ten minutes ago (every partition has a cursor there)
    earlier = datetime.now(UTC) - timedelta(minutes=10)
    for lane in range(2):
        lane_sweeper(relay_settings, 2, earlier).sweep(lane)
    assert walked(dynamodb, resources) == set(partitions(SHARDS)), "the 2 lanes did not walk every partition"
    # And stale events since, in every partition
    events = stale_in_every_partition(dynamodb, resources, 1, "redeploy")
    # When it is deployed with 3 lanes, and each runs, then each again
    sweeper = lane_sweeper(relay_settings, 3)
    first = [sweeper.sweep(lane).republished for lane in range(3)]
    second = [sweeper.sweep(lane).republished for lane in range(3)]
    # Then every event was republished once, by the lane its partition now belongs to
    assert first == [len(lane_partitions(SHARDS, 3, lane)) for lane in range(3)], f"republished per lane: {first}"
    assert second == [0, 0, 0], f"republished again: {second}"
    assert published_ids(sqs, resources) == sorted(e.eventId for e in events)


def test_each_lane_has_its_own_lease_and_two_runs_of_one_lane_never_overlap(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings
):
    # Given stale events in every partition and a sweeper of 3 lanes, lane 0's run under way
    events = stale_in_every_partition(dynamodb, resources, 1, "leases")
    settings = relay_settings.model_copy(update={"changes_index_shards": SHARDS, "sweep_lanes": 3})
    metrics = quiet_metrics("sweeper")
    sweeper = relay_bootstrap.build_sweeper(settings, metrics)
    lease = {lane: relay_bootstrap.build_sweeper_lease(settings, metrics, lane=lane) for lane in range(3)}
    again = relay_bootstrap.build_sweeper_lease(settings, metrics, lane=0)
    during: dict[str, object] = {}

    def lane_0_while_others_start() -> object:
        during["lane 0 again"] = again.run(lambda: sweeper.sweep(0))
        during["lane 1"] = lease[1].run(lambda: sweeper.sweep(1))
        during["lane 2"] = lease[2].run(lambda: sweeper.sweep(2))
        return sweeper.sweep(0)

    # When lane 0 runs, and a second run of lane 0 and runs of lanes 1 and 2 start meanwhile
    assert lease[0].run(lane_0_while_others_start) is not None
    # Then the second run of lane 0 did nothing, lanes 1 and 2 swept, and every event went out once
    assert during["lane 0 again"] is None, f"two runs of lane 0 overlapped: {during}"
    assert during["lane 1"] is not None, f"lane 1 waited for lane 0: {during}"
    assert during["lane 2"] is not None, f"lane 2 waited for lane 0: {during}"
    assert published_ids(sqs, resources) == sorted(e.eventId for e in events)
