"""Composition root of the audit: the scheduled run (Lambda) and the operator's (`saga audit`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Metrics

from functions.auditor.service import AuditLimits, JourneyAuditor, ScheduledAudit
from functions.auditor.settings import AuditorSettings
from functions.auditor.store import (
    AUDIT_LEASE_KEY,
    DynamoAuditState,
    DynamoChangeFinder,
    DynamoRecordRebuilder,
    DynamoTruthReader,
)
from shared import aws, topology
from shared.applier import EventApplier
from shared.clock import utc_now
from shared.control_store import DynamoControlRecordStore
from shared.entry_points import Handler
from shared.lease import CLOCK_SKEW_MARGIN, DynamoLease, Leased

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def build_auditor(
    loans: DynamoDBClient, journeys: DynamoDBClient, settings: AuditorSettings, clock: Callable[[], datetime] = utc_now
) -> tuple[JourneyAuditor, DynamoChangeFinder]:
    """The audit over two DynamoDB clients (the loans table's and the journeys table's; a rebuild's one
    transaction checks the loans table through the journeys table's client)."""
    records = DynamoControlRecordStore(journeys, settings.journeys_table_name)
    auditor = JourneyAuditor(
        DynamoTruthReader(loans, settings.loans_table_name),
        records,
        EventApplier(records, clock=clock),
        DynamoRecordRebuilder(journeys, settings.journeys_table_name, settings.loans_table_name),
        clock,
        settings.grace_seconds,
    )
    changes = DynamoChangeFinder(
        loans, settings.loans_table_name, journeys, settings.journeys_table_name, settings.changes_index_shards
    )
    return auditor, changes


def audit_limits(settings: AuditorSettings) -> AuditLimits:
    return AuditLimits(**settings.model_dump(include={field.name for field in fields(AuditLimits)}))


def build_scheduled(
    settings: AuditorSettings, metrics: Metrics, client: DynamoDBClient, clock: Callable[[], datetime] = utc_now
) -> ScheduledAudit:
    auditor, changes = build_auditor(client, client, settings, clock)
    state = DynamoAuditState(client, settings.journeys_table_name)
    return ScheduledAudit(auditor, changes, state, metrics, clock, audit_limits(settings))


def build_audit_lease(
    settings: AuditorSettings, metrics: Metrics, client: DynamoDBClient, clock: Callable[[], datetime] = utc_now
) -> Leased:
    """One scheduled audit at a time: the lease is an item of the journeys table, next to the state item."""
    store = DynamoLease(client, settings.journeys_table_name, AUDIT_LEASE_KEY)
    return Leased(
        store, "auditor", timedelta(seconds=topology.AUDITOR.timeout_seconds) + CLOCK_SKEW_MARGIN, metrics, clock
    )


def build(settings: AuditorSettings, metrics: Metrics) -> Handler:
    """The scheduled audit's Lambda handler: each run under the audit's lease (a run that finds it held does
    nothing), answering what it found."""
    client = aws.client("dynamodb", settings.region, settings.aws_endpoint_url)
    audit, lease = build_scheduled(settings, metrics, client), build_audit_lease(settings, metrics, client)

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        report = lease.run(audit.run)
        if report is None:
            return {"leaseHeld": True}
        return {"audited": report.audited, "outOfSync": len(report.outOfSync), "withinGrace": len(report.withinGrace)}

    return handle
