"""The peer: what a team typically writes first. Powertools' `@idempotent_function` (DynamoDB
persistence layer: an INPROGRESS record, then COMPLETED) around a handler that reads the journey's
state, writes the domain items with PutItem/UpdateItem, then publishes the event to SNS directly
(the dual write: a crash between the write and the publish loses the event). Same routes, pricing and
business rules as loans-api (it reuses the pure domain), so the same driver runs both."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

from functions.loans_api import domain
from functions.loans_api.domain import Change, Ledger
from shared import aws, problems
from shared.dynamo import from_item, to_item
from shared.entry_points import Handler
from shared.events import LoanEvent
from shared.guards import guarded
from shared.resolver import Resolver

PEER_TABLE = "peer-loans"
PEER_IDEMPOTENCY_TABLE = "peer-idempotency"


def create_tables(endpoint_url: str, region: str = "us-east-1") -> None:
    dynamodb = aws.client("dynamodb", region, endpoint_url)
    dynamodb.create_table(
        TableName=PEER_TABLE, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                              {"AttributeName": "sk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    )  # fmt: skip
    dynamodb.create_table(
        TableName=PEER_IDEMPOTENCY_TABLE, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
    )  # fmt: skip


@dataclass(frozen=True)
class EntityWrite:
    """One of the peer's domain items: created with `status`, or an existing one's status changed."""

    kind: str
    entity_id: str
    status: str
    attributes: dict[str, Any] = field(default_factory=dict)
    create: bool = True


def entity_writes(change: Change) -> list[EntityWrite]:
    """The items a first design writes for a change: one item per simulation, acceptance and
    disbursement, and a status update of each one the change supersedes or cancels (what loans-api
    wrote before its events became the history, D1)."""
    before, after = change.ledger_before.snapshot, change.event.snapshot
    writes: list[EntityWrite] = []
    if change.event.type == "SimulationCreated" and after.simulation is not None:
        new = after.simulation
        writes.append(EntityWrite("SIMULATION", new.simulationId, domain.ACTIVE, new.model_dump(mode="json")))
        if before.simulation is not None:
            writes.append(EntityWrite("SIMULATION", before.simulation.simulationId, domain.SUPERSEDED, create=False))
        if before.acceptance is not None:
            writes.append(EntityWrite("ACCEPTANCE", before.acceptance.acceptanceId, domain.CANCELLED, create=False))
    elif change.event.type == "AcceptanceCreated" and after.acceptance is not None:
        accepted = after.acceptance
        writes.append(EntityWrite("ACCEPTANCE", accepted.acceptanceId, domain.ACTIVE, accepted.model_dump(mode="json")))
    elif change.event.type == "LoanDisbursed" and after.disbursement is not None:
        paid = after.disbursement
        body = {name: change.response[name] for name in ("disbursementId", "journeyId", "acceptanceId", "amount")}
        writes.append(EntityWrite("DISBURSEMENT", paid.disbursementId, "DISBURSED", body))
    return writes


def build(endpoint_url: str, topic_arn: str, region: str = "us-east-1") -> Handler:
    dynamodb = aws.client("dynamodb", region, endpoint_url)
    sns = aws.client("sns", region, endpoint_url)
    persistence = DynamoDBPersistenceLayer(table_name=PEER_IDEMPOTENCY_TABLE, boto3_client=dynamodb)
    config = IdempotencyConfig(event_key_jmespath="key", raise_on_no_idempotency_key=True)

    def read_state(journey_id: str) -> Ledger:
        item = dynamodb.get_item(TableName=PEER_TABLE, Key=to_item({"pk": journey_id, "sk": "STATE"}),
                                 ConsistentRead=True).get("Item")  # fmt: skip
        if item is None:
            return Ledger(journey_id)
        values = from_item(item)
        return Ledger(journey_id, LoanEvent.model_validate(values["event"]))

    def persist(change: Change) -> dict[str, Any]:
        journey = change.event.journeyId
        for write in entity_writes(change):
            key = {"pk": journey, "sk": f"{write.kind}#{write.entity_id}"}
            if write.create:
                dynamodb.put_item(
                    TableName=PEER_TABLE, Item=to_item({**key, **write.attributes, "status": write.status})
                )
            else:
                dynamodb.update_item(TableName=PEER_TABLE, Key=to_item(key), UpdateExpression="SET #s = :s",
                                     ExpressionAttributeNames={"#s": "status"},
                                     ExpressionAttributeValues=to_item({":s": write.status}))  # fmt: skip
        dynamodb.put_item(
            TableName=PEER_TABLE,
            Item=to_item({"pk": journey, "sk": "STATE", "event": change.event.model_dump(mode="json")}),
        )
        sns.publish(TopicArn=topic_arn, Message=change.event.model_dump_json())  # the dual write
        return {"status": change.status_code, "body": change.response}

    @idempotent_function(data_keyword_argument="command", persistence_store=persistence, config=config)
    def execute(command: dict[str, Any]) -> dict[str, Any]:
        now = datetime.now(UTC)
        ledger = read_state(command["journeyId"])
        if command["op"] == "simulate":
            change = domain.create_simulation(ledger, Decimal(str(command["amount"])), command["termMonths"], now)
        elif command["op"] == "accept":
            change = domain.create_acceptance(ledger, command["simulationId"], now)
        else:
            change = domain.create_disbursement(ledger, command["acceptanceId"], now)
        return persist(change)

    app = Resolver()
    problems.install(app)

    def run(op: str) -> Response[str]:
        event = app.current_event
        command = {"op": op, "key": event.headers.get("Idempotency-Key"), **(event.json_body or {})}
        result = execute(command=command)
        return Response(status_code=result["status"], content_type="application/json", body=json.dumps(result["body"]))

    app.post("/simulations")(lambda: run("simulate"))
    app.post("/acceptances")(lambda: run("accept"))
    app.post("/disbursements")(lambda: run("disburse"))
    return guarded(app)
