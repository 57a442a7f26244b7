"""The ledger read (shared/loans_ledger.py) tells "loans-api has no ledger of this journey" from any other 404:
the orchestrator answers a journey with no ledger but a record past seq 0 `journey-needs-repair` (not
retryable), and the consumer rejects its events, so only loans-api's own not-found may mean "no ledger"."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
import urllib3

from shared.errors import UpstreamRejected
from shared.loans_client import HttpLoansClient
from shared.loans_ledger import LoansLedger
from tests.fakes import FakeSystem


def simulated_journey(system: FakeSystem) -> str:
    journey_id = str(json.loads(system.service.create("c-1", None).body)["journeyId"])
    system.service.simulate(journey_id, Decimal(10000), 36, None)
    return journey_id


def test_a_journey_loans_api_never_saw_has_no_ledger():
    # Given loans-api, reached at its URL, and a journey it has had no command for
    system = FakeSystem()
    ledger = LoansLedger(HttpLoansClient("http://loans-api.invalid", system.wire, urllib3.Timeout(connect=1, read=2)))
    # When its ledger is read, then there is none
    assert ledger.latest_event("never-commanded") is None


def test_a_404_that_is_not_loans_apis_not_found_is_an_error_not_a_journey_without_ledger():
    # Given a journey loans-api holds at seq 1, and loans-api reached at a URL none of its routes answers
    # (a stage or base path deployed wrong: a 404 that says nothing about the journey)
    system = FakeSystem()
    journey_id = simulated_journey(system)
    wrong = HttpLoansClient("http://loans-api.invalid/v0", system.wire, urllib3.Timeout(connect=1, read=2))
    # When its ledger is read there, then that is an error, not "no ledger" (which would call the journey
    # one loans-api never saw: a non-retryable journey-needs-repair to the agent, its events rejected)
    try:
        found = LoansLedger(wrong).latest_event(journey_id)
    except UpstreamRejected:
        pass
    else:
        pytest.fail(f"a no-route 404 was read as the journey's ledger: {found!r}")
