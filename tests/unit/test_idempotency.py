"""Key and receipt logic, without AWS."""

import re

import pytest

from functions.orchestrator.keys import new_nonce
from shared.errors import IdempotencyKeyReused, InvalidIdempotencyKey, InvalidOriginRequestId, MissingIdempotencyKey
from shared.idempotency import Answer, Receipt, fingerprint, read_key, read_origin, require_key


def test_the_orchestrators_origin_request_ids_are_valid_and_an_absent_one_is_none():
    origin = new_nonce()
    assert read_origin(origin) == origin
    assert read_origin(None) is None


@pytest.mark.parametrize("origin", ["", "\u00e9" * 64, "r\u00a01", "r 1", "r\t", "r" * 65], ids=repr)
def test_an_origin_request_id_that_is_not_an_id_is_invalid(origin):
    with pytest.raises(InvalidOriginRequestId):
        read_origin(origin)


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


@pytest.mark.parametrize("sent", [" k-1", "k-1 ", "\tk-1", "k-1\t", " \t k-1 \t "], ids=repr)
def test_spaces_and_tabs_around_a_key_are_not_part_of_it(sent):
    # Given a key sent with the optional whitespace HTTP puts around any field value (RFC 9110 section 5.5),
    # which a compliant server strips and http.server keeps when it trails
    # Then it is the key without it, required or not
    assert read_key(sent) == "k-1"
    assert require_key(sent) == "k-1"


def test_a_space_inside_a_key_is_part_of_it():
    assert read_key(" a b ") == "a b"


def test_a_key_of_255_characters_between_spaces_is_255_characters():
    assert read_key(" " + "x" * 255 + "\t") == "x" * 255


@pytest.mark.parametrize(
    ("sent", "named"),
    [
        ("k\x0b", "U+000B at character 2"),  # vertical tab: whitespace, but not HTTP's
        ("\x0ck", "U+000C at character 1"),  # form feed
        ("k\u00a0", "U+00A0 at character 2"),  # no-break space
        ("a\tb", "U+0009 at character 2"),  # a tab is only ignored around the key
        ("k\x00", "U+0000 at character 2"),
        ("ключ", "U+043A at character 1"),  # beyond ASCII: http.server reads these bytes as Latin-1
    ],
    ids=["vertical-tab", "form-feed", "no-break-space", "inner-tab", "nul", "cyrillic"],
)
def test_a_key_with_anything_but_printable_ascii_is_invalid_and_the_problem_names_the_character(sent, named):
    with pytest.raises(InvalidIdempotencyKey, match=re.escape(named)):
        read_key(sent)
    with pytest.raises(InvalidIdempotencyKey, match=re.escape(named)):
        require_key(sent)


def test_no_header_is_no_key_but_an_empty_one_is_invalid():
    # Given an optional key: absent is no key; present but empty (only whitespace) is refused, not ignored,
    # so an agent that meant to send a key never has its repeat priced again
    assert read_key(None) is None
    with pytest.raises(InvalidIdempotencyKey, match="empty"):
        read_key(" \t ")


def test_fingerprint_ignores_key_order_but_not_values_or_route():
    base = fingerprint("POST", "/simulations", {"a": 1, "b": 2})
    assert fingerprint("post", "/simulations", {"b": 2, "a": 1}) == base
    assert fingerprint("POST", "/simulations", {"a": 1, "b": 3}) != base
    assert fingerprint("POST", "/acceptances", {"a": 1, "b": 2}) != base


def test_a_receipt_replays_its_recorded_answer_only_for_the_same_request():
    receipt = Receipt("k", fingerprint("POST", "/x", {"a": 1}), 201, '{"ok":true}', origin="r-1")
    replay = receipt.replay_for(fingerprint("POST", "/x", {"a": 1}))
    assert replay == Answer(201, '{"ok":true}', replayed=True, origin="r-1"), replay
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


def test_a_receipt_keeps_its_key_once_in_its_partition_key_and_reads_it_back_from_there():
    # Given a receipt stored as values (no second copy of the key)
    values = Receipt("caller:op:k-1", "h", 201, "{}").to_values(expires_at=1)
    # Then the key is in the partition key alone, and the receipt reads back whole
    assert "idempotencyKey" not in values
    assert values["pk"] == "RECEIPT#caller:op:k-1"
    assert Receipt.from_values(values) == Receipt("caller:op:k-1", "h", 201, "{}")
