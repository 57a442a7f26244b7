"""The two tables, each owned by one service (docs/ARCHITECTURE.md, D11), built from the definitions
the local runtime uses (shared.tables)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from shared.tables import JOURNEYS_TABLE, LOANS_TABLE, TableSpec


def _key(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


class DataTables(Construct):
    """On-demand tables with point-in-time recovery and TTL; protected from deletion unless `dev`."""

    def __init__(self, scope: Construct, construct_id: str, *, dev: bool, removal: RemovalPolicy) -> None:
        super().__init__(scope, construct_id)
        self.loans = self._table(LOANS_TABLE, dev, removal)
        self.journeys = self._table(JOURNEYS_TABLE, dev, removal)

    def _table(self, spec: TableSpec, dev: bool, removal: RemovalPolicy) -> dynamodb.Table:
        table = dynamodb.Table(
            self,
            spec.logical_id,
            partition_key=_key(spec.partition_key),
            sort_key=_key(spec.sort_key),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=spec.ttl_attribute,
            stream=dynamodb.StreamViewType.NEW_IMAGE if spec.stream_new_image else None,
            deletion_protection=not dev,
            removal_policy=removal,
        )
        for index in spec.indexes:
            table.add_global_secondary_index(
                index_name=index.name,
                partition_key=_key(index.partition_key),
                sort_key=_key(index.sort_key),
                projection_type=dynamodb.ProjectionType(index.projection),
            )
        return table
