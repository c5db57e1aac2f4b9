"""The dashboard as a planner feels it: interactions timed in headless Chromium.

Targets (issue 18): click a zone, swap, change the departure time or the threshold ->
new answer shown and the app idle in at most 300 ms median, 600 ms worst, with the
default model on this 2-core machine; a shared URL with an origin and a destination
opens to its answer in at most 1 s after the first start (timed in a new tab of a
browser that has had the app open, and in a fresh browser profile); the Chicago
community areas upload and draw in at most 2 s.

What is run: ``streamlit run app.py`` on 127.0.0.1 over its own data home holding the
default demo model (trained first, about 20 s, unless ``--home`` is given), driven by
Debian's Chromium through Playwright (``tools/browser.py``). Each interaction is timed
from the action (a click, a key) until a script run started after it has finished, the
new answer is on the page (the answer sentence changed), Streamlit shows no running
indicator and nothing stale, and the browser has painted (two animation frames):
:func:`tools.browser.timed_interaction`. Each time is cut into

* **input**: the action to the browser's first websocket message (deck.gl picking a
  zone, a widget's own handling);
* **server**: that message to the run's ``script_finished`` message (the script's time
  on the server, and sending its messages over the loopback);
* **render**: the rest (the browser applying the messages: React, deck.gl, plotly);

with the bytes received, by message kind (``delta:deck_gl_json_chart``,
``delta:plotly_chart``, ...).

Usage::

    python benchmarks/bench_ui.py                        # trains the default model first
    python benchmarks/bench_ui.py --home DIR --repeats 8 --json benchmarks/results/ui.json

Prints a Markdown table (medians and worst over the repeats) and the 1-minute load
average before and after; ``--json`` keeps every measurement.

Zones are also chosen in the page's lists (after Clear: the origin, then the destination
that completes the pair and brings a new answer built from nothing, as a second click on
the map does), on the page and on the floor without Vega-Lite views, whose map cannot be
clicked: the destination's floor.

``--floors`` also times, the same way, three stripped-down apps in ``ui_floors/``
(Streamlit alone; the page's zone map alone; the page's answer alone), each with a
Swap button and opened in new tabs: what this browser on this machine needs for each
part of a swap or a new session, whatever the page does around it. It also times the
renderers of issue 37 (:data:`RENDERER_FLOORS`): the zone map drawn by deck.gl (WebGL),
by Vega-Lite ``geoshape`` layers on a canvas and by Leaflet's canvas renderer
(``streamlit-folium``, if installed), and the answer's two charts drawn by Vega-Lite and
by Streamlit's native charts beside plotly: swap, zone clicks where there is a map (each
until the floor's trip line names the new trip), new tabs until the answer line is
shown and until every map and chart is drawn, three fresh browser profiles, and the
JavaScript and CSS bytes a new tab loads (decoded and transferred, the largest files).
Two of them keep every answer once computed (``*_kept``: each interaction is done once
untimed before the timed pass), the page with and without its Vega-Lite views: what it
costs with no work of ours on the server. ``--renderers-only`` times those alone (no
page, no other floor); ``--only STEM`` (again for more) times only the floors of those
scripts, e.g. ``--only answer_vegalite --only answer_only``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tools.browser import (  # noqa: E402 (after the path set-up)
    CHANGED_ANSWER_JS,
    CHROMIUM,
    CHROMIUM_ARGS,
    MAP_READY,
    PAINTED,
    RUNNING,
    VEGA_DRAWN,
    WebsocketLog,
    answer_text,
    lnglat_to_pixel,
    streamlit_server,
    timed_interaction,
)

CHICAGO = REPO.parent / "shared" / "data" / "chicago_community_areas.geojson"
FLOORS = {
    "Streamlit alone (a button, one line of text)": "benchmarks/ui_floors/streamlit_only.py",
    "the zone map alone": "benchmarks/ui_floors/map_only.py",
    "the answer alone, plotly charts (before issue 37)": "benchmarks/ui_floors/answer_only.py",
}
RENDERER_FLOORS = {
    "zone map, deck.gl (WebGL), clickable": "benchmarks/ui_floors/map_deck.py",
    "zone map, Vega-Lite geoshape (canvas)": "benchmarks/ui_floors/map_vegalite.py",
    "zone map, Leaflet canvas (streamlit-folium)": "benchmarks/ui_floors/map_folium.py",
    "answer, Vega-Lite charts (canvas; the page's)": "benchmarks/ui_floors/answer_vegalite.py",
    "answer, Streamlit native charts": "benchmarks/ui_floors/answer_native.py",
    "the Predict page with no Vega-Lite view (Streamlit's own elements)": (
        "benchmarks/ui_floors/page_without_vega.py"
    ),
    "the same, each answer computed before (no work of ours on the server)": (
        "benchmarks/ui_floors/page_without_vega_kept.py"
    ),
    "the Predict page, each answer computed before (Streamlit and its Vega-Lite views)": (
        "benchmarks/ui_floors/page_answers_kept.py"
    ),
}
"""Issue 37: the same parts drawn by other renderers (swap, zone clicks, new tabs, bytes)."""
FLOOR_ENV = {"STREAMLIT_SERVER_ENABLE_STATIC_SERVING": "true"}  # Leaflet from ui_floors/static
LEAFLET = REPO / "benchmarks" / "ui_floors" / "static" / "leaflet.js"
PLOTLY_DRAWN = "() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2"
LEAFLET_DRAWN = (
    "() => [...document.querySelectorAll('iframe')].some(f => { const d = f.contentDocument;"
    " return !!(d && d.querySelector('canvas.leaflet-zoom-animated')"
    " && d.querySelector('.leaflet-marker-icon')); })"
)
VIEWPORT = {"width": 1400, "height": 1000}
LABEL_SHOWN_JS = "label => [...document.querySelectorAll('input')].some(e => e.value === label)"
CAPTION_SHOWN_JS = (
    "text => [...document.querySelectorAll('[data-testid=\"stCaptionContainer\"]')]"
    ".some(e => e.innerText.includes(text))"
)


def load_average() -> float:
    return os.getloadavg()[0]


def ensure_home(home: Path | None) -> Path:
    """A data home with the default demo model (trained now unless ``home`` has one)."""
    from vrvm.services.analyst import demo

    if home is None:
        home = Path(tempfile.mkdtemp(prefix="vrvm-bench-ui-")) / "home"
    demo.prepare_home(home)
    demo.ensure_demo_model(home, demo.demo_settings())
    return home


def service_area(home: Path):
    from vrvm import TravelTimeModel
    from vrvm.services.map import area as area_svc
    from vrvm.services.versions import models

    _, path = models.active_model_path(home)
    model = TravelTimeModel.load(path)
    trips = models.Home(home).training_trip_table(model)
    return model, area_svc.build_service_area(model, trips=trips)


def zone_targets(area, width: float, height: float, n: int) -> list[tuple[str, float, float]]:
    """The ``n`` busiest zones well inside the canvas: (label, x, y) pixels."""
    grid = area.grid
    x, y = lnglat_to_pixel(area.view, grid["lat"], grid["lon"], width_px=width, height_px=height)
    inside = (x > 60) & (x < width - 60) & (y > 60) & (y < height - 60)
    order = np.argsort(-grid["n_points"].to_numpy(), kind="stable")
    chosen = [i for i in order if inside[i]][:n]
    return [(str(grid["label"].iloc[i]), float(x[i]), float(y[i])) for i in chosen]


def shared_url(base: str, model, area) -> str:
    from vrvm.services.answers import forecast, schedule
    from vrvm.services.map.places import ODState
    from vrvm.services.planning import url_state

    origin, dest = schedule.default_pair(area)
    departure = forecast.default_departure(model.tz_).replace(hour=8, minute=15)
    params = url_state.to_query_params(ODState(origin, dest), departure, threshold_min=15.0)
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"{base}/?{query}"


def open_answer(page, log: WebsocketLog, url: str) -> dict:
    """Go to ``url`` and time it until the answer is shown and the app idle."""
    return timed_interaction(
        page, log, lambda: page.goto(url), CHANGED_ANSWER_JS, "", timeout_s=120
    )


def summarise(name: str, runs: list[dict]) -> dict:
    total = np.array([r["total_s"] for r in runs])
    parts = {k: float(np.median([r[k] for r in runs])) for k in ("input_s", "server_s", "render_s")}
    kinds: dict[str, list[int]] = {}
    for r in runs:
        for kind, size in r["bytes_by_kind"].items():
            kinds.setdefault(kind, []).append(size)
    biggest = sorted(kinds.items(), key=lambda kv: -float(np.median(kv[1])))[:3]
    return {
        "interaction": name,
        "n": len(runs),
        "median_s": float(np.median(total)),
        "worst_s": float(total.max()),
        "best_s": float(total.min()),
        **{f"median_{k}": v for k, v in parts.items()},
        "median_bytes_in": float(np.median([r["bytes_in"] for r in runs])),
        "largest_kinds": {k: float(np.median(v)) for k, v in biggest},
        "runs": runs,
    }


def table(summaries: list[dict]) -> str:
    lines = [
        "| interaction | n | median ms | worst ms | input / server / render ms (medians) "
        "| KB received (median) | largest messages (KB) |",
        "|---|---:|---:|---:|---|---:|---|",
    ]
    for s in summaries:
        kinds = ", ".join(
            f"{k.split(':', 1)[-1]} {v / 1024:.0f}" for k, v in s["largest_kinds"].items()
        )
        lines.append(
            f"| {s['interaction']} | {s['n']} | {1e3 * s['median_s']:,.0f} | "
            f"{1e3 * s['worst_s']:,.0f} | {1e3 * s['median_input_s']:.0f} / "
            f"{1e3 * s['median_server_s']:.0f} / {1e3 * s['median_render_s']:.0f} | "
            f"{s['median_bytes_in'] / 1024:,.1f} | {kinds} |"
        )
    return "\n".join(lines)


def bench_predict(page, log, url, area, repeats: int) -> list[dict]:
    """Swap, threshold, departure time and zone clicks on the Predict page."""
    summaries = []
    first = open_answer(page, log, url)
    page.wait_for_timeout(1500)  # deck.gl's first frame, plotly's first draw

    swap = page.get_by_role("button", name="Swap")
    step_up = page.locator('[data-testid="stNumberInputStepUp"]').first
    for name, action in (
        ("swap origin and destination", swap.click),
        ("threshold + 1 min", step_up.click),
    ):
        runs = []
        for _ in range(repeats):
            before = answer_text(page)
            runs.append(timed_interaction(page, log, action, CHANGED_ANSWER_JS, before))
            page.wait_for_timeout(300)
        summaries.append(summarise(name, runs))
        print(table(summaries[-1:]), flush=True)

    summaries.append(summarise("departure time typed, Enter", departures_typed(page, log, repeats)))
    print(table(summaries[-1:]), flush=True)

    canvas = page.locator("canvas").first
    box = canvas.bounding_box()
    targets = zone_targets(area, box["width"], box["height"], 2 * repeats + 2)
    origins, dests = [], []
    for i in range(repeats):
        (o_label, ox, oy), (d_label, dx, dy) = targets[2 * i], targets[2 * i + 1]
        for label, x, y, runs, done, arg in (
            (o_label, ox, oy, origins, LABEL_SHOWN_JS, o_label),
            (d_label, dx, dy, dests, CHANGED_ANSWER_JS, ""),
        ):
            canvas.hover(position={"x": x, "y": y})
            page.wait_for_timeout(400)  # deck.gl picks on hover; not part of the click
            try:
                runs.append(
                    timed_interaction(
                        page,
                        log,
                        lambda x=x, y=y: canvas.click(position={"x": x, "y": y}),
                        done,
                        arg,
                        timeout_s=20,
                    )
                )
            except Exception as exc:  # a click deck.gl did not pick: said, not timed
                print(f"zone click on {label!r} not taken: {exc}", file=sys.stderr)
            page.wait_for_timeout(300)
    summaries.append(summarise("click a zone: origin (starts a new pair)", origins))
    summaries.append(summarise("click a zone: destination -> new answer", dests))
    origins, dests = list_choices(page, log, area, repeats)
    summaries.append(summarise("zone list after Clear: origin", origins))
    summaries.append(summarise("zone list after Clear: destination -> new answer", dests))
    print(table(summaries[-4:]), flush=True)
    return [summarise("open the page with an OD in the URL (first session)", [first]), *summaries]


def departures_typed(page, log, repeats: int) -> list[dict]:
    """New departure times typed into the trip bar, each timed from the Enter that applies
    it until the new answer is shown."""
    times = []
    hour = page.locator('[role="spinbutton"][aria-label^="hour"]').first
    for i in range(repeats):
        before = answer_text(page)
        value = f"{7 + i % 10:02d}{(15 * i + 5) % 60:02d}"

        hour.click()  # the hour and minute typed (nothing is sent yet) ...
        page.keyboard.type(value)
        # ... and timed from the Enter that applies them
        enter = lambda: page.keyboard.press("Enter")  # noqa: E731
        times.append(timed_interaction(page, log, enter, CHANGED_ANSWER_JS, before))
        page.mouse.click(5, 5)  # close the time list
        page.wait_for_timeout(300)
    return times


def list_choices(page, log, area, repeats: int) -> tuple[list, list]:
    """Zones chosen in the Origin and Destination lists after Clear: the origin (timed until
    its label is shown), then the destination (timed until an answer is shown: a new answer
    built from nothing, as after a second click on the map). Each choice is typed into the
    list first and timed from the Enter that picks it, as :func:`bench_predict` times a
    typed departure."""
    labels = sorted(area.labels)
    pick = np.random.default_rng(0).choice(len(labels), size=2 * repeats, replace=False)
    clear = page.get_by_role("button", name="Clear", exact=True)
    origins, dests = [], []
    for i in range(repeats):
        clear.click()
        page.wait_for_function(f"() => !({CHANGED_ANSWER_JS})('')", timeout=20_000)
        page.wait_for_function(RUNNING, timeout=20_000, polling="raf")
        page.wait_for_timeout(300)
        for which, label, runs, done, arg in (
            ("Origin (A)", labels[pick[2 * i]], origins, LABEL_SHOWN_JS, labels[pick[2 * i]]),
            ("Destination (B)", labels[pick[2 * i + 1]], dests, CHANGED_ANSWER_JS, ""),
        ):
            box = page.locator('[data-testid="stSelectbox"]').filter(has_text=which).first
            box.locator("input").click()
            page.keyboard.type(label)
            page.wait_for_timeout(200)  # the list filtered to the typed name
            enter = lambda: page.keyboard.press("Enter")  # noqa: E731
            runs.append(timed_interaction(page, log, enter, done, arg, timeout_s=20))
            page.wait_for_timeout(300)
    return origins, dests


def bench_shared_url(browser, url: str, repeats: int, context=None) -> dict:
    """A shared link opened in a new tab: of a fresh browser profile (nothing cached), or
    of ``context``, a browser that has had the app open (its scripts cached). Either way
    a new Streamlit session on the server."""
    runs = []
    for _ in range(repeats):
        fresh = context is None
        tab_context = browser.new_context(viewport=VIEWPORT) if fresh else context
        page = tab_context.new_page()
        log = WebsocketLog(page)
        runs.append(open_answer(page, log, url))
        page.close()
        if fresh:
            tab_context.close()
    if context is None:
        return summarise("shared URL with an OD, new session, fresh browser profile", runs)
    return summarise("shared URL with an OD, new session, new tab of the same browser", runs)


FLOOR_PARTS = {
    # script: (the map element clicked, or None: no zone clicks; JS true once all is drawn,
    # its argument)
    "streamlit_only": (None, "() => true", None),
    "map_only": (None, MAP_READY, None),
    "map_deck": ("canvas", MAP_READY, None),
    "map_vegalite": ('[data-testid="stVegaLiteChart"] canvas', VEGA_DRAWN, 1),
    "map_folium": ("iframe", LEAFLET_DRAWN, None),
    "answer_only": (None, PLOTLY_DRAWN, None),
    "answer_vegalite": (None, VEGA_DRAWN, 2),
    "answer_native": (None, VEGA_DRAWN, 2),
    "page_without_vega": (None, "() => true", None),
    "page_without_vega_kept": (None, "() => true", None),
    "page_answers_kept": (None, VEGA_DRAWN, 3),
}
KEPT = "_kept"
"""Floors whose answers are kept once computed (``ui_floors/_kept_answers.py``): every
interaction is done once untimed, on a session of its own, before the timed pass."""


def asset_bytes(requests) -> dict:
    """The JavaScript and CSS a tab loaded: bytes (decoded, what the browser parses, from
    its cache or not), bytes transferred (0 from the cache), and the largest files."""
    totals = {"js": 0, "css": 0}
    transferred, files = 0, []
    for request in requests:
        name = urllib.parse.urlparse(request.url).path.rsplit("/", 1)[-1]
        ext = name.rsplit(".", 1)[-1] if "." in name else ""
        if ext not in totals:
            continue
        try:
            size = len(request.response().body())
        except Exception:  # a response the browser no longer holds
            size = 0
        try:
            transferred += max(0, int(request.sizes()["responseBodySize"]))  # -1: cached
        except Exception:
            pass
        totals[ext] += size
        files.append((name, size))
    files.sort(key=lambda f: -f[1])
    return {
        "js_bytes": totals["js"],
        "css_bytes": totals["css"],
        "transferred_bytes": transferred,
        "files": len(files),
        "largest": files[:6],
    }


def floor_tabs(browser, url: str, n: int, context, drawn: tuple[str, object]) -> dict:
    """Open ``url`` ``n`` times in new tabs of ``context`` (None: each in a fresh browser
    profile), timed until the answer line is shown (``answer``) and until every map or
    chart is drawn too (``drawn``); the assets the first tab loaded."""
    answer, everything, assets = [], [], None
    for i in range(n):
        tab_context = browser.new_context(viewport=VIEWPORT) if context is None else context
        page = tab_context.new_page()
        log = WebsocketLog(page)
        requests: list = []
        page.on("requestfinished", lambda request, kept=requests: kept.append(request))
        run = open_answer(page, log, url)
        shown = time.perf_counter()
        page.wait_for_function(drawn[0], arg=drawn[1], timeout=120_000, polling="raf")
        page.wait_for_function(RUNNING, timeout=120_000, polling="raf")
        page.evaluate(PAINTED)
        answer.append(run)
        everything.append({**run, "total_s": run["total_s"] + time.perf_counter() - shown})
        if i == 0:
            page.wait_for_timeout(500)  # late chunks (a component's frame) finish loading
            assets = asset_bytes(requests)
        page.close()
        if context is None:
            tab_context.close()
    return {"answer": answer, "drawn": everything, "assets": assets}


def floor_clicks(page, log, area, selector: str, repeats: int) -> tuple[list, list]:
    """Zone clicks on a floor's map (origin, then destination), each timed until the
    floor's trip line names the new trip. The mouse moves and clicks at page pixels: a
    map's tooltip may lie over the element (Vega's does), as it does for a planner."""
    element = page.locator(selector).first
    element.scroll_into_view_if_needed()
    box = element.bounding_box()
    targets = zone_targets(area, box["width"], box["height"], 2 * repeats + 2)
    origins, dests = [], []
    for i in range(repeats):
        for (label, x, y), runs in ((targets[2 * i], origins), (targets[2 * i + 1], dests)):
            at = (box["x"] + x, box["y"] + y)
            page.mouse.move(*at)
            page.wait_for_timeout(400)  # deck.gl picks on hover; not part of the click
            before = answer_text(page)
            try:
                runs.append(
                    timed_interaction(
                        page,
                        log,
                        lambda at=at: page.mouse.click(*at),
                        CHANGED_ANSWER_JS,
                        before,
                        timeout_s=20,
                    )
                )
            except Exception as exc:  # a click the map did not take: said, not timed
                print(f"zone click on {label!r} not taken: {exc}", file=sys.stderr)
            page.wait_for_timeout(300)
    return origins, dests


def floor_interactions(page, log, area, name: str, selector, repeats: int) -> list[dict]:
    """Swap, threshold steps, typed departures, zone clicks and list choices on a floor,
    each where the floor has it, timed (:func:`summarise`)."""
    summaries = []
    swap = page.get_by_role("button", name="Swap")
    runs = []
    for _ in range(repeats):
        before = answer_text(page)
        runs.append(timed_interaction(page, log, swap.click, CHANGED_ANSWER_JS, before))
        page.wait_for_timeout(300)
    summaries.append(summarise(f"floor, swap: {name}", runs))
    step_up = page.locator('[data-testid="stNumberInputStepUp"]')
    if step_up.count():  # a threshold to step, as on the page
        runs = []
        for _ in range(repeats):
            before = answer_text(page)
            runs.append(
                timed_interaction(page, log, step_up.first.click, CHANGED_ANSWER_JS, before)
            )
            page.wait_for_timeout(300)
        summaries.append(summarise(f"floor, threshold + 1 min: {name}", runs))
    if page.locator('[role="spinbutton"][aria-label^="hour"]').count():  # the trip bar
        runs = departures_typed(page, log, repeats)
        summaries.append(summarise(f"floor, departure time typed, Enter: {name}", runs))
    if selector is not None:
        origins, dests = floor_clicks(page, log, area, selector, repeats)
        if origins:
            summaries.append(summarise(f"floor, click a zone, origin: {name}", origins))
        if dests:
            summaries.append(summarise(f"floor, click a zone, destination: {name}", dests))
    lists = page.locator('[data-testid="stSelectbox"]').filter(has_text="Destination (B)")
    if lists.count():  # the page's zone lists (the page without Vega has them)
        origins, dests = list_choices(page, log, area, repeats)
        summaries.append(summarise(f"floor, zone list, origin: {name}", origins))
        summaries.append(summarise(f"floor, zone list, destination: {name}", dests))
    return summaries


def bench_floors(browser, home: Path, area, repeats: int, floors: dict) -> list[dict]:
    """Swap, zone clicks (where the floor has a map), new tabs and the bytes they load,
    for each of ``floors``, each app on its own server."""
    summaries = []
    for name, script in floors.items():
        stem = Path(script).stem
        if stem == "map_folium" and (
            importlib.util.find_spec("streamlit_folium") is None or not LEAFLET.is_file()
        ):
            print(
                f"{name}: skipped (needs `pip install streamlit-folium` and {LEAFLET}, from"
                " `npm pack leaflet@1.9.3`)",
                file=sys.stderr,
            )
            continue
        selector, drawn_js, drawn_arg = FLOOR_PARTS[stem]
        load = load_average()
        log_path = Path(tempfile.mkdtemp(prefix="vrvm-bench-ui-floor-")) / "streamlit.log"
        with streamlit_server(home, log_path, timeout_s=120, script=script, env=FLOOR_ENV) as url:
            first = len(summaries)
            context = browser.new_context(viewport=VIEWPORT)
            page = context.new_page()
            log = WebsocketLog(page)
            open_answer(page, log, url)
            page.wait_for_function(drawn_js, arg=drawn_arg, timeout=120_000)
            page.wait_for_timeout(1500)  # the first frame and draw, as on the page
            if stem.endswith(KEPT):  # every answer of the timed pass computed once before
                floor_interactions(page, log, area, name, selector, repeats)
                open_answer(page, log, url)  # a new session on the same link, as at first
                page.wait_for_function(drawn_js, arg=drawn_arg, timeout=120_000)
                page.wait_for_timeout(1500)
            summaries += floor_interactions(page, log, area, name, selector, repeats)
            tabs = floor_tabs(browser, url, min(repeats, 5), context, (drawn_js, drawn_arg))
            summaries.append(
                {
                    **summarise(f"floor, new tab, answer shown: {name}", tabs["answer"]),
                    "assets": tabs["assets"],
                }
            )
            summaries.append(summarise(f"floor, new tab, all drawn: {name}", tabs["drawn"]))
            context.close()
            fresh = floor_tabs(browser, url, min(repeats, 3), None, (drawn_js, drawn_arg))
            summaries.append(
                {
                    **summarise(f"floor, fresh profile, all drawn: {name}", fresh["drawn"]),
                    "assets": fresh["assets"],
                }
            )
            for summary in summaries[first:]:
                summary.update(floor=name, script=script, load_1min_at_start=load)
        print(table(summaries[first:]), flush=True)
        print(assets_table(summaries[first:]), flush=True)
    return summaries


def assets_table(summaries: list[dict]) -> str:
    """The JavaScript and CSS each new tab loaded (summaries with ``assets``)."""
    lines = [
        "| tab | JS KB | CSS KB | KB transferred | files | largest files (KB) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for s in summaries:
        a = s.get("assets")
        if not a:
            continue
        largest = ", ".join(f"{n} {b / 1024:,.0f}" for n, b in a["largest"][:4])
        lines.append(
            f"| {s['interaction']} | {a['js_bytes'] / 1024:,.0f} | {a['css_bytes'] / 1024:,.0f}"
            f" | {a['transferred_bytes'] / 1024:,.0f} | {a['files']} | {largest} |"
        )
    return "\n".join(lines)


def bench_upload(page, log, path: Path, repeats: int) -> dict:
    """Upload a boundary file in the sidebar until it is drawn; removed after each.

    Each repeat uploads a copy under its own name (a browser sends no change for the
    file it already holds).
    """
    runs = []
    uploader = page.locator('[data-testid="stFileUploaderDropzoneInput"]')
    folder = Path(tempfile.mkdtemp(prefix="vrvm-bench-ui-upload-"))
    for i in range(repeats):
        copy = folder / f"{path.stem}_{i}{path.suffix}"
        copy.write_bytes(path.read_bytes())
        runs.append(
            timed_interaction(
                page,
                log,
                lambda copy=copy: uploader.set_input_files(str(copy)),
                CAPTION_SHOWN_JS,
                copy.name,
                timeout_s=60,
            )
        )
        page.wait_for_timeout(500)
        page.get_by_role("button", name="Remove boundaries").click()
        page.wait_for_function(f"() => !({CAPTION_SHOWN_JS})({json.dumps(copy.name)})")
        page.wait_for_function(RUNNING)
        page.wait_for_timeout(500)
    return summarise("upload the Chicago community areas, drawn", runs)


def bench_page(browser, url: str, area, args) -> list[dict]:
    """The Predict page's interactions, the upload and the shared link (new tab, fresh)."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    log = WebsocketLog(page)
    summaries = bench_predict(page, log, url, area, args.repeats)
    if args.boundaries.is_file():
        summaries.append(bench_upload(page, log, args.boundaries, min(args.repeats, 4)))
    else:
        print(f"{args.boundaries} is absent: no upload timed", file=sys.stderr)
    summaries.append(bench_shared_url(browser, url, min(args.repeats, 5), context))
    context.close()
    summaries.append(bench_shared_url(browser, url, min(args.repeats, 5)))
    return summaries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="a VRVM_HOME with the default model")
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--boundaries", type=Path, default=CHICAGO)
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("--label", default="", help="a name for this run in the JSON")
    parser.add_argument(
        "--floors", action="store_true", help="also time the stripped-down apps of ui_floors/"
    )
    parser.add_argument(
        "--renderers-only",
        action="store_true",
        help="time only the renderer floors of issue 37 (no page, no other floor)",
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="STEM",
        choices=sorted(Path(p).stem for p in [*FLOORS.values(), *RENDERER_FLOORS.values()]),
        help="time only this floor app of ui_floors/ (its script's name; again for more)",
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    home = ensure_home(args.home)
    model, area = service_area(home)
    load_before = load_average()
    log_path = Path(tempfile.mkdtemp(prefix="vrvm-bench-ui-log-")) / "streamlit.log"
    summaries = []
    with streamlit_server(home, log_path, timeout_s=120) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            if not (args.renderers_only or args.only):
                summaries += bench_page(browser, shared_url(base, model, area), area, args)
            if args.floors or args.renderers_only or args.only:
                floors = RENDERER_FLOORS if args.renderers_only else {**FLOORS, **RENDERER_FLOORS}
                if args.only:
                    floors = {k: v for k, v in floors.items() if Path(v).stem in args.only}
                summaries += bench_floors(browser, home, area, args.repeats, floors)
        finally:
            browser.close()
    server_log = log_path.read_text(errors="replace")
    load_after = load_average()
    print(
        f"\n{platform.node()}, {os.cpu_count()} cores; load average (1 min) {load_before:.2f}"
        f" before, {load_after:.2f} after; {len(area.grid)} zones\n"
    )
    print(table(summaries))
    if any("assets" in s for s in summaries):
        print("\nJavaScript and CSS loaded by a new tab (the first of each kind):\n")
        print(assets_table(summaries))
    warnings = [line for line in server_log.splitlines() if "Warning" in line]
    if warnings:
        print(f"\nthe server printed {len(warnings)} warning line(s):", *warnings[:5], sep="\n")
    if args.json:
        record = {
            "label": args.label,
            "machine": f"{platform.node()}, {os.cpu_count()} cores",
            "load_before": load_before,
            "load_after": load_after,
            "zones": len(area.grid),
            "summaries": summaries,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
