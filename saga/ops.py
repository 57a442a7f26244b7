"""What the ops CLI does, against the local runtime, another endpoint, or a deployed stack."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import urllib3

from functions.orchestrator.loans_client import SigV4Signer
from functions.relay.outbox_store import DynamoOutboxStore
from shared import aws, tables
from shared.control_store import DynamoControlRecordStore
from shared.events import UnreadableEvent, parse_event

LOCAL_AWS_ENDPOINT = "http://127.0.0.1:4566"
LOCAL_API_URL = "http://127.0.0.1:3000"
LOCAL_LOANS_API_URL = "http://127.0.0.1:3001"


@dataclass(frozen=True)
class Target:
    """Where a running system's parts are."""

    region: str
    endpoint_url: str | None
    loans_table: str
    journeys_table: str
    events_queue_url: str
    events_dlq_url: str
    relay_failures_url: str
    api_url: str
    loans_api_url: str
    signed: bool = False

    def client(self, service: str) -> Any:
        budget = aws.AwsCallBudget(connect_timeout=1.0, read_timeout=5.0, max_attempts=2)
        return aws.client(service, self.region, self.endpoint_url, budget)


def local_target(endpoint_url: str, region: str, api_url: str, loans_api_url: str) -> Target:
    sqs = aws.client(
        "sqs", region, endpoint_url, aws.AwsCallBudget(connect_timeout=1.0, read_timeout=3.0, max_attempts=1)
    )

    def url(spec: tables.QueueSpec) -> str:
        return str(sqs.get_queue_url(QueueName=spec.local_name)["QueueUrl"])

    return Target(
        region,
        endpoint_url,
        tables.LOANS_TABLE.local_name,
        tables.JOURNEYS_TABLE.local_name,
        url(tables.EVENTS_QUEUE),
        url(tables.EVENTS_DLQ),
        url(tables.RELAY_FAILURES_QUEUE),
        api_url,
        loans_api_url,
    )


def stack_target(stack_name: str, region: str) -> Target:
    stacks = aws.client("cloudformation", region, None).describe_stacks(StackName=stack_name)["Stacks"]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
    return Target(
        region,
        None,
        outputs[tables.OUTPUT_LOANS_TABLE],
        outputs[tables.OUTPUT_JOURNEYS_TABLE],
        outputs[tables.OUTPUT_EVENTS_QUEUE],
        outputs[tables.OUTPUT_EVENTS_DLQ],
        outputs[tables.OUTPUT_RELAY_FAILURES],
        outputs[tables.OUTPUT_ORCHESTRATOR_URL].rstrip("/"),
        outputs[tables.OUTPUT_LOANS_API_URL].rstrip("/"),
        signed=True,
    )


# -- status -------------------------------------------------------------------------------------


def status(target: Target) -> dict[str, Any]:
    outbox = DynamoOutboxStore(target.client("dynamodb"), target.loans_table)
    page = outbox.oldest_pending(1)
    oldest = page.oldest_occurred_at()
    age = 0.0 if oldest is None else max(0.0, (datetime.now(UTC) - oldest).total_seconds())
    sqs = target.client("sqs")

    def depth(url: str) -> dict[str, int]:
        attributes = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        return {
            "visible": int(attributes["ApproximateNumberOfMessages"]),
            "inFlight": int(attributes["ApproximateNumberOfMessagesNotVisible"]),
        }

    return {
        "outbox": {
            "pending": outbox.count_pending(),
            "oldestPendingAgeSeconds": round(age, 3),
            "unreadable": len(page.unreadable),
        },
        "queues": {
            "events": depth(target.events_queue_url),
            "eventsDlq": {"visible": depth(target.events_dlq_url)["visible"]},
            "relayFailures": {"visible": depth(target.relay_failures_url)["visible"]},
        },
    }


def status_table(report: dict[str, Any]) -> str:
    outbox, queues = report["outbox"], report["queues"]
    rows = [
        ("outbox pending", str(outbox["pending"])),
        ("oldest pending age (s)", f"{outbox['oldestPendingAgeSeconds']:.1f}"),
        ("events queue visible / in flight", f"{queues['events']['visible']} / {queues['events']['inFlight']}"),
        ("events DLQ", str(queues["eventsDlq"]["visible"])),
        ("relay failures", str(queues["relayFailures"]["visible"])),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name.ljust(width)}  {value}" for name, value in rows)


# -- DLQ ----------------------------------------------------------------------------------------


def _peek(target: Target, limit: int) -> list[dict[str, Any]]:
    """Messages in the DLQ, without consuming them (they become visible again at once)."""
    sqs = target.client("sqs")
    seen: dict[str, dict[str, Any]] = {}
    for _ in range(max(3, limit // 10 + 3)):
        batch = sqs.receive_message(
            QueueUrl=target.events_dlq_url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=0,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        new = [m for m in batch if m["MessageId"] not in seen]
        seen.update({m["MessageId"]: m for m in new})
        if not batch or len(seen) >= limit:
            break
    return list(seen.values())[:limit]


def diagnose(body: str, journeys: DynamoControlRecordStore) -> dict[str, Any]:
    """Why a DLQ message failed, as far as its body and the Control Records tell (the consumer's
    own reason, for an unreadable one: the same parser decides)."""
    try:
        event = parse_event(body)
    except UnreadableEvent as error:
        fields = _loose_fields(body)
        return {**fields, "reason": error.reason}
    reason = "unknown journey" if journeys.get(event.journeyId) is None else "failed when applied (see consumer logs)"
    return {"eventId": event.eventId, "type": event.type, "journeyId": event.journeyId, "reason": reason}


def _loose_fields(body: str) -> dict[str, Any]:
    """eventId, type and journeyId of a message that is not a readable event, where they are there."""
    try:
        values = json.loads(body)
    except ValueError:
        values = None
    values = values if isinstance(values, dict) else {}
    return {
        name: values.get(name) if isinstance(values.get(name), str) else None
        for name in ("eventId", "type", "journeyId")
    }


def dlq_list(target: Target, limit: int = 100) -> list[dict[str, Any]]:
    journeys = DynamoControlRecordStore(target.client("dynamodb"), target.journeys_table)
    return [
        {
            "messageId": m["MessageId"],
            "receiveCount": int(m.get("Attributes", {}).get("ApproximateReceiveCount", 0)),
            **diagnose(m["Body"], journeys),
        }
        for m in _peek(target, limit)
    ]


def dlq_redrive(target: Target, dry_run: bool, limit: int) -> list[dict[str, Any]]:
    """Move up to `limit` DLQ messages back to the events queue (a redrive of an applied event is
    a harmless no-op: the consumer is idempotent)."""
    sqs = target.client("sqs")
    moved: list[dict[str, Any]] = []
    while len(moved) < limit:
        batch = sqs.receive_message(
            QueueUrl=target.events_dlq_url,
            MaxNumberOfMessages=min(10, limit - len(moved)),
            VisibilityTimeout=0 if dry_run else 30,
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        batch = [m for m in batch if m["MessageId"] not in {x["messageId"] for x in moved}]
        if not batch:
            break
        for message in batch:
            if not dry_run:
                sqs.send_message(
                    QueueUrl=target.events_queue_url,
                    MessageBody=message["Body"],
                    MessageAttributes=message.get("MessageAttributes", {}),
                )
                sqs.delete_message(QueueUrl=target.events_dlq_url, ReceiptHandle=message["ReceiptHandle"])
            moved.append({"messageId": message["MessageId"], "body": message["Body"][:200]})
        if dry_run:
            break
    return moved


# -- HTTP helpers (journey show, demo) --------------------------------------------------------


class Http:
    def __init__(self, target: Target) -> None:
        self._pool = urllib3.PoolManager(timeout=urllib3.Timeout(connect=2.0, read=40.0), retries=False)
        self._signer = None
        if target.signed:
            import boto3

            self._signer = SigV4Signer(boto3.session.Session().get_credentials, target.region)

    def call(
        self, method: str, url: str, body: dict[str, Any] | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        if self._signer is not None:
            all_headers = self._signer.sign(method, url, data, all_headers)
        response = self._pool.request(method, url, body=data, headers=all_headers)
        try:
            return response.status, json.loads(response.data or b"null")
        except ValueError:
            return response.status, response.data.decode(errors="replace")


def journey_show(target: Target, journey_id: str) -> dict[str, Any]:
    http = Http(target)
    record_status, record = http.call("GET", f"{target.api_url}/journeys/{journey_id}")
    truth_status, truth = http.call("GET", f"{target.loans_api_url}/journeys/{journey_id}")
    comparison = compare(record if record_status == 200 else None, truth if truth_status == 200 else None)
    return {"controlRecord": record, "loansApi": truth, **comparison}


def compare(record: dict[str, Any] | None, truth: dict[str, Any] | None) -> dict[str, Any]:
    """Does the Control Record match loans-api's truth? Lists what differs."""
    if record is None:
        return {"agree": False, "differences": ["no Control Record"]}
    if truth is None:
        agree = record["lastAppliedSeq"] == 0
        return {"agree": agree, "differences": [] if agree else ["loans-api has no record of this journey"]}
    active_simulation = next((s["simulationId"] for s in truth["simulations"] if s["status"] == "ACTIVE"), None)
    active_acceptance = next((a["acceptanceId"] for a in truth["acceptances"] if a["status"] == "ACTIVE"), None)
    pairs = {
        "state": (record["currentState"], truth["state"]),
        "seq": (record["lastAppliedSeq"], truth["seq"]),
        "simulationId": ((record.get("simulation") or {}).get("simulationId"), active_simulation),
        "acceptanceId": ((record.get("acceptance") or {}).get("acceptanceId"), active_acceptance),
        "disbursementId": (
            (record.get("disbursement") or {}).get("disbursementId"),
            (truth.get("disbursement") or {}).get("disbursementId"),
        ),
    }
    differences = [
        f"{name}: record {mine!r} != loans-api {theirs!r}" for name, (mine, theirs) in pairs.items() if mine != theirs
    ]
    return {"agree": not differences, "differences": differences}


# -- demo -------------------------------------------------------------------------------------


def demo(target: Target, say: Callable[[str], None]) -> dict[str, Any]:
    """A scripted agent: walks a journey using only the links in availableActions."""
    http = Http(target)
    status_code, record = http.call("POST", f"{target.api_url}/journeys", {"customerId": "demo-customer"})
    say(f"POST /journeys -> {status_code}: journey {record['journeyId']} is {record['currentState']}")
    plan = [
        ("simulate", {"amount": 10000, "termMonths": 36}),
        ("simulate", {"amount": 8000, "termMonths": 24}),
        ("accept", None),
        ("disburse", None),
    ]
    for name, body in plan:
        link = next((a for a in record["availableActions"] if a["name"] == name), None)
        if link is None:
            say(f"'{name}' is not offered now; available: {[a['name'] for a in record['availableActions']]}")
            break
        status_code, record = http.call(link["method"], target.api_url + link["href"], body)
        detail = ""
        if record.get("simulation"):
            s = record["simulation"]
            detail = f" ({s['amount']} over {s['termMonths']} months at {s['annualRate']}: {s['monthlyPayment']}/month)"
        say(f"{link['method']} {link['href']} -> {status_code}: {record['currentState']} v{record['version']}{detail}")
    say(f"next: {[a['name'] for a in record['availableActions']] or 'nothing (terminal)'}")
    return dict(record)
