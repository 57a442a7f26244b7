"""`saga local`'s dashboard in a real browser (headless Chromium) against a running runtime: the widgets the
deployed dashboard declares (shared/dashboard.py) each show a value, what an operator must notice (a message
in the DLQ, a consumer that does not run) shows, and the page reads its values again by itself. The runtime
is the operator suites' (`saga local --disable consumer`, tests/e2e/road2_off.py)."""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from html.parser import HTMLParser

import pytest

from saga import local_state
from saga.local.dashboard import OFF, REFRESH_SECONDS
from shared import dashboard as board
from shared import tables
from tools.docs import browser

# A hang guard, not a budget: how long the page may take to show what the runtime holds.
PATIENCE_SECONDS = 180.0


@dataclass(frozen=True)
class Shown:
    text: str
    classes: str
    alarming: bool


class _Widgets(HTMLParser):
    """Each widget's series as the page shows them: {title: {series: Shown}}; and the body's attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.widgets: dict[str, dict[str, Shown]] = {}
        self.body: dict[str, str | None] = {}
        self._title: str | None = None
        self._alarming = False
        self._series: tuple[str, str] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "body":
            self.body = values
        elif tag == "section" and values.get("data-title"):
            self._title = values["data-title"]
            self.widgets[str(self._title)] = {}
        elif tag == "div" and "row" in (values.get("class") or "").split():
            self._alarming = "alarming" in (values.get("class") or "").split()
        elif tag == "span" and values.get("data-series") is not None:
            self._series = (str(values["data-series"]), values.get("class") or "")
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._series is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "span" and self._series is not None and self._title is not None:
            name, classes = self._series
            self.widgets[self._title][name] = Shown("".join(self._text).strip(), classes, self._alarming)
            self._series = None


def page(url: str, virtual_seconds: float = 0.0) -> _Widgets:
    parsed = _Widgets()
    parsed.feed(browser.dom(url, virtual_seconds))
    return parsed


def without_value(widgets: dict[str, dict[str, Shown]]) -> list[str]:
    """The declared widgets the page does not show, or shows with no value in any series."""
    return [
        widget.title
        for widget in board.WIDGETS
        if not any(shown.text not in ("", "-") for shown in widgets.get(widget.title, {}).values())
    ]


def shown_when(url: str, holds, what: str) -> _Widgets:
    """The page, loaded again until `holds(page)` (a condition the runtime reaches by itself)."""
    deadline = time.monotonic() + PATIENCE_SECONDS
    while True:
        loaded = page(url)
        if holds(loaded):
            return loaded
        assert time.monotonic() < deadline, f"after {PATIENCE_SECONDS:g} s the page still did not show {what}: " + (
            json.dumps({t: {s: v.text for s, v in series.items()} for t, series in loaded.widgets.items()})
        )
        time.sleep(1.0)


@pytest.fixture(scope="module")
def dashboard_url(road2_off) -> str:
    if browser.executable() is None:
        if os.environ.get("CI") or os.environ.get("SAGA_BROWSER_TEST") == "required":
            pytest.fail("no chromium: .ci/run installs Debian's chromium package before `make test`")
        pytest.skip("no chromium (`apt-get install chromium`, as .ci/run does): the dashboard is not tested")
    url = local_state.read(road2_off.state_file).get("dashboard")
    assert url, f"saga local recorded no dashboard in its state file: {road2_off.state_file.read_text()}"
    return str(url)


def test_each_declared_widget_shows_a_value_and_the_stopped_consumer_shows(dashboard_url):
    # Given `saga local --disable consumer`, When its dashboard is open in a browser
    loaded = shown_when(dashboard_url, lambda p: not without_value(p.widgets), "a value in every widget")
    # Then every widget the deployed dashboard declares is there, in its order, with a value
    assert list(loaded.widgets) == [widget.title for widget in board.WIDGETS], list(loaded.widgets)
    # And the consumer shows as off, marked, while the pollers that run show as running
    pollers = loaded.widgets[board.POLLERS_WIDGET.title]
    assert (pollers["consumer"].text, pollers["consumer"].alarming) == (OFF, True), pollers
    assert {pollers[name].text for name in ("relay", "sweeper")} == {"running"}, pollers


def test_a_message_in_the_dlq_shows_on_the_page_marked(dashboard_url, road2_off):
    # Given an empty DLQ
    road2_off.empty(tables.EVENTS_DLQ)
    dlq = board.DLQ_DEPTH.title

    def depth(shown: _Widgets) -> str:
        return shown.widgets.get(dlq, {}).get("events DLQ", Shown("", "", False)).text

    shown_when(dashboard_url, lambda p: depth(p) == "0", "an empty DLQ")
    try:
        # When a message lands in it
        road2_off.sqs().send_message(QueueUrl=road2_off.dlq(), MessageBody=json.dumps({"poison": str(uuid.uuid4())}))
        # Then the page shows it, marked as alarming (the deployed alarm's threshold is 0)
        loaded = shown_when(dashboard_url, lambda p: depth(p) == "1", "one message in the DLQ")
        assert loaded.widgets[dlq]["events DLQ"].alarming, loaded.widgets[dlq]
    finally:
        road2_off.empty(tables.EVENTS_DLQ)


def test_the_page_reads_its_values_again_by_itself(dashboard_url):
    # When the page stays open for a few refresh periods (virtual time: as fast as the page's reads allow)
    loaded = page(dashboard_url, virtual_seconds=3 * REFRESH_SECONDS + 1)
    # Then its script read the widgets again, more than once, and they still show values
    assert int(loaded.body.get("data-refreshes") or 0) >= 2, loaded.body
    assert not without_value(loaded.widgets), without_value(loaded.widgets)
