"""Benchmark of the trip store and the dashboard at city scale (issue 13).

Builds a data home whose active model keeps ten million synthetic trips as its
training trips (``vrvm.synthetic_city(n, seed=0)``; the model itself is trained on a
small subsample, because what the dashboard pays for is the trips), with the same
trips in the trip store (in ten batches, as monthly uploads would arrive), then times,
each in a fresh Python process:

* **context** - what ``app_ui/context.py`` does on a start: import, heal the home,
  load the active model, open its training trips, build the map's zones and their
  support index (default hexagons, the synthetic city's boundaries); peak RSS;
* **Predict page** - the first full run of ``app.py`` under
  ``streamlit.testing.v1.AppTest`` (imports Streamlit, renders the page); peak RSS;
* **OD answer** - :func:`vrvm.services.answers.forecast.answer_od` after the context, for
  random pairs of zones holding trip ends (the forecast, density, profile, observed
  trips of the pair, support counts); median and p90;
* **trip store** - the Retrain page's overview (summary and batches), the distance of
  an upload to the stored trips (the store's centre), and adding a batch of 2,000
  trips to the 1e7 already stored.

Targets: the dashboard starts in under 3 s and an OD answer stays within today's
latency (the dashboard benchmark's 300 ms).

Usage::

    python benchmarks/bench_store_scale.py --label after            # 1e7 trips
    python benchmarks/bench_store_scale.py --n 20000 --label after  # the demo's size
    python benchmarks/bench_store_scale.py --model model_10000000 --label "trained on 1e7"

``--model`` publishes a model trained on the same trips (``vrvm demo-data --n N --seed
0`` then ``vrvm train``, as ``bench_scale.py fit`` leaves it) instead of one fitted on
``--n-fit`` of them.

The home is kept in ``--root`` (default ``/tmp/vrvm-store-scale``) and reused when it
already holds ``--n`` trips (``--rebuild`` to start again). Results are merged into
``benchmarks/results/store_scale.json`` under ``<label>/<n>``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "store_scale.json"

BUILD = """
import sys, time
sys.path.insert(0, {repo!r})
import numpy as np
from pathlib import Path
from vrvm import TravelTimeModel, synthetic_city
from vrvm.services.versions import models
from vrvm.trips.home import Home
from vrvm.trips.table import summarise_trips, trip_provenance

home, n, n_fit, trained = Path({home!r}), {n}, {n_fit}, {model!r}
t = time.perf_counter()
trips = synthetic_city(n, seed=0)
generated = time.perf_counter() - t
if trained:  # a model trained on these trips (vrvm train on vrvm demo-data --seed 0)
    model = TravelTimeModel.load(trained)
else:
    rows = np.sort(np.random.default_rng(0).choice(n, min(n_fit, n), replace=False))
    sample = trips.iloc[rows].reset_index(drop=True)
    sample.attrs = dict(trips.attrs)
    model = TravelTimeModel(n_members=8, random_state=0).fit(sample)
# the home links a model to its training trips by their content hash: record all n
provenance = trip_provenance(trips)
model.training_summary_ = summarise_trips(
    trips, trips["travel_time_s"].to_numpy(float), provenance
)
t = time.perf_counter()
models.publish_model(
    home, model, metrics=None, info={{"kind": "train"}}, training_trips=trips
)
published = time.perf_counter() - t
store = Home(home).trips
t = time.perf_counter()
batches = np.array_split(np.arange(n), 10)
for i, batch in enumerate(batches):
    part = trips.iloc[batch]
    part.attrs = dict(trips.attrs)
    store.add(part, source=f"month-{{i + 1:02d}}.csv", synthetic=True)
stored = time.perf_counter() - t
print(generated, published, stored)
"""

CONTEXT = """
import resource, sys, time
sys.path.insert(0, {repo!r})
t0 = time.perf_counter()
from pathlib import Path
import numpy as np
from vrvm import TravelTimeModel
from vrvm.services.map import area as area_svc
from vrvm.services.analyst import demo
from vrvm.services.answers import forecast
from vrvm.services.versions import models
from vrvm.services.map import places
imported = time.perf_counter()
home = Path({home!r})
demo.prepare_home(home)
models.Home(home).heal()
version, path = models.active_model_path(home)
model = TravelTimeModel.load(path)
trips = models.Home(home).training_trip_table(model)
area = area_svc.build_service_area(model, trips=trips)
ready = time.perf_counter()
rss_context = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
rng = np.random.default_rng(0)
busy = area.grid.index[area.grid["n_points"] > 0].to_numpy()
departure = forecast.default_departure(model.tz_)
def pair():
    a, b = rng.choice(busy, 2, replace=False)
    return (places.place_from_zone(area, area.grid["zone"][a]),
            places.place_from_zone(area, area.grid["zone"][b]))
times, observed = [], []
for i in range({repeats} + 1):
    origin, dest = pair()
    t = time.perf_counter()
    answer = forecast.answer_od(model, origin, dest, departure, 15, trips=trips,
                                resolution=area.resolution, area=area)
    if i:  # the first answer warms up imports
        times.append(time.perf_counter() - t)
        observed.append(len(answer.observed))
print(ready - t0, imported - t0, len(area.grid), rss_context,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
      " ".join(f"{{x:.5f}}" for x in times), "|", " ".join(map(str, observed)))
"""

APPTEST = """
import os, resource, sys, time
sys.path.insert(0, {repo!r})
os.environ["VRVM_HOME"] = {home!r}
t = time.perf_counter()
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({app!r}, default_timeout=3600).run()
assert not at.exception, at.exception
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""

STORE = """
import resource, sys, time
sys.path.insert(0, {repo!r})
t0 = time.perf_counter()
from pathlib import Path
from vrvm.services.analyst import demo
from vrvm.services.analyst import store_admin
imported = time.perf_counter()
home = Path({home!r})
t = time.perf_counter()
overview = store_admin.store_overview(home)
t_overview = time.perf_counter() - t
upload = demo.demo_trips(2000, seed=12345)
t = time.perf_counter()
far = store_admin.distance_to_store_km(home, upload)
t_centre = time.perf_counter() - t
from vrvm.trips.home import Home
store = Home(home).trips
t = time.perf_counter()
result = store.add(upload, source="extra.csv", synthetic=True)
t_add = time.perf_counter() - t
store_admin_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
# undo the extra batch, so that the next run measures the same store
if result.part is not None:
    result.part.unlink()
print(overview.summary.n_trips, t_overview, t_centre, t_add, result.n_added, store_admin_rss)
"""


def run(code: str, timeout: float = 7200) -> list[str]:
    """Run ``code`` in a fresh Python process; its stdout, split."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd="/tmp",
        timeout=timeout,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    if done.returncode:
        raise RuntimeError(done.stderr[-4000:])
    return done.stdout.split()


def ensure_home(home: Path, n: int, n_fit: int, rebuild: bool, model: str = "") -> dict:
    """The benchmark's data home with ``n`` trips, built unless already there."""
    marker = home / "bench-store-scale.json"
    if marker.is_file() and not rebuild:
        built = json.loads(marker.read_text())
        if built.get("n") == n and built.get("model", "") == model:
            return built
    if home.exists():
        import shutil

        shutil.rmtree(home)
    home.mkdir(parents=True)
    start = time.perf_counter()
    generated, published, stored = map(
        float, run(BUILD.format(repo=str(REPO), home=str(home), n=n, n_fit=n_fit, model=model))
    )
    built = {
        "n": n,
        "n_fit": n if model else n_fit,
        "model": model,
        "generate_s": generated,
        "publish_s": published,
        "store_add_10_batches_s": stored,
        "build_s": time.perf_counter() - start,
    }
    marker.write_text(json.dumps(built))
    return built


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000, help="trips (default 1e7)")
    parser.add_argument("--n-fit", type=int, default=20_000, help="trips the model is fit on")
    parser.add_argument("--root", type=Path, default=Path("/tmp/vrvm-store-scale"))
    parser.add_argument("--label", default="after", help="'before' or 'after' (the code)")
    parser.add_argument("--repeats", type=int, default=10, help="OD answers timed")
    parser.add_argument("--starts", type=int, default=3, help="fresh-process starts timed")
    parser.add_argument("--skip-apptest", action="store_true")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument(
        "--model",
        type=Path,
        default=None,
        help="publish this model (trained on the same trips: vrvm demo-data --n N --seed 0, "
        "then vrvm train) instead of one fitted on --n-fit of them",
    )
    args = parser.parse_args()

    model = str(args.model.resolve()) if args.model else ""
    home = args.root / (f"home-{args.n}" + ("-trained" if model else ""))
    built = ensure_home(home, args.n, args.n_fit, args.rebuild, model)
    result: dict = {"home": built}

    # the first open after publishing derives the zones and their index once (kept)
    everything = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    derived = sorted(home.glob("training/*.derived"))
    if not derived or not any(derived[0].iterdir()):
        out = run(CONTEXT.format(repo=str(REPO), home=str(home), repeats=1))
        result["first_open_s"] = float(out[0])
        result["first_open_peak_rss_mb"] = float(out[3])
    else:  # measured when the home's zones were first derived
        earlier = everything.get(args.label, {}).get(str(args.n), {})
        for key in ("first_open_s", "first_open_peak_rss_mb"):
            if key in earlier:
                result[key] = earlier[key]
    result["derived_mb"] = (
        sum(f.stat().st_size for d in home.glob("training/*.derived") for f in d.iterdir()) / 2**20
    )
    starts, imports, rss, rss_od, od = [], [], [], [], []
    for _ in range(args.starts):
        out = run(CONTEXT.format(repo=str(REPO), home=str(home), repeats=args.repeats))
        bar = out.index("|")
        starts.append(float(out[0]))
        imports.append(float(out[1]))
        result["zones"] = int(out[2])
        rss.append(float(out[3]))
        rss_od.append(float(out[4]))
        od += [float(x) for x in out[5:bar]]
        result["observed_per_answer"] = [int(x) for x in out[bar + 1 :]]
    result["context_start_s"] = starts
    result["context_import_s"] = imports
    result["context_peak_rss_mb"] = max(rss)
    result["od_answer_ms"] = {
        "median": 1e3 * quantile(od, 0.5),
        "p90": 1e3 * quantile(od, 0.9),
        "n": len(od),
    }
    result["peak_rss_after_od_mb"] = max(rss_od)
    if not args.skip_apptest:
        page = []
        for _ in range(args.starts):
            seconds, peak = map(
                float,
                run(APPTEST.format(repo=str(REPO), home=str(home), app=str(REPO / "app.py"))),
            )
            page.append(seconds)
            result["predict_page_peak_rss_mb"] = max(
                peak, result.get("predict_page_peak_rss_mb", 0.0)
            )
        result["predict_page_start_s"] = page
    n_trips, overview, centre, add, n_added, store_rss = run(
        STORE.format(repo=str(REPO), home=str(home))
    )
    result["store"] = {
        "n_trips": int(n_trips),
        "overview_s": float(overview),
        "centre_s": float(centre),
        "add_2000_s": float(add),
        "n_added": int(n_added),
        "peak_rss_mb": float(store_rss),
    }
    result["machine"] = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    result["date"] = time.strftime("%Y-%m-%d %H:%M")
    everything = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    result["load_average_1min"] = os.getloadavg()[0]
    everything.setdefault(args.label, {})[str(args.n)] = result
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(everything, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
