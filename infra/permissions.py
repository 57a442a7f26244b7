"""What each function's code calls on DynamoDB: exact actions on exact resources (the table, or one
named index), nothing `grant_read_write_data` would add besides. tests/infra/test_entry_points.py
records the calls each function makes when invoked as deployed and holds these lists to them."""

from __future__ import annotations

from dataclasses import dataclass, field

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam

from shared.tables import CHANGES_INDEX, CUSTOMER_INDEX


@dataclass(frozen=True)
class TableCalls:
    """Actions on the table's items, and per index the actions on that index."""

    on_table: tuple[str, ...]
    on_indexes: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def statements(self, table: dynamodb.ITable) -> list[iam.PolicyStatement]:
        found = [iam.PolicyStatement(actions=list(self.on_table), resources=[table.table_arn])]
        found += [
            iam.PolicyStatement(actions=list(actions), resources=[f"{table.table_arn}/index/{index}"])
            for index, actions in self.on_indexes.items()
        ]
        return found


# A TransactWriteItems needs the action of each item it holds: loans-api's three are Puts (PutItem).
LOANS_API = TableCalls(on_table=("dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem"))
# listJourneys queries the keys-only customer index and reads the records it found whole (BatchGetItem).
ORCHESTRATOR = TableCalls(
    on_table=("dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:PutItem"),
    on_indexes={CUSTOMER_INDEX: ("dynamodb:Query",)},
)
# The consumer reads its batch's record heads (BatchGetItem), the whole record of an event that applies
# (GetItem, as the applier re-reads after a lost compare-and-swap), and writes it (PutItem).
CONSUMER = TableCalls(on_table=("dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:PutItem"))
# The relay reads its batch's event items by key (BatchGetItem: it publishes and marks what the table holds,
# never what its invocation says) and marks what it published: BatchWriteItem puts of the items read (D6).
RELAY = TableCalls(on_table=("dynamodb:BatchGetItem", "dynamodb:BatchWriteItem"))
# The sweeper walks the keys-only changes index from its cursors and reads the items it found there whole
# (BatchGetItem, its cursors too); it marks what it republished (BatchWriteItem, as the relay). Its cursors
# and its lease (shared/lease.py) are conditional PutItems on the same table.
SWEEPER = TableCalls(
    on_table=("dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:PutItem"),
    on_indexes={CHANGES_INDEX: ("dynamodb:Query",)},
)
# The scheduled audit reads ledgers and event items, finds what changed in the keys-only changes index,
# reads Control Records, sweeps a page of them each run (Scan: a record loans-api has no change of is in no
# index of loans-api's), and keeps its state item and its lease in the journeys table (conditional PutItems).
# It never writes to loans-api, and never rebuilds (so no ConditionCheckItem on the loans table).
AUDITOR_LOANS = TableCalls(
    on_table=("dynamodb:BatchGetItem", "dynamodb:GetItem"), on_indexes={CHANGES_INDEX: ("dynamodb:Query",)}
)
AUDITOR_JOURNEYS = TableCalls(
    on_table=("dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Scan")
)
