"""The key scheme (D3): what 'the same command' means for each command."""

from functions.orchestrator import keys


def test_each_simulate_command_gets_a_fresh_key_but_a_retry_reuses_it():
    first, second = keys.new_nonce(), keys.new_nonce()
    assert keys.simulation("j1", first) != keys.simulation("j1", second)
    assert keys.simulation("j1", first) == f"j1:simulation:{first}"


def test_an_agent_key_always_derives_the_same_nonce():
    assert keys.nonce_from_agent_key("agent-1") == keys.nonce_from_agent_key("agent-1")
    assert keys.nonce_from_agent_key("agent-1") != keys.nonce_from_agent_key("agent-2")


def test_the_scheme_for_every_command():
    assert keys.acceptance("j1", "s1") == "j1:acceptance:s1"
    assert keys.disbursement("j1") == "j1:disbursement"
    assert keys.acceptance_cancel("j1", "a1") == "j1:acceptance-cancel:a1"
    assert keys.simulation_cancel("j1", "s1") == "j1:simulation-cancel:s1"
