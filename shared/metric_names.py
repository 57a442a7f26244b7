"""Metric names and the services that emit them: what the code writes and the dashboard reads."""

from __future__ import annotations

# The local runtime's namespace, and the prefix of every deployed stack's (`stack_namespace`).
NAMESPACE = "LoanSaga"


def stack_namespace(stack: str) -> str:
    """A deployed stack's own namespace: two stacks in one account (LoanSaga and LoanSagaDev, say) write and
    read apart, so one's alarms, dashboard and `saga verify` never see the other's metrics (D12). Its
    functions get it through Powertools' POWERTOOLS_METRICS_NAMESPACE (shared/topology.py)."""
    return f"{NAMESPACE}/{stack}"


# Powertools service names (the `service` dimension of every metric).
LOANS_API = "loans-api"
ORCHESTRATOR = "orchestrator"
RELAY = "relay"
SWEEPER = "sweeper"
CONSUMER = "consumer"
AUDITOR = "auditor"
# Deployed only with `-c bedrockAgent=true` (infra/bedrock.py).
BEDROCK_EXECUTOR = "bedrock-executor"

COMMANDS_COMMITTED = "CommandsCommitted"
IDEMPOTENT_REPLAYS = "IdempotentReplays"
COMPENSATIONS = "Compensations"
DISBURSEMENTS = "Disbursements"
EVENTS_PUBLISHED = "EventsPublished"
PUBLISH_FAILURES = "PublishFailures"
OUTBOX_AGE_AT_PUBLISH_MS = "OutboxAgeAtPublishMs"
PENDING_OUTBOX_COUNT = "PendingOutboxCount"
UNREADABLE_OUTBOX_ITEMS = "UnreadableOutboxItems"
OLDEST_PENDING_OUTBOX_AGE_SECONDS = "OldestPendingOutboxAgeSeconds"
EVENTS_APPLIED = "EventsApplied"
EVENTS_DEDUPLICATED = "EventsDeduplicated"
EVENTS_SKIPPED = "EventsSkipped"
EVENTS_FAILED = "EventsFailed"
# Messages the consumer set aside: not what loans-api committed (D15); counted at each receive.
EVENTS_REJECTED = "EventsRejected"
# Commands the orchestrator could not decide: the journey's record is ahead of loans-api's ledger (needs
# `saga audit --repair --rebuild`); counted at each such answer.
JOURNEYS_NEEDING_REPAIR = "JourneysNeedingRepair"
JOURNEYS_OUT_OF_SYNC = "JourneysOutOfSync"
OLDEST_OUT_OF_SYNC_AGE_SECONDS = "OldestOutOfSyncAgeSeconds"
JOURNEYS_AUDITED = "JourneysAudited"
LEASE_HELD = "LeaseHeld"  # a scheduled run that found another run holding its lease (shared/lease.py)

# Metrics written only when what they count happens (none is a healthy reading): `saga verify` does not
# ask a new deployment for them. Lambda sends Throttles only for a throttled invocation; EventBridge sends
# TriggeredRules (EventBridge Scheduler InvocationAttemptCount, the sweeper's lanes), and the audit
# JourneysAudited, only once a schedule has fired (up to one period after a deploy).
ON_OCCURRENCE = frozenset(
    {
        JOURNEYS_AUDITED,
        "TriggeredRules",
        "InvocationAttemptCount",
        IDEMPOTENT_REPLAYS,
        COMPENSATIONS,
        EVENTS_DEDUPLICATED,
        EVENTS_SKIPPED,
        EVENTS_FAILED,
        PUBLISH_FAILURES,
        LEASE_HELD,
        JOURNEYS_NEEDING_REPAIR,
        "Throttles",
    }
)
