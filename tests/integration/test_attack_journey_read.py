"""Adversarial review over moto: loans-api's bounded journey read is exact at the
page's edge (HISTORY_PAGE and one more) for every kind of history, and the ledger position it shows is
the ledger's. Straight at loans-api (tests/integration/conftest.py)."""

from __future__ import annotations

from functions.loans_api.history import HISTORY_PAGE
from tests.support import ApiClient, json_of


def quote_and_accept(loans_api: ApiClient, journey: str, index: int) -> None:
    body = {"journeyId": journey, "amount": 1000 + index, "termMonths": 12}
    quote = json_of(loans_api.post("/simulations", body, key=f"{journey}-s{index}"))
    accepted = {"journeyId": journey, "simulationId": quote["simulationId"]}
    assert loans_api.post("/acceptances", accepted, key=f"{journey}-a{index}").status == 201


def test_the_journey_read_at_exactly_one_page_of_each_history_omits_nothing_and_one_more_omits_it(loans_api):
    # Given a journey with exactly HISTORY_PAGE quotes and acceptances (twice as many events)
    journey = "j-edge"
    for index in range(HISTORY_PAGE):
        quote_and_accept(loans_api, journey, index)
    # When it is read, it lists every quote and acceptance, and only the events are cut
    read = json_of(loans_api.get(f"/journeys/{journey}"))
    assert (len(read["simulations"]), len(read["acceptances"]), len(read["events"])) == (HISTORY_PAGE,) * 3
    assert read["olderOmitted"] == ["events"]
    assert [e["seq"] for e in read["events"]] == list(range(HISTORY_PAGE + 1, 2 * HISTORY_PAGE + 1))
    assert read["acceptances"][-1]["status"] == "ACTIVE"
    assert read["simulations"][-1]["amount"] == f"{1000 + HISTORY_PAGE - 1}.00"
    # And one more quote and acceptance tip both lists over: the oldest goes, the newest is last
    quote_and_accept(loans_api, journey, HISTORY_PAGE)
    read = json_of(loans_api.get(f"/journeys/{journey}"))
    assert read["olderOmitted"] == ["simulations", "acceptances", "events"]
    assert read["simulations"][0]["amount"] == "1001.00"
    assert read["simulations"][-1]["amount"] == f"{1000 + HISTORY_PAGE}.00"
    assert [a["status"] for a in read["acceptances"]].count("ACTIVE") == 1
    assert read["acceptances"][-1]["simulationId"] == read["simulations"][-1]["simulationId"]
    assert read["seq"] == 2 * HISTORY_PAGE + 2


def test_the_journey_read_at_fewer_than_one_page_omits_nothing(loans_api):
    journey = "j-short"
    quote_and_accept(loans_api, journey, 0)
    read = json_of(loans_api.get(f"/journeys/{journey}"))
    assert read["olderOmitted"] == []
    assert [e["seq"] for e in read["events"]] == [1, 2]
