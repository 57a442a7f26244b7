"""The relay marks a batch's events NOTIFIED concurrently, a bounded number at a time, each mark still
its own conditional write: one that fails is reported for its event alone, one marked meanwhile is not
a failure."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any, cast

from aws_lambda_powertools import Metrics

from functions.relay.service import MARK_CONCURRENCY, OutboxRelay
from shared.events import LoanEvent, LoanSnapshot

NOW = datetime(2026, 1, 1, tzinfo=UTC)
HANG_GUARD_SECONDS = 120  # only a broken relay waits this long: marks one at a time never meet


def events(count: int) -> list[LoanEvent]:
    return [
        LoanEvent(eventId=f"e-{n}", journeyId=f"j-{n}", seq=1, type="JourneyCancelled", occurredAt=NOW,
                  snapshot=LoanSnapshot(journeyId=f"j-{n}", state="cancelled"))
        for n in range(count)
    ]  # fmt: skip


class MeetingStore:
    """Outbox items whose marks wait until MARK_CONCURRENCY of them are in flight at once (then go on),
    counting the most in flight; `refuse` marks fail, `taken` were marked by someone else first."""

    def __init__(self, refuse: frozenset[str] = frozenset(), taken: frozenset[str] = frozenset()) -> None:
        self.meeting = threading.Barrier(MARK_CONCURRENCY, timeout=HANG_GUARD_SECONDS)
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.marked: list[str] = []
        self.refuse, self.taken = refuse, taken

    def mark_notified(self, event: LoanEvent, published_at: datetime) -> bool:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            self.meeting.wait()
            if event.eventId in self.refuse:
                raise RuntimeError(f"throttled: {event.eventId}")
            with self.lock:
                self.marked.append(event.eventId)
            return event.eventId not in self.taken
        finally:
            with self.lock:
                self.in_flight -= 1


def relay(store: MeetingStore) -> OutboxRelay:
    return OutboxRelay(cast(Any, None), store, cast(Metrics, None), clock=lambda: NOW)


def test_a_batch_is_marked_concurrently_and_never_more_than_the_bound_at_once():
    # Given a batch of twice the bound, whose marks only go on once the bound's worth are in flight together
    store = MeetingStore()
    batch = events(2 * MARK_CONCURRENCY)
    # When the relay marks them
    failed = relay(store).mark_all(batch)
    # Then every one is marked (which one-at-a-time marks could never do: the first would wait alone),
    # never more than the bound at once
    assert failed == {}
    assert sorted(store.marked) == sorted(e.eventId for e in batch)
    assert store.most_in_flight == MARK_CONCURRENCY, store.most_in_flight


def test_a_failed_mark_is_reported_for_its_event_alone_and_one_marked_meanwhile_is_no_failure():
    # Given a batch where one mark fails and one item was marked by someone else first
    store = MeetingStore(refuse=frozenset({"e-3"}), taken=frozenset({"e-5"}))
    batch = events(MARK_CONCURRENCY)
    # When the relay marks them
    failed = relay(store).mark_all(batch)
    # Then only the failed one is reported (still PENDING: its record is retried), with why
    assert {event_id: str(error) for event_id, error in failed.items()} == {"e-3": "throttled: e-3"}
    assert sorted(store.marked) == sorted(e.eventId for e in batch if e.eventId != "e-3")


def test_one_relay_makes_one_pool_of_marks_however_many_batches_it_marks_at_once(monkeypatch):
    # Given pools that count themselves, where the first one made inside a batch's marks waits (a hang guard)
    # until a second batch's marks have made theirs, as two concurrent batches may (the local runtime's lanes)
    from concurrent.futures import ThreadPoolExecutor

    from functions.relay import service

    made: list[str] = []
    second = threading.Event()
    real = ThreadPoolExecutor

    def counting(*args: Any, **kwargs: Any) -> Any:
        made.append(threading.current_thread().name)
        if len(made) >= 2:
            second.set()
        elif threading.current_thread() is not threading.main_thread():
            second.wait(HANG_GUARD_SECONDS)
        return real(*args, **kwargs)

    monkeypatch.setattr(service, "ThreadPoolExecutor", counting)
    store = MeetingStore()
    store.meeting = threading.Barrier(1)  # marks go on at once here
    marker = relay(store)
    # When two batches are marked at once
    batches = [threading.Thread(target=marker.mark_all, args=(events(4),), name=f"batch-{n}") for n in range(2)]
    for batch in batches:
        batch.start()
    for batch in batches:
        batch.join(HANG_GUARD_SECONDS)
    # Then the relay made one pool for both (not one each, the first left behind with its threads)
    assert len(made) == 1, f"{len(made)} pools made, by {made}"
    assert len(store.marked) == 8, store.marked
