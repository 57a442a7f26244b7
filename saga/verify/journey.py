"""The system at work, through the caller's own credentials: a signed journey walked to disbursed and
converging on both roads, the doors that must refuse (unsigned calls, loans-api to anyone but the
orchestrator), and road 2's queues empty afterwards. Its journeys are labelled (customerId
`saga-verify-<UTC time>`) and left final (disbursed): safe on a production stack."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

import urllib3

from saga.ops import road2
from saga.ops.demo import example_body, openapi_document
from saga.ops.journeys import journey_history
from saga.ops.target import Http
from saga.verify.checks import Check, Deployment, Failed

CUSTOMER_PREFIX = "saga-verify-"
# The body each command takes from the record, for an orchestrator whose links carry none.
_FROM_RECORD = {
    "acceptSimulation": lambda record: {"simulationId": record["simulation"]["simulationId"]},
    "disburseLoan": lambda record: {"acceptanceId": record["acceptance"]["acceptanceId"]},
}
_WALK = ("simulateLoan", "acceptSimulation", "disburseLoan")


def _body(link: dict[str, Any], record: dict[str, Any], document: dict[str, Any]) -> dict[str, Any] | None:
    """Exactly the body the link offers; else the one the command takes from the record; else an
    example of the link's schema."""
    if "body" in link:
        return dict(link["body"])
    if link["operationId"] in _FROM_RECORD:
        return _FROM_RECORD[link["operationId"]](record)
    return example_body(document, link["requestSchema"]) if "requestSchema" in link else None


def signed_journey(deployment: Deployment) -> str:
    """Create, simulate, accept, disburse (SigV4, the caller's credentials), each command through the
    link the record offers; then both roads: road 1's replies end disbursed, and road 2 publishes
    every event of the journey and the consumer drains them (the events queue empty, the DLQ too)."""
    target = deployment.target
    http = Http(target)
    document = openapi_document(target)
    customer = CUSTOMER_PREFIX + datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    key = {"Idempotency-Key": str(uuid.uuid4())}
    status, record = http.call("POST", f"{target.api_url}/journeys", {"customerId": customer}, key)
    if status != 201:
        raise Failed(f"createJourney answered {status}: {str(record)[:200]}")
    journey = record["journeyId"]
    for operation in _WALK:
        link = next((a for a in record["availableActions"] if a["operationId"] == operation), None)
        if link is None:
            raise Failed(f"journey {journey} in {record['currentState']} does not offer {operation}")
        key = {"Idempotency-Key": str(uuid.uuid4())}
        status, record = http.call(link["method"], target.api_url + link["href"], _body(link, record, document), key)
        if status >= 400:
            raise Failed(f"{operation} of journey {journey} answered {status}: {str(record)[:200]}")
    if record["currentState"] != "disbursed":
        raise Failed(f"journey {journey}: road 1 left it {record['currentState']}, not disbursed")
    history = _road2(deployment, journey)
    return (f"journey {journey} ({customer}) disbursed; road 2 published and delivered its {len(history)} "
            f"events ({road2_summary(history)})")  # fmt: skip


def road2_summary(history: list[dict[str, Any]]) -> str:
    """Which road applied the journey's events, as far as the record's trail (its newest two changes) says:
    an older event is in the record, by a road the trail no longer names."""
    by_outbox = sum(1 for event in history if event["appliedBy"] == "outbox")
    untold = sum(1 for event in history if event["appliedBy"] is None)
    by_road1 = len(history) - by_outbox - untold
    return f"{by_outbox} applied by road 2 itself, {by_road1} by road 1, {untold} before the record's trail"


def _road2(deployment: Deployment, journey: str) -> list[dict[str, Any]]:
    """Wait (bounded) until every event of the journey is published (NOTIFIED), in the record, and
    the events queue holds nothing: the consumer has taken each delivery."""
    target = deployment.target
    http = Http(target)
    deadline = time.monotonic() + deployment.wait_seconds
    while True:
        _, record = http.call("GET", f"{target.api_url}/journeys/{journey}")
        history = journey_history(target, journey, record if isinstance(record, dict) else None)
        unpublished = [e["type"] for e in history if e["outbox"] != "NOTIFIED"]
        queued = road2.status(target)["queues"]["events"]
        waiting = queued["visible"] + queued["inFlight"]
        if history and not unpublished and all(e["inRecord"] for e in history) and not waiting:
            return history
        if time.monotonic() > deadline:
            raise Failed(
                f"journey {journey} after {deployment.wait_seconds:.0f} s: road 2 has not published "
                f"{unpublished or 'nothing'}; {waiting} message(s) still in the events queue"
            )
        time.sleep(1.0)


def unsigned_refused(deployment: Deployment) -> str:
    """A request without SigV4 never reaches the orchestrator: API Gateway answers 403."""
    url = f"{deployment.target.api_url}/openapi.json"
    status = urllib3.request("GET", url, timeout=urllib3.Timeout(connect=2.0, read=30.0), retries=False).status
    if status != 403:
        raise Failed(f"an unsigned GET {url} answered {status}, not 403: the orchestrator is open to anyone")
    return "an unsigned call to the orchestrator answered 403"


def loans_api_refused(deployment: Deployment) -> str:
    """loans-api lets only the orchestrator's role in: the caller's own signed call answers 403."""
    url = f"{deployment.target.loans_api_url}/openapi.json"
    status, _ = Http(deployment.target).call("GET", url)
    if status != 403:
        raise Failed(f"GET {url} signed by this caller (not the orchestrator) answered {status}, not 403")
    return "loans-api refused this caller (403): only the orchestrator's role may call it"


def queues_empty(deployment: Deployment) -> str:
    """Nothing waits in the events queue, the DLQ or the relay-failure queue."""
    queues = road2.status(deployment.target)["queues"]
    counts = {
        "events queue": queues["events"]["visible"] + queues["events"]["inFlight"],
        "events DLQ": queues["eventsDlq"]["visible"],
        "relay failures": queues["relayFailures"]["visible"],
    }
    if any(counts.values()):
        raise Failed(", ".join(f"{name}: {count}" for name, count in counts.items() if count))
    return "the events queue, the DLQ and the relay-failure queue are empty"


CHECKS = [
    Check("signed-journey", signed_journey,
          "`saga journey show JOURNEY_ID --stack NAME` shows where it stopped; `saga status --check` says "
          "whether road 2 is moving; the orchestrator's and consumer's logs say why"),
    Check("unsigned-refused", unsigned_refused,
          "redeploy: every method of the orchestrator API must use AWS_IAM authorization (infra/apis.py)"),
    Check("loans-api-refused", loans_api_refused,
          "redeploy: loans-api's resource policy must deny every principal but the orchestrator's role"),
    Check("queues-empty", queues_empty,
          "`saga dlq list --stack NAME` says why (then fix and `saga dlq redrive`); relay failures are "
          "republished by the sweeper: `saga status --check --stack NAME`"),
]  # fmt: skip
