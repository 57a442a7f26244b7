"""The key scheme (D3): a key names one attempt of one command, scoped by the journey."""

import re
import uuid
from decimal import Decimal
from typing import Any

from functions.orchestrator import keys
from shared.idempotency import fingerprint
from shared.loan_terms import ID_PATTERN
from tests.fakes import FakeSystem, accept


def test_no_two_commands_share_a_key():
    # Given every command of two journeys, with the ids one journey could carry
    commands = [keys.simulation(journey, keys.new_nonce()) for journey in ("j1", "j2")] + [
        keys.simulation("j1", keys.nonce_from_agent_key("POST /journeys/j1/simulate K")),
        keys.acceptance("j1", "s1"),
        keys.acceptance("j1", "s2"),
        keys.acceptance("j2", "s1"),
        keys.disbursement("j1", "a1"),
        keys.disbursement("j1", "a2"),
        keys.disbursement("j2", "a1"),
        keys.cancellation("j1"),
        keys.cancellation("j2"),
    ]
    # Then each is a different key: no command can be answered from another's receipt
    assert len(set(commands)) == len(commands)


def test_an_agent_key_derives_one_nonce_per_scope():
    scope = "POST /journeys/j1/simulate K"
    assert keys.nonce_from_agent_key(scope) == keys.nonce_from_agent_key(scope)
    assert keys.nonce_from_agent_key(scope) != keys.nonce_from_agent_key("POST /journeys/j2/simulate K")


def test_every_retry_of_a_command_carries_its_key_and_the_next_command_another():
    # Given the orchestrator over a wire whose every first attempt commits and loses its reply, and
    # loans-api recording the Idempotency-Key of every request that reaches it
    system = FakeSystem()
    sent: list[tuple[str, str]] = []
    serve = system.wire.handler

    def recording(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if event["httpMethod"] == "POST":
            headers = {name.lower(): value for name, value in event["headers"].items()}
            sent.append((event["path"], headers["idempotency-key"]))
        return serve(event, context)

    system.wire.handler = recording
    journey = system.new_journey()
    # When the agent simulates twice (no key of its own: two quotes) and accepts, each reply lost once
    for command in (
        lambda: system.service.simulate(journey, Decimal(10000), 36, None),
        lambda: system.service.simulate(journey, Decimal(12000), 36, None),
        lambda: accept(system, journey),
    ):
        system.wire.faults = ["lose"]
        command()
    # Then each command's retry carried the key of its first attempt, and no two commands shared one
    simulate_1, retry_1, simulate_2, retry_2, accepted, retry_3 = sent
    assert (retry_1, retry_2, retry_3) == (simulate_1, simulate_2, accepted)
    assert len({simulate_1, simulate_2, accepted}) == 3


def test_a_keyed_creates_journey_id_is_its_keys_alone_and_never_a_random_ones():
    def derived(caller: str, key: str) -> str:
        return keys.journey_of(keys.agent_scope(caller, "createJourney", "", key))

    alice, bob = "arn:aws:iam::1:user/alice", "arn:aws:iam::1:user/bob"
    made = derived(alice, "k")
    # the same caller and key name the same journey; another caller's or another key's, another
    assert derived(alice, "k") == made
    others = {derived(bob, "k"), derived(alice, "k "), derived(alice, "K"), derived(alice, "k2")}
    assert made not in others, f"{made} among {others}"
    assert len(others) == 4, others
    # an id as every journeyId is (the URL's pattern), a version-8 UUID, never a random id (version 7)
    assert re.fullmatch(ID_PATTERN, made), made
    parsed = uuid.UUID(made)
    assert (parsed.version, parsed.variant, str(parsed)) == (8, uuid.RFC_4122, made), parsed
    assert uuid.UUID(keys.new_nonce()).version == 7


def test_a_creates_fingerprint_is_16_characters_and_tells_bodies_apart():
    hashes = [keys.create_hash(fingerprint("createJourney", "", {"customerId": c})) for c in ("c-1", "c-2", "c" * 128)]
    assert [len(h) for h in hashes] == [16, 16, 16], hashes
    assert len(set(hashes)) == 3, hashes
