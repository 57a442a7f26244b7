"""The idempotency keys the orchestrator sends to loans-api (D3). A key names ONE attempt of ONE
command: every retry of that call after a lost reply carries it, and no later, different command
can ever be answered from its receipt.
- simulate: a fresh nonce per agent request, or one derived from the agent's own Idempotency-Key,
  so a repeat of the agent's key is answered by loans-api's receipt before any effect, however far
  the journey has moved since;
- accept: the simulation it accepts (a simulation is accepted at most once: re-simulating makes a
  new one, and cancel is final);
- disburse: the acceptance it pays (the agent names it; "one disbursement per journey, ever" is
  loans-api's domain condition, whatever the key);
- cancel: the journey (it happens once per journey, ever).
Each key is also scoped by the journey, so one agent key on two journeys makes two commands, and the
agent's own key by its caller (`agent_scope`), so two callers that pick the same key share nothing."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from uuid import UUID

from shared.event_ids import new_id

# An assumed role's ARN ends with the session's name, which changes whenever its credentials are
# refreshed: the principal is the role, or a retry after a refresh would miss its receipt.
_ASSUMED_ROLE = re.compile(r"^(arn:[^:]+:sts::\d+:assumed-role/[^/]+)/.*$")


ANONYMOUS = "anonymous"


def principal(user_arn: str | None, caller: str | None) -> str:
    """The caller an agent key belongs to: API Gateway's (IAM-authenticated) `userArn`, an assumed
    role's ARN without its session, or its `caller` id; "anonymous" when neither is known."""
    if user_arn:
        return _ASSUMED_ROLE.sub(r"\1", user_arn)
    return caller or ANONYMOUS


def _caller_id(caller: str) -> str:
    """The caller, hashed: bounded, and no ARN in a key."""
    return hashlib.sha256(caller.encode()).hexdigest()[:32]


def agent_scope(caller: str, operation: str, journey_id: str, key: str) -> str:
    """Where an agent's Idempotency-Key lives: its caller, the operation and the journey (never the raw
    path: `/x` and `/x/` are one route) and the key. Never shown to anyone."""
    return f"{_caller_id(caller)} {operation} {journey_id} {key}"


def journey_of(agent_key_scope: str) -> str:
    """The journeyId a keyed createJourney makes (docs/ARCHITECTURE.md D2): a UUID whose 122 free bits are
    the first of the SHA-256 of the key's scope (`agent_scope`: caller, operation, key), with version 8
    (RFC 9562's custom UUID) and the RFC variant. So a repeat of the key names the same journey, two callers'
    identical keys name two, and a derived id can never be a random one (those are version 7, `new_nonce`).
    36 characters of hex digits and dashes: shared/loan_terms.py ID_PATTERN."""
    digest = bytearray(hashlib.sha256(agent_key_scope.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x80  # version 8
    digest[8] = (digest[8] & 0x3F) | 0x80  # variant 10 (RFC 9562)
    return str(UUID(bytes=bytes(digest)))


def create_hash(request_hash: str) -> str:
    """The fingerprint a keyed create leaves on its journey's Control Record (`createHash`): the request's
    hash (shared/idempotency.py `fingerprint`, hex) cut to 96 bits, base64url: 16 characters, since the record
    carries it on every write and must stay under 1 KB (tests/unit/test_applier.py). 96 bits tell two bodies
    apart beyond any accident, and only a caller's own requests share a key's scope."""
    return base64.urlsafe_b64encode(bytes.fromhex(request_hash)[:12]).decode()


def listing(caller: str, customer_id: str) -> str:
    """Where a journey is listed (shared/keys.py CUSTOMER_INDEX): the caller that created it and its
    customer, so a caller lists only the journeys it created. Never shown to anyone. One digest of both,
    32 characters whatever the customerId: the record carries it on every write, and a customerId spelled
    out again (up to 128 characters) took the record past 1 KB, two write units a write."""
    named = json.dumps([caller, customer_id], ensure_ascii=False)  # unambiguous: no separator to forge
    return hashlib.sha256(named.encode(errors="surrogatepass")).hexdigest()[:32]


def new_nonce() -> str:
    return new_id()


def nonce_from_agent_key(agent_key_scope: str) -> str:
    """A nonce derived from the agent's Idempotency-Key (scoped to its operation and journey)."""
    return hashlib.sha256(agent_key_scope.encode()).hexdigest()[:32]


def simulation(journey_id: str, nonce: str) -> str:
    return f"{journey_id}:simulate:{nonce}"


def acceptance(journey_id: str, simulation_id: str) -> str:
    return f"{journey_id}:accept:{simulation_id}"


def disbursement(journey_id: str, acceptance_id: str) -> str:
    return f"{journey_id}:disburse:{acceptance_id}"


def cancellation(journey_id: str) -> str:
    return f"{journey_id}:cancel"
