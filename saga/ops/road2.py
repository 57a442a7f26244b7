"""Road 2 as an operator sees it: the outbox and the queues (`saga status`), and what is in the DLQ,
why, and sending it back (`saga dlq`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from functions.consumer.service import EventRejected, Ledger, confirmed
from functions.loans_api.store import DynamoLoanStore
from functions.relay.settings import RelaySettings
from functions.relay.sweeper import DynamoSweepStore, PendingNow, pending_now
from saga.ops.target import Target
from shared.applier import already_applied
from shared.clock import utc_now
from shared.control_store import DynamoControlRecordStore
from shared.events import LoanEvent, UnreadableEvent, parse_event

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageTypeDef


# A relay failure's batch arrived on the stream at most this long after its events' occurredAt (set before
# loans-api's transaction commits; AWS gives the arrival to the second): margin for both, and clock skew.
ARRIVAL_MARGIN = timedelta(seconds=2)


def _sweepers_view(target: Target, now: datetime) -> PendingNow:
    """The PENDING events the sweeper sees now (its revisits, and every event from its cursors' margin on)."""
    margin = RelaySettings.model_fields["sweep_margin_seconds"].default
    return pending_now(DynamoSweepStore(target.dynamodb(), target.loans_table), now, margin)


def status(target: Target) -> dict[str, Any]:
    """The outbox (pending, oldest pending age, unreadable items), the queues' depths, the age of the
    events queue's oldest message, and the relay failures still open (their events not yet republished).
    The outbox is what the sweeper sees: the items it keeps to revisit, and every event from its cursors'
    margin on."""
    now = utc_now()
    found = _sweepers_view(target, now)
    oldest = found.oldest
    age = 0.0 if oldest is None else max(0.0, (now - oldest).total_seconds())
    events = depth(target, target.events_queue_url)
    failures = depth(target, target.relay_failures_url)
    records = peek(target, target.relay_failures_url, 100) if failures["visible"] + failures["inFlight"] else []
    still_open = sum(1 for record in records if not relay_failure_resolved(record["Body"], oldest))
    return {
        "outbox": {
            "pending": found.pending,
            "oldestPendingAgeSeconds": round(age, 3),
            "unreadable": found.unreadable,
        },
        "queues": {
            "events": {**events, "oldestMessageAgeSeconds": oldest_message_age(target, target.events_queue_url)},
            "eventsDlq": depth(target, target.events_dlq_url),
            "relayFailures": {
                "visible": failures["visible"],
                "open": still_open,
                "resolved": len(records) - still_open,
            },
        },
    }


def depth(target: Target, queue_url: str) -> dict[str, int]:
    """A queue's messages: visible, and in flight (received by a reader and not yet deleted or shown
    again: still in the queue). Both are approximate (GetQueueAttributes)."""
    attributes = target.sqs().get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return {
        "visible": int(attributes["ApproximateNumberOfMessages"]),
        "inFlight": int(attributes["ApproximateNumberOfMessagesNotVisible"]),
    }


def oldest_message_age(target: Target, queue_url: str) -> float | None:
    """The queue's ApproximateAgeOfOldestMessage, its newest datapoint of the last 5 minutes (the metric
    the EventsQueueTooOld alarm watches; SQS's attributes have no age, and a receive to look would count
    towards the queue's maxReceiveCount). None: no datapoint (an empty queue, or one SQS calls inactive)."""
    now = utc_now()
    points = target.cloudwatch().get_metric_statistics(
        Namespace="AWS/SQS",
        MetricName="ApproximateAgeOfOldestMessage",
        Dimensions=[{"Name": "QueueName", "Value": queue_url.rstrip("/").rsplit("/", 1)[-1]}],
        StartTime=now - timedelta(minutes=5),
        EndTime=now + timedelta(minutes=1),
        Period=60,
        Statistics=["Maximum"],
    )["Datapoints"]
    newest = max(points, key=lambda point: point["Timestamp"], default=None)
    return None if newest is None else round(float(newest.get("Maximum", 0.0)), 3)


def relay_failure_resolved(body: str, oldest_pending: datetime | None) -> bool:
    """Is a relay failure (the stream source's on-failure record of a batch that exhausted its retries) over:
    every event of its batch published since (by the sweeper)? Yes when nothing is PENDING, or when the
    oldest PENDING event is younger than the batch's last record (the record names the batch's stream
    positions and arrival times, not its events: https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html)."""
    if oldest_pending is None:
        return True
    try:
        arrived = json.loads(body)["DDBStreamBatchInfo"]["approximateArrivalOfLastRecord"]
        last = datetime.fromisoformat(arrived.replace("Z", "+00:00"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return False  # unreadable: over only once nothing is pending
    return oldest_pending > last + ARRIVAL_MARGIN


def relay_failures_clear(target: Target) -> dict[str, int]:
    """Delete the relay-failure records that are over (`relay_failure_resolved`); keep the others."""
    oldest_pending = _sweepers_view(target, utc_now()).oldest
    sqs = target.sqs()
    records: list[MessageTypeDef] = []
    kept: list[MessageTypeDef] = []
    try:
        records = _receive_each_once(target, target.relay_failures_url, 1000)
        for record in records:
            if relay_failure_resolved(record["Body"], oldest_pending):
                sqs.delete_message(QueueUrl=target.relay_failures_url, ReceiptHandle=record["ReceiptHandle"])
            else:
                kept.append(record)
    finally:
        _show_again(target, target.relay_failures_url, kept)
    return {"cleared": len(records) - len(kept), "kept": len(kept)}


def status_problems(
    report: dict[str, Any], max_outbox_age_seconds: float, max_queue_age_seconds: float
) -> list[dict[str, str]]:
    """What `saga status --check` fails on, each with what clears it."""
    outbox, queues = report["outbox"], report["queues"]
    problems = _pollers_off(report)
    held = queues["eventsDlq"].get("inFlight", 0)  # received by a reader, not deleted: still there
    if in_dlq := queues["eventsDlq"]["visible"] + held:
        problems.append({
            "check": "dlq",
            "detail": f"{in_dlq} message(s) in the events DLQ"
            + (f" ({held} in flight: received by a reader a moment ago)" if held else "")
            + ": events road 2 could not apply",
            "next": "saga dlq list   (then fix the cause and `saga dlq redrive`; the check passes once it is empty)",
        })  # fmt: skip
    if outbox["oldestPendingAgeSeconds"] > max_outbox_age_seconds:
        problems.append({
            "check": "outbox-age",
            "detail": f"the oldest PENDING outbox event is {outbox['oldestPendingAgeSeconds']:.0f} s old "
            f"(threshold {max_outbox_age_seconds:.0f} s): the relay and the sweeper are not publishing it",
            "next": "check the relay's and the sweeper's logs; `saga audit` lists the journeys it leaves behind "
            "(the check passes once they publish it)",
        })  # fmt: skip
    queue_age = queues["events"].get("oldestMessageAgeSeconds")
    if queue_age is not None and queue_age > max_queue_age_seconds:
        problems.append({
            "check": "events-queue-age",
            "detail": f"a message has waited {queue_age:.0f} s in the events queue (threshold "
            f"{max_queue_age_seconds:.0f} s; {queues['events']['visible']} visible, {queues['events']['inFlight']} "
            "in flight): the consumer is not draining it",
            "next": "check that the consumer runs (deployed: its SQS event source mapping is Enabled, its logs; "
            "locally: `saga local` without --disable consumer); the check passes once the queue drains "
            "(a message it cannot apply moves to the DLQ after 3 receives)",
        })  # fmt: skip
    if outbox.get("unreadable"):
        problems.append({
            "check": "unreadable-outbox-items",
            "detail": f"{outbox['unreadable']} PENDING outbox item(s) the relay cannot read (skipped, kept)",
            "next": "search the sweeper's logs for 'unreadable outbox item skipped' (each names its pk and sk); "
            "the check passes once no such item is PENDING (made readable, or removed by hand)",
        })  # fmt: skip
    if queues["relayFailures"].get("open"):
        problems.append({
            "check": "relay-failures",
            "detail": f"{queues['relayFailures']['open']} stream batch(es) exhausted the relay's retries, and "
            "events at or before them are still PENDING",
            "next": "nothing, if the sweeper runs: it republishes PENDING events past its threshold, and this "
            "check passes once it has; if the outbox age keeps growing, read the relay's and the sweeper's "
            "logs. Then `saga relay-failures clear` removes the records (and ends the RelayFailuresNotEmpty alarm)",
        })  # fmt: skip
    return problems


def _pollers_off(report: dict[str, Any]) -> list[dict[str, str]]:
    """A poller of the local runtime that is off while its work waits fails at once: nothing will do it, however
    long the check waits (the age thresholds are for a poller that runs but is stuck)."""
    pollers = report.get("pollers")
    if not pollers:
        return []
    problems = []
    events = report["queues"]["events"]
    waiting = events["visible"] + events["inFlight"]
    if pollers.get("consumer") is False and waiting:
        problems.append({
            "check": "consumer-off",
            "detail": f"{waiting} message(s) wait in the events queue and the local runtime's consumer is off "
            "(saga local --disable consumer): nothing will apply them",
            "next": "restart `saga local` without --disable consumer; the check passes once the queue drains",
        })  # fmt: skip
    pending = report["outbox"]["pending"]
    if pollers.get("relay") is False and pollers.get("sweeper") is False and pending:
        problems.append({
            "check": "relay-off",
            "detail": f"{pending} outbox event(s) PENDING and the local runtime's relay and sweeper are both off "
            "(saga local --disable relay --disable sweeper): nothing will publish them",
            "next": "restart `saga local` without --disable relay; the check passes once they are published",
        })  # fmt: skip
    return problems


def status_table(report: dict[str, Any]) -> str:
    """`saga status` for a human: the figures, then (with --check) what failed and what clears it."""
    outbox, queues = report["outbox"], report["queues"]
    queue_age = queues["events"].get("oldestMessageAgeSeconds")
    failures = queues["relayFailures"]
    rows = [
        ("outbox pending", str(outbox["pending"])),
        ("oldest pending age (s)", f"{outbox['oldestPendingAgeSeconds']:.1f}"),
        ("unreadable outbox items", str(outbox.get("unreadable", 0))),
        ("events queue visible / in flight", f"{queues['events']['visible']} / {queues['events']['inFlight']}"),
        ("events queue oldest message (s)", "-" if queue_age is None else f"{queue_age:.1f}"),
        (
            "events DLQ visible / in flight",
            f"{queues['eventsDlq']['visible']} / {queues['eventsDlq'].get('inFlight', 0)}",
        ),
        ("relay failures open / over", f"{failures.get('open', 0)} / {failures.get('resolved', 0)}"),
    ]
    if (pollers := report.get("pollers")) is not None:
        running = [name for name, on in pollers.items() if on]
        off = [name for name, on in pollers.items() if not on]
        rows.append(("local pollers running / off", f"{', '.join(running) or 'none'} / {', '.join(off) or 'none'}"))
    width = max(len(name) for name, _ in rows)
    lines = [f"{name.ljust(width)}  {value}" for name, value in rows]
    if "problems" in report:
        lines.append("")
        lines += [f"FAIL {p['check']}: {p['detail']}\n     next: {p['next']}" for p in report["problems"]]
        if not report["problems"]:
            lines.append(
                "ok: the DLQ is empty, no relay failure is open, no outbox event or events-queue message has "
                "waited past its threshold"
            )
        if failures.get("resolved"):
            lines.append(
                f"note: {failures['resolved']} relay failure record(s) whose events have all been published since: "
                "`saga relay-failures clear` removes them"
            )
    return "\n".join(lines)


# How long a listing hides each message it has received, so that its next receive returns the next
# ones: every message is received once per listing, then made visible again at once.
PEEK_HIDE_SECONDS = 30


def peek(target: Target, queue_url: str, limit: int) -> list[MessageTypeDef]:
    """Up to `limit` messages of a queue, none consumed, each received exactly once: SQS has no peek,
    so each receive hides what it returned (the next returns others) and all are made visible again at
    the end. A message's ApproximateReceiveCount rises by 1 per listing, not by one per receive."""
    hidden: list[MessageTypeDef] = []
    try:
        hidden = _receive_each_once(target, queue_url, limit)
    finally:
        _show_again(target, queue_url, hidden)
    return hidden


def _receive_each_once(target: Target, queue_url: str, limit: int) -> list[MessageTypeDef]:
    """Receive up to `limit` messages, each once, hiding them for PEEK_HIDE_SECONDS."""
    sqs = target.sqs()
    seen: dict[str, MessageTypeDef] = {}
    while len(seen) < limit:
        batch = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=min(10, limit - len(seen)),
            VisibilityTimeout=PEEK_HIDE_SECONDS,
            # A deployed queue answers short polls from a sample of its servers (an empty answer may not mean
            # empty); the local endpoint serves one call at a time, so a long poll there would hold up the rest.
            WaitTimeSeconds=0 if target.endpoint_url else 1,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        new = [m for m in batch if m["MessageId"] not in seen]
        seen.update({m["MessageId"]: m for m in new})
        if not new:
            break
    return list(seen.values())


def _show_again(target: Target, queue_url: str, messages: list[MessageTypeDef]) -> None:
    """Make received messages visible again at once (their receive counts stay as they are)."""
    sqs = target.sqs()
    handles = [m["ReceiptHandle"] for m in messages]
    for start in range(0, len(handles), 10):
        sqs.change_message_visibility_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": 0}
                for i, handle in enumerate(handles[start : start + 10])
            ],
        )


class _TableLedger:
    """loans-api's ledger as the operator's tools read it (straight from its table, as the audit does)."""

    def __init__(self, store: DynamoLoanStore) -> None:
        self._store = store

    def latest_event(self, journey_id: str) -> LoanEvent | None:
        return self._store.read_ledger(journey_id).last_event


# Where a failure's cause is when the consumer recorded none the listing can read.
UNKNOWN_LOG = "the consumer's log: search it for the messageId"


def why_failed(note: dict[str, Any] | None, log: str) -> str:
    """The cause the consumer recorded for the message (its last failed receive), or that it is unknown here
    and where its log is: never a guess."""
    if note is None:
        return f"the consumer's cause is not recorded where saga can read it; it is in {log}"
    return f"the consumer recorded: {note.get('cause')} (receive {note.get('receiveCount')}, at {note.get('at')})"


def diagnose(
    body: str,
    journeys: DynamoControlRecordStore,
    ledger: Ledger | None = None,
    note: dict[str, Any] | None = None,
    log: str = UNKNOWN_LOG,
) -> dict[str, Any]:
    """Why a DLQ message failed, as far as its body, the Control Records, loans-api's ledger and the consumer's
    note of it (`note`: what it recorded of the message's last failure) tell: the consumer's own reason for an
    unreadable message or one loans-api did not commit (the same parser and the same confirmation decide); for
    any other, the cause the consumer recorded, or that it is unknown and where its log is (`log`)."""
    try:
        event = parse_event(body)
    except UnreadableEvent as error:
        fields = _loose_fields(body)
        return {**fields, "reason": error.reason}
    record = journeys.get(event.journeyId)
    cause = why_failed(note, log)
    reason = "unknown journey" if record is None else f"failed when applied; {cause}"
    if record is not None and ledger is not None and not already_applied(record, event):
        try:
            newest = confirmed(event, ledger.latest_event(event.journeyId))
            if newest.seq == event.seq:  # the whole event is the ledger's
                reason = f"committed by loans-api, not applied; {cause}. Once that cause is gone, redrive it"
            else:  # older than the ledger's newest: its content is not checked, only the newest is ever applied
                reason = (
                    f"older than loans-api's ledger (seq {event.seq} < {newest.seq}): not applied; {cause}. Its "
                    "content is not checked, and a redrive applies only the ledger's newest event"
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


def dlq_list(
    target: Target, limit: int = 100, causes: Mapping[str, dict[str, Any]] | None = None, log: str = UNKNOWN_LOG
) -> list[dict[str, Any]]:
    """Up to `limit` DLQ messages, each with why it failed (`diagnose`); none is consumed. Each
    receiveCount includes this listing's own receive of the message (`peek`); receiveCountBeforeListing is
    every receive before it: the consumer's (a message the redrive policy moved arrived with maxReceiveCount
    receives), and any earlier listing's or other reader's (SQS keeps one count, whoever received it)."""
    journeys = DynamoControlRecordStore(target.dynamodb(), target.journeys_table)
    ledger = _TableLedger(DynamoLoanStore(target.dynamodb(), target.loans_table))
    return [
        {
            "messageId": m["MessageId"],
            "receiveCount": int(m.get("Attributes", {}).get("ApproximateReceiveCount", 0)),
            # every receive but this listing's own (the consumer's, earlier listings', other readers')
            "receiveCountBeforeListing": int(m.get("Attributes", {}).get("ApproximateReceiveCount", 1)) - 1,
            **diagnose(m["Body"], journeys, ledger, (causes or {}).get(m["MessageId"]), log),
        }
        for m in peek(target, target.events_dlq_url, limit)
    ]


def dlq_redrive(target: Target, dry_run: bool, limit: int) -> list[dict[str, Any]]:
    """Move up to `limit` DLQ messages back to the events queue, as the DLQ redrive role where the target
    has one (a redrive of an applied event is a harmless no-op: the consumer is idempotent; an edited one
    is confirmed against loans-api's ledger like any other message, and set aside again)."""
    if dry_run:  # what a redrive would move: each message received once, all shown again (as a listing)
        return [
            {"messageId": m["MessageId"], "body": m["Body"][:200]} for m in peek(target, target.events_dlq_url, limit)
        ]
    sqs = target.redrive_sqs()
    moved: list[dict[str, Any]] = []
    while len(moved) < limit:
        batch = sqs.receive_message(
            QueueUrl=target.events_dlq_url,
            MaxNumberOfMessages=min(10, limit - len(moved)),
            VisibilityTimeout=30,
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        batch = [m for m in batch if m["MessageId"] not in {x["messageId"] for x in moved}]
        if not batch:
            break
        for message in batch:
            sqs.send_message(
                QueueUrl=target.events_queue_url,
                MessageBody=message["Body"],
                MessageAttributes=message.get("MessageAttributes", {}),
            )
            sqs.delete_message(QueueUrl=target.events_dlq_url, ReceiptHandle=message["ReceiptHandle"])
            moved.append({"messageId": message["MessageId"], "body": message["Body"][:200]})
    return moved
