"""Commands racing on one journey over real HTTP, against `saga local` (the races that broke the
multi-call design were reproduced this way: simultaneous calls, one journey)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from saga.ops.journeys import compare

TERMS = {"amount": 10000, "termMonths": 36}


def at_once(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run the calls in threads released together."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> Any:
        barrier.wait()
        return call()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


def journey_in(system, state: str) -> str:
    status, record = system.api("POST", "/journeys", {"customerId": "race"}, Idempotency_Key=str(uuid.uuid4()))
    assert status == 201, record
    jid = str(record["journeyId"])
    if state in ("simulated", "accepted"):
        assert system.api("POST", f"/journeys/{jid}/simulate", TERMS)[0] == 200
    if state == "accepted":
        assert system.command(jid, "accept")[0] == 200
    return jid


def settled(system, jid: str) -> tuple[dict, dict | None]:
    """The record once road 2 had time to deliver, next to loans-api's truth."""

    def agreed() -> Any:
        record, truth = system.api("GET", f"/journeys/{jid}")[1], system.truth(jid)
        return (record, truth) if compare(record, truth)["agree"] else None

    found: tuple[dict, dict | None] | None = system.wait_for(agreed)
    assert found, compare(system.api("GET", f"/journeys/{jid}")[1], system.truth(jid))
    return found


def test_cancel_and_simulate_at_the_same_moment_never_hide_an_active_quote(system, clean_proxy):
    for _ in range(8):
        # Given a new journey, When the agent cancels and simulates at the same moment
        jid = journey_in(system, "created")
        calls: list[Callable[[], Any]] = [
            partial(system.api, "POST", f"/journeys/{jid}/simulate", TERMS),
            partial(system.api, "POST", f"/journeys/{jid}/cancel"),
        ]
        simulate, cancel = at_once(calls)
        # Then the cancel always wins or follows: the journey ends cancelled with nothing ACTIVE
        assert cancel[0] == 200
        assert simulate[0] in (200, 409), simulate
        record, truth = settled(system, jid)
        assert record["currentState"] == "cancelled"
        assert truth is not None
        assert all(s["status"] != "ACTIVE" for s in truth["simulations"])


def test_concurrent_cancels_all_answer_the_cancelled_record(system, clean_proxy):
    jid = journey_in(system, "accepted")
    answers = at_once([lambda: system.api("POST", f"/journeys/{jid}/cancel") for _ in range(4)])
    assert {(status, record["currentState"]) for status, record in answers} == {(200, "cancelled")}
    truth = system.truth(jid)
    assert [e["type"] for e in truth["events"]].count("JourneyCancelled") == 1
    assert all(a["status"] == "CANCELLED" for a in truth["acceptances"])


def test_one_key_with_different_amounts_at_once_is_one_quote_and_422s(system, clean_proxy):
    jid = journey_in(system, "created")
    calls: list[Callable[[], Any]] = [
        partial(
            system.api,
            "POST",
            f"/journeys/{jid}/simulate",
            {"amount": amount, "termMonths": 36},
            Idempotency_Key="same",
        )
        for amount in (5000, 6000, 7000, 8000, 9000, 10000)
    ]
    answers = at_once(calls)
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200, 422, 422, 422, 422, 422], answers
    for status, problem in answers:
        if status == 422:
            assert problem["type"].endswith("idempotency-key-reused")
            assert jid + ":" not in problem["detail"]
    assert len(system.truth(jid)["simulations"]) == 1


def test_a_simulate_key_repeated_after_accept_is_a_replay_that_keeps_the_acceptance(system, clean_proxy):
    jid = journey_in(system, "created")
    assert system.api("POST", f"/journeys/{jid}/simulate", TERMS, Idempotency_Key="quote-1")[0] == 200
    accepted = system.command(jid, "accept")[1]
    status, payload, headers = system.call(
        "POST", f"{system.api_url}/journeys/{jid}/simulate", {"amount": 1e4, "termMonths": 36},
        {"Idempotency-Key": "quote-1"},
    )  # fmt: skip
    assert (status, headers.get("Idempotent-Replayed")) == (200, "true")
    assert payload["acceptance"] == accepted["acceptance"]
    assert [a["status"] for a in system.truth(jid)["acceptances"]] == ["ACTIVE"]
