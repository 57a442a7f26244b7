"""The local pollers run what the deployed event source mappings run (shared/topology.py): the stream
poller drops records older than the maximum record age to the on-failure destination and runs the
parallelization factor's batches of a shard at once, each partition key in order on one of them; the queue
poller runs the maximum concurrency's batches at once; an idle polling loop backs off to its cap and a
nudge wakes it. Over fake streams and queues, so that a record's age and what the handler is given are the
test's; concurrency is shown by a barrier the batches must all reach at once (a condition waited on, not a
count of tries or a timing), and a loop's waits are scripted."""

from __future__ import annotations

import threading
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from saga.local.pollers import PollingLoop, SqsPoller, StreamPoller
from shared import topology

# Long enough never to end a passing test on a loaded machine; it only bounds how long a failing one hangs.
BARRIER_SECONDS = 30.0


class FakeStreams:
    """One shard whose records are the test's, all in one page."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self._records = records

    def describe_stream(self, StreamArn: str) -> dict[str, Any]:  # noqa: N803 - boto3's parameter names
        return {"StreamDescription": {"Shards": [{"ShardId": "shard-1"}]}}

    def get_shard_iterator(self, **_: Any) -> dict[str, Any]:
        return {"ShardIterator": "first"}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:  # noqa: N803
        page, self._records = self._records[:Limit], self._records[Limit:]
        return {"Records": page, "NextShardIterator": "next" if self._records else None}


def stream_record(seq: int, journey: str, created: datetime) -> dict[str, Any]:
    return {
        "eventName": "INSERT",
        "dynamodb": {
            "Keys": {"pk": {"S": f"JOURNEY#{journey}"}, "sk": {"S": f"EVENT#{seq}"}},
            "SequenceNumber": str(seq),
            "ApproximateCreationDateTime": created,
        },
    }


def test_a_stream_record_older_than_the_maximum_age_goes_to_the_on_failure_destination_not_the_relay():
    # Given a shard holding a record older than the deployed maximum record age, then a fresh one
    now = datetime.now(UTC)
    old = stream_record(1, "a", now - timedelta(seconds=topology.RELAY_STREAM.max_record_age_seconds + 60))
    fresh = stream_record(2, "a", now)
    delivered: list[str] = []
    failures: list[dict[str, Any]] = []

    def relay(event: dict[str, Any], context: Any) -> dict[str, Any]:
        delivered.extend(r["dynamodb"]["SequenceNumber"] for r in event["Records"])
        return {"batchItemFailures": []}

    poller = StreamPoller(FakeStreams([old, fresh]), "arn:stream", relay, on_failure=failures.append)  # type: ignore[arg-type]
    # When the poller reads the shard
    poller.poll_once()
    # Then the relay gets the fresh record only, and the old one is described to the on-failure destination
    # as Lambda describes a discarded batch (https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html)
    assert delivered == ["2"]
    [failure] = failures
    assert failure["requestContext"] == {"condition": "RecordAgeExceeded", "functionError": False}
    info = failure["DDBStreamBatchInfo"]
    assert (info["shardId"], info["startSequenceNumber"], info["endSequenceNumber"], info["batchSize"]) == (
        "shard-1",
        "1",
        "1",
        1,
    )


def test_a_record_that_ages_out_while_its_batch_is_retried_goes_to_the_on_failure_destination():
    # Given a record the relay fails, and a maximum age it passes while it is retried
    record = stream_record(1, "a", datetime.now(UTC))
    failures: list[dict[str, Any]] = []
    attempts: list[int] = []

    def relay(event: dict[str, Any], context: Any) -> dict[str, Any]:
        attempts.append(1)
        poller.max_record_age_seconds = -3600  # from now on, every record is too old
        return {"batchItemFailures": [{"itemIdentifier": "1"}]}

    poller = StreamPoller(FakeStreams([record]), "arn:stream", relay, on_failure=failures.append)  # type: ignore[arg-type]
    # When the poller reads the shard
    poller.poll_once()
    # Then it is not retried after it aged out: one attempt, then the on-failure destination
    assert len(attempts) == 1
    assert [f["requestContext"]["condition"] for f in failures] == ["RecordAgeExceeded"]


def test_the_stream_poller_runs_the_parallelization_factors_batches_of_a_shard_at_once_each_key_in_order():
    # Given a shard holding several events of each of many journeys, interleaved
    factor = topology.RELAY_STREAM.parallelization_factor
    assert factor > 1
    now = datetime.now(UTC)
    journeys = [f"j{n}" for n in range(20)]
    records = [stream_record(1 + i * len(journeys) + n, j, now) for i in range(3) for n, j in enumerate(journeys)]
    # (every batch waits here until `factor` batches are in the relay at once)
    together = threading.Barrier(factor, timeout=BARRIER_SECONDS)
    seen: dict[str, list[int]] = defaultdict(list)
    threads: dict[str, set[int]] = defaultdict(set)
    lock = threading.Lock()

    def relay(event: dict[str, Any], context: Any) -> dict[str, Any]:
        together.wait()
        with lock:
            for r in event["Records"]:
                key = r["dynamodb"]["Keys"]["pk"]["S"]
                seen[key].append(int(r["dynamodb"]["SequenceNumber"]))
                threads[key].add(threading.get_ident())
        return {"batchItemFailures": []}

    poller = StreamPoller(FakeStreams(records), "arn:stream", relay)  # type: ignore[arg-type]
    # When the poller reads the shard
    assert poller.poll_once() == len(records)
    # Then `factor` batches reached the relay at once (else the barrier broke and a batch failed), and every
    # event was delivered once, each journey's in order, all on one lane
    assert not together.broken
    assert sorted(seen) == sorted(f"JOURNEY#{j}" for j in journeys)
    assert all(seqs == sorted(seqs) and len(seqs) == 3 for seqs in seen.values())
    assert all(len(lane) == 1 for lane in threads.values())


class FakeQueue:
    """A queue of the test's messages; a receive takes up to its maximum, a delete removes them."""

    def __init__(self, count: int) -> None:
        self.waiting = [{"MessageId": str(n), "ReceiptHandle": f"r{n}", "Body": "{}"} for n in range(count)]
        self.deleted: list[str] = []
        self._lock = threading.Lock()

    def receive_message(self, MaxNumberOfMessages: int, **_: Any) -> dict[str, Any]:  # noqa: N803
        with self._lock:
            taken, self.waiting = self.waiting[:MaxNumberOfMessages], self.waiting[MaxNumberOfMessages:]
        return {"Messages": taken}

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, str]]) -> None:  # noqa: N803
        with self._lock:
            self.deleted.extend(e["ReceiptHandle"] for e in Entries)


def test_the_queue_poller_applies_the_maximum_concurrencys_batches_at_once_deleting_each_ones_successes():
    # Given a queue holding more than the maximum concurrency's batches, and a consumer that fails one
    # message of each batch
    concurrency, size = topology.EVENTS_QUEUE_SOURCE.max_concurrency, topology.EVENTS_QUEUE_SOURCE.batch_size
    queue = FakeQueue(concurrency * size + 3)
    together = threading.Barrier(concurrency, timeout=BARRIER_SECONDS)
    batches: list[list[str]] = []

    def consumer(event: dict[str, Any], context: Any) -> dict[str, Any]:
        together.wait()
        ids = [r["messageId"] for r in event["Records"]]
        batches.append(ids)
        return {"batchItemFailures": [{"itemIdentifier": ids[0]}]}

    poller = SqsPoller(queue, "url", "arn:aws:sqs:eu-west-1:1:events", consumer)  # type: ignore[arg-type]
    # When the poller polls once
    taken = poller.poll_once()
    # Then it applied `concurrency` full batches at once (else the barrier broke), left the rest in the queue,
    # and deleted every message but each batch's failed one
    assert not together.broken
    assert taken == concurrency * size
    assert sorted(len(b) for b in batches) == [size] * concurrency
    assert len(queue.waiting) == 3
    failed = {b[0] for b in batches}
    assert sorted(queue.deleted) == sorted(f"r{m}" for b in batches for m in b if m not in failed)


class ScriptedWake:
    """A PollingLoop's wake event whose waits are the script's: it records each wait's timeout, answers
    whether a nudge came during it, and stops the loop after the script's last wait."""

    def __init__(self, loop: PollingLoop, nudged: list[bool]) -> None:
        self._loop, self._nudged = loop, nudged
        self.waits: list[float] = []

    def wait(self, timeout: float) -> bool:
        self.waits.append(timeout)
        if len(self.waits) == len(self._nudged):
            self._loop._stop.set()
        return self._nudged[len(self.waits) - 1]

    def set(self) -> None:
        """The stop's own wake."""

    def clear(self) -> None:
        """Cleared before each tick."""


def test_an_idle_loop_waits_twice_as_long_after_each_empty_tick_up_to_its_cap_and_a_nudge_or_work_resets_it():
    # Given a loop whose ticks find work once, after four empty ones, and which is nudged during its seventh wait
    found = iter([0, 0, 0, 0, 3, 0, 0, 0, 0])
    loop = PollingLoop("relay", lambda: next(found), idle_seconds=0.05, max_idle_seconds=0.25)
    wake = ScriptedWake(loop, nudged=[False, False, False, False, False, True, False, False])
    loop._wake = wake  # type: ignore[assignment]
    # When it runs
    loop._run()
    # Then each empty tick doubles the wait up to the cap; work ticks again at once and resets it, as a nudge does
    assert wake.waits == [0.05, 0.1, 0.2, 0.25, 0.05, 0.1, 0.05, 0.1]


def test_a_nudge_wakes_an_idle_loop_at_once_whatever_its_wait():
    # Given a loop that has ticked once and now waits an hour
    ticks = threading.Semaphore(0)

    def tick() -> int:
        ticks.release()
        return 0

    loop = PollingLoop("consumer", tick, idle_seconds=3600).start()
    try:
        assert ticks.acquire(timeout=BARRIER_SECONDS)
        # When something nudges it
        loop.nudge()
        # Then it ticks again without waiting out the hour
        assert ticks.acquire(timeout=BARRIER_SECONDS)
    finally:
        # And stopping it ends its thread at once, mid-wait (`alive` says False as soon as stop is asked)
        loop.stop(timeout=BARRIER_SECONDS)
    assert not loop._thread.is_alive()


class SplittingStreams:
    """A stream whose second shard (holding one record) appears when the test splits it; counts describes."""

    def __init__(self) -> None:
        self.shards = ["shard-1"]
        self.describes = 0
        self._pending = {"shard-2": [stream_record(7, "b", datetime.now(UTC))]}

    def describe_stream(self, StreamArn: str) -> dict[str, Any]:  # noqa: N803 - boto3's parameter names
        self.describes += 1
        return {"StreamDescription": {"Shards": [{"ShardId": s} for s in self.shards]}}

    def get_shard_iterator(self, StreamArn: str, ShardId: str, ShardIteratorType: str) -> dict[str, Any]:  # noqa: N803
        return {"ShardIterator": ShardId}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:  # noqa: N803
        return {"Records": self._pending.pop(ShardIterator, []), "NextShardIterator": ShardIterator}


def test_a_shard_that_appears_later_is_read_once_the_discovery_interval_has_passed_and_not_described_each_poll(
    monkeypatch,
):
    # Given a stream poller that has read its one shard, with an interval between discoveries no poll outlasts
    monkeypatch.setattr("saga.local.pollers.SHARD_DISCOVERY_SECONDS", 3600.0)
    streams = SplittingStreams()
    delivered: list[str] = []

    def relay(event: dict[str, Any], context: Any) -> dict[str, Any]:
        delivered.extend(r["dynamodb"]["SequenceNumber"] for r in event["Records"])
        return {"batchItemFailures": []}

    poller = StreamPoller(streams, "arn:stream", relay, on_failure=lambda _: None)  # type: ignore[arg-type]
    assert poller.poll_once() == 0
    # When the stream splits, and the poller polls again within the discovery interval
    streams.shards.append("shard-2")
    assert poller.poll_once() == 0
    # Then it has described the stream once; and once the interval has passed, it reads the new shard's record
    assert streams.describes == 1
    monkeypatch.setattr("saga.local.pollers.SHARD_DISCOVERY_SECONDS", 0.0)  # (the interval, passed: no sleep)
    assert poller.poll_once() == 1
    assert (delivered, streams.describes) == (["7"], 2)
