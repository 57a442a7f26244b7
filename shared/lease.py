"""One run at a time of a scheduled job (the sweeper, the audit), without reserved concurrency: Lambda
lets an account reserve concurrency only while 100 stay unreserved, so a reservation fails the deploy
in any account whose quota is under 101 (docs/ARCHITECTURE.md, D12).

The lease is one item in the table the job owns, taken by a conditional write: it is taken when it is
free, expired, or already this run's. It expires a little after the job's function timeout, so a run
that crashed (or timed out) without releasing it holds it no longer than that. A run that finds it held
exits quietly: it logs, counts `LeaseHeld`, and does no work (the holder does it)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol, TypeVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import ClientError

from shared import metric_names as names
from shared.dynamo import error_code, to_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

logger = Logger(child=True)

T = TypeVar("T")

# Kept on top of the function timeout: the hosts' clocks may disagree by this much.
CLOCK_SKEW_MARGIN = timedelta(seconds=5)


@dataclass(frozen=True)
class Lease:
    holder: str
    until: datetime


def may_take(current: Lease | None, holder: str, now: datetime) -> bool:
    """Whether `holder` may take the lease at `now`: nobody holds it, it has expired, or it is the
    holder's own. Pure; DynamoLease's condition expression says the same to DynamoDB."""
    return current is None or current.until <= now or current.holder == holder


class LeaseStore(Protocol):
    def take(self, holder: str, now: datetime, until: datetime) -> bool:
        """Take the lease until `until` when `may_take`; False when another run holds it."""
        ...

    def release(self, holder: str, now: datetime) -> None:
        """Free the lease at `now` if `holder` still holds it (otherwise leave it be)."""
        ...


class DynamoLease:
    """The lease as one item (`key`) of a table: PutItem under the condition `may_take` states, for
    taking it and for releasing it (the release writes an expiry of now)."""

    def __init__(self, client: DynamoDBClient, table_name: str, key: dict[str, str]) -> None:
        self._client = client
        self._table = table_name
        self._key = key

    def take(self, holder: str, now: datetime, until: datetime) -> bool:
        return self._put(
            holder,
            until,
            "attribute_not_exists(pk) OR leaseUntil <= :now OR holder = :holder",
            {":now": _millis(now), ":holder": holder},
        )

    def release(self, holder: str, now: datetime) -> None:
        if not self._put(holder, now, "holder = :holder", {":holder": holder}):
            logger.warning("the lease was taken over before this run released it", extra={"holder": holder})

    def _put(self, holder: str, until: datetime, condition: str, values: dict[str, object]) -> bool:
        try:
            self._client.put_item(
                TableName=self._table,
                Item=to_item({**self._key, "holder": holder, "leaseUntil": _millis(until)}),
                ConditionExpression=condition,
                ExpressionAttributeValues=to_item(values),
            )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True


class Leased:
    """Runs a job under the lease: at most one run at a time, whoever invokes it how often."""

    def __init__(
        self,
        store: LeaseStore,
        job: str,
        duration: timedelta,
        metrics: Metrics,
        clock: Callable[[], datetime],
        holder: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self._store = store
        self._job = job
        self._duration = duration
        self._metrics = metrics
        self._clock = clock
        self._holder = holder

    def run(self, work: Callable[[], T]) -> T | None:
        """`work()` while holding the lease; None (and `LeaseHeld` counted) when another run holds it."""
        holder, now = self._holder(), self._clock()
        if not self._store.take(holder, now, now + self._duration):
            logger.info("another run holds the lease: this one does nothing", extra={"job": self._job})
            self._metrics.add_metric(name=names.LEASE_HELD, unit=MetricUnit.Count, value=1)
            return None
        try:
            return work()
        finally:
            self._release(holder)

    def _release(self, holder: str) -> None:
        """Free the lease for the next run. Best effort: should the write fail, the lease still expires
        by itself (the next run or two find it held and do nothing), which is no reason to fail this run."""
        try:
            self._store.release(holder, self._clock())
        except Exception:
            logger.warning(
                "the lease could not be released: it expires by itself", extra={"job": self._job}, exc_info=True
            )


def _millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)
