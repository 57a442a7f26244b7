"""The sweeper (docs/ARCHITECTURE.md, D7): road 2's backstop, and the outbox's age.

There is no index of pending events. Every outbox event is in the keys-only `journey-changes` index
(shared/keys.py CHANGES_INDEX: a partition per event type and shard, sorted by the UUIDv7 eventId, so
by time), and the sweeper walks each partition from a cursor it keeps in the loans table:

* The partitions are every event type's shards 0 .. n-1 (shared/keys.py changes_partitions), n the larger
  of its configured shard count (the target rate's, as loans-api's) and the count recorded in the table,
  which loans-api raises before writing under a larger count, a run configured with more raises first,
  and nothing lowers: entries written under a count since
  lowered are still walked. A partition without a cursor (a new shard) is walked from the initial
  lookback, so what loans-api wrote there before this sweeper knew the count is still examined.

* Each run examines the events of each partition from its cursor up to the horizon, `now - threshold`:
  an event younger than that is the stream's (the relay publishes it within a second) and is not yet
  stale, so it is left for a later run, and the cursor never passes an event whose fate is open.
* It also re-reads the index a margin behind the cursor (LATE_COMMIT_MARGIN_SECONDS): an eventId is
  minted before its transaction commits and the index is eventually consistent, so an event can
  appear behind the cursor after the cursor passed its id. A digest of the margin's ids, saved with
  the cursor, tells whether anything appeared there; only then is the margin read whole again.
* The examined items are read whole in BatchGetItems of 100, first eventually consistent (half a read
  unit for an item under 4 KB: NOTIFIED never goes back to PENDING, so a NOTIFIED on any read is final),
  then strongly consistent for those that looked PENDING or absent. At steady state nearly every event
  is NOTIFIED by then: about half a read unit per event, plus the index's keys.
* PENDING events older than the threshold are republished through the relay (publish, then mark).
* What it cannot settle (an unreadable item, a failed publish, a read left unprocessed) is kept in a
  short list per partition, saved with the cursor, and read again on every run until it settles: one
  bad item never pins the cursor. When that list is full, the cursor stops before the first item that
  does not fit (or stays where it was), so every such item is still read, counted and retried on every
  run; the run logs why at ERROR and the outbox age it reports keeps rising until someone acts.
* Every PENDING item found (republished, or kept to revisit however far behind the cursor) counts in the
  oldest PENDING age (`OldestPendingOutboxAgeSeconds`, the dashboard's outbox age and its alarm).
* Each run is bounded: index entries per partition, republished events and wall time; a bounded run
  moves the cursor to where it stopped and the next run goes on from there. What it left unexamined may
  be PENDING, so the age it reports counts from where it stopped: a sweeper falling behind alarms. The
  partitions furthest behind go first, and one the run has no time left for is not queried at all (its
  cursor and revisits stay, and count): the next run takes it first.

The cursor is saved only forward (a conditional write): two overlapping runs never move it back.

* The partitions are dealt out to lanes (`lane_partitions`; their count, `sweep_lanes`, derived from the
  target rate by shared/capacity.py: 1 at the default). Each lane is a run of its own, scheduled with its
  lane in its input, under a lease of its own (shared/keys.py sweeper_lease_key): two runs of one lane never
  overlap, and no two lanes walk the same partition. A partition's lane depends only on its shard and its
  type, so a change of the lane count between deploys moves partitions between lanes with their cursors
  (one item per partition), and none is left out.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import ClientError

from functions.relay.outbox_store import StoredEvent, UnreadableItem, read_outbox_item
from functions.relay.service import OutboxRelay
from shared import event_ids, outbox
from shared import metric_names as names
from shared.batch_read import BATCH_GET_LIMIT, batch_read
from shared.capacity import DEFAULT_CAPACITY
from shared.dynamo import error_code, from_item, to_item
from shared.events import KNOWN_EVENT_TYPES
from shared.keys import (
    CHANGES_INDEX,
    CHANGES_PARTITION_ATTRIBUTE,
    CHANGES_SHARDS_KEY,
    CHANGES_SORT_ATTRIBUTE,
    SWEEPER_CURSOR_PK,
    changes_partition,
    changes_partitions,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

logger = Logger(child=True)

# The index's partitions at the default shard count (the local runtime's, the bench's).
PARTITIONS = changes_partitions(KNOWN_EVENT_TYPES, DEFAULT_CAPACITY.changes_index_shards)


def partitions(shards: int) -> tuple[str, ...]:
    """Every partition of the changes index under `shards` shards per event type."""
    return changes_partitions(KNOWN_EVENT_TYPES, shards)


def lane_partitions(shards: int, lanes: int, lane: int) -> tuple[str, ...]:
    """The partitions lane `lane` of `lanes` walks under `shards` shards per event type. They are dealt out
    shard by shard, type by type: the partition of type i (of the sorted types) and shard s is the
    (s x types + i)-th, and goes to lane (s x types + i) mod lanes. Its lane depends on its shard, its type
    and the lane count only, never on the shard count: every partition is in exactly one lane, and a raised
    or lowered shard count moves none. With a lane count coprime with the number of types (shared/capacity.py
    derives one), each type's shards spread evenly over the lanes."""
    if not 0 <= lane < lanes:
        raise ValueError(f"no lane {lane!r} among {lanes} lanes (0 .. {lanes - 1})")
    types = sorted(KNOWN_EVENT_TYPES)
    return tuple(
        changes_partition(event_type, shard)
        for shard in range(shards)
        for i, event_type in enumerate(types)
        if (shard * len(types) + i) % lanes == lane
    )


@dataclass(frozen=True, order=True)
class Entry:
    """An outbox item as the changes index names it."""

    event_id: str
    pk: str
    sk: str

    def occurred_at(self) -> datetime | None:
        return event_ids.time_of(self.event_id)


@dataclass(frozen=True)
class Cursor:
    """Where one partition's sweep stands: every index entry with an eventId up to `after` was examined,
    except `revisits`, which are read again on every run; `margin_digest` is the digest of the entries
    seen in the margin behind `after` (None: read the margin whole next time)."""

    partition: str
    after: str | None = None
    margin_digest: str | None = None
    revisits: tuple[Entry, ...] = ()


class SweepStore(Protocol):
    def recorded_shards(self) -> int:
        """The changes index's shard count recorded as in use (0: none recorded yet)."""
        ...

    def record_shards(self, shards: int) -> None:
        """Record `shards` as in use, unless a larger count is recorded (it is never lowered)."""
        ...

    def cursors(self, partitions: Sequence[str]) -> dict[str, Cursor]: ...

    def save(self, cursor: Cursor) -> bool:
        """Save `cursor` unless a saved one is further (then False: the cursor never moves back)."""
        ...

    def changes(self, partition: str, above: str, below: str, limit: int) -> tuple[list[Entry], bool]:
        """The partition's index entries with `above` < eventId < `below`, oldest first, at most `limit`
        (and whether there were more)."""
        ...

    def read(self, entries: Sequence[Entry], consistent: bool) -> tuple[dict[Entry, dict[str, Any]], list[Entry]]:
        """The items of `entries` that exist, and the entries DynamoDB left unprocessed."""
        ...


@dataclass(frozen=True)
class SweepReport:
    pending: int
    oldest_age_seconds: float
    republished: int
    failed: int
    unreadable: int = 0
    revisits: int = 0  # items kept to read again next run
    cursor_held: bool = False  # a revisit list was full: the cursor waits (nothing is dropped)
    lane: int = 0  # the lane this run swept (lane_partitions)


@dataclass
class _Tally:
    pending: int = 0
    oldest: datetime | None = None
    republished: int = 0
    failed: int = 0
    unreadable: list[UnreadableItem] = field(default_factory=list)
    revisits: int = 0
    cursor_held: bool = False

    def behind(self, since: datetime) -> None:
        """A cursor stopped at `since` with events ahead of it unexamined: the outbox age cannot be less
        than theirs (they may be PENDING), so it counts from there."""
        if self.oldest is None or since < self.oldest:
            self.oldest = since

    def found_pending(self, occurred_at: datetime | None) -> None:
        self.pending += 1
        if occurred_at is not None and (self.oldest is None or occurred_at < self.oldest):
            self.oldest = occurred_at


@dataclass(frozen=True)
class SweepLimits:
    """What bounds one run, so that a backlog cannot make it outlast its function timeout."""

    threshold_seconds: float
    margin_seconds: float
    max_per_run: int  # events republished
    max_entries_per_partition: int
    max_revisits: int
    budget_seconds: float
    initial_lookback_seconds: float
    shards: int = 1  # the changes index's shards per event type loans-api is configured with
    lanes: int = 1  # the lanes the partitions are dealt out to (`lane_partitions`), each a run of its own


class OutboxSweeper:
    def __init__(
        self,
        relay: OutboxRelay,
        store: SweepStore,
        metrics: Metrics,
        clock: Callable[[], datetime],
        limits: SweepLimits,
        elapsed: Callable[[], float] = time.monotonic,
    ) -> None:
        self._relay = relay
        self._store = store
        self._metrics = metrics
        self._clock = clock
        self._limits = limits
        self._elapsed = elapsed

    def sweep(self, lane: int = 0) -> SweepReport:
        """One run of lane `lane`: its partitions only (`lane_partitions`)."""
        lanes = self._limits.lanes
        if not 0 <= lane < lanes:
            raise ValueError(f"no lane {lane!r} among the sweeper's {lanes} lanes")
        now = self._clock()
        deadline = self._elapsed() + self._limits.budget_seconds
        horizon = event_ids.lower_bound(now - timedelta(seconds=self._limits.threshold_seconds))
        tally = _Tally()
        recorded = self._store.recorded_shards()
        if self._limits.shards > recorded:
            self._store.record_shards(self._limits.shards)
        walked = self._store.cursors(lane_partitions(max(recorded, self._limits.shards), lanes, lane)).values()
        # The furthest behind first (never walked: first of all), so that a run out of time leaves the
        # partitions it reached last time for the next, not the same ones every run.
        skipped = 0
        for cursor in sorted(walked, key=lambda c: (c.after is not None, c.after or "", c.partition)):
            if self._elapsed() >= deadline:  # out of time: not even queried (hundreds of shards take a while)
                skipped += 1
                self._unreached(cursor, now, tally)
                continue
            moved = self._sweep_partition(cursor, now, horizon, deadline, tally)
            if not self._store.save(moved):
                logger.warning("another sweep moved this cursor further: this run's is not saved",
                               extra={"partition": cursor.partition})  # fmt: skip
        if skipped:
            logger.warning("sweep out of time before some partitions: the next run takes them first",
                           extra={"partitions_left": skipped})  # fmt: skip
        return self._report(now, tally, lane)

    def _unreached(self, cursor: Cursor, now: datetime, tally: _Tally) -> None:
        """A partition this run had no time for: its cursor and revisits stay as saved, its revisits count
        as the suspects they are, and what lies ahead of its cursor counts as possibly PENDING."""
        start = cursor.after or event_ids.lower_bound(now - timedelta(seconds=self._limits.initial_lookback_seconds))
        tally.behind(_time_of(start))
        for entry in cursor.revisits:
            tally.found_pending(entry.occurred_at())
        tally.revisits += len(cursor.revisits)

    def _sweep_partition(self, cursor: Cursor, now: datetime, horizon: str, deadline: float, tally: _Tally) -> Cursor:
        lim = self._limits
        after = cursor.after or event_ids.lower_bound(now - timedelta(seconds=lim.initial_lookback_seconds))
        margin = timedelta(seconds=lim.margin_seconds)
        entries, more = self._store.changes(cursor.partition, _margin_start(after, margin), horizon,
                                            lim.max_entries_per_partition)  # fmt: skip
        behind = [e for e in entries if e.event_id <= after]
        fresh = [e for e in entries if e.event_id > after]
        # Read the margin whole only when something appeared in it since it was last read (or never read).
        reread = cursor.after is None or _digest(behind) != cursor.margin_digest
        revisit_keys = {(e.pk, e.sk) for e in cursor.revisits}
        queue = [*cursor.revisits, *(e for e in behind if reread and (e.pk, e.sk) not in revisit_keys), *fresh]
        settled, unsettled = self._settle(queue, now, deadline, tally)
        examined_fresh = [e for e in fresh if e in settled or e in unsettled]
        # Where the cursor may go: the horizon when every fresh entry was examined, else the last examined.
        if len(examined_fresh) == len(fresh) and not more:
            new_after = max(after, horizon)
        else:  # stopped early: what lies ahead is not examined yet, so it counts as possibly pending
            new_after = examined_fresh[-1].event_id if examined_fresh else after
            tally.behind(_time_of(new_after))
            logger.warning("sweep stopped before its horizon: the next run goes on from its cursor",
                           extra={"partition": cursor.partition, "cursor": new_after})  # fmt: skip
        margin_held = reread and any(e not in settled and e not in unsettled for e in behind)
        # Revisits a run had no time for stay on the list (and count, as the suspects they are).
        unreached = [e for e in cursor.revisits if e not in settled and e not in unsettled]
        for entry in unreached:
            tally.found_pending(entry.occurred_at())
        keep = [e for e in queue if e in unsettled or e in unreached]
        # A revisit already kept is never dropped (the list only shrinks when the limit is lowered).
        room = max(lim.max_revisits, sum(1 for e in cursor.revisits if e in unsettled or e in unreached))
        if len(keep) > room:
            overflow = keep[room]
            keep = keep[:room]
            tally.cursor_held = True
            if overflow.event_id <= after:  # behind the cursor: it stays, and the margin is read again
                new_after, margin_held = after, True
            else:  # ahead: the cursor stops just before it, so the next run reads it again
                before = [e.event_id for e in examined_fresh if e.event_id < overflow.event_id]
                new_after = min(new_after, max([after, *before]))
            logger.error(
                "the sweeper's revisit list is full: its cursor waits before what does not fit, which is read, "
                "counted and retried again next run (see the unreadable and publish failure logs for why)",
                extra={"partition": cursor.partition, "kept": len(keep), "cursor": new_after},
            )
        if margin_held:
            new_after = after
        tally.revisits += len(keep)
        digest = None if margin_held else _digest([e for e in entries if _margin_start(new_after, margin) < e.event_id
                                                  <= new_after])  # fmt: skip
        return replace(cursor, after=new_after, margin_digest=digest, revisits=tuple(keep))

    def _settle(
        self, queue: list[Entry], now: datetime, deadline: float, tally: _Tally
    ) -> tuple[set[Entry], set[Entry]]:
        """Examine `queue` in order, in batches, until done or out of budget: the entries settled (NOTIFIED,
        gone, or republished) and those to revisit (PENDING and not republished, or unread)."""
        settled: set[Entry] = set()
        unsettled: set[Entry] = set()
        for start in range(0, len(queue), BATCH_GET_LIMIT):
            if self._elapsed() >= deadline or tally.republished + tally.failed >= self._limits.max_per_run:
                break
            batch = queue[start : start + BATCH_GET_LIMIT]
            found, unread = self._store.read(batch, consistent=False)
            doubtful = [e for e in batch if e not in unread and _status(found.get(e)) != outbox.NOTIFIED]
            settled.update(e for e in batch if e not in unread and e not in doubtful)
            confirmed, unread_again = self._store.read(doubtful, consistent=True) if doubtful else ({}, [])
            stale: list[tuple[Entry, StoredEvent]] = []
            for entry in [*unread, *unread_again]:  # unknown: kept, and counted as pending until read
                unsettled.add(entry)
                tally.found_pending(entry.occurred_at())
            for entry in (e for e in doubtful if e not in unread_again):
                item = confirmed.get(entry)
                if item is None or _status(item) != outbox.PENDING:
                    settled.add(entry)  # gone, or marked since the first read
                    continue
                read = read_outbox_item(item)
                if isinstance(read, UnreadableItem):
                    tally.unreadable.append(read)
                    tally.found_pending(read.occurred_at)
                    unsettled.add(entry)
                    continue
                tally.found_pending(read.event.occurredAt)
                if (now - read.event.occurredAt).total_seconds() >= self._limits.threshold_seconds:
                    stale.append((entry, read))
                else:
                    unsettled.add(entry)
            self._republish(stale, settled, unsettled, tally)
        return settled, unsettled

    def _republish(
        self, stale: list[tuple[Entry, StoredEvent]], settled: set[Entry], unsettled: set[Entry], tally: _Tally
    ) -> None:
        """Publish, then mark the published (their items as read: committed, D6)."""
        failed = self._relay.publish([stored.event for _, stored in stale])
        published = [(entry, stored) for entry, stored in stale if stored.event.eventId not in failed]
        tally.failed += len(stale) - len(published)
        unsettled.update(entry for entry, stored in stale if stored.event.eventId in failed)
        tally.republished += len(published)
        # A failed mark (logged by the relay) leaves it PENDING: republished next run (at least once).
        unmarked = self._relay.mark_all([stored for _, stored in published])
        for entry, stored in published:
            (unsettled if stored.event.eventId in unmarked else settled).add(entry)

    def _report(self, now: datetime, tally: _Tally, lane: int) -> SweepReport:
        # An event committed while this sweep runs is younger than `now`: its age is 0, not negative.
        oldest_age = 0.0 if tally.oldest is None else max(0.0, (now - tally.oldest).total_seconds())
        self._metrics.add_metric(name=names.PENDING_OUTBOX_COUNT, unit=MetricUnit.Count, value=tally.pending)
        self._metrics.add_metric(
            name=names.OLDEST_PENDING_OUTBOX_AGE_SECONDS, unit=MetricUnit.Seconds, value=oldest_age
        )
        self._relay.count_unreadable(tally.unreadable)
        report = SweepReport(tally.pending, oldest_age, tally.republished, tally.failed, len(tally.unreadable),
                             tally.revisits, tally.cursor_held, lane)  # fmt: skip
        if tally.republished or tally.failed:
            logger.warning("republished stale outbox events", extra=report.__dict__)
        return report


@dataclass(frozen=True)
class PendingNow:
    pending: int
    oldest: datetime | None
    unreadable: int


# What `saga status` reads whole (strongly consistent) at most, however many partitions: the pre-sharding
# bound (4 event types x 100,000). It is spread over the partitions, each read oldest first, so the oldest
# PENDING age stays exact; past the bound the count is a floor (a busy stack's young events).
PENDING_NOW_MAX_ENTRIES = 400_000


def pending_now(store: SweepStore, now: datetime, margin_seconds: float) -> PendingNow:
    """What is PENDING now, as far as the sweeper can know, without changing anything (`saga status`):
    its revisits and every event from its cursors' margin up to now (at most PENDING_NOW_MAX_ENTRIES in
    all, the oldest of each partition), read whole and strongly consistent, in every partition the sweeper
    walks (the shard count it recorded; the default's when none is). A
    partition never swept is read from `now` less the margin."""
    entries: dict[tuple[str, str], Entry] = {}
    shards = max(store.recorded_shards(), DEFAULT_CAPACITY.changes_index_shards)
    cursors = store.cursors(partitions(shards)).values()
    per_partition = max(1, PENDING_NOW_MAX_ENTRIES // len(cursors))
    for cursor in cursors:
        start = _margin_start(cursor.after or event_ids.lower_bound(now), timedelta(seconds=margin_seconds))
        end = event_ids.lower_bound(now + timedelta(seconds=1))
        found, _ = store.changes(cursor.partition, start, end, per_partition)
        entries.update({(e.pk, e.sk): e for e in [*cursor.revisits, *found]})
    items, unread = store.read(list(entries.values()), consistent=True)
    pending = [item for item in items.values() if _status(item) == outbox.PENDING]
    reads = [read_outbox_item(item) for item in pending]
    times = [r.occurred_at if isinstance(r, UnreadableItem) else r.event.occurredAt for r in reads]
    times += [e.occurred_at() for e in unread]
    known = [t for t in times if t is not None]
    unreadable = sum(1 for r in reads if isinstance(r, UnreadableItem))
    return PendingNow(len(pending) + len(unread), min(known, default=None), unreadable)


def _status(item: dict[str, Any] | None) -> str | None:
    return None if item is None else item.get("status", {}).get("S")


def _margin_start(after: str, margin: timedelta) -> str:
    """The smallest eventId of the margin behind `after` (an eventId, or a bound of event_ids)."""
    return event_ids.lower_bound(_time_of(after) - margin)


def _time_of(bound: str) -> datetime:
    """The millisecond an eventId, or an `event_ids.lower_bound`, stands for (its first 48 bits)."""
    return datetime.fromtimestamp(int(bound.replace("-", "")[:12], 16) / 1000, tz=UTC)


def _digest(entries: Sequence[Entry]) -> str:
    return hashlib.sha256("\n".join(e.event_id for e in entries).encode()).hexdigest()


class DynamoSweepStore:
    """The cursors (items of the loans table), the changes index, and the outbox items, on DynamoDB."""

    def __init__(self, client: DynamoDBClient, table_name: str, sleep: Callable[[float], None] = time.sleep) -> None:
        self._client = client
        self._table = table_name
        self._sleep = sleep

    def recorded_shards(self) -> int:
        key = Entry("", CHANGES_SHARDS_KEY["pk"], CHANGES_SHARDS_KEY["sk"])
        found, unread = self.read([key], consistent=True)
        if unread:
            raise RuntimeError("the changes index's shard count could not be read (throttled): this run does nothing")
        return int(from_item(found[key]).get("shards", 0)) if key in found else 0

    def record_shards(self, shards: int) -> None:
        outbox.record_changes_shards(self._client, self._table, shards)

    def cursors(self, partitions: Sequence[str]) -> dict[str, Cursor]:
        keys = [Entry("", SWEEPER_CURSOR_PK, partition) for partition in partitions]
        found, unread = self.read(keys, consistent=True)
        if unread:
            raise RuntimeError("the sweeper's cursors could not be read (throttled): this run does nothing")
        return {key.sk: _cursor(key.sk, found.get(key)) for key in keys}

    def save(self, cursor: Cursor) -> bool:
        values: dict[str, Any] = {
            "pk": SWEEPER_CURSOR_PK,
            "sk": cursor.partition,
            "after": cursor.after,
            "revisits": [{"pk": e.pk, "sk": e.sk, "eventId": e.event_id} for e in cursor.revisits],
        }
        if cursor.margin_digest is not None:
            values["marginDigest"] = cursor.margin_digest
        try:
            self._client.put_item(
                TableName=self._table,
                Item=to_item(values),
                ConditionExpression="attribute_not_exists(pk) OR #after <= :after",
                ExpressionAttributeNames={"#after": "after"},
                ExpressionAttributeValues=to_item({":after": cursor.after}),
            )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def changes(self, partition: str, above: str, below: str, limit: int) -> tuple[list[Entry], bool]:
        pages = self._client.get_paginator("query").paginate(
            TableName=self._table,
            IndexName=CHANGES_INDEX,
            KeyConditionExpression="#partition = :partition AND #id BETWEEN :above AND :below",
            ExpressionAttributeNames={"#partition": CHANGES_PARTITION_ATTRIBUTE, "#id": CHANGES_SORT_ATTRIBUTE},
            ExpressionAttributeValues=to_item({":partition": partition, ":above": above, ":below": below}),
        )
        found: list[Entry] = []
        for page in pages:  # lazy: leaving the loop reads no further page
            for item in page.get("Items", []):
                entry = Entry(item[CHANGES_SORT_ATTRIBUTE]["S"], item["pk"]["S"], item["sk"]["S"])
                if above < entry.event_id < below:  # bounds are never eventIds; BETWEEN is inclusive
                    found.append(entry)
            if len(found) > limit:
                return found[:limit], True
        return found, False

    def read(self, entries: Sequence[Entry], consistent: bool) -> tuple[dict[Entry, dict[str, Any]], list[Entry]]:
        """shared/batch_read.py's bounded rounds; what is left unprocessed is returned, to revisit."""
        by_key = {(e.pk, e.sk): e for e in entries}
        keys = [to_item({"pk": e.pk, "sk": e.sk}) for e in entries]
        items, left = batch_read(self._client, self._table, keys, consistent=consistent, sleep=self._sleep)
        found = {by_key[(item["pk"]["S"], item["sk"]["S"])]: item for item in items}
        return found, [by_key[(key["pk"]["S"], key["sk"]["S"])] for key in left]


def _cursor(partition: str, item: dict[str, Any] | None) -> Cursor:
    if item is None:
        return Cursor(partition)
    values = from_item(item)
    revisits = tuple(Entry(str(r["eventId"]), str(r["pk"]), str(r["sk"])) for r in values.get("revisits") or ())
    return Cursor(partition, values.get("after"), values.get("marginDigest"), revisits)
