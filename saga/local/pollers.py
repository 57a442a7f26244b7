"""Event sources as Lambda runs them, for the local runtime and the tests, configured by default as
shared/topology.py declares the deployed ones: a DynamoDB Streams poller (up to the parallelization
factor's batches of a shard at once, each partition key on one of them; partial batch failure -> retry
from the failed record, bisect on function error, bounded retries and a maximum record age, then the
on-failure destination) and an SQS poller (up to the maximum concurrency's batches at once; delete only
what succeeded, failures come back after their visibility timeout and move to the DLQ by the queue's own
redrive policy)."""

from __future__ import annotations

import base64
import json
import threading
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from saga.local.apigw import LambdaContextStub
from shared.entry_points import Handler
from shared.topology import EVENTS_QUEUE_SOURCE, RELAY_STREAM

if TYPE_CHECKING:
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

logger = Logger(service="saga-local", child=True)


# How often the stream poller looks for new shards (each poll reads the shards it knows): a shard splits
# rarely, and describing the stream on every poll doubled an idle runtime's calls.
SHARD_DISCOVERY_SECONDS = 1.0


def _failed_ids(handler: Handler, event: dict[str, Any], function_name: str) -> tuple[set[str], bool]:
    """Invoke; returns (ids reported as failed, whether the function itself errored)."""
    try:
        response = handler(event, LambdaContextStub(function_name)) or {}
    except Exception:
        logger.exception("function error", extra={"function": function_name})
        return set(), True
    return {str(f["itemIdentifier"]) for f in response.get("batchItemFailures", [])}, False


def _run_all(lanes: ThreadPoolExecutor, work: list[Callable[[], int]]) -> int:
    """Run each of `work` on `lanes` (at once, up to the pool's size), wait for all; the sum of their
    counts. An exception in one is raised here, after the others have ended."""
    futures = [lanes.submit(w) for w in work]
    wait(futures)
    return sum(f.result() for f in futures)


class StreamPoller:
    """Reads every shard of a DynamoDB stream and delivers batches to `handler`: a shard's records split
    by partition key into up to `parallelization_factor` lanes, delivered at once, each lane in order
    (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html#services-ddb-params)."""

    def __init__(
        self,
        streams: DynamoDBStreamsClient,
        stream_arn: str,
        handler: Handler,
        function_name: str = "relay",
        batch_size: int = RELAY_STREAM.batch_size,
        max_retries: int = RELAY_STREAM.retries,
        bisect_on_error: bool = RELAY_STREAM.bisect_on_error,
        on_failure: Callable[[dict[str, Any]], None] | None = None,
        admits: Callable[[dict[str, Any]], bool] | None = None,
        max_record_age_seconds: int = RELAY_STREAM.max_record_age_seconds,
        parallelization_factor: int = RELAY_STREAM.parallelization_factor,
        on_iterator_age: Callable[[float], None] | None = None,
    ) -> None:
        self._streams = streams
        # Told each page's iterator age (ms: how old its last record is when read), as Lambda reports
        # the mapping's IteratorAge.
        self._on_iterator_age = on_iterator_age
        self._arn = stream_arn
        self.handler = handler  # the function the poller invokes (a test may swap it between polls)
        self._name = function_name
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.bisect_on_error = bisect_on_error
        self._on_failure = on_failure
        # The mapping's filter (shared/topology.py `StreamSource.admits`); None delivers every record, as
        # to an endpoint without filters.
        self.admits = admits
        self.max_record_age_seconds = max_record_age_seconds
        self.parallelization_factor = parallelization_factor
        self._lanes = ThreadPoolExecutor(parallelization_factor, thread_name_prefix=f"{function_name}-lane")
        self._iterators: dict[str, str | None] = {}
        self._discovered_at: float | None = None

    def poll_once(self) -> int:
        """One pass over the shards; returns how many records were read."""
        if self._discovered_at is None or time.monotonic() - self._discovered_at >= SHARD_DISCOVERY_SECONDS:
            self._discover_shards()
            self._discovered_at = time.monotonic()
        read = 0
        for shard_id, iterator in list(self._iterators.items()):
            if iterator is None:
                continue
            page = self._streams.get_records(ShardIterator=iterator, Limit=self.batch_size)
            self._iterators[shard_id] = page.get("NextShardIterator")
            records = [as_lambda_delivers({**r, "eventSourceARN": self._arn}) for r in page.get("Records", [])]
            read += len(records)
            self._measure_age(records)
            delivered = [r for r in records if self.admits is None or self.admits(r)]
            lanes: dict[int, list[dict[str, Any]]] = {}
            for record in delivered:
                lanes.setdefault(self._lane(record), []).append(record)
            _run_all(self._lanes, [partial(self._deliver, batch, shard_id) for batch in lanes.values()])
        return read

    def _measure_age(self, records: list[dict[str, Any]]) -> None:
        created = _created(records[-1]) if records and self._on_iterator_age is not None else None
        if created is not None and self._on_iterator_age is not None:
            self._on_iterator_age(max(0.0, (datetime.now(UTC) - created).total_seconds() * 1000))

    def close(self) -> None:
        """End the lanes' threads (a poll under way finishes first)."""
        self._lanes.shutdown(wait=False, cancel_futures=True)

    def _lane(self, record: dict[str, Any]) -> int:
        """Which of the shard's concurrent batches a record joins: its partition key's hash, so that one
        key's records stay in order on one lane, as Lambda keeps them."""
        key = record.get("dynamodb", {}).get("Keys", {}).get("pk", {}).get("S", "")
        return zlib.crc32(str(key).encode()) % self.parallelization_factor

    def _discover_shards(self) -> None:
        shards = self._streams.describe_stream(StreamArn=self._arn)["StreamDescription"].get("Shards", [])
        for shard in shards:
            if shard["ShardId"] not in self._iterators:
                self._iterators[shard["ShardId"]] = self._streams.get_shard_iterator(
                    StreamArn=self._arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]

    def _deliver(self, records: list[dict[str, Any]], shard_id: str) -> int:
        batches = [records]
        retries = 0
        while batches:
            batch = self._within_age(batches.pop(0), shard_id)
            if not batch:
                continue
            failed, errored = _failed_ids(self.handler, {"Records": batch}, self._name)
            if not failed and not errored:
                continue
            retries += 1
            if retries > self.max_retries:
                self._send_to_on_failure(batch, errored, shard_id)
                retries = 0
                continue
            if errored and self.bisect_on_error and len(batch) > 1:
                middle = len(batch) // 2
                batches[:0] = [batch[:middle], batch[middle:]]
            elif errored:
                batches.insert(0, batch)
            else:
                first = min(failed, key=int)
                start = next(i for i, r in enumerate(batch) if r["dynamodb"]["SequenceNumber"] == first)
                batches.insert(0, batch[start:])
        return len(records)

    def _within_age(self, batch: list[dict[str, Any]], shard_id: str) -> list[dict[str, Any]]:
        """The batch without its records older than the maximum record age, which go to the on-failure
        destination instead, as Lambda discards them before an invocation or a retry."""
        oldest = datetime.now(UTC) - timedelta(seconds=self.max_record_age_seconds)
        kept: list[dict[str, Any]] = []
        expired: list[dict[str, Any]] = []
        for record in batch:
            created = _created(record)
            (expired if created is not None and created < oldest else kept).append(record)
        if expired:
            self._send_to_on_failure(expired, False, shard_id, condition="RecordAgeExceeded")
        return kept

    def _send_to_on_failure(
        self, batch: list[dict[str, Any]], errored: bool, shard_id: str, condition: str = "RetryAttemptsExhausted"
    ) -> None:
        """The invocation record Lambda sends the on-failure destination: where the batch is in the stream
        and when its records arrived, not the records (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html)."""
        sequence_numbers = [r["dynamodb"]["SequenceNumber"] for r in batch]
        logger.error("stream records sent to the on-failure destination",
                     extra={"condition": condition, "sequence_numbers": sequence_numbers})  # fmt: skip
        if self._on_failure is not None:
            arrivals = [_arrival(r) for r in (batch[0], batch[-1])]
            self._on_failure(
                {
                    "requestContext": {"condition": condition, "functionError": errored},
                    "version": "1.0",
                    "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                    "DDBStreamBatchInfo": {
                        "shardId": shard_id,
                        "startSequenceNumber": sequence_numbers[0],
                        "endSequenceNumber": sequence_numbers[-1],
                        "approximateArrivalOfFirstRecord": arrivals[0],
                        "approximateArrivalOfLastRecord": arrivals[1],
                        "batchSize": len(batch),
                        "streamArn": self._arn,
                    },
                }
            )


def as_lambda_delivers(record: dict[str, Any]) -> dict[str, Any]:
    """A stream record as Lambda hands it to the function: JSON, so binaries are base64 text and times are epoch
    seconds (botocore's parsed record has bytes and datetimes; a relay that only ever saw those would not
    find out that the JSON form is not what the DynamoDB client takes back)."""

    def encode(value: Any) -> Any:
        if isinstance(value, bytes | bytearray):
            return base64.b64encode(value).decode()
        if isinstance(value, datetime):
            return value.timestamp()
        raise TypeError(f"not in a stream record: {type(value).__name__}")

    return json.loads(json.dumps(record, default=encode))  # type: ignore[no-any-return]


def _created(record: dict[str, Any]) -> datetime | None:
    """When a stream record was written (its ApproximateCreationDateTime), if the stream says."""
    created = record["dynamodb"].get("ApproximateCreationDateTime")
    if created is None:
        return None
    return (created if isinstance(created, datetime) else datetime.fromtimestamp(float(created), UTC)).astimezone(UTC)


def _arrival(record: dict[str, Any]) -> str:
    """When a stream record arrived, to the second, as Lambda's on-failure record gives it."""
    when = _created(record) or datetime.fromtimestamp(0, UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


class SqsPoller:
    """Receives up to `max_concurrency` batches of up to `batch_size` messages, invokes `handler` on them at
    once (one thread each), deletes only each batch's successes. `redelivery_seconds`, when set, shortens
    a failed message's visibility (locally, so a failure comes back in seconds rather than after the
    queue's full visibility timeout)."""

    def __init__(
        self,
        sqs: SQSClient,
        queue_url: str,
        queue_arn: str,
        handler: Handler,
        function_name: str = "consumer",
        batch_size: int = EVENTS_QUEUE_SOURCE.batch_size,
        redelivery_seconds: int | None = None,
        max_concurrency: int = EVENTS_QUEUE_SOURCE.max_concurrency,
    ) -> None:
        self._sqs = sqs
        self._url = queue_url
        self._arn = queue_arn
        self.handler = handler
        self._name = function_name
        self.batch_size = batch_size
        self._redelivery = redelivery_seconds
        self.max_concurrency = max_concurrency
        self._lanes = ThreadPoolExecutor(max_concurrency, thread_name_prefix=f"{function_name}-batch")

    def poll_once(self) -> int:
        """Receive up to `max_concurrency` batches (fewer when the queue runs dry), apply them at once;
        returns how many messages they held."""
        batches: list[list[MessageTypeDef]] = []
        while len(batches) < self.max_concurrency and (messages := self._receive()):
            batches.append(messages)
        return _run_all(self._lanes, [partial(self._apply, batch) for batch in batches])

    def close(self) -> None:
        """End the batches' threads (a poll under way finishes first)."""
        self._lanes.shutdown(wait=False, cancel_futures=True)

    def _receive(self) -> list[MessageTypeDef]:
        # Short polls only: a long poll would hold the local endpoint while it waits.
        return self._sqs.receive_message(
            QueueUrl=self._url,
            MaxNumberOfMessages=self.batch_size,
            WaitTimeSeconds=0,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])

    def _apply(self, messages: list[MessageTypeDef]) -> int:
        """One batch, as Lambda invokes the function with it: delete what succeeded."""
        failed, errored = _failed_ids(self.handler, {"Records": [self._record(m) for m in messages]}, self._name)
        if errored:
            failed = {m["MessageId"] for m in messages}
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            self._sqs.delete_message_batch(
                QueueUrl=self._url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
            )
        if self._redelivery is not None:
            for message in messages:
                if message["MessageId"] in failed:
                    self._sqs.change_message_visibility(
                        QueueUrl=self._url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=self._redelivery
                    )
        return len(messages)

    def _record(self, message: MessageTypeDef) -> dict[str, Any]:
        attributes = {key: str(value) for key, value in message.get("Attributes", {}).items()}
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": attributes,
            "messageAttributes": {
                name: {
                    "stringValue": value.get("StringValue"),
                    "dataType": value.get("DataType", "String"),
                    "stringListValues": [],
                    "binaryListValues": [],
                }
                for name, value in message.get("MessageAttributes", {}).items()
            },
            "md5OfBody": message.get("MD5OfBody", ""),
            "eventSource": "aws:sqs",
            "eventSourceARN": self._arn,
            "awsRegion": self._arn.split(":")[3] if self._arn.count(":") >= 3 else "us-east-1",
        }


class PollingLoop:
    """Runs `tick` on a daemon thread: again at once while it finds work. Idle, it waits `idle_seconds`,
    twice as long after each empty tick up to `max_idle_seconds` (as Lambda polls a shard about four times
    a second: https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html), unless `nudge` says that work
    may be waiting (a request served, an event published), which runs the next tick at once. Forty polls a
    second of an idle runtime's endpoint had cost a third of a core, for nothing."""

    def __init__(
        self, name: str, tick: Callable[[], int], idle_seconds: float, max_idle_seconds: float | None = None
    ) -> None:
        self.name = name
        self._tick = tick
        self._idle = idle_seconds
        self._max_idle = max(idle_seconds, max_idle_seconds or idle_seconds)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.healthy = True

    def start(self) -> PollingLoop:
        self._thread.start()
        return self

    def nudge(self) -> None:
        """Tick again now (or at once after the tick under way, if there is one)."""
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self._stop.is_set()

    def _run(self) -> None:
        idle = self._idle
        while not self._stop.is_set():
            self._wake.clear()  # before the tick: a nudge during it means another tick
            try:
                found = self._tick()
                self.healthy = True
            except Exception:
                logger.exception("poller tick failed", extra={"poller": self.name})
                self.healthy = False
                found = 0
            # Work, or a nudge during the wait, resets the wait; an empty tick doubles it, up to the cap.
            idle = self._idle if found or self._wake.wait(idle) else min(idle * 2, self._max_idle)
