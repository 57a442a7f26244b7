"""The journey-changes index's shards (shared/keys.py, docs/ARCHITECTURE.md D7) on a moto server: loans-api
writes each event to its journey's shard among the count it is configured with; the sweeper, `saga status`
and the audit find events in every shard, including shards written under a count since lowered (the count
recorded in use) and shards a raised count added before the readers knew of it (walked from the lookback)."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from functions.auditor import bootstrap as auditor_bootstrap
from functions.loans_api import bootstrap as loans_bootstrap
from functions.loans_api.settings import LoansSettings
from functions.relay import bootstrap as relay_bootstrap
from functions.relay import sweeper as sweeper_module
from functions.relay.settings import RelaySettings
from functions.relay.sweeper import DynamoSweepStore, partitions, pending_now
from shared import event_ids, outbox
from shared.events import LoanEvent
from shared.keys import changes_partition, changes_shard
from tests.integration.test_backstop import stale_event
from tests.integration.test_sweeper import published_ids, put, status_of
from tests.support import ApiClient, quiet_metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient


def journey_in_shard(name: str, shard: int, shards: int) -> str:
    """A journey id whose CRC-32 is `shard` modulo `shards` (what a caller crafting ids would choose)."""
    return next(j for n in itertools.count() if changes_shard(j := f"{name}-{n}", shards) == shard)


def stale_in_shard(journey_id: str, shard: int, shards: int, minutes_ago: float = 5) -> LoanEvent:
    """A stale PENDING event of `journey_id` whose eventId puts it in `shard` of `shards`."""
    return next(e for _ in itertools.count()
                if changes_shard((e := stale_event(journey_id, 1, minutes_ago)).eventId, shards) == shard)  # fmt: skip


def stale_in_each_shard(shards: int, minutes_ago: float = 5) -> list[LoanEvent]:
    """One stale PENDING event in each of `shards` shards, as loans-api configured with `shards` writes it."""
    return [stale_in_shard(f"s{shard}of{shards}", shard, shards, minutes_ago) for shard in range(shards)]


def simulate(loans_api: ApiClient, journey_id: str) -> str:
    """The eventId of a first simulation of `journey_id` through loans-api."""
    reply = loans_api.post("/simulations", {"journeyId": journey_id, "amount": 5000, "termMonths": 12},
                           key=f"{journey_id}-1")  # fmt: skip
    assert reply.status == 201, reply.body
    return str(json.loads(reply.body)["eventId"])


def loans_api_at(loans_settings: LoansSettings, shards: int) -> ApiClient:
    """loans-api in process, configured with `shards` shards of the changes index."""
    settings = loans_settings.model_copy(update={"changes_index_shards": shards})
    return ApiClient(loans_bootstrap.build(settings, quiet_metrics("loans-api")), name="loans-api")


def sweeper(relay_settings: RelaySettings, shards: int, now: datetime | None = None):
    settings = relay_settings.model_copy(update={"changes_index_shards": shards})
    clock = (lambda: now) if now is not None else (lambda: datetime.now(UTC))
    return relay_bootstrap.build_sweeper(settings, quiet_metrics("sweeper"), clock=clock)


def test_loans_api_writes_each_event_to_its_journeys_shard_one_index_entry_per_event(
    dynamodb: DynamoDBClient, resources, loans_settings
):
    # Given loans-api configured with 3 shards
    loans_api = loans_api_at(loans_settings, shards=3)
    # When it simulates journeys until every shard holds one
    written: dict[str, str] = {}  # eventId -> journey
    for n in itertools.count():
        if {changes_shard(event_id, 3) for event_id in written} == {0, 1, 2}:
            break
        written[simulate(loans_api, f"written-{n}")] = f"written-{n}"
    # Then each event is in its eventId's partition of the index, and in no other
    store = DynamoSweepStore(dynamodb, resources.loans_table)
    far = event_ids.lower_bound(datetime.now(UTC) + timedelta(minutes=1))
    found = {p: store.changes(p, event_ids.lower_bound(datetime(2020, 1, 1, tzinfo=UTC)), far, 100)[0]
             for p in partitions(3)}  # fmt: skip
    entries = {p: sorted(e.pk for e in found[p]) for p in found if found[p]}
    expected: dict[str, list[str]] = {}
    for event_id, journey_id in written.items():
        expected.setdefault(changes_partition("SimulationCreated", changes_shard(event_id, 3)), []).append(
            f"JOURNEY#{journey_id}"
        )
    assert entries == {p: sorted(j) for p, j in expected.items()}, f"index partitions and their journeys: {entries}"


def test_the_sweeper_republishes_stale_events_in_every_shard_and_keeps_a_cursor_for_each(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings
):
    # Given a stale PENDING event in each of 3 shards
    events = stale_in_each_shard(3)
    put(dynamodb, resources, *(outbox.outbox_item(e, 3) for e in events))
    # When the sweeper configured with 3 shards runs
    report = sweeper(relay_settings, 3).sweep()
    # Then it republished every one of them, and keeps a cursor per partition of every shard
    assert (report.pending, report.republished) == (3, 3), f"report: {report}"
    assert published_ids(sqs, resources) == sorted(e.eventId for e in events)
    assert {status_of(dynamodb, resources, e) for e in events} == {outbox.NOTIFIED}
    store = DynamoSweepStore(dynamodb, resources.loans_table)
    assert store.recorded_shards() == 3
    assert all(c.after is not None for c in store.cursors(partitions(3)).values()), "a shard was not walked"


def test_after_the_shard_count_is_lowered_the_sweeper_still_walks_the_shards_of_the_old_count(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings
):
    # Given a stack whose sweeper ran with 4 shards ten minutes ago (it recorded 4), and stale events since
    sweeper(relay_settings, 4, datetime.now(UTC) - timedelta(minutes=10)).sweep()
    events = stale_in_each_shard(4)
    put(dynamodb, resources, *(outbox.outbox_item(e, 4) for e in events))
    # When it is deployed with 2 shards, and the sweeper runs
    report = sweeper(relay_settings, 2).sweep()
    # Then the events of shards 2 and 3 were republished too: the recorded count is walked, not lowered
    assert (report.pending, report.republished) == (4, 4), f"report: {report}"
    assert published_ids(sqs, resources) == sorted(e.eventId for e in events)
    assert DynamoSweepStore(dynamodb, resources.loans_table).recorded_shards() == 4


def test_after_the_shard_count_is_raised_a_new_shard_is_walked_from_the_lookback_not_from_its_siblings(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings
):
    # Given a sweeper with 1 shard that just ran (its cursor stands a threshold before now)
    now = datetime.now(UTC)
    sweeper(relay_settings, 1, now).sweep()
    # And an event that loans-api, configured with 2 shards before the sweeper was, wrote to shard 1 minutes
    # before that run (a deploy updates the functions one by one): the sweeper's cursor is already past its id
    late = stale_in_shard("raised", 1, 2, minutes_ago=5)
    put(dynamodb, resources, outbox.outbox_item(late, 2))
    store = DynamoSweepStore(dynamodb, resources.loans_table)
    sibling = store.cursors([changes_partition("JourneyCancelled", 0)])[changes_partition("JourneyCancelled", 0)]
    assert sibling.after is not None
    assert sibling.after > late.eventId, f"cursor {sibling.after}, event {late.eventId}"
    # When the sweeper, now configured with 2 shards, runs
    report = sweeper(relay_settings, 2, now + timedelta(seconds=1)).sweep()
    # Then it found the event in the new shard and republished it
    assert (report.pending, report.republished) == (1, 1), f"report: {report}"
    assert published_ids(sqs, resources) == [late.eventId]


def test_saga_status_sees_pending_events_in_every_shard_the_sweeper_recorded(
    dynamodb: DynamoDBClient, resources, relay_settings
):
    # Given a sweeper that ran with 4 shards, and an event PENDING for a minute in each shard (not yet stale)
    sweeper(relay_settings, 4).sweep()
    events = stale_in_each_shard(4, minutes_ago=0.5)
    put(dynamodb, resources, *(outbox.outbox_item(e, 4) for e in events))
    # When `saga status` asks what is PENDING (it knows no configured count: the recorded one)
    found = pending_now(DynamoSweepStore(dynamodb, resources.loans_table), datetime.now(UTC), 30.0)
    # Then it counts every one of them, the oldest first
    assert (found.pending, found.oldest) == (4, min(e.occurredAt for e in events)), f"found: {found}"


def test_the_audit_reads_the_changes_of_every_shard_merged_by_time_and_of_a_count_since_lowered(
    dynamodb: DynamoDBClient, resources, auditor_settings, relay_settings
):
    # Given events in each of 4 shards, minted a minute apart in shard order reversed (3 oldest, 0 newest),
    # and a sweeper that recorded 4 shards
    events = [stale_in_shard(f"audited-{s}", s, 4, minutes_ago=1 + s) for s in range(4)]
    put(dynamodb, resources, *(outbox.outbox_item(e, 4) for e in events))
    sweeper(relay_settings, 4).sweep()
    # When the audit, deployed with 2 shards, reads what changed in the last ten minutes
    _, changes = auditor_bootstrap.build_auditor(
        dynamodb, dynamodb, auditor_settings.model_copy(update={"changes_index_shards": 2})
    )
    now = datetime.now(UTC)
    after = event_ids.lower_bound(now - timedelta(minutes=10))
    found = changes.changed_between(after, now, 100)
    # Then it found every journey, oldest first, shards 2 and 3 included
    oldest_first = [e.journeyId for e in sorted(events, key=lambda e: e.eventId)]
    assert [c.journey_id for c in found] == oldest_first, f"changes: {found}"
    # And a capped read takes the oldest across the shards, not the first partition's
    assert [c.journey_id for c in changes.changed_between(after, now, 2)] == oldest_first[:2]
    # And from a cursor (the audit's resumeAfter), only what follows it in any shard
    assert [c.journey_id for c in changes.changed_between(found[1].event_id, now, 100)] == oldest_first[2:]


def test_the_audit_without_a_recorded_count_walks_its_configured_shards(
    dynamodb: DynamoDBClient, resources, auditor_settings
):
    # Given events in each of 3 shards and no sweeper run yet (no count recorded)
    events = stale_in_each_shard(3, minutes_ago=1)
    put(dynamodb, resources, *(outbox.outbox_item(e, 3) for e in events))
    # When the audit configured with 3 shards reads what changed
    _, changes = auditor_bootstrap.build_auditor(
        dynamodb, dynamodb, auditor_settings.model_copy(update={"changes_index_shards": 3})
    )
    now = datetime.now(UTC)
    found = changes.changed_between(event_ids.lower_bound(now - timedelta(minutes=10)), now, 100)
    # Then it found all three
    assert sorted(c.journey_id for c in found) == sorted(e.journeyId for e in events), f"changes: {found}"


def test_a_sweep_that_runs_out_of_its_bound_leaves_its_partitions_to_the_next_which_takes_the_furthest_behind_first(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings
):
    # Given a sweeper that republishes one event a run, and a stale event in each of 2 shards
    settings = relay_settings.model_copy(update={"changes_index_shards": 2, "sweep_max_per_run": 1})
    old = stale_in_each_shard(2, minutes_ago=10)
    put(dynamodb, resources, *(outbox.outbox_item(e, 2) for e in old))
    now = datetime.now(UTC)
    # When it runs five minutes ago: it republishes shard 0's, and shard 1's cursor stays where it was
    relay_bootstrap.build_sweeper(settings, quiet_metrics("sweeper"), clock=lambda: now - timedelta(minutes=5)).sweep()
    assert published_ids(sqs, resources) == [old[0].eventId]
    # And shard 0 has a new stale event since, ahead of its cursor
    newer = stale_in_shard("s0of2-newer", 0, 2, minutes_ago=2)
    put(dynamodb, resources, outbox.outbox_item(newer, 2))
    # When it runs again now
    relay_bootstrap.build_sweeper(settings, quiet_metrics("sweeper"), clock=lambda: now).sweep()
    # Then it took shard 1 first, the furthest behind: its event is republished, not starved by shard 0's
    published = published_ids(sqs, resources)
    assert published == [old[1].eventId], (
        f"published {published}; shard 1's {old[1].eventId}, shard 0's {newer.eventId}"
    )


def test_a_sweep_out_of_time_queries_no_further_partition_and_counts_each_from_its_cursor(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings, monkeypatch
):
    # Given a sweeper with 2 shards that ran ten minutes ago, and stale events in both shards since
    ten_ago = datetime.now(UTC) - timedelta(minutes=10)
    sweeper(relay_settings, 2, ten_ago).sweep()
    put(dynamodb, resources, *(outbox.outbox_item(e, 2) for e in stale_in_each_shard(2, minutes_ago=5)))
    queried: list[str] = []
    query = DynamoSweepStore.changes

    def counted(self: DynamoSweepStore, partition: str, *args: Any) -> Any:
        queried.append(partition)
        return query(self, partition, *args)

    monkeypatch.setattr(DynamoSweepStore, "changes", counted)
    # When a sweep runs with its time already spent (hundreds of shards can take a run's budget)
    spent = relay_settings.model_copy(update={"changes_index_shards": 2, "sweep_budget_seconds": 0.0})
    report = relay_bootstrap.build_sweeper(spent, quiet_metrics("sweeper")).sweep()
    # Then it queried no partition, republished nothing, and its age counts from the cursors it left
    assert (queried, report.republished) == ([], 0), f"queried {queried}; report {report}"
    assert report.oldest_age_seconds >= 11 * 60 - 1, f"report: {report}"
    assert published_ids(sqs, resources) == []


def test_a_count_loans_api_wrote_under_is_walked_even_if_no_sweeper_ever_ran_with_it(
    dynamodb: DynamoDBClient, sqs: SQSClient, resources, loans_settings, relay_settings, auditor_settings
):
    # Given loans-api deployed with 4 shards, which commits a journey's event to a shard beyond 0, and the
    # deploy then rolled back to 1 shard (or redeployed with 1) before any sweeper or audit ran with 4
    loans_api = loans_api_at(loans_settings, shards=4)
    # (simulated until one lands beyond shard 0, the only one a reader told 1 shard walks by itself)
    simulated: list[str] = []
    for n in itertools.count():
        simulated.append(f"rolled-back-{n}")
        if changes_shard(simulate(loans_api, simulated[-1]), 4) != 0:
            break
    now = datetime.now(UTC)
    # When the audit and the sweeper, configured with 1 shard, run (the sweeper once the event is stale)
    _, changes = auditor_bootstrap.build_auditor(dynamodb, dynamodb, auditor_settings)
    found = changes.changed_between(event_ids.lower_bound(now - timedelta(minutes=10)), now + timedelta(seconds=1), 100)
    report = sweeper(relay_settings, 1, now + timedelta(minutes=5)).sweep()
    # Then both found every journey, the one beyond shard 0 too: loans-api recorded the count it writes
    # under before writing under it
    assert sorted(c.journey_id for c in found) == sorted(simulated), f"the audit's changes: {found}"
    assert (report.pending, report.republished) == (len(simulated),) * 2, f"sweeper report: {report}"
    assert DynamoSweepStore(dynamodb, resources.loans_table).recorded_shards() == 4


def test_loans_api_at_one_shard_records_nothing_and_writes_only_its_transaction(
    dynamodb: DynamoDBClient, resources, loans_settings
):
    # Given loans-api with the default single shard (every reader walks shard 0 whatever it is told)
    loans_api = ApiClient(loans_bootstrap.build(loans_settings, quiet_metrics("loans-api")), name="loans-api")
    # When it commits a command
    reply = loans_api.post("/simulations", {"journeyId": "one-shard", "amount": 5000, "termMonths": 12}, key="k-1")
    assert reply.status == 201, reply.body
    # Then no shard count was recorded: the hot path pays nothing for the shards at one shard
    assert DynamoSweepStore(dynamodb, resources.loans_table).recorded_shards() == 0


def test_journey_ids_an_agent_chooses_cannot_pile_one_types_index_entries_onto_one_shard(
    dynamodb: DynamoDBClient, resources, loans_settings
):
    # Given loans-api with 4 shards, and 40 journey ids an agent chose so that their CRC-32 is 0 modulo 4
    # (the journey id is the caller's; a crafted set would throttle one shard's partition, and every
    # innocent journey on it, at a rate the stack is sized for)
    loans_api = loans_api_at(loans_settings, shards=4)
    crafted = [journey_in_shard(f"crafted{n}", 0, 4) for n in range(40)]
    # When each is simulated
    for journey_id in crafted:
        simulate(loans_api, journey_id)
    # Then their index entries are spread over the shards (by loans-api's own random eventId bits): no shard
    # holds more than 25 of the 40 (10 expected; 25 is 5 standard deviations away)
    store = DynamoSweepStore(dynamodb, resources.loans_table)
    far = event_ids.lower_bound(datetime.now(UTC) + timedelta(minutes=1))
    early = event_ids.lower_bound(datetime(2020, 1, 1, tzinfo=UTC))
    per_shard = {p: len(store.changes(p, early, far, 100)[0]) for p in partitions(4) if p.startswith("Simulation")}
    assert sum(per_shard.values()) == 40, f"entries per partition: {per_shard}"
    assert max(per_shard.values()) <= 25, f"entries per partition: {per_shard}"


def test_saga_status_reads_a_bounded_number_of_entries_whole_however_many_shards_and_finds_the_oldest(
    dynamodb: DynamoDBClient, resources, relay_settings, monkeypatch
):
    # Given a sweeper that recorded 4 shards, and 3 young PENDING events in each SimulationCreated shard
    sweeper(relay_settings, 4).sweep()
    events = [stale_in_shard(f"young-{s}-{n}", s, 4, minutes_ago=0.3 + 0.1 * n) for s in range(4) for n in range(3)]
    put(dynamodb, resources, *(outbox.outbox_item(e, 4) for e in events))
    # And `saga status` allowed 4 entries in all (its bound: the read is strongly consistent, whole items)
    monkeypatch.setattr(sweeper_module, "PENDING_NOW_MAX_ENTRIES", 4)
    store = DynamoSweepStore(dynamodb, resources.loans_table)
    read: list[int] = []
    whole = DynamoSweepStore.read

    def counted(self: DynamoSweepStore, entries: Any, consistent: bool) -> Any:
        read.append(len(entries))
        return whole(self, entries, consistent)

    monkeypatch.setattr(DynamoSweepStore, "read", counted)
    # When it asks what is PENDING
    found = pending_now(store, datetime.now(UTC), 30.0)
    # Then it read at most one entry per partition holding events (the bound spread over 16 partitions), not
    # all 12, and its oldest is still the oldest of all (each partition is read oldest first)
    assert read[-1] <= 4, f"entries per read (the count, the cursors, then the entries whole): {read}"
    assert found.oldest == min(e.occurredAt for e in events), f"found: {found}"
