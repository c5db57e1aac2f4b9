"""Benchmark of the dashboard: single-OD answer, coverage maps, first and later starts.

Targets (from the dashboard issue): a single origin-destination answer within 300 ms
of the click; the whole-area coverage map for up to 2,000 zones within 1 s; the first
start (synthetic city, default model) under a minute; later starts under 2 s.

What is timed (wall clock, this machine, no browser):

* **first start** - :func:`vrvm.services.analyst.demo.ensure_demo_model` on an empty home:
  generate 20,000 synthetic trips, fit the default 8-member model, score it, save it;
* **later start** - in a fresh Python process: import, load the saved model and its
  training trips, build the zone map (``service area``); and the first full run of
  ``app.py`` under ``streamlit.testing.v1.AppTest`` (imports Streamlit, renders the
  Predict page) in another fresh process;
* **OD answer** - everything the Predict page computes after a click: forecast,
  quantiles, density curve, 24-hour profile, observed trips of the pair; "with figures"
  adds building the two plotly figures and the deck's JSON;
* **coverage map** - median and P(T <= 15 min) to every zone, colours, layer data;
  "with deck" adds the deck's JSON (what Streamlit sends to the browser).

Usage::

    python benchmarks/bench_dashboard.py               # first start in a temporary home
    python benchmarks/bench_dashboard.py --home .vrvm  # reuse a home (no first start)

Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

LATER_START = """
import time
t = time.perf_counter()
from pathlib import Path
from vrvm import TravelTimeModel
from vrvm.services.map import area as area_svc
from vrvm.services.versions import models
imported = time.perf_counter()
home = Path({home!r})
model = TravelTimeModel.load(models.active_model_path(home)[1])
trips = models.Home(home).load_training_trips(model)
area = area_svc.build_service_area(model, trips=trips)
print(time.perf_counter() - t, imported - t, len(area.grid))
"""

APPTEST_START = """
import os, sys, time
sys.path.insert(0, {repo!r})
os.environ["VRVM_HOME"] = {home!r}
t = time.perf_counter()
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({app!r}, default_timeout=120).run()
assert not at.exception, at.exception
print(time.perf_counter() - t)
"""


def timed(fn, repeats: int) -> np.ndarray:
    fn()  # warm up (imports, caches)
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return np.array(out)


def row(step: str, n, seconds: np.ndarray, target: str) -> str:
    seconds = np.atleast_1d(seconds)
    median, p90 = np.median(seconds) * 1e3, np.quantile(seconds, 0.9) * 1e3
    return f"| {step} | {n} | {median:,.0f} | {p90:,.0f} | {target} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="existing VRVM_HOME (skips the first start)")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()

    from app_ui import charts, maps
    from vrvm import TravelTimeModel
    from vrvm.services.analyst import demo
    from vrvm.services.answers import forecast
    from vrvm.services.map import area as area_svc
    from vrvm.services.map import map_layers, places
    from vrvm.services.planning import coverage as coverage_svc
    from vrvm.services.versions import models

    rows = []
    home = args.home
    if home is None:
        home = Path(tempfile.mkdtemp(prefix="vrvm-bench-")) / "home"
        settings = demo.demo_settings()
        start = time.perf_counter()
        demo.ensure_demo_model(home, settings)
        first = time.perf_counter() - start
        rows.append(
            row(
                f"first start ({settings.n_trips:,} trips, {settings.n_members} members, "
                f"{settings.n_jobs} jobs)",
                "-",
                first,
                "< 60,000",
            )
        )

    later = subprocess.run(
        [sys.executable, "-c", LATER_START.format(home=str(home))],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout.split()
    total, imports = float(later[0]), float(later[1])
    rows.append(row("later start: import vrvm (fresh process)", "-", imports, "-"))
    rows.append(
        row(
            "later start: load model + trips, build zones",
            f"{later[2]} zones",
            total - imports,
            "-",
        )
    )
    rows.append(row("later start: both", "-", total, "< 2,000"))
    page = subprocess.run(
        [
            sys.executable,
            "-c",
            APPTEST_START.format(repo=str(REPO), home=str(home), app=str(REPO / "app.py")),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout.split()
    rows.append(
        row(
            "later start: first Predict page run incl. Streamlit import (AppTest)",
            "-",
            float(page[-1]),
            "< 2,000",
        )
    )

    model = TravelTimeModel.load(models.active_model_path(home)[1])
    trips = models.Home(home).load_training_trips(model)
    area = area_svc.build_service_area(model, trips=trips)
    rng = np.random.default_rng(0)
    busy = area.grid.index[area.grid["n_points"] > 0].to_numpy()
    departure = forecast.default_departure(model.tz_)

    def random_pair():
        a, b = rng.choice(busy, 2, replace=False)
        return (
            places.place_from_zone(area, area.grid["zone"][a]),
            places.place_from_zone(area, area.grid["zone"][b]),
        )

    def od_answer(figures: bool) -> None:
        origin, dest = random_pair()
        answer = forecast.answer_od(
            model, origin, dest, departure, 15, trips=trips, resolution=area.resolution, area=area
        )
        if figures:
            charts.density_figure(answer.density, answer.forecast).to_json()
            charts.profile_figure(
                answer.profile,
                answer.observed,
                departure_hour=8.0,
                rings=answer.observed_rings,
            ).to_json()
            state = places.ODState(origin, dest)
            maps.zone_deck(area, state).to_json()

    rows.append(
        row("OD answer (service layer)", 1, timed(lambda: od_answer(False), args.repeats), "< 300")
    )
    rows.append(
        row(
            "OD answer with figures and map",
            1,
            timed(lambda: od_answer(True), args.repeats),
            "< 300",
        )
    )

    def coverage(a, with_deck: bool) -> None:
        origin, _ = random_pair()
        grid = coverage_svc.coverage_grid(model, a, origin, departure, 15)
        fill, tips, _ = coverage_svc.coverage_map(grid, "probability", 15)
        coverage_svc.reachable_summary(grid, 0.9)
        state = places.ODState(origin)
        if with_deck:
            maps.zone_deck(a, state, fill=fill, tips=tips).to_json()
        else:
            map_layers.zone_layer_data(a, fill=fill, tips=tips)

    finer = area_svc.build_service_area(model, trips=trips, resolution=area.resolution + 1)
    big = replace(finer, grid=finer.grid.head(2000).reset_index(drop=True))
    for a in (area, big):
        n = len(a.grid)
        rows.append(
            row(
                "coverage map (service layer)",
                f"{n:,} zones",
                timed(lambda a=a: coverage(a, False), max(5, args.repeats // 2)),
                "< 1,000",
            )
        )
        rows.append(
            row(
                "coverage map with deck JSON",
                f"{n:,} zones",
                timed(lambda a=a: coverage(a, True), max(5, args.repeats // 2)),
                "< 1,000",
            )
        )

    print(
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; model: {len(model.members_)} members, "
        f"{int(model.n_relevance_.sum())} relevance vectors; load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    print()
    print("| step | size | median ms | p90 ms | target ms |")
    print("|---|---|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
