"""The benchmark's billing rules (bench/billing.py), against examples worked by hand from DynamoDB's
documented rules."""

from bench.billing import IndexShape, index_write_units, item_size, message_chunks, write_targets, write_units

KEYS = ("pk", "sk")
PENDING = IndexShape("pending", ("shard", "eventId"), "KEYS_ONLY")
PENDING_ALL = IndexShape("pending", ("shard", "eventId"), "ALL")


def outbox(status: str, shard: str | None, padding: int = 0) -> dict:
    item = {"pk": {"S": "J#1"}, "sk": {"S": "E#1"}, "eventId": {"S": "e1"}, "status": {"S": status}}
    item["snapshot"] = {"S": "x" * padding}
    if shard is not None:
        item["shard"] = {"S": shard}
    return item


def test_item_size_is_names_plus_values():
    assert item_size({"pk": {"S": "abc"}, "n": {"N": "12345"}}) == (2 + 3) + (1 + 4)


def test_writes_are_billed_per_started_kilobyte_and_doubled_in_a_transaction():
    assert (write_units(1), write_units(1024), write_units(1025), write_units(1025, transactional=True)) == (1, 1, 2, 4)


def test_an_item_entering_or_leaving_a_sparse_index_is_one_write_of_the_projected_size():
    pending, notified = outbox("PENDING", "P#0", padding=1500), outbox("NOTIFIED", None, padding=1500)
    assert index_write_units(PENDING, KEYS, None, pending) == 1  # keys only: one unit
    assert index_write_units(PENDING_ALL, KEYS, None, pending) == 2  # the whole 1.5 KB item: two
    assert index_write_units(PENDING, KEYS, pending, notified) == 1
    assert index_write_units(PENDING_ALL, KEYS, pending, notified) == 2


def test_a_changed_index_key_is_two_writes_and_an_unprojected_change_is_none():
    assert index_write_units(PENDING, KEYS, outbox("PENDING", "P#0"), outbox("PENDING", "P#1")) == 2
    assert index_write_units(PENDING, KEYS, outbox("PENDING", "P#0"), outbox("RETRY", "P#0")) == 0
    assert index_write_units(PENDING_ALL, KEYS, outbox("PENDING", "P#0"), outbox("RETRY", "P#0")) == 1
    assert index_write_units(PENDING, KEYS, outbox("NOTIFIED", None), outbox("NOTIFIED", None)) == 0


def test_messages_are_billed_in_64_kb_chunks():
    assert (message_chunks(0), message_chunks(65536), message_chunks(65537)) == (1, 1, 2)


def test_each_put_and_delete_of_a_batch_write_is_a_write_of_its_item():
    # (the relay's NOTIFIED marks are BatchWriteItem puts: each billed as the item's own write, not the call)
    put, key = outbox("NOTIFIED", "P#0"), {"pk": {"S": "J#2"}, "sk": {"S": "E#1"}}
    params = {"RequestItems": {"loans": [{"PutRequest": {"Item": put}}, {"DeleteRequest": {"Key": key}}]}}
    assert write_targets("BatchWriteItem", params) == [("loans", put, False), ("loans", key, False)]


def test_a_put_back_that_keeps_the_index_key_writes_no_keys_only_index():
    # (a mark puts the committed item back with its status changed: its keys-only index entry is unchanged)
    assert index_write_units(PENDING, KEYS, outbox("PENDING", "P#0"), outbox("NOTIFIED", "P#0")) == 0
