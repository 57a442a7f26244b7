"""A journey's Control Record against loans-api's truth: one journey and its history (`saga journey
show`), a customer's journeys (`saga journey list`), or every journey whose record disagrees (`saga audit`)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any
from urllib.parse import quote, urlencode

from functions.auditor import bootstrap as auditor_bootstrap
from functions.auditor.audit import JourneyView, differences
from functions.auditor.settings import AuditorSettings
from saga.local.apigw import CALLER_HEADER
from saga.ops.target import Http, Target, Unreachable
from shared import event_ids
from shared.clock import utc_now
from shared.control_store import DynamoControlRecordStore
from shared.dynamo import from_item, to_item
from shared.keys import EVENT_PREFIX, journey_pk

# `saga audit --since` reads at most this many changes (the scheduled audit pages through more).
AUDIT_SINCE_LIMIT = 100_000
UNKNOWN = "neither the orchestrator nor loans-api knows this journey"


def journey_show(target: Target, journey_id: str) -> dict[str, Any]:
    """The Control Record next to loans-api's truth, whether they agree, and the journey's events in
    order. `found` is False when neither side knows the journey."""
    http = Http(target)
    path = f"/journeys/{quote(journey_id, safe='')}"
    record_status, record = http.call("GET", f"{target.api_url}{path}")
    truth_status, truth = http.call("GET", f"{target.loans_api_url}{path}")
    for status_code, body, side in ((record_status, record, "orchestrator"), (truth_status, truth, "loans-api")):
        if status_code not in (200, 404):
            raise Unreachable(f"{side} answered {status_code} for journey {journey_id}: {str(body)[:300]}")
    record = record if record_status == 200 else None
    truth = truth if truth_status == 200 else None
    found = record is not None or truth is not None
    # An unknown journey agrees with nothing: a script reading `agree` alone must not take it for in sync.
    verdict = compare(record, truth) if found else {"agree": False, "differences": [UNKNOWN]}
    return {
        "journeyId": journey_id,
        "found": found,
        "controlRecord": record,
        "loansApi": truth,
        **verdict,
        "history": journey_history(target, journey_id, record),
    }


def journey_list(target: Target, customer_id: str, limit: int, cursor: str | None, caller: str | None) -> Any:
    """A page of the journeys created for `customer_id` by the caller (the orchestrator's listJourneys:
    newest first; `nextCursor` when older ones follow). Locally `caller` names the caller (the
    X-Saga-Caller header); on a stack the caller is whoever signs."""
    query = {"customerId": customer_id, "limit": str(limit), **({"cursor": cursor} if cursor else {})}
    headers = {CALLER_HEADER: caller} if caller else None
    status, page = Http(target).call("GET", f"{target.api_url}/journeys?{urlencode(query)}", headers=headers)
    if status != 200:
        raise Unreachable(f"the orchestrator answered {status} for the journeys of {customer_id!r}: {str(page)[:300]}")
    return page


def journey_list_text(customer_id: str, page: dict[str, Any]) -> str:
    """`saga journey list` for a human: one line per journey, newest first."""
    journeys = page["journeys"]
    if not journeys:
        return f"no journeys for customer {customer_id} (created by this caller)"
    lines = [f"{'journey':<36}  {'state':<10}  {'created':<27}  next"]
    for record in journeys:
        actions = ", ".join(action["name"] for action in record["availableActions"]) or "-"
        lines.append(f"{record['journeyId']:<36}  {record['currentState']:<10}  {record['createdAt']:<27}  {actions}")
    if page.get("nextCursor"):
        lines.append(f"older journeys follow: --cursor {page['nextCursor']}")
    return "\n".join(lines)


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
        return f"journey {result['journeyId']}: unknown ({UNKNOWN})"
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


def audit(
    target: Target,
    grace_seconds: float,
    repair: bool = False,
    journey_ids: list[str] | None = None,
    since_seconds: float | None = None,
    rebuild: bool = False,
) -> dict[str, Any]:
    """Compare Control Records with loans-api's ledgers: the given journeys, those changed in the last
    `since_seconds` (the changes index), or every journey (a scan of the ledgers). `repair` applies
    loans-api's newest event where that is mechanical; `rebuild` (with `repair`) re-projects the other
    records out of sync from the ledger."""
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
        now = utc_now()
        after = event_ids.lower_bound(now - timedelta(seconds=since_seconds))
        window = changes.changed_between(after, now, AUDIT_SINCE_LIMIT)
        candidates = dict.fromkeys(change.journey_id for change in window)
        scope = f"journeys changed in the last {since_seconds:g} s"
    else:
        candidates = changes.all_journeys()
        scope = "every journey (a scan of loans-api's ledgers and of the Control Records)"
    return {
        "scope": scope,
        "graceSeconds": grace_seconds,
        **auditor.audit(candidates, repair=repair, rebuild=rebuild).to_json(),
        # named journeys neither side knows (a typo, another stack): `saga audit` exits 3 on them
        "unknown": [journey_id for journey_id in journey_ids or [] if not _known(target, journey_id)],
    }


def _known(target: Target, journey_id: str) -> bool:
    """Does the orchestrator (a Control Record) or loans-api (any item of the journey) know it?"""
    dynamodb = target.dynamodb()
    if DynamoControlRecordStore(dynamodb, target.journeys_table).get(journey_id) is not None:
        return True
    items = dynamodb.query(
        TableName=target.loans_table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues=to_item({":pk": journey_pk(journey_id)}),
        Limit=1,
        ConsistentRead=True,
    )
    return bool(items.get("Items"))


def audit_text(report: dict[str, Any]) -> str:
    """`saga audit` for a human: what was audited, repaired, out of sync (and the road that should have
    brought it), and the verdict; for journeys named that neither API knows, only that (no verdict on
    nothing audited)."""
    if report["unknown"] and not report["audited"] and not report["outOfSync"]:
        return f"unknown ({UNKNOWN}): {', '.join(report['unknown'])}"
    lines = [f"audited {report['audited']} journey(s): {report['scope']}; grace {report['graceSeconds']:g} s"]
    for journey_id in report["repaired"]:
        lines.append(f"repaired {journey_id}: applied loans-api's newest event")
    for rebuilt in report["rebuilt"]:
        lines.append(
            f"rebuilt {rebuilt['journeyId']} from loans-api's ledger: state {rebuilt['stateBefore']} -> "
            f"{rebuilt['stateAfter']}, seq {rebuilt['seqBefore']} -> {rebuilt['seqAfter']} "
            f"(version {rebuilt['version']})"
        )
    for journey_id in report["notRebuilt"]:
        lines.append(
            f"not rebuilt {journey_id}: the journey moved since it was audited (its record or loans-api's ledger); "
            "audit it again"
        )
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
    if report["unknown"]:
        lines.append(f"unknown ({UNKNOWN}): {', '.join(report['unknown'])}")
    verdict = "no journey out of sync past the grace period"
    lines.append(verdict if report["agree"] else f"{len(report['outOfSync'])} journey(s) out of sync")
    return "\n".join(lines)
