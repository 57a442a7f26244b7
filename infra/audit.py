"""The scheduled audit: a function of its own that compares the Control Records of the journeys
changed since its last run with loans-api's ledgers, every few minutes. It reads the loans table
(ledgers, event items, the keys-only changes index) and keeps one small state item in the journeys
table; it repairs nothing (an operator runs `saga audit --repair`). Its permissions are the calls it
makes (infra/permissions.py), granted by the stack."""

from __future__ import annotations

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.event_sources import run_every
from infra.functions import SCHEDULED
from shared import metric_names as names

AUDIT_EVERY = SCHEDULED[names.AUDITOR]


class JourneyAudit(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.Function,
        loans_table: dynamodb.ITable,
        journeys_table: dynamodb.ITable,
    ) -> None:
        super().__init__(scope, construct_id)
        function.add_environment("LOANS_TABLE_NAME", loans_table.table_name)
        function.add_environment("JOURNEYS_TABLE_NAME", journeys_table.table_name)
        purpose = "Compare the Control Records of recently changed journeys with loans-api's ledgers"
        self.schedule = run_every(self, "AuditSchedule", AUDIT_EVERY, function, purpose)
