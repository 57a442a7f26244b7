"""Road 2 as an operator sees it: the outbox and the queues (`saga status`), and what is in the DLQ,
why, and sending it back (`saga dlq`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from functions.consumer.service import EventRejected, Ledger, confirmed
from functions.loans_api.store import DynamoLoanStore
from functions.relay.settings import RelaySettings
from functions.relay.sweeper import DynamoSweepStore, pending_now
from saga.ops.target import Target
from shared.applier import already_applied
from shared.clock import utc_now
from shared.control_store import DynamoControlRecordStore
from shared.events import LoanEvent, UnreadableEvent, parse_event

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageTypeDef


def status(target: Target) -> dict[str, Any]:
    """The outbox (pending, oldest pending age, unreadable items) and the queues' depths. The outbox is
    what the sweeper sees: the items it keeps to revisit, and every event from its cursors' margin on."""
    now = utc_now()
    margin = RelaySettings.model_fields["sweep_margin_seconds"].default
    found = pending_now(DynamoSweepStore(target.dynamodb(), target.loans_table), now, margin)
    age = 0.0 if found.oldest is None else max(0.0, (now - found.oldest).total_seconds())
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
            "pending": found.pending,
            "oldestPendingAgeSeconds": round(age, 3),
            "unreadable": found.unreadable,
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
    """`saga status` for a human: the figures, then (with --check) what failed and what to run next."""
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


class _TableLedger:
    """loans-api's ledger as the operator's tools read it (straight from its table, as the audit does)."""

    def __init__(self, store: DynamoLoanStore) -> None:
        self._store = store

    def latest_event(self, journey_id: str) -> LoanEvent | None:
        return self._store.read_ledger(journey_id).last_event


def diagnose(body: str, journeys: DynamoControlRecordStore, ledger: Ledger | None = None) -> dict[str, Any]:
    """Why a DLQ message failed, as far as its body, the Control Records and loans-api's ledger tell:
    the consumer's own reason for an unreadable message or one loans-api did not commit (the same
    parser and the same confirmation decide)."""
    try:
        event = parse_event(body)
    except UnreadableEvent as error:
        fields = _loose_fields(body)
        return {**fields, "reason": error.reason}
    record = journeys.get(event.journeyId)
    reason = "unknown journey" if record is None else "failed when applied (see consumer logs)"
    if record is not None and ledger is not None and not already_applied(record, event):
        try:
            newest = confirmed(event, ledger.latest_event(event.journeyId))
            if newest.seq == event.seq:  # the whole event is the ledger's
                reason = (
                    "committed by loans-api, not applied (was loans-api unreachable? see consumer logs): redrive it"
                )
            else:  # older than the ledger's newest: its content is not checked, only the newest is ever applied
                reason = (
                    f"older than loans-api's ledger (seq {event.seq} < {newest.seq}): not applied (was loans-api "
                    "unreachable? see consumer logs); its content is not checked, and a redrive applies only the "
                    "ledger's newest event"
                )
        except EventRejected as rejected:
            reason = f"rejected: {rejected}"
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
    """Up to `limit` DLQ messages, each with why it failed (`diagnose`); none is consumed."""
    journeys = DynamoControlRecordStore(target.dynamodb(), target.journeys_table)
    ledger = _TableLedger(DynamoLoanStore(target.dynamodb(), target.loans_table))
    return [
        {
            "messageId": m["MessageId"],
            "receiveCount": int(m.get("Attributes", {}).get("ApproximateReceiveCount", 0)),
            **diagnose(m["Body"], journeys, ledger),
        }
        for m in _peek(target, limit)
    ]


def dlq_redrive(target: Target, dry_run: bool, limit: int) -> list[dict[str, Any]]:
    """Move up to `limit` DLQ messages back to the events queue, as the DLQ redrive role where the target
    has one (a redrive of an applied event is a harmless no-op: the consumer is idempotent; an edited one
    is confirmed against loans-api's ledger like any other message, and set aside again)."""
    sqs = target.redrive_sqs()
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
