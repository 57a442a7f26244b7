"""The idempotency key scheme (D3). Each key says what "the same command" means:
- a simulation key carries a nonce: a new simulate command is a new quote, a retry of one is not;
- an acceptance key names the simulation: one acceptance per simulation;
- the disbursement key names only the journey: one disbursement per journey, ever;
- compensation keys name the entity they undo, so a repeated cancel is harmless."""

from __future__ import annotations

import hashlib

from uuid6 import uuid7


def new_nonce() -> str:
    return str(uuid7())


def nonce_from_agent_key(agent_key: str) -> str:
    """A nonce derived from the agent's own Idempotency-Key: the agent's retry replays downstream."""
    return hashlib.sha256(agent_key.encode()).hexdigest()[:32]


def simulation(journey_id: str, nonce: str) -> str:
    return f"{journey_id}:simulation:{nonce}"


def acceptance(journey_id: str, simulation_id: str) -> str:
    return f"{journey_id}:acceptance:{simulation_id}"


def disbursement(journey_id: str) -> str:
    return f"{journey_id}:disbursement"


def acceptance_cancel(journey_id: str, acceptance_id: str) -> str:
    return f"{journey_id}:acceptance-cancel:{acceptance_id}"


def simulation_cancel(journey_id: str, simulation_id: str) -> str:
    return f"{journey_id}:simulation-cancel:{simulation_id}"
