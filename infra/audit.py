"""The scheduled audit: a function of its own that compares the Control Records of the journeys
changed since its last run with loans-api's ledgers, every few minutes. It reads the loans table
(ledgers, event items, the keys-only changes index) and keeps one small state item in the journeys
table; it repairs nothing (an operator runs `saga audit --repair`). Its permissions are the calls it
makes (infra/permissions.py), granted by the stack."""

from __future__ import annotations

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from functions.auditor.settings import AuditorSettings
from infra.event_sources import run_every
from infra.functions import configure, schedule
from shared import topology


class JourneyAudit(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.Function,
        loans_table: dynamodb.ITable,
        journeys_table: dynamodb.ITable,
        changes_index_shards: int,
    ) -> None:
        super().__init__(scope, construct_id)
        configure(
            function,
            AuditorSettings(
                loans_table_name=loans_table.table_name,
                journeys_table_name=journeys_table.table_name,
                changes_index_shards=changes_index_shards,
            ),
        )
        purpose = "Compare the Control Records of recently changed journeys with loans-api's ledgers"
        self.schedule = run_every(self, "AuditSchedule", schedule(topology.AUDITOR), function, purpose)
