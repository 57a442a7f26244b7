"""What the ops CLI does, against the local runtime, another endpoint, or a deployed stack."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import urllib3

from functions.auditor import bootstrap as auditor_bootstrap
from functions.auditor.audit import JourneyView, differences
from functions.auditor.settings import AuditorSettings
from functions.orchestrator.loans_client import SigV4Signer
from functions.relay.outbox_store import DynamoOutboxStore
from shared import aws, event_ids, tables
from shared.control_store import DynamoControlRecordStore
from shared.dynamo import from_item, to_item
from shared.events import UnreadableEvent, parse_event
from shared.outbox import EVENT_PREFIX, journey_pk

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

LOCAL_AWS_ENDPOINT = "http://127.0.0.1:4566"
LOCAL_API_URL = "http://127.0.0.1:3000"
LOCAL_LOANS_API_URL = "http://127.0.0.1:3001"
# `saga audit --since` reads at most this many changes (the scheduled audit pages through more).
AUDIT_SINCE_LIMIT = 100_000
# Every AWS call of an ops command: an operator waits for it.
OPS_BUDGET = aws.AwsCallBudget(connect_timeout=1.0, read_timeout=5.0, max_attempts=2)


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
    pending_shards: int = tables.PENDING_SHARDS

    def dynamodb(self) -> DynamoDBClient:
        return aws.client("dynamodb", self.region, self.endpoint_url, OPS_BUDGET)

    def sqs(self) -> SQSClient:
        return aws.client("sqs", self.region, self.endpoint_url, OPS_BUDGET)


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
        # A stack older than this output was deployed with the default.
        pending_shards=int(outputs.get(tables.OUTPUT_PENDING_SHARDS, tables.PENDING_SHARDS)),
    )


# -- status -------------------------------------------------------------------------------------


def status(target: Target) -> dict[str, Any]:
    outbox = DynamoOutboxStore(target.dynamodb(), target.loans_table, target.pending_shards)
    page = outbox.oldest_pending(1)
    oldest = page.oldest_occurred_at()
    age = 0.0 if oldest is None else max(0.0, (datetime.now(UTC) - oldest).total_seconds())
    sqs = target.sqs()

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


def status_problems(report: dict[str, Any], max_outbox_age_seconds: float) -> list[dict[str, str]]:
    """What `saga status --check` fails on, each with the next command to run."""
    outbox, queues = report["outbox"], report["queues"]
    problems = []
    if queues["eventsDlq"]["visible"]:
        problems.append({
            "check": "dlq",
            "detail": f"{queues['eventsDlq']['visible']} message(s) in the events DLQ: events road 2 could not apply",
            "next": "saga dlq list   (then fix the cause and `saga dlq redrive`)",
        })  # fmt: skip
    if outbox["oldestPendingAgeSeconds"] > max_outbox_age_seconds:
        problems.append({
            "check": "outbox-age",
            "detail": f"the oldest PENDING outbox event is {outbox['oldestPendingAgeSeconds']:.0f} s old "
            f"(threshold {max_outbox_age_seconds:.0f} s): the relay and the sweeper are not publishing it",
            "next": "check the relay's and the sweeper's logs; `saga audit` lists the journeys it leaves behind",
        })  # fmt: skip
    if outbox.get("unreadable"):
        problems.append({
            "check": "unreadable-outbox-items",
            "detail": f"{outbox['unreadable']} PENDING outbox item(s) the relay cannot read (skipped, kept)",
            "next": "search the sweeper's logs for 'unreadable outbox item skipped'",
        })  # fmt: skip
    if queues["relayFailures"]["visible"]:
        problems.append({
            "check": "relay-failures",
            "detail": f"{queues['relayFailures']['visible']} stream batch(es) exhausted the relay's retries",
            "next": "saga status   (the sweeper republishes their PENDING events; read the relay's logs for why)",
        })  # fmt: skip
    return problems


def status_table(report: dict[str, Any]) -> str:
    outbox, queues = report["outbox"], report["queues"]
    rows = [
        ("outbox pending", str(outbox["pending"])),
        ("oldest pending age (s)", f"{outbox['oldestPendingAgeSeconds']:.1f}"),
        ("unreadable outbox items", str(outbox.get("unreadable", 0))),
        ("events queue visible / in flight", f"{queues['events']['visible']} / {queues['events']['inFlight']}"),
        ("events DLQ", str(queues["eventsDlq"]["visible"])),
        ("relay failures", str(queues["relayFailures"]["visible"])),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"{name.ljust(width)}  {value}" for name, value in rows]
    if "problems" in report:
        lines.append("")
        lines += [f"FAIL {p['check']}: {p['detail']}\n     next: {p['next']}" for p in report["problems"]]
        lines += [] if report["problems"] else ["ok: nothing in the DLQ or relay failures, the outbox is moving"]
    return "\n".join(lines)


# -- DLQ ----------------------------------------------------------------------------------------


def _peek(target: Target, limit: int) -> list[MessageTypeDef]:
    """Messages in the DLQ, without consuming them (they become visible again at once)."""
    sqs = target.sqs()
    seen: dict[str, MessageTypeDef] = {}
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
    journeys = DynamoControlRecordStore(target.dynamodb(), target.journeys_table)
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
    sqs = target.sqs()
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
    """The Control Record next to loans-api's truth, whether they agree, and the journey's events in
    order. `found` is False when neither side knows the journey."""
    http = Http(target)
    record_status, record = http.call("GET", f"{target.api_url}/journeys/{journey_id}")
    truth_status, truth = http.call("GET", f"{target.loans_api_url}/journeys/{journey_id}")
    for status_code, body, side in ((record_status, record, "orchestrator"), (truth_status, truth, "loans-api")):
        if status_code not in (200, 404):
            raise Unreachable(f"{side} answered {status_code} for journey {journey_id}: {str(body)[:300]}")
    record = record if record_status == 200 else None
    truth = truth if truth_status == 200 else None
    return {
        "journeyId": journey_id,
        "found": record is not None or truth is not None,
        "controlRecord": record,
        "loansApi": truth,
        **compare(record, truth),
        "history": journey_history(target, journey_id, record),
    }


class Unreachable(Exception):
    """A part of the system did not answer as it should (exit code 2)."""


def journey_history(target: Target, journey_id: str, record: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The journey's events in order, from loans-api's outbox items: when each was committed, when
    road 2's relay published it, and whether the Control Record has applied it (by seq: the applier
    is convergent, so every event at or below lastAppliedSeq is in the record, whichever road brought
    it). The record's trail (`appliedBy`, its newest changes) says which road applied each event, when,
    and the version it made; the other road's delivery of that event was (or will be) a no-op."""
    dynamodb = target.dynamodb()
    items = dynamodb.query(
        TableName=target.loans_table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :events)",
        ExpressionAttributeValues=to_item({":pk": journey_pk(journey_id), ":events": EVENT_PREFIX}),
        ConsistentRead=True,
    ).get("Items", [])
    applied_seq = int(record["lastAppliedSeq"]) if record else 0
    trail = {int(entry["seq"]): entry for entry in (record or {}).get("appliedBy") or []}
    history = []
    for values in (from_item(item) for item in items):
        entry = {
            "seq": values.get("seq"),
            "eventId": values.get("eventId"),
            "type": values.get("type"),
            "committedAt": values.get("occurredAt"),
            "outbox": values.get("status"),
            "road2PublishedAt": values.get("publishedAt"),
            "inRecord": isinstance(values.get("seq"), int) and values["seq"] <= applied_seq,
            "appliedBy": None,
            "appliedAt": None,
            "recordVersionAfter": None,
        }
        application = trail.get(values["seq"]) if isinstance(values.get("seq"), int) else None
        if application is not None:
            entry.update(
                appliedBy=application["road"], appliedAt=application["at"], recordVersionAfter=application["version"]
            )
        elif record and values.get("eventId") == record.get("lastAppliedEventId"):
            entry["recordVersionAfter"] = record.get("version")
        history.append(entry)
    return history


def journey_text(result: dict[str, Any]) -> str:
    """`saga journey show` for a human: where the journey stands and how it got there."""
    record, truth = result["controlRecord"], result["loansApi"]
    if not result["found"]:
        return f"journey {result['journeyId']}: unknown (neither the orchestrator nor loans-api knows it)"
    lines = [f"journey {result['journeyId']}"]
    if record:
        lines.append(
            f"  Control Record  {record['currentState']} v{record['version']}, "
            f"applied up to seq {record['lastAppliedSeq']}, updated {record.get('updatedAt')}"
        )
    else:
        lines.append("  Control Record  none")
    lines.append(f"  loans-api       {truth['state']} at seq {truth['seq']}" if truth else "  loans-api       none")
    if result["history"]:
        lines.append("  events")
    for event in result["history"]:
        published = event["road2PublishedAt"] or "not yet"
        if event["appliedBy"]:
            applied = f"applied by {event['appliedBy']} at {event['appliedAt']} -> v{event['recordVersionAfter']}"
            if event["appliedBy"] != "outbox":
                applied += " (road 2's delivery of it is a no-op)"
        elif event["inRecord"]:
            applied = "in the record (through a later event's snapshot, or before the trail)"
        else:
            applied = "NOT in the record"
        lines.append(
            f"    {event['seq']:>3}  {event['type']:<20} committed {event['committedAt']}  "
            f"road 2 published {published}  {applied}"
        )
    lines.append("agree: yes" if result["agree"] else "agree: NO\n  " + "\n  ".join(result["differences"]))
    return "\n".join(lines)


def compare(record: dict[str, Any] | None, truth: dict[str, Any] | None) -> dict[str, Any]:
    """Does the Control Record (the orchestrator's JSON) match loans-api's truth (its JSON)? Lists
    what differs, on the same fields as the audit."""
    if record is None:
        return {"agree": truth is None, "differences": [] if truth is None else ["no Control Record"]}
    record_view = JourneyView(
        state=record["currentState"],
        seq=record["lastAppliedSeq"],
        simulation_id=(record.get("simulation") or {}).get("simulationId"),
        acceptance_id=(record.get("acceptance") or {}).get("acceptanceId"),
        disbursement_id=(record.get("disbursement") or {}).get("disbursementId"),
    )
    if truth is None:
        agree = record["lastAppliedSeq"] == 0
        return {"agree": agree, "differences": [] if agree else ["loans-api has no record of this journey"]}
    truth_view = JourneyView(
        state=truth["state"],
        seq=truth["seq"],
        simulation_id=next((s["simulationId"] for s in truth["simulations"] if s["status"] == "ACTIVE"), None),
        acceptance_id=next((a["acceptanceId"] for a in truth["acceptances"] if a["status"] == "ACTIVE"), None),
        disbursement_id=(truth.get("disbursement") or {}).get("disbursementId"),
    )
    found = differences(record_view, truth_view)
    return {"agree": not found, "differences": found}


# -- audit ------------------------------------------------------------------------------------


def audit(
    target: Target,
    grace_seconds: float,
    repair: bool = False,
    journey_ids: list[str] | None = None,
    since_seconds: float | None = None,
) -> dict[str, Any]:
    """Compare Control Records with loans-api's ledgers: the given journeys, those changed in the last
    `since_seconds` (the changes index), or every journey (a scan of the ledgers)."""
    settings = AuditorSettings(
        region=target.region,
        aws_endpoint_url=target.endpoint_url,
        loans_table_name=target.loans_table,
        journeys_table_name=target.journeys_table,
        grace_seconds=grace_seconds,
    )
    dynamodb = target.dynamodb()
    auditor, changes = auditor_bootstrap.build_auditor(dynamodb, dynamodb, settings)
    if journey_ids:
        candidates: Iterable[str] = journey_ids
        scope = f"{len(journey_ids)} journey(s) named"
    elif since_seconds is not None:
        now = datetime.now(UTC)
        after = event_ids.lower_bound(now - timedelta(seconds=since_seconds))
        window = changes.changed_between(after, now, AUDIT_SINCE_LIMIT)
        candidates = dict.fromkeys(change.journey_id for change in window)
        scope = f"journeys changed in the last {since_seconds:g} s"
    else:
        candidates = changes.all_journeys()
        scope = "every journey (a scan of loans-api's ledgers)"
    return {"scope": scope, "graceSeconds": grace_seconds, **auditor.audit(candidates, repair=repair).to_json()}


def audit_text(report: dict[str, Any]) -> str:
    lines = [f"audited {report['audited']} journey(s): {report['scope']}; grace {report['graceSeconds']:g} s"]
    for journey_id in report["repaired"]:
        lines.append(f"repaired {journey_id}: applied loans-api's newest event")
    for finding in report["outOfSync"]:
        lines += [
            f"OUT OF SYNC {finding['journeyId']}  ({finding['kind']}, for {finding['ageSeconds']:.0f} s, "
            f"since {finding['outOfSyncSince']})",
            *(f"    {difference}" for difference in finding["differences"]),
            f"    expected road: {finding['expectedRoad']}",
            f"    repair: {finding['repair']}",
        ]
    if report["withinGrace"]:
        lines.append(f"within the grace period (the roads may still bring them): {', '.join(report['withinGrace'])}")
    if report["unreadable"]:
        lines.append(f"unreadable ledgers: {', '.join(report['unreadable'])}")
    verdict = "no journey out of sync past the grace period"
    lines.append(verdict if report["agree"] else f"{len(report['outOfSync'])} journey(s) out of sync")
    return "\n".join(lines)


# -- demo -------------------------------------------------------------------------------------


def openapi_document(target: Target, api: str = "orchestrator", fmt: str = "openapi") -> dict[str, Any]:
    """The OpenAPI document `api` serves (3.1), or with fmt "bedrock" its export for an Amazon Bedrock
    Agents action group (3.0.0; shared/openapi.py says what changes)."""
    from shared import openapi

    base = target.api_url if api == "orchestrator" else target.loans_api_url
    status_code, document = Http(target).call("GET", f"{base}/openapi.json")
    if status_code != 200 or not isinstance(document, dict):
        raise Unreachable(f"{api} answered {status_code} for /openapi.json: {str(document)[:300]}")
    return openapi.bedrock(document) if fmt == "bedrock" else document


def example_body(document: dict[str, Any], reference: str, choose: dict[str, Any] | None = None) -> dict[str, Any]:
    """A body for the schema at `reference` ("#/components/schemas/X") in `document`: each required
    property from `choose` when given, else the schema's first example, else its minimum."""
    schema: Any = document
    for part in reference.removeprefix("#/").split("/"):
        schema = schema[part]
    body = {}
    for name in schema.get("required", []):
        prop = schema["properties"][name]
        if choose and name in choose:
            body[name] = choose[name]
        elif prop.get("examples"):
            body[name] = prop["examples"][0]
        else:
            body[name] = prop.get("minimum", "x")
    return body


def follow_links(
    target: Target,
    plan: list[tuple[str, dict[str, Any] | None]],
    say: Callable[[str], None],
    customer: str = "demo-customer",
) -> dict[str, Any]:
    """A generic agent: knows only `POST /journeys` and the OpenAPI document. It calls the link whose
    `operationId` the plan names, building the body from the link's `requestSchema` (the plan may
    choose values), until the plan ends or the journey no longer offers the next operation."""
    http = Http(target)
    document = openapi_document(target)
    key = {"Idempotency-Key": str(uuid.uuid4())}
    status_code, record = http.call("POST", f"{target.api_url}/journeys", {"customerId": customer}, key)
    if status_code != 201:
        raise Unreachable(f"createJourney answered {status_code}: {str(record)[:300]}")
    say(f"POST /journeys -> {status_code}: journey {record['journeyId']} is {record['currentState']}")
    for operation_id, choose in plan:
        link = next((a for a in record["availableActions"] if a["operationId"] == operation_id), None)
        if link is None:
            offered = [a["operationId"] for a in record["availableActions"]]
            say(f"'{operation_id}' is not offered now; available: {offered}")
            break
        body = example_body(document, link["requestSchema"], choose) if "requestSchema" in link else None
        status_code, record = http.call(link["method"], target.api_url + link["href"], body)
        if status_code >= 400:
            raise Unreachable(f"{operation_id} answered {status_code}: {str(record)[:300]}")
        detail = ""
        if record.get("simulation"):
            s = record["simulation"]
            detail = f" ({s['amount']} over {s['termMonths']} months at {s['annualRate']}: {s['monthlyPayment']}/month)"
        say(f"{link['method']} {link['href']} -> {status_code}: {record['currentState']} v{record['version']}{detail}")
    say(f"next: {[a['operationId'] for a in record['availableActions']] or 'nothing (terminal)'}")
    return dict(record)


def demo(target: Target, say: Callable[[str], None]) -> dict[str, Any]:
    """A scripted agent walks a journey using only the links in availableActions and the OpenAPI
    document: it quotes twice (the schema's example amount, then one it chooses), accepts, disburses."""
    plan: list[tuple[str, dict[str, Any] | None]] = [
        ("simulateLoan", None),
        ("simulateLoan", {"amount": 8000, "termMonths": 24}),
        ("acceptSimulation", None),
        ("disburseLoan", None),
    ]
    return follow_links(target, plan, say)
