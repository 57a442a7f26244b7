"""The key scheme (D3): a key names one attempt of one command, scoped by the journey."""

from functions.orchestrator import keys


def test_no_two_commands_share_a_key():
    # Given every command of two journeys, with the ids one journey could carry
    commands = [keys.simulation(journey, keys.new_nonce()) for journey in ("j1", "j2")] + [
        keys.simulation("j1", keys.nonce_from_agent_key("POST /journeys/j1/simulate K")),
        keys.acceptance("j1", "s1"),
        keys.acceptance("j1", "s2"),
        keys.acceptance("j2", "s1"),
        keys.disbursement("j1"),
        keys.disbursement("j2"),
        keys.cancellation("j1"),
        keys.cancellation("j2"),
    ]
    # Then each is a different key: no command can be answered from another's receipt
    assert len(set(commands)) == len(commands)


def test_an_agent_key_derives_one_nonce_per_scope():
    scope = "POST /journeys/j1/simulate K"
    assert keys.nonce_from_agent_key(scope) == keys.nonce_from_agent_key(scope)
    assert keys.nonce_from_agent_key(scope) != keys.nonce_from_agent_key("POST /journeys/j2/simulate K")
