"""Scheduled runs that must not overlap (the sweeper, the audit) hold a lease in the table they own
(shared/lease.py), on a moto server: of two overlapping runs only one works; a lease left by a run that
died is taken over once it expires; and the audit's state item is saved only over the version it read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from functions.auditor import bootstrap as auditor_bootstrap
from functions.auditor.service import AuditState, AuditStateConflict
from functions.auditor.store import DynamoAuditState
from functions.relay import bootstrap as relay_bootstrap
from functions.relay.settings import SWEEPER_TIMEOUT_SECONDS
from functions.relay.sweeper import SweepReport
from shared import metric_names as names
from shared import outbox
from shared.keys import SWEEPER_LEASE_KEY
from shared.lease import CLOCK_SKEW_MARGIN, DynamoLease
from tests.integration.test_backstop import received, stale_event
from tests.support import quiet_metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient


def test_of_two_overlapping_sweeps_only_one_sweeps(dynamodb: DynamoDBClient, sqs: SQSClient, resources, relay_settings):
    # Given stale PENDING events, and two sweeper runs (as two Lambda instances would be) of which the
    # second starts while the first is still sweeping
    events = [stale_event(f"j-{n}", 1) for n in range(3)]
    for event in events:
        dynamodb.put_item(TableName=resources.loans_table, Item=outbox.outbox_item(event))
    metrics = quiet_metrics("sweeper")
    metrics.clear_metrics()
    first, second = (relay_bootstrap.build_sweeper_lease(relay_settings, metrics) for _ in range(2))
    sweeper = relay_bootstrap.build_sweeper(relay_settings, metrics)
    overlapping: list[SweepReport | None] = []

    def sweep_while_another_starts() -> SweepReport:
        overlapping.append(second.run(sweeper.sweep))
        return sweeper.sweep()

    # When both run
    report = first.run(sweep_while_another_starts)
    # Then the second did nothing and said so quietly; the first republished every event, once
    assert overlapping == [None]
    assert metrics.metric_set[names.LEASE_HELD]["Value"] == [1]
    assert report is not None
    assert report.republished == 3
    assert len(received(sqs, resources.events_queue_url)) == 3
    # And once the first is done, the next scheduled run takes the lease at once
    assert second.run(sweeper.sweep) is not None


def test_a_lease_left_by_a_run_that_died_is_taken_over_once_it_expires(dynamodb: DynamoDBClient, resources):
    # Given the sweeper's lease taken by a run that then died (it never released it)
    lease = DynamoLease(dynamodb, resources.loans_table, SWEEPER_LEASE_KEY)
    start = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    expires = start + timedelta(seconds=SWEEPER_TIMEOUT_SECONDS) + CLOCK_SKEW_MARGIN
    assert lease.take("died", start, expires)
    # When another run tries before it expires, Then it is refused; at the expiry it takes it
    assert not lease.take("next", expires - timedelta(milliseconds=1), expires + timedelta(minutes=1))
    assert lease.take("next", expires, expires + timedelta(minutes=1))
    # And the dead run's late release (had it come back) does not free the new holder's lease
    lease.release("died", expires)
    assert not lease.take("third", expires, expires + timedelta(minutes=1))
    # And the lease item is no outbox item: the stream filter and the relay pass it by
    item = dynamodb.get_item(TableName=resources.loans_table, Key={k: {"S": v} for k, v in SWEEPER_LEASE_KEY.items()})
    assert not outbox.is_outbox_item(item["Item"])


def test_of_two_overlapping_audits_only_one_audits(dynamodb: DynamoDBClient, auditor_settings):
    metrics = quiet_metrics("auditor")
    metrics.clear_metrics()
    scheduled = auditor_bootstrap.build_scheduled(auditor_settings, metrics, dynamodb)
    first, second = (auditor_bootstrap.build_audit_lease(auditor_settings, metrics, dynamodb) for _ in range(2))
    inner: list[object] = []

    def audit_while_another_starts() -> object:
        inner.append(second.run(scheduled.run))
        return scheduled.run()

    assert first.run(audit_while_another_starts) is not None
    assert inner == [None]
    assert metrics.metric_set[names.LEASE_HELD]["Value"] == [1]


def test_the_audit_state_is_saved_only_over_the_version_it_was_read_at(dynamodb: DynamoDBClient, resources):
    # Given two runs that read the same state
    state = DynamoAuditState(dynamodb, resources.journeys_table)
    read = state.get()
    now = datetime.now(UTC)
    # When the first saves, and then the second
    state.put(AuditState(now, ("j-1",)), read=read)
    with pytest.raises(AuditStateConflict):
        state.put(AuditState(now - timedelta(minutes=5), ()), read=read)
    # Then the first's state stands, and the next run saves over it
    saved = state.get()
    assert (saved.checked_until, saved.suspects, saved.version) == (now, ("j-1",), 1)
    state.put(AuditState(now + timedelta(minutes=5), ()), read=saved)
    assert state.get().version == 2


def test_a_state_item_saved_before_versions_were_kept_is_saved_over(dynamodb: DynamoDBClient, resources):
    # Given the state item as the audit wrote it before it kept a version
    dynamodb.put_item(TableName=resources.journeys_table,
                      Item={"pk": {"S": "AUDIT"}, "sk": {"S": "STATE"}, "suspects": {"L": []}})  # fmt: skip
    state = DynamoAuditState(dynamodb, resources.journeys_table)
    read = state.get()
    assert read.version == 0
    # When a run saves, Then it is saved (as version 1)
    state.put(AuditState(datetime.now(UTC), ()), read=read)
    assert state.get().version == 1


@pytest.mark.parametrize("function", ["sweeper", "auditor"])
def test_a_scheduled_functions_handler_runs_under_its_lease_and_says_when_another_run_holds_it(
    function: str, dynamodb: DynamoDBClient, resources, relay_settings, auditor_settings
):
    # Given the scheduled function's Lambda handler as its composition root builds it, and its lease held
    # by another run
    from functions.auditor.store import AUDIT_LEASE_KEY

    metrics = quiet_metrics(function)
    if function == "sweeper":
        handler = relay_bootstrap.build_sweep_handler(relay_settings, metrics)
        lease = DynamoLease(dynamodb, resources.loans_table, SWEEPER_LEASE_KEY)
    else:
        handler = auditor_bootstrap.build(auditor_settings, metrics)
        lease = DynamoLease(dynamodb, resources.journeys_table, AUDIT_LEASE_KEY)
    now = datetime.now(UTC)
    assert lease.take("another-run", now, now + timedelta(minutes=10))
    # When it is invoked, Then it does nothing and says so
    assert handler({}, None) == {"leaseHeld": True}
    # And once the other run released the lease, it runs and answers its report
    lease.release("another-run", datetime.now(UTC))
    report = handler({}, None)
    expected = {"republished", "failed"} if function == "sweeper" else {"audited", "outOfSync", "withinGrace"}
    assert "leaseHeld" not in report, report
    assert expected <= set(report), report
