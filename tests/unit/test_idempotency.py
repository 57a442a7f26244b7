"""Key and receipt logic, without AWS."""

import pytest

from shared.errors import IdempotencyKeyReused, InvalidIdempotencyKey, MissingIdempotencyKey
from shared.idempotency import Receipt, fingerprint, require_key


@pytest.mark.parametrize("key", [None, "", "   "], ids=["none", "empty", "blank"])
def test_a_missing_or_blank_key_is_missing(key):
    with pytest.raises(MissingIdempotencyKey):
        require_key(key)


def test_a_key_over_255_characters_is_invalid_not_missing():
    with pytest.raises(InvalidIdempotencyKey):
        require_key("x" * 256)


@pytest.mark.parametrize("key", ["k", "x" * 255, "j-1:simulation:01H"], ids=["1-char", "255-chars", "a-derived-key"])
def test_keys_of_1_to_255_characters_pass(key):
    assert require_key(key) == key


def test_fingerprint_ignores_key_order_but_not_values_or_route():
    base = fingerprint("POST", "/simulations", {"a": 1, "b": 2})
    assert fingerprint("post", "/simulations", {"b": 2, "a": 1}) == base
    assert fingerprint("POST", "/simulations", {"a": 1, "b": 3}) != base
    assert fingerprint("POST", "/acceptances", {"a": 1, "b": 2}) != base


def test_a_receipt_replays_only_for_the_same_request():
    receipt = Receipt("k", fingerprint("POST", "/x", {"a": 1}), 201, '{"ok":true}')
    assert receipt.replay_for(fingerprint("POST", "/x", {"a": 1})) is receipt
    with pytest.raises(IdempotencyKeyReused):
        receipt.replay_for(fingerprint("POST", "/x", {"a": 2}))


def test_a_receipt_stores_a_long_body_compressed_and_gives_it_back_byte_for_byte():
    body = '{"event":{"snapshot":{"state":"simulated","amount":"10000.00"}},"eventId":"01a2","status":"ACTIVE"}' * 4
    values = Receipt("k", "h", 201, body).to_values(expires_at=1)
    assert "body" not in values
    assert len(values["bodyZ"]) < len(body.encode()) / 2
    assert Receipt.from_values(values).body == body


def test_a_short_body_is_kept_plain_and_a_receipt_stored_before_compression_still_replays():
    assert Receipt("k", "h", 200, "{}").to_values(expires_at=1)["body"] == "{}"
    legacy = {"idempotencyKey": "k", "requestHash": "h", "status": 201, "body": '{"ok":true}'}
    assert Receipt.from_values(legacy) == Receipt("k", "h", 201, '{"ok":true}')
