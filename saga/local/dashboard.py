"""`saga local`'s dashboard: the widgets the deployed stack's CloudWatch dashboard shows (shared/dashboard.py
declares them for both), read from the local runtime, on a web page that refreshes itself and needs no
network (its script and style are inline, its charts plain SVG).

Where each series comes from, locally: a function's metric from what its containers emitted
(saga/local/local_metrics.py), over the same window CloudWatch reads it (a minute; the audit's over its
schedule); a queue's depth and age from the local endpoint, as `saga status` reads them (saga/ops/road2.py);
the stream's iterator age from the relay's poller; whether a poller runs from the runtime. The audit is not
scheduled locally: the page runs it (read-only, over the journeys changed in the last hour, as the scheduled
run reads its window) at most once every AUDIT_EVERY_SECONDS, and records its result as the auditor's metrics."""

from __future__ import annotations

import html
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger
from werkzeug import Request, Response

from functions.auditor.settings import AuditorSettings
from saga.local.local_metrics import LocalMetrics
from saga.ops import journeys, road2
from saga.ops.target import Target
from saga.threaded_http import ThreadedHttpServer, problem_response
from shared import dashboard as board
from shared import metric_names as names
from shared import topology

logger = Logger(service="saga-local", child=True)

PERIOD_SECONDS = 60.0  # the deployed dashboard's period (infra/observability.py)
AUDIT_PERIOD_SECONDS = 60.0 * (topology.AUDITOR.schedule_minutes or 5)
AUDIT_EVERY_SECONDS = 30.0
AUDIT_WINDOW_SECONDS = 3600.0
REFRESH_SECONDS = 3
HISTORY = 60  # readings kept per series for its sparkline (one per refresh: three minutes)
NARROW = 6  # columns (of 24): a widget this narrow draws no sparklines

# Poller states (PollerRuns series).
RUNNING, STOPPED, OFF = "running", "stopped", "off"
RUN_BY_PAGE = "run by this page"


@dataclass(frozen=True)
class Reading:
    """One series' value now: a number (None: no datapoint), or a state (a poller's)."""

    label: str
    value: float | None = None
    state: str | None = None
    alarming: bool = False


# A reading over these is drawn as alarming (the thresholds the deployed alarms use, infra/alarms.py).
_ALARM_ABOVE: dict[board.Series, float] = {
    board.OUTBOX_AGE.left[0]: topology.OUTBOX_AGE_ALARM_SECONDS,
    board.DLQ_DEPTH.left[0]: 0,
    board.DLQ_DEPTH.left[1]: 0,
    board.EVENTS_QUEUE_WIDGET.right[0]: topology.EVENTS_QUEUE_AGE_ALARM_SECONDS,
    board.ROAD_TWO_LAG.left[0]: topology.ITERATOR_AGE_ALARM_MS,
    board.ROAD_TWO_LAG.right[0]: 0,
    board.REJECTED.left[0]: 0,
    board.OUT_OF_SYNC.left[0]: 0,
    board.UNREADABLE.left[0]: 0,
    board.UNREADABLE.left[1]: 0,
}


class LocalBoard:
    """Reads every widget of shared/dashboard.py from the local runtime."""

    def __init__(
        self,
        metrics: LocalMetrics,
        target: Callable[[], Target],
        pollers: Callable[[], dict[str, str]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._metrics = metrics
        self._target = target
        self._pollers = pollers
        self._clock = clock
        self._audited_at: float | None = None
        self._lock = threading.Lock()
        self._history: dict[tuple[str, str], deque[float]] = {}

    def read(self) -> dict[str, list[Reading]]:
        """Each widget's readings, by title (and each number kept for its sparkline)."""
        with self._lock:  # one read at a time: two open pages do not double the runtime's load
            target = self._target()
            self._audit(target)
            queues = _queues(target)
            pollers = self._pollers()
            readings = {
                widget.title: [self._reading(series, queues, pollers) for series in widget.series]
                for widget in board.WIDGETS
            }
            for title, values in readings.items():
                for reading in values:
                    if reading.value is not None:
                        key = (title, reading.label)
                        self._history.setdefault(key, deque(maxlen=HISTORY)).append(reading.value)
            return readings

    def history(self, title: str, label: str) -> list[float]:
        return list(self._history.get((title, label), ()))

    def _reading(self, series: board.Series, queues: dict[str, Any], pollers: dict[str, str]) -> Reading:
        value: float | None
        match series:
            case board.SagaMetric(service=service, name=name, statistic=statistic, audit_period=audit_period):
                window = AUDIT_PERIOD_SECONDS if audit_period else PERIOD_SECONDS
                value = self._metrics.statistic(service, name, statistic, window)
                if value is None and statistic == "Sum":
                    value = 0.0  # a count over the window: nothing happened
            case board.SagaSum(name=name, services=services):
                value = sum(self._metrics.statistic(s, name, "Sum", PERIOD_SECONDS) or 0.0 for s in services)
            case board.QueueMetric(queue=queue, measure=measure):
                value = queues[queue][measure]
            case board.IteratorAge():
                value = self._metrics.statistic(names.RELAY, "IteratorAge", "Maximum", PERIOD_SECONDS)
            case board.PollerRuns(service=service):
                if service not in pollers:  # not scheduled locally: this page runs it (_audit)
                    return Reading(series.label, state=RUN_BY_PAGE)
                state = pollers[service]
                return Reading(series.label, state=state, alarming=state != RUNNING)
        threshold = _ALARM_ABOVE.get(series)
        return Reading(series.label, value, alarming=threshold is not None and (value or 0) > threshold)

    def _audit(self, target: Target) -> None:
        """The audit the deployed stack schedules, read-only, at most once every AUDIT_EVERY_SECONDS; its
        findings recorded as the auditor's metrics, as its scheduled run reports them."""
        now = self._clock()
        if self._audited_at is not None and now - self._audited_at < AUDIT_EVERY_SECONDS:
            return
        self._audited_at = now
        grace = AuditorSettings.model_fields["grace_seconds"].default
        try:
            report = journeys.audit(target, grace, since_seconds=AUDIT_WINDOW_SECONDS)
        except Exception:  # the page shows the rest; the next read tries again
            logger.exception("the dashboard's audit failed")
            self._audited_at = None
            return
        self._metrics.record(names.AUDITOR, {
            names.JOURNEYS_AUDITED: [report["audited"]],
            names.JOURNEYS_OUT_OF_SYNC: [len(report["outOfSync"])],
            names.OLDEST_OUT_OF_SYNC_AGE_SECONDS: [report["oldestOutOfSyncAgeSeconds"]],
        })  # fmt: skip


def _queues(target: Target) -> dict[str, dict[str, float | None]]:
    """Each watched queue's visible messages and its oldest message's age (s), as `saga status` reads them."""
    urls = {
        board.EVENTS_QUEUE: target.events_queue_url,
        board.EVENTS_DLQ: target.events_dlq_url,
        board.RELAY_FAILURES: target.relay_failures_url,
    }
    return {
        queue: {
            board.VISIBLE: float(road2.depth(target, url)["visible"]),
            board.OLDEST_AGE: road2.oldest_message_age(target, url) if queue == board.EVENTS_QUEUE else None,
        }
        for queue, url in urls.items()
    }


# -- the page ------------------------------------------------------------------------------------------

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px;background:#f4f5f7;color:#16191f}
h1{font-size:18px;margin:0 0 4px}
p.meta{margin:0 0 12px;color:#5f6b7a}
.grid{display:grid;grid-template-columns:repeat(24,1fr);gap:10px}
.widget{background:#fff;border:1px solid #d5dbdb;border-radius:6px;padding:8px 10px}
.widget h2{font-size:13px;font-weight:600;margin:0 0 6px}
.row{display:flex;align-items:center;gap:8px;justify-content:space-between}
.label{color:#414d5c;flex:1;overflow-wrap:break-word}
.value{font-weight:600;font-variant-numeric:tabular-nums;min-width:4em;text-align:right}
.alarming .value,.alarming .label{color:#d13212}
.running{color:#037f0c}.stopped,.off{color:#d13212}
svg{flex:none}
"""

_SCRIPT = f"""
let refreshes = 0;
async function refresh() {{
  try {{
    const answer = await fetch('widgets', {{cache: 'no-store'}});
    if (answer.ok) {{
      document.getElementById('grid').innerHTML = await answer.text();
      refreshes += 1;
      document.body.dataset.refreshes = refreshes;
      document.getElementById('updated').textContent = new Date().toLocaleTimeString();
    }}
  }} catch (error) {{
    document.getElementById('updated').textContent = 'not reachable: ' + error;
  }}
}}
setInterval(refresh, {REFRESH_SECONDS * 1000});
"""


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if value == int(value) or abs(value) >= 100 else f"{value:.1f}"


def _sparkline(points: list[float], width: int = 80, height: int = 18) -> str:
    if len(points) < 2:
        return f'<svg width="{width}" height="{height}"></svg>'
    top = max(points) or 1.0
    step = width / (len(points) - 1)
    line = " ".join(f"{i * step:.1f},{height - 1 - (p / top) * (height - 2):.1f}" for i, p in enumerate(points))
    return (
        f'<svg width="{width}" height="{height}" aria-hidden="true"><polyline fill="none" stroke="#0972d3" '
        f'stroke-width="1.5" points="{line}"/></svg>'
    )


def render_widgets(readings: dict[str, list[Reading]], history: Callable[[str, str], list[float]]) -> str:
    """The grid's widgets, as HTML: each a title and, per series, its label, a sparkline and its value."""
    parts = []
    for widget in board.WIDGETS:
        rows = []
        for reading in readings[widget.title]:
            shown = reading.state if reading.state is not None else _number(reading.value)
            kind = f" {reading.state}" if reading.state in (RUNNING, STOPPED, OFF) else ""
            # a narrow widget's labels need its width: no sparkline there
            drawn = reading.state is None and widget.width > NARROW
            spark = _sparkline(history(widget.title, reading.label)) if drawn else ""
            label = html.escape(reading.label)
            rows.append(
                f'<div class="row{" alarming" if reading.alarming else ""}"><span class="label">{label}</span>{spark}'
                f'<span class="value{kind}" data-series="{label}">{html.escape(shown)}</span></div>'
            )
        parts.append(
            f'<section class="widget" style="grid-column:span {widget.width}" data-title="{html.escape(widget.title)}">'
            f"<h2>{html.escape(widget.title)}</h2>{''.join(rows)}</section>"
        )
    return "".join(parts)


def render_page(widgets: str) -> str:
    """The whole page: the widgets as read now, and the script that reads them again every few seconds."""
    now = datetime.now(UTC).strftime("%H:%M:%S UTC")
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>loan-saga: saga local</title>'
        f'<meta name="viewport" content="width=device-width"><style>{_STYLE}</style></head>'
        '<body data-refreshes="0"><h1>loan-saga: saga local</h1><p class="meta">The widgets of the deployed '
        "stack's CloudWatch dashboard (shared/dashboard.py), read from this runtime: per minute unless they say "
        f'otherwise. Updated <span id="updated">{now}</span>, every {REFRESH_SECONDS} s.</p>'
        f'<div class="grid" id="grid">{widgets}</div><script>{_SCRIPT}</script></body></html>'
    )


class DashboardServer(ThreadedHttpServer):
    """The page on `host:port`: `/` the page, `/widgets` its widgets (what the page's script reads),
    `/readings.json` the same readings as JSON."""

    def __init__(self, local_board: LocalBoard, host: str, port: int) -> None:
        self._board = local_board
        super().__init__(self._serve, host, port, "dashboard")

    def _serve(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        return self._answer(Request(environ))(environ, start_response)

    def _answer(self, request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return problem_response(
                501, "not-implemented", "Not Implemented", f"unsupported method ({request.method!r})"
            )
        if request.path not in ("/", "/widgets", "/readings.json"):
            return problem_response(
                404, "not-found", "Not found", "the dashboard serves /, /widgets and /readings.json"
            )
        readings = self._board.read()
        if request.path == "/readings.json":
            values = {title: [r.__dict__ for r in series] for title, series in readings.items()}
            return _page(json.dumps(values), "application/json")
        widgets = render_widgets(readings, self._board.history)
        page = widgets if request.path == "/widgets" else render_page(widgets)
        return _page(page, "text/html; charset=utf-8")


def _page(body: str, content_type: str) -> Response:
    return Response(body, 200, content_type=content_type, headers={"Cache-Control": "no-store"})
