"""Exploration (issue 34): a location stage learned by boosting, the VRVM ensemble modelling
what it leaves.

Not part of the model. The tree models that beat ``TravelTimeModel`` on CRPS see richer
inputs than its kernels: besides the ``TripFeaturizer`` inputs ``X`` and the linear
distance column ``d`` (what NGBoost gets in ``bench_trips.py``) they get the log
distance, the bearing (sin, cos), the fractional local hour, the weekday, the origin and
destination coordinates rotated by a PCA of the training trips' end points, and the
KMeans(40) cluster of each end (all fitted on the training trips only). Here:

1. a ``HistGradientBoostingRegressor`` (cluster ids as categorical features) learns the
   log travel time f(x) from those inputs: out-of-fold on the training trips (K = 5)
   and once on all of them for the test trips. Each fold stops early on 10 % of its
   trips; the final fit runs the folds' mean number of iterations;
2. ``TravelTimeModel`` is fitted on the training trips with ``travel_time_s`` replaced
   by ``travel_time_s * exp(-(f_oof(x) - c))``, c the mean of f_oof (the residuals stay
   on the scale of seconds, so nothing in the model's checks bites);
3. a test trip's predictive is the model's mixture with every component's log-location
   moved by f(x) - c: the same scales, degrees of freedom and transform, so it stays an
   exact mixture with a density.

Variants (``--variants``, comma-separated; the stage's name says its loss, whether the
cluster ids are features, and whether the residual model has its zone-pair offsets):

``vrvm``, ``vrvm_no_pairs``
    ``TravelTimeModel(n_jobs=2, random_state=seed)`` with its defaults, and with
    ``pair_offsets=False``, on the trips themselves.
``hgb_{sq,abs}[_nocl]_t``
    The location stage alone: f(x) plus one Student-t fitted (maximum likelihood) to the
    out-of-fold log residuals, to see what the VRVM adds.
``hgb_abs_nocl_kde``
    f(x) plus a Gaussian kernel density of the out-of-fold log residuals (100
    components at their quantiles): a global non-parametric shape.
``stage_{sq,abs}[_nocl]_{pairs,nopairs}``
    The two-stage model: squared or absolute error boosting, with (default) or without
    (``_nocl``) the cluster ids, the residual model with or without its pair offsets.
``stage_sq_insample_pairs``
    The same with the final f(x) on the training trips instead of f_oof (the residual
    model then sees residuals smaller than the test trips'): why out-of-fold matters.
``stage_{sq,abs}[_nocl]_scale_pairs``
    A spread stage as well: s(x), boosting (gamma loss) of |log t - f_oof(x)| out of
    fold, divided by its geometric mean; the model learns exp(c + (log t - f_oof) / s_oof)
    and a test trip's components become location f + s (loc - c), scale s times theirs
    (still an exact mixture).

Every ``TravelTimeModel`` is fitted with the library's own location stage off
(``location_stage=False``) where the library has one (it came during this exploration).

Scores on the test trips, seconds: CRPS from 199 quantile levels k/200 (twice the mean
pinball loss, the rule the tree models are scored by in issue 34), the mixture's closed
form ``crps`` (log-t components as variance-matched log-normals, see
``MixtureDistribution``), NLL (mean -logpdf of seconds), MAE of the median, coverage of
the 50/80/90/95 % central intervals (from the same quantiles), fit seconds (location
stage and residual model apart), and the location stage's cost per query (features and
boosting: one query alone, and per trip in a batch).

``--online`` instead compares online updates (one city, one seed): the plain model and
the two-stage model fitted on 70 % of the training trips, the other 30 % streamed to
``update`` in chunks of ``--chunk`` trips (the two-stage model's trips with their
residual travel times under the fixed f(x) of the 70 %), then scored on the test trips;
beside the same fits without the stream.

The split is ``bench_trips.py``'s random 80/20 (``numpy.random.default_rng(seed)
.permutation``; seed 0 is its split); ``--seeds`` gives the seeds, each seeding the split,
the folds, the boosting, the clusters and the model.

Usage (from the repository root)::

    python benchmarks/explore_location_stage.py --city chicago --out /tmp/loc_chicago.json
    python benchmarks/explore_location_stage.py --city nyc --seeds 1,2 \\
        --variants vrvm,hgb_abs_nocl_t,stage_abs_nocl_pairs,stage_sq_nocl_pairs
    python benchmarks/explore_location_stage.py --city chicago --online \\
        --online-variant stage_abs_nocl_pairs
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

from vrvm import TravelTimeModel
from vrvm.engine.mixture import MixtureDistribution
from vrvm.trips import CleaningConfig, read_trips
from vrvm.trips.model.features import TripFeaturizer, raw_distance_km
from vrvm.trips.model.pair_offsets import ENDS

logger = logging.getLogger("explore_location_stage")

# the cities and their split are bench_trips.py's (run from the repository root)
from bench_trips import CITIES, SHARED, make_splits  # noqa: E402

#: Every TravelTimeModel here is fitted without a location stage of its own, where the
#: library has one (``location_stage``, later than this exploration): the stage is built
#: here, around the model.
NO_STAGE = {"location_stage": False} if "location_stage" in TravelTimeModel().get_params() else {}

#: Quantile levels of the CRPS rule: k / 200, k = 1..199.
GRID = np.arange(1, 200) / 200.0
COVERAGE_LEVELS = (0.5, 0.8, 0.9, 0.95)
N_CLUSTERS = 40
N_FOLDS = 5
#: Numeric columns of RichFeatures: X (7), d, log km, bearing (2), hour, weekday, PCA (4).
N_NUMERIC = 17
HGB_PARAMS = {
    "learning_rate": 0.05,
    "max_leaf_nodes": 31,
    "min_samples_leaf": 20,
    "l2_regularization": 1.0,
}
MAX_ITER = 2000
VARIANTS = (
    "vrvm",
    "vrvm_no_pairs",
    "hgb_sq_t",
    "hgb_abs_t",
    "hgb_abs_nocl_t",
    "hgb_abs_nocl_kde",
    "stage_sq_pairs",
    "stage_sq_nopairs",
    "stage_abs_pairs",
    "stage_abs_nopairs",
    "stage_sq_nocl_pairs",
    "stage_sq_nocl_nopairs",
    "stage_sq_insample_pairs",
    "stage_abs_nocl_pairs",
    "stage_abs_nocl_nopairs",
    "stage_sq_nocl_scale_pairs",
    "stage_abs_nocl_scale_pairs",
    "stage_abs_scale_pairs",
)


def warm_up(trips: pd.DataFrame) -> None:
    """Start the loky workers once, so that fit times exclude process start-up (as
    ``bench_trips.warm_up``)."""
    train, test = random_split(trips, 0)
    model = TravelTimeModel(n_members=2, max_basis=50, n_jobs=2, random_state=0, **NO_STAGE)
    model.fit(train.iloc[:600]).predict_dist(test.iloc[:100]).median()


def load_1min() -> float:
    return round(os.getloadavg()[0], 2)


# ---------------------------------------------------------------------------- data
def read_city(city: str) -> pd.DataFrame:
    trips, report = read_trips(SHARED / CITIES[city], cleaning=CleaningConfig())
    logger.info("%s: %s", city, report.summary().splitlines()[0])
    return trips


def random_split(trips: pd.DataFrame, seed: int, share: float = 0.8):
    """``bench_trips.make_splits``' random split with ``seed``: (train, test)."""
    split = make_splits(trips, share, seed)[0]
    return split.train, split.test


# ---------------------------------------------------------------------------- features
class RichFeatures:
    """The tree models' inputs, fitted on the training trips.

    Columns: the ``TripFeaturizer`` inputs (7) and ``d`` (standardised log1p km), log km,
    bearing sin/cos, fractional local hour, weekday, PCA-rotated origin and destination
    (2 + 2), and (``clusters``) the KMeans cluster of the origin and of the destination,
    the last two categorical.
    """

    def __init__(self, *, clusters: bool = True, seed: int = 0):
        self.clusters = clusters
        self.seed = seed

    def fit(self, trips: pd.DataFrame) -> RichFeatures:
        self.featurizer_ = TripFeaturizer(distance="log1p").fit(trips)
        ends = self._ends(trips)
        points = np.vstack([ends[:, :2], ends[:, 2:]])
        self.pca_ = PCA(n_components=2).fit(points)
        if self.clusters:
            self.kmeans_ = KMeans(N_CLUSTERS, n_init=4, random_state=self.seed).fit(points)
        return self

    def _ends(self, trips: pd.DataFrame) -> np.ndarray:
        """Origin and destination on the featurizer's local plane (km): (n, 4)."""
        proj = self.featurizer_.projection_
        ox, oy = proj.forward(trips["origin_lat"].to_numpy(), trips["origin_lon"].to_numpy())
        dx, dy = proj.forward(trips["dest_lat"].to_numpy(), trips["dest_lon"].to_numpy())
        return np.column_stack([ox, oy, dx, dy])

    @property
    def categorical(self) -> np.ndarray:
        """Boolean mask of the categorical columns."""
        mask = np.zeros(N_NUMERIC + 2 * self.clusters, dtype=bool)
        mask[N_NUMERIC:] = True
        return mask

    def transform(self, trips: pd.DataFrame) -> np.ndarray:
        X, d = self.featurizer_.transform(trips)
        ends = self._ends(trips)
        km = raw_distance_km(trips)
        lat1, lon1, lat2, lon2 = (np.radians(trips[c].to_numpy(float)) for c in ENDS)
        dlon = lon2 - lon1
        bearing = np.arctan2(
            np.sin(dlon) * np.cos(lat2),
            np.cos(lat1) * np.sin(lat2) - np.sin(lat1) * np.cos(lat2) * np.cos(dlon),
        )
        local = trips["start_time"].dt.tz_convert(self.featurizer_.tz_)
        hour = (local.dt.hour + local.dt.minute / 60 + local.dt.second / 3600).to_numpy(float)
        weekday = local.dt.weekday.to_numpy(float)
        columns = [
            X,
            d[:, None],
            np.log(km + 0.01)[:, None],
            np.sin(bearing)[:, None],
            np.cos(bearing)[:, None],
            hour[:, None],
            weekday[:, None],
            self.pca_.transform(ends[:, :2]),
            self.pca_.transform(ends[:, 2:]),
        ]
        if self.clusters:
            columns += [
                self.kmeans_.predict(ends[:, :2])[:, None].astype(float),
                self.kmeans_.predict(ends[:, 2:])[:, None].astype(float),
            ]
        return np.hstack(columns)


# ---------------------------------------------------------------------------- location stage
@dataclass
class Stage:
    """A fitted location stage: f_oof on train, f on test, and what it cost; with
    :func:`fit_scale`, also a spread stage s_oof, s on test (relative to their geometric
    mean over the training trips)."""

    features: RichFeatures
    F_train: np.ndarray
    F_test: np.ndarray
    folds: list
    model: HistGradientBoostingRegressor
    f_oof: np.ndarray
    f_train: np.ndarray
    f_test: np.ndarray
    n_iter: list
    fit_s: float
    load: float
    scale_model: HistGradientBoostingRegressor | None = None
    s_oof: np.ndarray | None = None
    s_test: np.ndarray | None = None
    scale_s: float = 0.0

    @property
    def center(self) -> float:
        return float(self.f_oof.mean())


def boosting(loss: str, categorical: np.ndarray, seed: int, **params) -> Any:
    return HistGradientBoostingRegressor(
        loss=loss,
        categorical_features=categorical if categorical.any() else None,
        random_state=seed,
        **{**HGB_PARAMS, **params},
    )


def out_of_fold(F_train, target, F_test, folds, loss, categorical, seed):
    """Out-of-fold predictions on train (each fold stopping early on 10 % of its trips),
    then one fit on all train with the folds' mean number of iterations: returns
    (oof, final model, its predictions on train, on test, iterations per fold)."""
    oof = np.empty(target.size)
    n_iter = []
    for fold, (fit_rows, out_rows) in enumerate(folds):
        model = boosting(
            loss,
            categorical,
            seed + fold,
            max_iter=MAX_ITER,
            early_stopping=True,
            validation_fraction=0.1,
            n_iter_no_change=30,
        )
        model.fit(F_train[fit_rows], target[fit_rows])
        oof[out_rows] = model.predict(F_train[out_rows])
        n_iter.append(int(model.n_iter_))
    iterations = round(float(np.mean(n_iter)))
    final = boosting(loss, categorical, seed, max_iter=iterations, early_stopping=False)
    final.fit(F_train, target)
    return oof, final, final.predict(F_train), final.predict(F_test), n_iter


def fit_stage(train, test, *, loss: str, clusters: bool, seed: int) -> Stage:
    """The location stage f: boosting of log seconds on the rich features, out of fold."""
    load = load_1min()
    start = time.perf_counter()
    features = RichFeatures(clusters=clusters, seed=seed).fit(train)
    F_train, F_test = features.transform(train), features.transform(test)
    logy = np.log(train["travel_time_s"].to_numpy(float))
    folds = list(KFold(N_FOLDS, shuffle=True, random_state=seed).split(F_train))
    f_oof, final, f_train, f_test, n_iter = out_of_fold(
        F_train, logy, F_test, folds, loss, features.categorical, seed
    )
    fit_s = time.perf_counter() - start
    return Stage(
        features, F_train, F_test, folds, final, f_oof, f_train, f_test, n_iter, fit_s, load
    )


def fit_scale(stage: Stage, train, seed: int) -> Stage:
    """The spread stage s: boosting (gamma loss, log link) of |log y - f_oof(x)| on the
    same features and folds, out of fold; s is divided by the geometric mean of s_oof."""
    start = time.perf_counter()
    logy = np.log(train["travel_time_s"].to_numpy(float))
    spread = np.abs(logy - stage.f_oof) + 1e-3
    s_oof, final, _, s_test, _ = out_of_fold(
        stage.F_train,
        spread,
        stage.F_test,
        stage.folds,
        "gamma",
        stage.features.categorical,
        seed + 50,
    )
    norm = float(np.exp(np.mean(np.log(s_oof))))
    stage.scale_model, stage.s_oof, stage.s_test = final, s_oof / norm, s_test / norm
    stage.scale_s = time.perf_counter() - start
    return stage


def residual_trips(trips, f: np.ndarray, center: float, s: np.ndarray | None = None):
    """A copy of ``trips`` with travel times exp(center + (log t - f) / s) (s = 1: t
    divided by exp(f - center))."""
    out = trips.copy()
    r = np.log(trips["travel_time_s"].to_numpy(float)) - f
    out["travel_time_s"] = np.exp(center + (r if s is None else r / s))
    return out


def shifted(dist, shift: np.ndarray, center: float = 0.0, s=None) -> MixtureDistribution:
    """``dist`` (of residual log seconds r + center) read as log seconds f + s r: every
    component's location ``shift + s (loc - center)`` (``shift``, ``s`` one per query) and
    scale ``s`` times its own; with s = 1 the locations move by ``shift - center``."""
    factor = np.ones(len(dist)) if s is None else np.asarray(s)
    return MixtureDistribution(
        shift[None, :] + factor[None, :] * (dist.loc - center),
        dist.scale * factor[None, :],
        df=dist.df,
        transform=dist.transform,
        n_members=dist.n_members,
    )


def stage_cost(stage: Stage, test: pd.DataFrame, repeats: int = 30) -> dict[str, float]:
    """f(x) per query (features, boosting): one query alone (median of ``repeats``) and per
    trip in a batch of the test trips (best of 3)."""
    one = test.iloc[:1]
    F_one = stage.features.transform(one)
    out = {}
    for name, fn in (
        ("features", lambda: stage.features.transform(one)),
        ("boosting", lambda: stage.model.predict(F_one)),
    ):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        out[f"single_{name}_ms"] = 1e3 * float(np.median(times))
    F_test = stage.features.transform(test)
    for name, fn in (
        ("features", lambda: stage.features.transform(test)),
        ("boosting", lambda: stage.model.predict(F_test)),
    ):
        best = np.inf
        for _ in range(3):
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        out[f"batch_{name}_us"] = 1e6 * best / len(test)
    return out


# ---------------------------------------------------------------------------- scoring
def score(dist: MixtureDistribution, y: np.ndarray) -> dict[str, Any]:
    """CRPS by the 199-quantile rule and closed form, NLL, MAE, coverage."""
    q = dist.ppf(GRID[:, None])  # (199, n)
    diff = y[None, :] - q
    pinball = np.maximum(GRID[:, None] * diff, (GRID[:, None] - 1) * diff)
    coverage = {}
    for level in COVERAGE_LEVELS:
        lo = np.searchsorted(GRID, (1 - level) / 2 - 1e-9)
        hi = np.searchsorted(GRID, (1 + level) / 2 - 1e-9)
        coverage[str(level)] = float(np.mean((y >= q[lo]) & (y <= q[hi])))
    median = q[np.searchsorted(GRID, 0.5 - 1e-9)]
    return {
        "crps_grid": float(2 * pinball.mean()),
        "crps_closed": float(dist.crps(y).mean()),
        "nll": float(-dist.logpdf(y).mean()),
        "mae": float(np.mean(np.abs(y - median))),
        "coverage": coverage,
    }


def kde(f_oof, logy, f_test, n_components: int = 100) -> MixtureDistribution:
    """f(x) plus a Gaussian kernel density of the out-of-fold log residuals: components at
    their ``n_components`` quantiles (k - 1/2) / n_components, Silverman's bandwidth."""
    r = logy - f_oof
    centres = np.quantile(r, (np.arange(n_components) + 0.5) / n_components)
    iqr = np.subtract(*np.quantile(r, [0.75, 0.25]))
    h = 0.9 * min(r.std(), iqr / 1.34) * r.size**-0.2
    return MixtureDistribution(centres[:, None] + f_test[None, :], h, transform="log")


def predict_cost(model: TravelTimeModel, test: pd.DataFrame, repeats: int = 30) -> dict:
    """``predict_dist`` of one query alone (median of ``repeats``) and per trip in a batch
    of the test trips (best of 3)."""
    one = test.iloc[:1]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model.predict_dist(one)
        times.append(time.perf_counter() - start)
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        model.predict_dist(test)
        best = min(best, time.perf_counter() - start)
    return {
        "predict_single_ms": 1e3 * float(np.median(times)),
        "predict_batch_us": 1e6 * best / len(test),
    }


def student_t(f_oof, logy, f_test) -> MixtureDistribution:
    """f(x) plus one Student-t fitted to the out-of-fold log residuals."""
    df, loc, scale = stats.t.fit(logy - f_oof)
    n = f_test.size
    return MixtureDistribution(
        (f_test + loc)[None, :], np.full((1, n), scale), df=np.full((1, n), df), transform="log"
    )


# ---------------------------------------------------------------------------- variants
def parse_stage(name: str) -> dict[str, Any]:
    """``stage_{sq,abs}[_nocl][_insample][_scale]_{pairs,nopairs}`` and
    ``hgb_{sq,abs}[_nocl]_{t,kde}``."""
    parts = name.split("_")[1:]
    return {
        "loss": {"sq": "squared_error", "abs": "absolute_error"}[parts[0]],
        "clusters": "nocl" not in parts,
        "in_sample": "insample" in parts,
        "scale": "scale" in parts,
        "pair_offsets": parts[-1] == "pairs",
    }


def fit_vrvm(trips, seed, **params) -> tuple[TravelTimeModel, float, float]:
    load = load_1min()
    start = time.perf_counter()
    model = TravelTimeModel(n_jobs=2, random_state=seed, **NO_STAGE, **params).fit(trips)
    return model, time.perf_counter() - start, load


def get_stage(stages: dict, train, test, seed: int, opts: dict) -> Stage:
    key = (opts["loss"], opts["clusters"])
    if key not in stages:
        stages[key] = fit_stage(train, test, loss=key[0], clusters=key[1], seed=seed)
    stage = stages[key]
    if opts.get("scale") and stage.s_oof is None:
        fit_scale(stage, train, seed)
    return stage


def run_variant(name, train, test, seed, stages: dict) -> dict[str, Any]:
    y = test["travel_time_s"].to_numpy(float)
    record: dict[str, Any] = {"variant": name, "seed": seed}
    if name in ("vrvm", "vrvm_no_pairs"):
        model, fit_s, load = fit_vrvm(train, seed, pair_offsets=name == "vrvm")
        dist = model.predict_dist(test)
        record.update(fit_s=fit_s, stage_s=0.0, vrvm_s=fit_s, load=load)
        record["pair_levels"] = pair_levels(model)
        record.update(predict_cost(model, test))
    else:
        opts = parse_stage(name)
        stage = get_stage(stages, train, test, seed, opts)
        stage_s = stage.fit_s + (stage.scale_s if opts["scale"] else 0.0)
        record.update(stage_s=stage_s, stage_n_iter=stage.n_iter, load=stage.load)
        logy = np.log(train["travel_time_s"].to_numpy(float))
        record["stage_rmse_oof"] = float(np.sqrt(np.mean((logy - stage.f_oof) ** 2)))
        record["stage_rmse_test"] = float(np.sqrt(np.mean((np.log(y) - stage.f_test) ** 2)))
        if name.startswith("hgb"):
            spread = kde if name.endswith("_kde") else student_t
            dist = spread(stage.f_oof, logy, stage.f_test)
            record.update(fit_s=stage_s, vrvm_s=0.0)
        else:
            f_fit = stage.f_train if opts["in_sample"] else stage.f_oof
            center = float(f_fit.mean())
            s_fit, s_test = (stage.s_oof, stage.s_test) if opts["scale"] else (None, None)
            resid = residual_trips(train, f_fit, center, s_fit)
            model, vrvm_s, _ = fit_vrvm(resid, seed, pair_offsets=opts["pair_offsets"])
            dist = shifted(model.predict_dist(test), stage.f_test, center, s_test)
            record.update(fit_s=stage_s + vrvm_s, vrvm_s=vrvm_s)
            record["kernel_widths"] = model.kernel_widths_.round(3).tolist()
            record["n_relevance"] = float(np.mean(model.n_relevance_))
            record["pair_levels"] = pair_levels(model)
            record.update(predict_cost(model, test))
            if s_test is not None:
                record["s_test_quantiles"] = np.quantile(s_test, [0.05, 0.5, 0.95]).tolist()
    record.update(score(dist, y))
    logger.info(
        "seed %d %-30s CRPS grid %.1f closed %.1f NLL %.3f cov90 %.3f fit %.1f s (load %.2f)",
        seed,
        name,
        record["crps_grid"],
        record["crps_closed"],
        record["nll"],
        record["coverage"]["0.9"],
        record["fit_s"],
        record["load"],
    )
    return record


def pair_levels(model: TravelTimeModel) -> list | None:
    """(resolution, k) of the pair-offset levels the model kept (None: no offsets)."""
    offsets = model.pair_offsets_
    if offsets is None:
        return None
    return [[int(level["resolution"]), float(level["k"])] for level in offsets.levels]


def table(rows: list[dict]) -> str:
    lines = [
        "| seed | variant | CRPS grid s | CRPS closed s | NLL | MAE s | cov 50/80/90/95 % "
        "| fit s (stage + vrvm) | load |",
        "|" + "---|" * 9,
    ]
    for r in rows:
        cov = "/".join(f"{r['coverage'][str(lv)]:.3f}" for lv in COVERAGE_LEVELS)
        lines.append(
            f"| {r['seed']} | {r['variant']} | {r['crps_grid']:.1f} | {r['crps_closed']:.1f} "
            f"| {r['nll']:.3f} | {r['mae']:.1f} | {cov} | {r['fit_s']:.1f} "
            f"({r['stage_s']:.1f} + {r['vrvm_s']:.1f}) | {r['load']} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------- online
def online(city_trips, seed: int, chunk: int, variant: str, fit_share: float = 0.7) -> list:
    """Fit on ``fit_share`` of train, stream the rest (in start-time order) to ``update``
    in chunks of ``chunk`` trips; score on test before and after the stream. The staged
    model's streamed trips carry their residual travel times under the fixed stage."""
    train, test = random_split(city_trips, seed)
    rng = np.random.default_rng(seed + 100)
    first = np.zeros(len(train), dtype=bool)
    first[rng.permutation(len(train))[: round(fit_share * len(train))]] = True
    base, stream = train[first].reset_index(drop=True), train[~first].reset_index(drop=True)
    stream = stream.sort_values("start_time", kind="stable").reset_index(drop=True)
    y = test["travel_time_s"].to_numpy(float)
    opts = parse_stage(variant)
    stage = get_stage({}, base, test, seed, opts)
    F_stream = stage.features.transform(stream)
    f_stream = stage.model.predict(F_stream)
    s_fit = s_test = s_stream = None
    if opts["scale"]:
        s_fit, s_test = stage.s_oof, stage.s_test
        norm = float(np.exp(np.mean(np.log(stage.scale_model.predict(stage.F_train)))))
        s_stream = stage.scale_model.predict(F_stream) / norm
    center = stage.center
    rows = []
    for staged in (False, True):
        fit_trips = residual_trips(base, stage.f_oof, center, s_fit) if staged else base
        streamed = residual_trips(stream, f_stream, center, s_stream) if staged else stream
        model, fit_s, load = fit_vrvm(fit_trips, seed, pair_offsets=opts["pair_offsets"])
        name = variant if staged else "vrvm" + ("" if opts["pair_offsets"] else "_no_pairs")

        def predictive(model=model, staged=staged):
            dist = model.predict_dist(test)
            return shifted(dist, stage.f_test, center, s_test) if staged else dist

        rows.append(
            {
                "variant": f"{name}, fit on {len(base)}",
                "seed": seed,
                "fit_s": fit_s,
                "load": load,
                **score(predictive(), y),
            }
        )
        load = load_1min()
        start = time.perf_counter()
        for i in range(0, len(streamed), chunk):
            model.update(streamed.iloc[i : i + chunk])
        update_s = time.perf_counter() - start
        rows.append(
            {
                "variant": f"{name}, fit on {len(base)} + {len(stream)} streamed",
                "seed": seed,
                "update_ms_per_trip": 1e3 * update_s / len(stream),
                "load": load,
                **score(predictive(), y),
            }
        )
        logger.info("%s: %s", name, rows[-1])
    return rows


# ---------------------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--city", choices=sorted(CITIES), default="chicago")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"from {VARIANTS}")
    parser.add_argument("--online", action="store_true", help="compare online updates instead")
    parser.add_argument("--chunk", type=int, default=20, help="--online: trips per update")
    parser.add_argument(
        "--online-variant", default="stage_sq_pairs", help="--online: the staged model"
    )
    parser.add_argument("--out", type=Path, default=None, help="JSON output path")
    parser.add_argument(
        "--threads", type=int, default=1, help="OpenMP threads of the boosting and KMeans"
    )
    args = parser.parse_args(argv)
    # OpenMP threads spin: on a shared, loaded machine two of them made a boosting fit
    # about 9x slower than one (1.3 s against 11.6 s for 150 iterations on 10,000 rows)
    threadpool_limits(args.threads, user_api="openmp")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"unknown variant(s) {sorted(unknown)}; choose from {VARIANTS}")
    seeds = [int(s) for s in args.seeds.split(",")]
    trips = read_city(args.city)
    meta = {
        "city": args.city,
        "load_avg_start": list(os.getloadavg()),
        "hgb": HGB_PARAMS,
        "vrvm": sys.modules["vrvm"].__file__,
        "model_params": NO_STAGE,
    }
    rows: list[dict] = []
    costs = {}
    warm_up(trips)
    if args.online:
        rows = online(trips, seeds[0], args.chunk, args.online_variant)
    else:
        for seed in seeds:
            train, test = random_split(trips, seed)
            meta[f"split_{seed}"] = [len(train), len(test)]
            stages: dict = {}
            for name in variants:
                rows.append(run_variant(name, train, test, seed, stages))
            for (loss, clusters), stage in stages.items():
                costs[f"seed {seed} {loss} clusters={clusters}"] = stage_cost(stage, test)
    meta["load_avg_end"] = list(os.getloadavg())
    meta["stage_cost"] = costs
    if not args.online:
        print(table(rows))
    else:
        for r in rows:
            print(r)
    print(json.dumps(costs, indent=1))
    print(f"load average at start {meta['load_avg_start']}, at end {meta['load_avg_end']}")
    if args.out:
        args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
