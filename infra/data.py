"""The two tables, each owned by one service (docs/ARCHITECTURE.md, D11), built from the definitions
the local runtime uses (shared.tables)."""

from __future__ import annotations

from dataclasses import replace

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from shared.tables import JOURNEYS_TABLE, LOANS_TABLE, TableSpec


def _key(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


class DataTables(Construct):
    """On-demand tables with point-in-time recovery and TTL, removed as `removal` says (the stack keeps a
    production stack's on delete and replacement, and not after a failed creation).

    No deletion protection in the template: CloudFormation could not delete a protected table when a
    first deploy rolls back, and a retained table survives `cdk destroy` anyway. An operator protects
    them from a direct DeleteTable once the stack is up (docs/DEPLOY.md, "Deploy")."""

    def __init__(
        self, scope: Construct, construct_id: str, *, removal: RemovalPolicy, changes_index: bool = True
    ) -> None:
        super().__init__(scope, construct_id)
        # Without the indexes whose key changed (the journey-changes index, sharded; the customer index, sorted
        # by creation time and so renamed) only for the first of the two deploys that upgrade a stack deployed
        # before (docs/DEPLOY.md, "Upgrade"): a GSI's key cannot change in place, and CloudFormation deletes or
        # creates one index per table update.
        self.loans = self._table(LOANS_TABLE if changes_index else replace(LOANS_TABLE, indexes=()), removal)
        self.journeys = self._table(JOURNEYS_TABLE if changes_index else replace(JOURNEYS_TABLE, indexes=()), removal)

    def _table(self, spec: TableSpec, removal: RemovalPolicy) -> dynamodb.Table:
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
