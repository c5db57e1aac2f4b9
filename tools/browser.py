"""Drive the real app in headless Chromium: the end-to-end test and the screenshots.

:func:`streamlit_server` runs ``streamlit run app.py`` over a given ``VRVM_HOME`` on a
free port; :func:`two_zones` and :func:`click_zone` pick an origin and a destination on
the zone map the way a planner does, at the screen pixels :func:`lnglat_to_pixel`
computes from the map's initial view (the Vega-Lite map, the default, and the deck.gl
map draw the same view). Playwright pages are passed in by the callers
(``tests/app/test_e2e_browser.py``, ``tools/screenshots.py``), which import Playwright
themselves; nothing here is used by the app.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

from vrvm import TravelTimeModel
from vrvm.services.map.area import (
    ViewState,
    build_service_area,
    load_zone_choice,
    mercator_x,
    mercator_y,
    zone_choice,
)
from vrvm.services.versions import models

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"  # Debian's package (apt-get install -y chromium)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--enable-unsafe-swiftshader",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(
    home: Path,
    log_path: Path,
    *,
    timeout_s: float = 300.0,
    env: dict[str, str] | None = None,
    script: str = "app.py",
):
    """``streamlit run app.py`` over ``home``; yields its URL once healthy, stops it after.

    ``env`` adds to the server's environment (an analyst passphrase, say); ``script``
    runs another script of the repository instead (its path from the repository's root;
    the app's settings in ``.streamlit/`` apply to it too). The server's
    output goes to ``log_path``. Raises RuntimeError with that log when the
    server exits or is not healthy within ``timeout_s`` (a first start trains the demo
    model first; a deadline, not a wait: on a busy two-core machine imports alone take
    tens of seconds).
    """
    port = free_port()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                script,
                "--server.headless",
                "true",
                "--server.port",
                str(port),
                "--browser.gatherUsageStats",
                "false",
            ],
            cwd=REPO,
            env={**os.environ, **(env or {}), "VRVM_HOME": str(home)},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so we stop exactly it
        )
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        log.flush()
                        raise RuntimeError(
                            "streamlit did not start:\n"
                            + Path(log_path).read_text(errors="replace")
                        ) from None
                    time.sleep(0.2)
            yield f"http://127.0.0.1:{port}"
        finally:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=10)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)


def lnglat_to_pixel(
    view: ViewState, lat, lon, *, width_px: float, height_px: float
) -> tuple[np.ndarray, np.ndarray]:
    """Screen pixel (from the map's top-left corner) of points in the initial view.

    The inverse of what deck.gl's ``MapView`` draws (pitch 0, bearing 0).

    Examples
    --------
    >>> v = ViewState(41.8, -87.7, 10.0)
    >>> x, y = lnglat_to_pixel(v, 41.8, -87.7, width_px=800, height_px=600)
    >>> float(x), float(y)
    (400.0, 300.0)
    """
    scale = 2.0**view.zoom
    x = (mercator_x(lon) - mercator_x(view.longitude)) * scale
    y = (mercator_y(np.asarray(lat, dtype=float)) - mercator_y(view.latitude)) * scale
    return width_px / 2.0 + x, height_px / 2.0 + y


def two_zones(home: Path, width: float, height: float) -> list[tuple[str, float, float]]:
    """Two busy zones well inside the map canvas and far apart: (label, x, y) pixels."""
    _, path = models.active_model_path(home)
    model = TravelTimeModel.load(path)
    chosen = zone_choice(home)  # the planner's polygons, when they are the zones
    zones = load_zone_choice(home, chosen.name) if chosen else None
    area = build_service_area(
        model, trips=models.Home(home).load_training_trips(model), zones=zones
    )
    grid = area.grid
    x, y = lnglat_to_pixel(area.view, grid["lat"], grid["lon"], width_px=width, height_px=height)
    inside = (x > 50) & (x < width - 60) & (y > 50) & (y < height - 50)
    first = int(np.flatnonzero(inside)[np.argmax(grid["n_points"].to_numpy()[inside])])
    far = inside & (np.hypot(x - x[first], y - y[first]) > 0.3 * min(width, height))
    second = int(np.flatnonzero(far)[np.argmax(grid["n_points"].to_numpy()[far])])
    return [(grid["label"][i], float(x[i]), float(y[i])) for i in (first, second)]


def click_zone(
    page,
    canvas,
    label: str,
    x: float,
    y: float,
    attempts: int = 3,
    hover_ms: int = 30_000,
    field: str | None = None,
    timeout_ms: int = 120_000,
) -> None:
    """Hover a zone until deck.gl has picked it, then click it until the app selects it.

    deck.gl picks the object under the pointer on hover, and a click that lands before
    the pick selects nothing; on a loaded machine (software WebGL sharing two cores with
    the server) the pick takes seconds. So each click waits until the map's tooltip names
    the zone (:data:`PICKED`; at most ``hover_ms`` times the attempt's number, after
    which a map without tooltips is clicked anyway), and is repeated until the zone's
    label appears in the OD inputs, within ``timeout_ms`` (in the input labelled
    ``field`` when given: a label already shown elsewhere, such as a first visit's trip,
    must not pass for this click). Each click waits for the app to be idle first: a
    click sent while the previous one's run is still going replaces that run's
    selection, and the earlier click would be lost. Raises AssertionError when the zone
    is not selected after ``attempts`` clicks.
    """
    if field is None:
        check = "label => [...document.querySelectorAll('input')].some(e => e.value === label)"
    else:
        check = (
            "([label, field]) => [...document.querySelectorAll('input')].some("
            "e => e.value === label && e.getAttribute('aria-label') === field)"
        )
    for attempt in range(attempts):
        page.wait_for_function(RUNNING, timeout=timeout_ms)
        canvas.hover(position={"x": x, "y": y})
        true_within(page, PICKED, label, timeout_ms=hover_ms * (attempt + 1))
        canvas.click(position={"x": x, "y": y})
        if true_within(page, check, label if field is None else [label, field], timeout_ms):
            return
    raise AssertionError(f"{label!r} was not selected after {attempts} clicks on the map")


def true_within(page, js: str, arg=None, timeout_ms: float = 120_000) -> bool:
    """Wait until ``js(arg)`` is true in the page; False if it is not within ``timeout_ms``.

    Playwright's TimeoutError is recognised by name: its callers import Playwright, not
    this module.
    """
    try:
        page.wait_for_function(js, arg=arg, timeout=timeout_ms)
    except Exception as exc:
        if type(exc).__name__ != "TimeoutError":
            raise
        return False
    return True


def wait_for_map(page, timeout_ms: float = 180_000) -> None:
    """Wait until deck.gl has set up a map of the page (:data:`MAP_READY`), the app is
    idle (:data:`RUNNING`) and the browser has painted (:data:`PAINTED`): the condition
    a fixed wait for deck.gl's first frame stood for."""
    page.wait_for_function(MAP_READY, timeout=timeout_ms)
    page.wait_for_function(RUNNING, timeout=timeout_ms)
    page.evaluate(PAINTED)


def wait_for_no_tooltip(page, timeout_ms: float = 180_000) -> None:
    """Wait until no map shows a tooltip (after the pointer left it) and that is painted."""
    page.wait_for_function(NO_TOOLTIP, timeout=timeout_ms)
    page.evaluate(PAINTED)


MAP_READY = (
    "() => [...document.querySelectorAll('.deck-tooltip')].some(t => {"
    " for (let e = t.parentElement; e; e = e.parentElement) {"
    " const c = e.querySelector('canvas'); if (c) return c.width > 0 && c.height > 0; }"
    " return false; })"
    " || [...document.querySelectorAll('[data-testid=\"stVegaLiteChart\"] canvas')]"
    ".some(c => c.width > 0 && c.height > 0)"
)
"""True once a map is set up: deck.gl's (its tooltip element made in the deck's root,
beside its canvas, which has its size) or Vega-Lite's (its canvas has its size)."""

PICKED = (
    "label => [...document.querySelectorAll('.deck-tooltip')]"
    ".some(e => e.style.display !== 'none' && e.innerText.includes(label))"
    " || [...document.querySelectorAll('.vg-tooltip.visible')]"
    ".some(e => e.innerText.includes(label))"
)
"""True while a map's tooltip names ``label``: the map has picked that zone on hover."""

VEGA_DRAWN = (
    'n => document.querySelectorAll(\'[data-testid="stVegaLiteChart"] canvas,'
    ' [data-testid="stVegaLiteChart"] svg.marks\').length >= n'
)
"""True once at least ``n`` Vega-Lite charts are drawn (the Predict page's map, density
and profile are three; their titles are drawn on the canvas, not in the page's text)."""

NO_TOOLTIP = (
    "() => [...document.querySelectorAll('.deck-tooltip')].every(e => e.style.display === 'none')"
    " && !document.querySelector('.vg-tooltip.visible')"
)
"""True when no map shows a tooltip."""


# --------------------------------------------------------------------------------------
# Timing an interaction: what the websocket carried, and when the page was idle again.
# --------------------------------------------------------------------------------------

RUNNING = (
    '() => !document.querySelector(\'[data-testid="stStatusWidgetRunningIcon"],'
    ' [data-testid="stStatusWidgetRunningManIcon"], [data-stale="true"]\')'
)
"""True when Streamlit shows no running indicator and no element is stale (faded)."""

LONG_TASKS_JS = """() => {
  if (window.__vrvmLongTasks) return;
  window.__vrvmLongTasks = [];
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) window.__vrvmLongTasks.push([e.startTime, e.duration]);
  }).observe({type: "longtask", buffered: true});
}"""
"""Records the page's long tasks (main thread busy over 50 ms) in ``window.__vrvmLongTasks``."""

PAINTED = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
"""Resolves after the browser has painted the current state (two animation frames)."""


class WebsocketLog:
    """Every Streamlit websocket frame of a Playwright page: when, which way, how large, what.

    Received frames are Streamlit ``ForwardMsg`` protobufs, sent ones ``BackMsg``; each
    is decoded to its kind (``"delta:plotly_chart"``, ``"script_finished"``,
    ``"rerun_script"``, ...) so that a timed interaction can say which elements its
    bytes were. Attach before ``page.goto``.
    """

    def __init__(self, page) -> None:
        self.frames: list[tuple[float, str, int, str]] = []  # (time, "in"/"out", bytes, kind)
        page.on("websocket", self._attach)

    def _attach(self, ws) -> None:
        if "_stcore/stream" not in ws.url:
            return
        ws.on("framereceived", lambda payload: self._add("in", payload))
        ws.on("framesent", lambda payload: self._add("out", payload))

    def _add(self, direction: str, payload) -> None:
        now = time.perf_counter()
        data = payload if isinstance(payload, bytes) else str(payload).encode()
        self.frames.append((now, direction, len(data), _frame_kind(direction, data)))

    def mark(self) -> int:
        """The position to time from (the frames recorded so far)."""
        return len(self.frames)

    def since(self, mark: int) -> list[tuple[float, str, int, str]]:
        return self.frames[mark:]

    def finished_after(self, mark: int) -> float | None:
        """When the first script (or fragment) run that ended after ``mark`` ended."""
        for t, direction, _, kind in self.frames[mark:]:
            if direction == "in" and kind.startswith("script_finished"):
                return t
        return None


def _frame_kind(direction: str, data: bytes) -> str:
    try:
        if direction == "in":
            from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

            msg = ForwardMsg.FromString(data)
            kind = msg.WhichOneof("type") or "?"
            if kind == "delta":
                delta = msg.delta
                inner = delta.WhichOneof("type") or "?"
                if inner == "new_element":
                    inner = delta.new_element.WhichOneof("type") or "?"
                return f"delta:{inner}"
            if kind == "script_finished":
                return f"script_finished:{msg.script_finished}"
            return kind
        from streamlit.proto.BackMsg_pb2 import BackMsg

        return BackMsg.FromString(data).WhichOneof("type") or "?"
    except Exception:  # a frame that is not a Streamlit message
        return "?"


def timed_interaction(
    page,
    log: WebsocketLog,
    action,
    done_js: str,
    arg=None,
    *,
    timeout_s: float = 60.0,
) -> dict:
    """Do ``action()`` and time it until the page shows its result and is idle.

    Done means: a script (or fragment) run that started after the action has finished
    (its ``script_finished`` message arrived), ``done_js(arg)`` is true in the page (the
    new answer is shown), Streamlit shows no running indicator and nothing stale, and
    the browser has painted that state. Returns the seconds from the action to done
    (``total_s``) and where they went: ``input_s`` (action to the browser's first
    message), ``server_s`` (that message to the run's end: the script's time on the
    server and the transfer of its messages), ``render_s`` (the rest: the browser
    applying and drawing the messages), ``bytes_in`` and ``bytes_by_kind`` (what was
    received, by message kind), ``browser_busy_s`` (the browser's main thread in long
    tasks, over 50 ms each, meanwhile: parsing, React, deck.gl, plotly), and
    ``timeline_ms`` (each frame: milliseconds after the action, direction, bytes, kind).
    """
    mark = log.mark()
    page.evaluate(LONG_TASKS_JS)
    since = page.evaluate("() => performance.now()")
    start = time.perf_counter()
    action()
    deadline = start + timeout_s
    while log.finished_after(mark) is None:  # polled: the condition is in this process
        if time.perf_counter() > deadline:
            raise TimeoutError("no script run finished after the action")
        page.wait_for_timeout(5)  # lets Playwright deliver the websocket's frames
    remaining_ms = max(1000.0, (deadline - time.perf_counter()) * 1000.0)
    page.wait_for_function(done_js, arg=arg, timeout=remaining_ms, polling="raf")
    page.wait_for_function(RUNNING, timeout=remaining_ms, polling="raf")
    page.evaluate(PAINTED)
    end = time.perf_counter()
    page.evaluate(LONG_TASKS_JS)  # again after a navigation (buffered: from its start)
    busy_ms = page.evaluate(
        "since => window.__vrvmLongTasks.filter(t => t[0] >= since)"
        ".reduce((sum, t) => sum + t[1], 0)",
        since,
    )
    frames = log.since(mark)
    sent = next((t for t, d, _, _ in frames if d == "out"), start)
    finished = log.finished_after(mark)
    by_kind: dict[str, int] = {}
    for _, direction, size, kind in frames:
        if direction == "in":
            by_kind[kind] = by_kind.get(kind, 0) + size
    return {
        "total_s": end - start,
        "input_s": sent - start,
        "server_s": finished - sent,
        "render_s": end - finished,
        "browser_busy_s": busy_ms / 1000.0,
        "bytes_in": sum(by_kind.values()),
        "bytes_by_kind": by_kind,
        "timeline_ms": [
            (round(1000 * (t - start)), direction, size, kind)
            for t, direction, size, kind in frames
        ],
    }


def answer_text(page) -> str:
    """The answer sentence shown on the Predict page ("" when there is none)."""
    return page.evaluate(ANSWER_JS)


_ANSWER_ELEMENT = (
    '[...document.querySelectorAll(\'[data-testid="stCaptionContainer"],'
    " [data-testid=\"stCode\"], .vrvm-copy-text')].find(e => e.innerText.includes('typically'))"
)
"""The element showing the answer sentence: the Predict page's copy box, or a floor's
code block or caption (``benchmarks/ui_floors``)."""
ANSWER_JS = f"() => {{ const el = {_ANSWER_ELEMENT}; return el ? el.innerText : ''; }}"
CHANGED_ANSWER_JS = (
    f"before => {{ const el = {_ANSWER_ELEMENT}; return !!el && el.innerText !== before; }}"
)
"""True once an answer sentence other than ``before`` is shown."""
