"""Exploration (issue 16): how much a per-zone-pair offset of the log travel time would add.

Not part of the model. For each training trip, its out-of-shard residual (log seconds
minus the mean location of the members that did not see it); per pair of H3 cells
(origin, destination) at resolution 7, 8 or 9, the residuals' shrunk mean
``sum / (count + k)`` (a random effect's posterior mean with prior-to-noise variance
ratio 1/k); every member's location of a test trip is moved by its pair's offset (0 for
a pair without training trips), which keeps an exact mixture. The scales are left as
they are. Resolution and k are read off the *test* trips here, so the best figures are
optimistic: a model would choose them on out-of-shard trips.

Usage (from the repository root)::

    python benchmarks/explore_pair_effects.py chicago [random|time]
    python benchmarks/explore_pair_effects.py nyc
    python benchmarks/explore_pair_effects.py sf
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import h3
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_trips as bt

from vrvm import TravelTimeModel
from vrvm.engine.mixture import MixtureDistribution
from vrvm.trips import read_trips
from vrvm.trips.model import _ensemble


def cell_pairs(trips: pd.DataFrame, resolution: int) -> np.ndarray:
    """The (origin cell, destination cell) of each trip as one string."""
    origin = [
        h3.latlng_to_cell(a, b, resolution)
        for a, b in zip(trips.origin_lat, trips.origin_lon, strict=True)
    ]
    dest = [
        h3.latlng_to_cell(a, b, resolution)
        for a, b in zip(trips.dest_lat, trips.dest_lon, strict=True)
    ]
    return np.array([o + d for o, d in zip(origin, dest, strict=True)])


def main(city: str, split_name: str = "random") -> None:
    trips, _ = read_trips(bt.SHARED / bt.CITIES[city])
    split = next(s for s in bt.make_splits(trips) if s.name == split_name)
    model = TravelTimeModel(n_jobs=2, random_state=0)
    model.validate_params()
    data = model.fit_trips(split.train, None, None, None, time.perf_counter(), {})
    predictives = model.member_predictors()
    loc, _ = _ensemble.member_loc_scale(predictives, data.X, data.d)
    held_out = data.shard_of_row[None, :] != np.arange(len(predictives))[:, None]
    residual = data.y - (loc * held_out).sum(axis=0) / held_out.sum(axis=0)

    dist = model.predict_dist(split.test)
    y = split.y_test

    def scores(d: MixtureDistribution) -> str:
        lo, hi = d.interval(0.9)
        crps = d.crps(y).mean()
        return (
            f"CRPS {crps:.2f} ({crps / base - 1:+.2%}) NLL {-d.logpdf(y).mean():.4f} "
            f"cov90 {np.mean((y >= lo) & (y <= hi)):.3f}"
        )

    base = dist.crps(y).mean()
    print(f"{city}, {split_name} split, default model: {scores(dist)}")
    for resolution in (7, 8, 9):
        groups = pd.DataFrame({"g": cell_pairs(split.train, resolution), "r": residual})
        sums = groups.groupby("g")["r"].agg(["sum", "count"])
        test_pairs = pd.Series(cell_pairs(split.test, resolution))
        seen = test_pairs.isin(sums.index).mean()
        for k in (5, 10, 20, 40):
            offset = test_pairs.map(sums["sum"] / (sums["count"] + k)).fillna(0.0).to_numpy()
            moved = MixtureDistribution(
                dist.loc + offset[None, :], dist.scale, df=dist.df, transform="log"
            )
            print(
                f"  resolution {resolution}, k {k:2d}: {scores(moved)}; {len(sums):,} pairs, "
                f"{seen:.0%} of test trips in one"
            )


if __name__ == "__main__":
    main(*sys.argv[1:])
