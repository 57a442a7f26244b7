"""The customer index's sort key (shared/keys.py CUSTOMER_SORT_ATTRIBUTE, the record's stored `createdAt`)
sorts as the creation time does, whatever the time and its zone: DynamoDB compares the strings byte by byte."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from shared.control_record import new_control_record
from shared.control_store import control_item, record_of
from shared.dynamo import from_item
from shared.tables import CUSTOMER_SORT_ATTRIBUTE

ZONES = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))])
TIMES = st.builds(
    lambda when, zone: when.replace(tzinfo=UTC).astimezone(zone),
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2999, 12, 31)),
    ZONES,
)


def stored(created: datetime) -> str:
    return str(from_item(control_item(new_control_record("j1", "c1", created, "listing")))[CUSTOMER_SORT_ATTRIBUTE])


@given(TIMES, TIMES)
def test_the_stored_creation_time_sorts_as_the_time(one: datetime, other: datetime) -> None:
    assert (stored(one) < stored(other)) == (one < other), (one, other, stored(one), stored(other))


def test_a_time_on_the_second_sorts_before_a_microsecond_after_it() -> None:
    # pydantic's own form drops a zero fraction: `...:00Z` would sort after `...:00.000001Z`
    second = datetime(2026, 1, 1, tzinfo=UTC)
    later = second + timedelta(microseconds=1)
    assert stored(second) < stored(later), (stored(second), stored(later))
    # and the record read back is the same time
    assert datetime.fromisoformat(stored(second)) == second, stored(second)


def test_every_later_write_carries_the_index_key_and_the_creates_fingerprint_unchanged() -> None:
    # Given a record as a keyed create stores it, read back as either road reads it (record_of) and moved on
    created = new_control_record("j1", "c1", datetime(2026, 1, 1, tzinfo=UTC), "listing-digest", "fingerprint16chr")
    item = control_item(created)
    read = record_of(item)
    later = read.model_copy(update={"version": 1, "currentState": "simulated", "updatedAt": datetime.now(UTC)})
    # Then its next write holds the same index key (so no index write) and the same fingerprint (so a repeat of
    # the create is still told apart from another body), and neither is shown
    kept = ("listing", CUSTOMER_SORT_ATTRIBUTE, "createHash")
    rewritten = control_item(later)
    assert {n: rewritten[n] for n in kept} == {n: item[n] for n in kept}, (rewritten, item)
    assert {"listing", "createHash"}.isdisjoint(later.model_dump(mode="json")), later.model_dump(mode="json")
