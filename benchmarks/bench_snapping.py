"""What snapping relevance vectors to zone centres costs in accuracy (issue 17).

On the Chicago taxi sample (default cleaning of ``read_trips``), split once with the
same hold-out split as the CLI (``split_holdout``, 20 %, seed 0), a model is trained on
the rest and scored on the held-out trips; then :func:`vrvm.trips.model.snapping.snap_model`
copies it with its relevance vectors moved to the centres of H3 cells of several
resolutions and to 15- or 60-minute slots, and each copy is scored on the same trips:
CRPS and mean NLL (seconds), 90 % interval coverage, MAE of the median, and how far the
median moved. Several seeds of the model; the table reports means over seeds. The last
row is what ``vrvm export`` and the dashboard do by default: the coarsest resolution
whose cost on 2,000 of the model's *training* trips is at most 2 %
(:func:`vrvm.trips.model.snapping.choose_snap_resolution`), scored on the held-out trips.

Usage::

    python benchmarks/bench_snapping.py [--data PATH] [--seeds 3] [--members 8]

Prints a Markdown table for BENCHMARKS.md and writes benchmarks/results/snapping.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from vrvm import TravelTimeModel, read_trips
from vrvm.trips.model.snapping import choose_snap_resolution, snap_model
from vrvm.trips.model.split import split_holdout

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "chicago_taxi_trips.csv"
VARIANTS = [(None, None), (9, 15), (8, 15), (7, 15), (8, 60), (6, 60)]


def _scores(model: TravelTimeModel, test, reference_median=None) -> dict:
    dist = model.predict_dist(test)
    t = test["travel_time_s"].to_numpy(float)
    lo, hi = dist.interval(0.9)
    median = dist.median()
    out = {
        "crps_s": float(np.mean(dist.crps(t))),
        "nll": float(np.mean(-dist.logpdf(t))),
        "coverage_90": float(np.mean((t >= lo) & (t <= hi))),
        "mae_s": float(np.mean(np.abs(median - t))),
    }
    if reference_median is not None:
        out["median_shift_pct"] = float(100 * np.median(np.abs(median / reference_median - 1)))
    return out, median


def _distance_moved_km(model: TravelTimeModel, snapped: TravelTimeModel) -> float:
    from vrvm.trips.places.geo import haversine_km

    a, b = model.relevance_trips(), snapped.relevance_trips()
    moved = np.concatenate(
        [
            haversine_km(a["origin_lat"], a["origin_lon"], b["origin_lat"], b["origin_lon"]),
            haversine_km(a["dest_lat"], a["dest_lon"], b["dest_lat"], b["dest_lon"]),
        ]
    )
    return float(np.median(moved))


def run(data: Path, seeds: int, members: int) -> dict:
    trips, _ = read_trips(data)
    train, test = split_holdout(trips, 0.2, seed=0)
    rows = []
    for seed in range(seeds):
        started = time.perf_counter()
        model = TravelTimeModel(n_members=members, random_state=seed, n_jobs=1).fit(train)
        fit_s = time.perf_counter() - started
        base, base_median = _scores(model, test)
        for resolution, minutes in VARIANTS:
            if resolution is None:
                rows.append({"seed": seed, "variant": "exact (as trained)", **base})
                continue
            snapped = snap_model(model, resolution=resolution, slot_minutes=minutes)
            scores, _ = _scores(snapped, test, base_median)
            rows.append(
                {
                    "seed": seed,
                    "variant": f"H3 res {resolution}, {minutes}-min slots",
                    "resolution": resolution,
                    "slot_minutes": minutes,
                    "moved_km": _distance_moved_km(model, snapped),
                    **scores,
                }
            )
        started = time.perf_counter()
        choice = choose_snap_resolution(model, train, max_trips=2000, seed=seed)
        choose_s = time.perf_counter() - started
        snapped = snap_model(model, resolution=choice.resolution)
        scores, _ = _scores(snapped, test, base_median)
        rows.append(
            {
                "seed": seed,
                "variant": "chosen: coarsest within 2 % on training trips, 15-min slots",
                "resolution": choice.resolution,
                "slot_minutes": 15,
                "moved_km": _distance_moved_km(model, snapped),
                "choose_s": choose_s,
                **scores,
            }
        )
        costs = dict(zip(choice.costs["resolution"], choice.costs["cost"].round(4), strict=True))
        print(
            f"seed {seed}: fitted in {fit_s:.0f} s (h3 resolution {model.h3_resolution_}); "
            f"chose resolution {choice.resolution} in {choose_s:.1f} s "
            f"(training-trip costs {costs})"
        )
    return {
        "data": data.name,
        "n_train": len(train),
        "n_test": len(test),
        "members": members,
        "model_resolution": int(model.h3_resolution_),
        "rows": rows,
        "machine": {
            "processor": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
        },
    }


def table(result: dict) -> str:
    rows = result["rows"]
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    exact = [r for r in rows if r["variant"] == variants[0]]
    crps0 = np.mean([r["crps_s"] for r in exact])
    lines = [
        "| relevance vectors | moved (median km) | CRPS (s) | vs exact | NLL | 90 % coverage "
        "| MAE (s) | median moved |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in variants:
        chosen = [r for r in rows if r["variant"] == name]

        def mean(key, chosen=chosen):
            values = [r[key] for r in chosen if key in r]
            return float(np.mean(values)) if values else float("nan")

        crps = mean("crps_s")
        moved = "-" if name == variants[0] else f"{mean('moved_km'):.2f}"
        shift = "-" if name == variants[0] else f"{mean('median_shift_pct'):.1f} %"
        lines.append(
            f"| {name} | {moved} | {crps:.1f} | {100 * (crps / crps0 - 1):+.1f} % | "
            f"{mean('nll'):.3f} | {100 * mean('coverage_90'):.1f} % | {mean('mae_s'):.1f} | "
            f"{shift} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--members", type=int, default=8)
    args = parser.parse_args()
    result = run(args.data, args.seeds, args.members)
    out = ROOT / "benchmarks" / "results" / "snapping.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"{result['n_train']:,} training and {result['n_test']:,} held-out trips, "
        f"{result['members']} members, model zones at H3 resolution "
        f"{result['model_resolution']}; means over {args.seeds} seeds\n"
    )
    print(table(result))


if __name__ == "__main__":
    main()
