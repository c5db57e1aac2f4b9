"""Prequential (test-then-train) benchmark of sequential Bayesian updates.

On the Chicago taxi sample sorted by start time (default cleaning of ``read_trips``):
a ``TravelTimeModel`` is trained on the first 20 % of the trips; every later trip is
first predicted, then learned. Compared, on the same stream:

* ``updated``  -- the model updated trip by trip (``model.update(trip, assign="all")``:
  every member learns every trip);
* ``updated (shard)`` -- the same, but each trip updates one member in turn (the
  default): each member's basis grows and shrinks with the stream (``online_reserve``,
  ``online_every``), the distance scale is refitted on the stream's held-out
  predictions and the location stage is refreshed on the kept trips whenever they
  double (the JSON's ``stage_refreshes``);
* ``updated (shard), fixed basis`` -- the same with ``online_reserve=0``: only the
  weights of the fitted functions are updated (and the distance scale refitted);
* ``frozen``   -- the initial model, never updated;
* ``refit 10%`` -- a full refit on everything seen so far at every 10 % of the stream
  (each refit predicts the next 10 %);
* ``river BLR`` -- river's ``BayesianLinearRegression`` (fixed noise, Bishop's online
  update) on the same standardised features and log target, with the noise precision
  set from the residuals of a least-squares fit on the first 20 %.

Scores: CRPS (seconds) and 90 % interval coverage, overall and per tenth of the
stream (rolling), plus the time per update (median, and the mean: the amortised cost,
re-solves and scale refits included; for the refits, their total time over the stream's
trips) and the process CPU time per trip. Usage::

    python benchmarks/bench_online.py [--data PATH] [--limit N]

Prints Markdown tables for BENCHMARKS.md and writes benchmarks/results/bench_online.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from itertools import pairwise
from pathlib import Path

import numpy as np

from vrvm import MixtureDistribution, TravelTimeModel, TripFeaturizer, read_trips

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "chicago_taxi_trips.csv"


def _scores(dist, t):
    lo, hi = dist.interval(0.9)
    return dist.crps(t), ((t >= lo) & (t <= hi)).astype(float)


def prequential_updates(model, stream, assign):
    crps, cover, update_s = np.empty(len(stream)), np.empty(len(stream)), np.empty(len(stream))
    cpu_s = 0.0
    t = stream["travel_time_s"].to_numpy()
    for i in range(len(stream)):
        trip = stream.iloc[i : i + 1]
        c, v = _scores(model.predict_dist(trip), t[i : i + 1])
        crps[i], cover[i] = c[0], v[0]
        start, cpu = time.perf_counter(), time.process_time()
        model.update(trip, assign=assign)
        update_s[i] = time.perf_counter() - start
        cpu_s += time.process_time() - cpu
    return crps, cover, update_s, cpu_s


def periodic_refits(head, stream, params, n_blocks=10):
    crps, cover = np.empty(len(stream)), np.empty(len(stream))
    edges = np.linspace(0, len(stream), n_blocks + 1).astype(int)
    fit_s = []
    for a, b in pairwise(edges):
        seen = head if a == 0 else _concat(head, stream.iloc[:a])
        start = time.perf_counter()
        model = TravelTimeModel(**params).fit(seen)
        fit_s.append(time.perf_counter() - start)
        block = stream.iloc[a:b]
        crps[a:b], cover[a:b] = _scores(
            model.predict_dist(block), block["travel_time_s"].to_numpy()
        )
    # the first fit is the frozen model's: every method has it
    return crps, cover, fit_s


def _concat(a, b):
    import pandas as pd

    return pd.concat([a, b], ignore_index=True)


def river_blr(head, stream):
    from river.linear_model import BayesianLinearRegression as RiverBLR

    feat = TripFeaturizer().fit(head)

    def rows(trips):
        X, d = feat.transform(trips)
        Z = np.column_stack([np.ones(len(X)), X, d])
        return [dict(enumerate(z)) for z in Z], Z

    xs_head, Z = rows(head)
    y_head = np.log(head["travel_time_s"].to_numpy())
    coef, *_ = np.linalg.lstsq(Z, y_head, rcond=None)
    beta = 1.0 / np.var(y_head - Z @ coef)
    model = RiverBLR(alpha=1.0, beta=beta)
    for x, y in zip(xs_head, y_head, strict=True):
        model.learn_one(x, y)
    xs, _ = rows(stream)
    t = stream["travel_time_s"].to_numpy()
    crps, cover, update_s = np.empty(len(t)), np.empty(len(t)), np.empty(len(t))
    for i, x in enumerate(xs):
        dist = model.predict_one(x, with_dist=True)
        mix = MixtureDistribution([[dist.mu]], [[dist.sigma]], transform="log")
        c, v = _scores(mix, t[i : i + 1])
        crps[i], cover[i] = c[0], v[0]
        start = time.perf_counter()
        model.learn_one(x, float(np.log(t[i])))
        update_s[i] = time.perf_counter() - start
    return crps, cover, update_s, None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=None, help="use only the first N trips")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="JSON output path")
    args = parser.parse_args(argv)

    trips, report = read_trips(args.data)
    trips = trips.sort_values("start_time", kind="stable").reset_index(drop=True)
    if args.limit:
        trips = trips.iloc[: args.limit]
    k = int(0.2 * len(trips))
    head, stream = trips.iloc[:k], trips.iloc[k:].reset_index(drop=True)
    params = {"random_state": 0, "n_jobs": args.n_jobs}
    print(
        f"machine: {platform.machine()}, python {platform.python_version()}; data "
        f"{args.data.name}: {report.n_kept} trips kept of {report.n_input}; initial "
        f"{len(head)}, stream {len(stream)}"
    )

    results = {}
    start = time.perf_counter()
    base = TravelTimeModel(**params).fit(head)
    init_fit = time.perf_counter() - start
    c, v = _scores(base.predict_dist(stream), stream["travel_time_s"].to_numpy())
    results["frozen"] = {"crps": c, "cover": v}
    variants = (
        ("updated", "all", {}),
        ("updated (shard)", "shard", {}),
        ("updated (shard), fixed basis", "shard", {"online_reserve": 0}),
    )
    for name, assign, extra in variants:
        model = TravelTimeModel(**params, **extra).fit(head)
        c, v, u, cpu = prequential_updates(model, stream, assign)
        results[name] = {"crps": c, "cover": v, "update_s": u, "cpu_s": cpu}
        results[name]["refreshes"] = model._online.n_refreshes  # of the location stage
    c, v, fits = periodic_refits(head, stream, params)
    # (no CPU time: the refits run in worker processes)
    results["refit 10%"] = {"crps": c, "cover": v, "refit_s": fits}
    c, v, u, _ = river_blr(head, stream)
    results["river BLR"] = {"crps": c, "cover": v, "update_s": u}

    edges = np.linspace(0, len(stream), 11).astype(int)
    print(f"\nInitial fit on {len(head)} trips: {init_fit:.1f} s\n")
    print(
        "| method | CRPS (s) | 90 % coverage | time per update | amortised ms/trip "
        "| CPU ms/trip | rolling CRPS per tenth |"
    )
    print("|---|---|---|---|---|---|---|")
    summary = {}
    for name, r in results.items():
        rolling = [float(r["crps"][a:b].mean()) for a, b in pairwise(edges)]
        amortised = None
        if "update_s" in r:
            med, amortised = np.median(r["update_s"]) * 1e3, np.mean(r["update_s"]) * 1e3
            cost = f"{med:.2f} ms median"
        elif "refit_s" in r:
            cost = f"refit {np.mean(r['refit_s']):.1f} s x {len(r['refit_s'])}"
            amortised = 1e3 * sum(r["refit_s"][1:]) / len(stream)
        else:
            cost = "-"
        cpu = r.get("cpu_s")
        cpu_ms = None if cpu is None else 1e3 * cpu / len(stream)
        summary[name] = {
            "crps": float(r["crps"].mean()),
            "coverage90": float(r["cover"].mean()),
            "rolling_crps": rolling,
            "update_ms_median": float(np.median(r["update_s"]) * 1e3) if "update_s" in r else None,
            "amortised_ms_per_trip": amortised,
            "cpu_ms_per_trip": cpu_ms,
            "load_1min": os.getloadavg()[0],
            "stage_refreshes": r.get("refreshes"),
        }
        print(
            f"| {name} | {r['crps'].mean():.1f} | {r['cover'].mean():.3f} | {cost} "
            f"| {'-' if amortised is None else f'{amortised:.2f}'} "
            f"| {'-' if cpu_ms is None else f'{cpu_ms:.2f}'} | "
            + " ".join(f"{x:.0f}" for x in rolling)
            + " |"
        )
    out = args.out or ROOT / "benchmarks" / "results" / "bench_online.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2))
    upd, frozen, refit = (summary[k]["crps"] for k in ("updated (shard)", "frozen", "refit 10%"))
    print(
        f"\nupdated (shard) vs frozen: {100 * (upd / frozen - 1):+.1f} %; vs periodic refit: "
        f"{100 * (upd / refit - 1):+.1f} %; load average {os.getloadavg()}"
    )


if __name__ == "__main__":
    main()
