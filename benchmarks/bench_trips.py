"""Benchmark of the travel-time model against the anchors people would otherwise use.

On the Chicago taxi sample (``../shared/data/chicago_taxi_trips.csv`` from the repository
root; ``--city nyc`` and ``--city sf`` for the NYC 2016 taxi and San Francisco bike-share
samples there, ``--city synthetic`` for 14,000 trips of Synthetica), after the documented
cleaning of :func:`vrvm.read_trips` (defaults: drop trips
shorter than 60 s, longer than 3 h or faster than 120 km/h straight-line), these splits
are scored:

* ``random``: a random 80/20 split (``numpy.random.default_rng(0).permutation``);
* ``time``: train on the earliest 80 % of trips by start time, test on the rest;
* ``blocks`` (only when ``--splits`` asks for it): random whole hours of start time to
  test, about 20 % of the trips, so that riders starting together on the same pair fall
  on one side (:func:`make_splits`).

Models, all fitted on the same features (the ``TripFeaturizer`` inputs ``X`` and the
linear distance column ``d``, fitted on the training trips; ``d`` is the standardised
log(1 + km), the column ``TravelTimeModel`` uses for the log target), all but LightGBM
and the climatology on log seconds (so their predictives are log-normal on seconds):

``vrvm``
    ``TravelTimeModel(n_jobs=2, random_state=0)`` with its defaults.
``vrvm_no_twin_scales``
    The same with ``twin_scales=False``: one component per member.
``vrvm_no_pair_offsets``
    The same with ``pair_offsets=False`` and ``twin_scales=False``: no zone-pair offsets
    (the default before they came, late in issue 16).
``vrvm_shard_weight1``
    The same with ``shard_weight=1``, no pair offsets and no twin scales: each member
    fitted on its shard's plain likelihood (the default before issue 16).
``vrvm_constant_noise``
    The same with ``noise_model="constant"``: each member's own noise level for every
    trip (the paper's model), without the distance scale.
``vrvm_distance_linear_only``
    The same with ``distance_in_kernel=False``: distance only in the linear term.
``vrvm_max_basis2000``, ``vrvm_widths4``
    The same with ``max_basis=2000``, and with ``kernel_widths=[0.5, 1, 2, 4]``: the
    best parameter-only settings found by ``--explore``.
``bayesian_ridge``
    ``sklearn.linear_model.BayesianRidge``; predictive Normal on the log scale.
``gp_3k``
    ``GaussianProcessRegressor`` with constant * ARD RBF + WhiteKernel on a random
    3,000-trip subset of train (``normalize_y=True``, no optimizer restarts, L-BFGS-B
    capped at 50 iterations: ``--gp-restarts``, ``--gp-max-iter``).
``ard_rbf``
    ``sklearn.linear_model.ARDRegression`` on 1,000 Gaussian RBF columns (centres by
    k-means++ seeding on train, width by the median heuristic), ``max_iter=100``.
``ngboost``
    ``NGBRegressor(Dist=Normal)`` with its defaults (500 stages).
``lightgbm``
    Three LightGBM quantile models (5 %, 50 %, 95 %) on seconds: RMSE/MAE/MAPE of the
    median and the 90 % interval; NLL and CRPS are not defined (``None``, "n/a").
``climatology``
    The training-set empirical distribution of the trips with the same origin point,
    destination point and 3-hour slot (local time) when seen at least 5 times, else the
    global one; CRPS from the empirical CDF, NLL not defined.

Per model: RMSE, MAE and MAPE of the median (seconds), NLL (mean -log density per
second, Jacobian included for log models), CRPS (seconds), coverage and mean width of
the 50/80/90/95 % central intervals, fit time (s, wall clock) and predict time
(microseconds per trip: the best of ``--repeats`` calls producing the predictive's
parameters; for ``vrvm`` that is ``predict_dist`` on the DataFrame, featurisation
included). The 1-minute load average is recorded beside every fit: the machine may be
shared, so timings are noisy.

``vrvm`` is timed after a small warm-up fit that starts the loky workers (one-off
process start-up, 2-4 s here, is not part of a fit).

``--explore`` instead fits a grid of ``TravelTimeModel`` settings (parameters only, a
few seeds) on the random split and writes ``bench_trips_explore.json``. Rows named
``PROTOTYPE`` post-process the fitted model's public predictive, to measure what a
library change would bring (nothing in the library is patched): ``spread by distance``
/ ``t tails`` multiply the member scales by a factor per distance bin, and/or give them
Student-t tails, both fitted on the in-sample standardised log residuals (see
``_recalibrate``).

``--anchors`` (issue 34) instead compares ``vrvm`` with the strongest off-the-shelf
distributional regressors, over the seeds of ``--seeds`` (default 0,1,2: each seed sets
the random split's permutation, ``default_rng(seed)``, and every model's random state),
on the random split unless ``--splits`` says otherwise. The anchors share one *tree
feature set* fitted on the training trips only (:class:`TreeFeatures`): ``Z`` above, log
distance, bearing (sin, cos), fractional local hour, weekday, origin and destination in
the principal axes of the training endpoints and their KMeans(40) clusters.

``quantile_forest``
    ``quantile_forest.RandomForestQuantileRegressor`` on log seconds, 199 quantiles.
``xgb_distribution``
    ``xgboost_distribution.XGBDistribution(distribution="normal")`` on log seconds: a
    log-normal predictive on seconds (it has a density).
``lightgbm_cqr``
    LightGBM quantile models at the 99 levels 0.01..0.99 on log seconds, sorted to
    remove crossings, each central pair conformalised (CQR, Romano et al. 2019) on a 20 %
    calibration slice of the training trips.
``knn_empirical``
    The empirical distribution of the travel times of the k nearest training trips
    (standardised features).
``vrvm`` (and its variants), ``ngboost``
    As above (NGBoost on ``Z``), with the seed as random state.

One CRPS rule scores every model (:func:`pinball_crps`): the pinball losses of the 199
quantiles at 1/200..199/200 (for models with a density, from its ``ppf``), summed, x 2
/ 200; the closed-form CRPS of the models that have one is reported beside it
(``crps_closed_s``). Also the NLL where a density exists, coverage and mean width of the
50/80/90/95 % intervals (from the same quantiles), RMSLE of the median, fit and predict
time (predict: test trips to the 199 quantiles). The anchors' hyper-parameters are the
constants ``ANCHOR_PARAMS`` chosen by ``--anchors --tune`` (grids ``TUNE_GRIDS`` scored on
a 20 % validation slice of the first seed's training trips). Prints one table per seed
and one of the means over seeds with every model side by side and "vrvm / best anchor"
(best by CRPS among the four anchors and NGBoost); writes
``benchmarks/results/bench_trips_anchors_<city>.json`` (``..._tune_<city>.json``).

Usage::

    python benchmarks/bench_trips.py                         # full run, ~15 min
    python benchmarks/bench_trips.py --skip gp,ard --quick   # smoke test, ~1 min
    python benchmarks/bench_trips.py --explore               # VRVM settings grid, ~8 min
    python benchmarks/bench_trips.py --city nyc --splits random   # NYC 2016 (or sf)
    python benchmarks/bench_trips.py --anchors --city nyc    # vrvm vs anchors, seeds 0,1,2
    python benchmarks/bench_trips.py --anchors --tune        # the anchors' grids
    python benchmarks/bench_trips.py --anchors --models vrvm,quantile_forest --seeds 0

Prints one Markdown table per split and writes raw JSON to
``benchmarks/results/bench_trips.json`` (``bench_trips_explore.json`` for ``--explore``).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import logging
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vrvm import TravelTimeModel
from vrvm.engine.metrics import DEFAULT_LEVELS, evaluate_distribution, point_errors
from vrvm.engine.mixture import MixtureDistribution
from vrvm.trips import CleaningConfig, read_trips
from vrvm.trips.model.features import TripFeaturizer
from vrvm.trips.places.geo import haversine_km

logger = logging.getLogger("bench_trips")

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO / ".." / "shared" / "data"
# --city NAME: the real samples in ../shared/data, all read and cleaned by read_trips'
# defaults (the NYC sample has no calendar date: its trips sit in a reference week by
# weekday and clock, so its "time" split orders them by weekday and clock)
CITIES = {
    "chicago": "chicago_taxi_trips.csv",
    "nyc": "nyc_taxi_2016_sample.csv",
    "sf": "sf_bikeshare_2019-02_partial.csv",
}
DEFAULT_DATA = SHARED / CITIES["chicago"]
SYNTHETIC_TRIPS = 14_000  # about the Chicago sample's size


def synthetic_trips(cleaning):
    """Synthetica's trips (``--city synthetic``), cleaned like a file's."""
    from vrvm import synthetic_city
    from vrvm.trips.files.cleaning import clean_trips

    return clean_trips(synthetic_city(SYNTHETIC_TRIPS, seed=0), cleaning, source="synthetic_city")


RESULTS = Path(__file__).resolve().parent / "results"
MODELS = (
    "vrvm",
    "vrvm_no_twin_scales",
    "vrvm_no_pair_offsets",
    "vrvm_shard_weight1",
    "vrvm_constant_noise",
    "vrvm_distance_linear_only",
    "vrvm_max_basis2000",
    "vrvm_widths4",
    "bayesian_ridge",
    "gp_3k",
    "ard_rbf",
    "ngboost",
    "lightgbm",
    "climatology",
)
SKIP_ALIASES = {"gp": "gp_3k", "ard": "ard_rbf", "br": "bayesian_ridge", "lgbm": "lightgbm"}
LEVELS = tuple(DEFAULT_LEVELS)
ANCHOR_DISTANCE = "log1p"
SEED = 0


# ---------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class Settings:
    """Sizes of the anchors; ``--quick`` shrinks them for a smoke test."""

    gp_subset: int = 3000
    gp_restarts: int = 0
    # Iteration caps (sklearn's defaults: 15000 and 300). Measured on the random split
    # (with d in km, loaded machine): GP 50 iterations 198 s vs uncapped 400 s, ARD 100
    # iterations 143 s vs 280 iterations 425 s, with the same CRPS and NLL to four
    # digits (169.5 / 7.033 and 170.3 / 7.029).
    gp_max_iter: int = 50
    ard_columns: int = 1000
    ard_max_iter: int = 100
    ngboost_stages: int = 500
    lgbm_stages: int = 300
    climatology_min_count: int = 5
    repeats: int = 3

    @classmethod
    def quick(cls, **overrides) -> Settings:
        base = {"gp_subset": 500, "ard_columns": 200, "ngboost_stages": 100, "lgbm_stages": 100}
        return cls(**{**base, **overrides})


@dataclass
class Split:
    name: str
    description: str
    train: pd.DataFrame
    test: pd.DataFrame
    # the seed of the split's permutation and of the models' random states (--seeds)
    seed: int = SEED
    # Features fitted on train: Z = [X, d]
    featurizer: TripFeaturizer = field(init=False)
    Z_train: np.ndarray = field(init=False)
    Z_test: np.ndarray = field(init=False)

    def __post_init__(self):
        # the linear column TravelTimeModel uses for its default log target
        self.featurizer = TripFeaturizer(distance=ANCHOR_DISTANCE)
        X, d = self.featurizer.fit_transform(self.train)
        self.Z_train = np.column_stack([X, d])
        X, d = self.featurizer.transform(self.test)
        self.Z_test = np.column_stack([X, d])

    @functools.cached_property
    def tree(self) -> TreeFeatures:
        """The shared tree feature set of the anchors, fitted on this split's train trips."""
        return TreeFeatures.fit(self.train, self.featurizer, self.seed)

    @functools.cached_property
    def F_train(self) -> np.ndarray:
        return self.tree.transform(self.train)

    @functools.cached_property
    def F_test(self) -> np.ndarray:
        return self.tree.transform(self.test)

    def validation_split(self, share: float = 0.2) -> Split:
        """Train minus a random ``share`` of it, and that share as "test": the slice the
        anchors' hyper-parameters are tuned on (the test trips are never seen)."""
        rows = np.random.default_rng([self.seed, TUNE_STREAM]).permutation(len(self.train))
        n_val = round(share * len(self.train))

        def take(r):
            return self.train.iloc[np.sort(r)].reset_index(drop=True)

        return Split(
            f"{self.name}/validation",
            f"{self.description}; train split {1 - share:.0%}/{share:.0%} for tuning",
            take(rows[n_val:]),
            take(rows[:n_val]),
            self.seed,
        )

    @property
    def km_test(self) -> np.ndarray:
        t = self.test
        return haversine_km(t["origin_lat"], t["origin_lon"], t["dest_lat"], t["dest_lon"])

    @property
    def y_train(self) -> np.ndarray:
        return self.train["travel_time_s"].to_numpy(np.float64)

    @property
    def y_test(self) -> np.ndarray:
        return self.test["travel_time_s"].to_numpy(np.float64)

    def summary(self) -> dict[str, Any]:
        def span(df):
            return [df["start_time"].min().isoformat(), df["start_time"].max().isoformat()]

        return {
            "description": self.description,
            "n_train": len(self.train),
            "n_test": len(self.test),
            "train_span": span(self.train),
            "test_span": span(self.test),
        }


#: Minutes of start time that the "blocks" split keeps on one side.
BLOCK_MINUTES = 60


def make_splits(trips: pd.DataFrame, train_share: float = 0.8, seed: int = SEED) -> list[Split]:
    """The random, time-ordered and blocked splits of ``trips``.

    ``blocks``: whole hours of start time (:data:`BLOCK_MINUTES`) go to the test side, in
    a random order, as many as bring it closest to ``1 - train_share`` of the trips.
    Trips that start minutes apart on the same pair (riders travelling together: on the
    SF bike share 10 % of the trips have such a companion, whose duration is almost
    theirs) then fall on one side, as they do for a planner, who never knows a
    companion's duration before a trip; the random split puts one in training and the
    other in test.
    """
    n_train = round(train_share * len(trips))
    perm = np.random.default_rng(seed).permutation(len(trips))
    order = np.argsort(trips["start_time"].to_numpy(), kind="stable")
    block = trips["start_time"].astype("int64").to_numpy() // (BLOCK_MINUTES * 60 * 10**9)  # UTC
    blocks, block_of = np.unique(block, return_inverse=True)
    counts = np.bincount(block_of, minlength=len(blocks))
    shuffled = np.random.default_rng(seed).permutation(len(blocks))
    # as many blocks as bring the test side closest to its share
    cumulative = np.concatenate([[0], np.cumsum(counts[shuffled])])
    n_test_blocks = int(np.argmin(np.abs(cumulative - (len(trips) - n_train))))
    in_test = np.isin(block_of, shuffled[:n_test_blocks])

    def take(rows):
        return trips.iloc[np.sort(rows)].reset_index(drop=True)

    return [
        Split(
            "random",
            f"random 80/20 (numpy default_rng({seed}).permutation)",
            take(perm[:n_train]),
            take(perm[n_train:]),
            seed,
        ),
        Split(
            "time",
            "time-ordered: earliest 80 % train",
            take(order[:n_train]),
            take(order[n_train:]),
            seed,
        ),
        Split(
            "blocks",
            f"random {BLOCK_MINUTES}-minute blocks of start time to test, about 20 % of the "
            f"trips (numpy default_rng({seed}).permutation of the blocks)",
            take(np.flatnonzero(~in_test)),
            take(np.flatnonzero(in_test)),
            seed,
        ),
    ]


# ---------------------------------------------------------------------------- timing
def load_1min() -> float:
    return round(os.getloadavg()[0], 2)


def best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Best wall-clock time of ``repeats`` calls, and the last result."""
    best, result = np.inf, None
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


# ---------------------------------------------------------------------------- scoring
def lognormal(loc: np.ndarray, scale: np.ndarray) -> MixtureDistribution:
    """One-component log-normal on seconds from a Normal on log seconds."""
    return MixtureDistribution(np.asarray(loc)[None], np.asarray(scale)[None], transform="log")


# Straight-line distance bins (km) of the per-distance breakdown: the calibration of the
# spread differs most between very short (same-centroid) trips and long ones.
DISTANCE_BINS_KM = (0.0, 1.0, 3.0, 8.0, np.inf)


def by_distance(km: np.ndarray, y: np.ndarray, lo90, hi90, crps=None) -> list[dict[str, Any]]:
    """Coverage and width of the 90 % interval (and CRPS) per distance bin."""
    rows = []
    for a, b in itertools.pairwise(DISTANCE_BINS_KM):
        s = (km >= a) & (km < b)
        rows.append(
            {
                "km": [a, None if np.isinf(b) else b],
                "n": int(s.sum()),
                "coverage_90": float(np.mean((y[s] >= lo90[s]) & (y[s] <= hi90[s]))),
                "width_90_s": float(np.mean(hi90[s] - lo90[s])),
                "crps_s": None if crps is None else float(np.mean(crps[s])),
            }
        )
    return rows


def score_distribution(dist, y: np.ndarray, km: np.ndarray | None = None) -> dict[str, Any]:
    """Flat record from :func:`vrvm.evaluate_distribution` (kept whole in ``full``)."""
    full = evaluate_distribution(dist, y, levels=LEVELS)
    if km is not None:
        lo, hi = dist.interval(0.9)
        full["by_distance"] = by_distance(km, y, lo, hi, dist.crps(y))
    record = {
        "rmse_s": full["median"]["rmse_s"],
        "mae_s": full["median"]["mae_s"],
        "mape_pct": full["median"]["mape_pct"],
        "nll": full["nll"],
        "crps_s": full["crps_s"],
        "coverage": {str(i["level"]): i["coverage"] for i in full["intervals"]},
        "width_s": {str(i["level"]): i["mean_width_s"] for i in full["intervals"]},
        "full": full,
    }
    return record


def score_quantiles(median, intervals: dict[float, tuple], y, crps=None, km=None) -> dict[str, Any]:
    """Record for models given by quantiles only (NLL undefined; CRPS if supplied)."""
    errors = point_errors(median, y)
    full = {"median": errors}
    if km is not None:
        full["by_distance"] = by_distance(km, y, *intervals[0.9], crps)
    coverage, width = {}, {}
    for level in LEVELS:
        if level in intervals:
            lo, hi = intervals[level]
            coverage[str(level)] = float(np.mean((y >= lo) & (y <= hi)))
            width[str(level)] = float(np.mean(hi - lo))
        else:
            coverage[str(level)] = width[str(level)] = None
    return {
        "rmse_s": errors["rmse_s"],
        "mae_s": errors["mae_s"],
        "mape_pct": errors["mape_pct"],
        "nll": None,
        "crps_s": None if crps is None else float(np.mean(crps)),
        "coverage": coverage,
        "width_s": width,
        "full": full,
    }


# ---------------------------------------------------------------------------- models
def warm_up(split: Split) -> None:
    """Start the loky workers and touch the code paths once, so that fit times exclude
    one-off process start-up (measured at 2-4 s on this machine)."""
    TravelTimeModel(n_members=2, max_basis=50, n_jobs=2, random_state=SEED).fit(
        split.train.iloc[:600]
    ).predict_dist(split.test.iloc[:100]).median()


def run_vrvm(split: Split, settings: Settings, post=None, **params) -> dict[str, Any]:
    """Fit ``TravelTimeModel(**params)``; ``post(model, split, dist)`` may return a
    replacement predictive and a dict describing it (exploration prototypes only; its
    cost is not in the predict time)."""
    params = {"n_jobs": 2, "random_state": SEED, **params}
    load = load_1min()
    start = time.perf_counter()
    model = TravelTimeModel(**params).fit(split.train)
    fit_s = time.perf_counter() - start
    predict_s, dist = best_time(lambda: model.predict_dist(split.test), settings.repeats)
    recalibration = None
    if post is not None:
        dist, recalibration = post(model, split, dist)
    quantile_s, (median, _) = best_time(lambda: (dist.median(), dist.interval(0.9)), 1)
    record = score_distribution(dist, split.y_test, split.km_test)
    record.update(
        fit_s=fit_s,
        predict_us=1e6 * predict_s / len(split.test),
        load_1min=load,
        extra={
            "params": {k: v for k, v in model.get_params().items() if k != "client"},
            "kernel_widths": model.kernel_widths_.tolist(),
            "n_relevance": model.n_relevance_.tolist(),
            "shard_sizes": model.shard_sizes_.tolist(),
            "degrees_of_freedom": None if dist.df is None else sorted(set(dist.df[:, 0].tolist())),
            "median_and_90_interval_us": 1e6 * quantile_s / len(split.test),
            # medians beyond the longest kept trip: extrapolation failures
            "n_median_above_3h": int(np.sum(median > 3 * 3600)),
            "recalibration": recalibration,
        },
    )
    return record


def _log_normal_anchor(split: Split, settings: Settings, fit, predict, load) -> dict[str, Any]:
    start = time.perf_counter()
    state = fit()
    fit_s = time.perf_counter() - start
    predict_s, (loc, scale) = best_time(lambda: predict(state), settings.repeats)
    record = score_distribution(lognormal(loc, scale), split.y_test, split.km_test)
    record.update(fit_s=fit_s, predict_us=1e6 * predict_s / len(split.test), load_1min=load)
    return record, state


def run_bayesian_ridge(split: Split, settings: Settings) -> dict[str, Any]:
    from sklearn.linear_model import BayesianRidge

    y = np.log(split.y_train)
    record, model = _log_normal_anchor(
        split,
        settings,
        lambda: BayesianRidge().fit(split.Z_train, y),
        lambda m: m.predict(split.Z_test, return_std=True),
        load_1min(),
    )
    record["extra"] = {"noise_std_log": float(1 / np.sqrt(model.alpha_))}
    return record


def run_gp(split: Split, settings: Settings) -> dict[str, Any]:
    import scipy.optimize
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    rng = np.random.default_rng(SEED)
    rows = rng.choice(
        len(split.train), size=min(settings.gp_subset, len(split.train)), replace=False
    )
    Z, y = split.Z_train[rows], np.log(split.y_train[rows])
    kernel = ConstantKernel(1.0, (1e-3, 1e3)) * RBF(
        length_scale=np.ones(Z.shape[1]), length_scale_bounds=(1e-2, 1e3)
    ) + WhiteKernel(0.5, (1e-4, 1e1))

    iterations = []

    def optimizer(obj_func, initial_theta, bounds):
        # sklearn's L-BFGS-B call, with the iteration cap of --gp-max-iter
        res = scipy.optimize.minimize(
            obj_func,
            initial_theta,
            method="L-BFGS-B",
            jac=True,
            bounds=bounds,
            options={"maxiter": settings.gp_max_iter},
        )
        iterations.append(int(res.nit))
        return res.x, res.fun

    def fit():
        gp = GaussianProcessRegressor(
            kernel,
            normalize_y=True,
            optimizer=optimizer,
            n_restarts_optimizer=settings.gp_restarts,
            random_state=SEED,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning at bounds
            return gp.fit(Z, y)

    # predict(return_std=True) includes the WhiteKernel noise: a predictive, not a latent
    record, gp = _log_normal_anchor(
        split, settings, fit, lambda m: m.predict(split.Z_test, return_std=True), load_1min()
    )
    record["extra"] = {
        "n_train_subset": int(rows.size),
        "kernel": str(gp.kernel_),
        "restarts": settings.gp_restarts,
        "lbfgs_iterations": iterations,
        "max_iter": settings.gp_max_iter,
    }
    return record


def rbf_features(split: Split, n_columns: int):
    """Gaussian RBF columns: k-means++ centres from train, median-heuristic width."""
    from sklearn.cluster import kmeans_plusplus

    centres, _ = kmeans_plusplus(split.Z_train, n_columns, random_state=SEED)
    rng = np.random.default_rng(SEED)
    sub = split.Z_train[rng.choice(len(split.Z_train), size=2000, replace=False)]
    pair = np.sqrt(((sub[:, None, :] - sub[None, :, :]) ** 2).sum(-1))
    width = float(np.median(pair[np.triu_indices(len(sub), 1)]))

    def transform(Z):
        sq = (Z**2).sum(1)[:, None] + (centres**2).sum(1)[None, :] - 2 * Z @ centres.T
        return np.exp(-np.maximum(sq, 0.0) / (2 * width**2))

    return transform, width


def run_ard_rbf(split: Split, settings: Settings) -> dict[str, Any]:
    from sklearn.linear_model import ARDRegression

    load = load_1min()
    start = time.perf_counter()
    transform, width = rbf_features(split, settings.ard_columns)
    Phi = transform(split.Z_train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ARDRegression(max_iter=settings.ard_max_iter).fit(Phi, np.log(split.y_train))
    fit_s = time.perf_counter() - start
    predict_s, (loc, scale) = best_time(
        lambda: model.predict(transform(split.Z_test), return_std=True), settings.repeats
    )
    record = score_distribution(lognormal(loc, scale), split.y_test, split.km_test)
    record.update(
        fit_s=fit_s,
        predict_us=1e6 * predict_s / len(split.test),
        load_1min=load,
        extra={
            "n_columns": settings.ard_columns,
            "width": width,
            "n_kept": int(np.sum(model.lambda_ < model.threshold_lambda)),
            "n_iter": getattr(model, "n_iter_", None),
            "max_iter": settings.ard_max_iter,
        },
    )
    return record


def run_ngboost(split: Split, settings: Settings) -> dict[str, Any]:
    from ngboost import NGBRegressor
    from ngboost.distns import Normal as NGBNormal

    y = np.log(split.y_train)

    def predict(m):
        params = m.pred_dist(split.Z_test).params
        return params["loc"], params["scale"]

    record, _ = _log_normal_anchor(
        split,
        settings,
        lambda: NGBRegressor(
            Dist=NGBNormal, n_estimators=settings.ngboost_stages, random_state=SEED, verbose=False
        ).fit(split.Z_train, y),
        predict,
        load_1min(),
    )
    record["extra"] = {"n_estimators": settings.ngboost_stages}
    return record


def run_lightgbm(split: Split, settings: Settings) -> dict[str, Any]:
    import lightgbm as lgb

    quantiles = (0.05, 0.5, 0.95)
    load = load_1min()
    start = time.perf_counter()
    models = {
        q: lgb.LGBMRegressor(
            objective="quantile",
            alpha=q,
            n_estimators=settings.lgbm_stages,
            learning_rate=0.05,
            n_jobs=2,
            random_state=SEED,
            verbose=-1,
        ).fit(split.Z_train, split.y_train)
        for q in quantiles
    }
    fit_s = time.perf_counter() - start
    predict_s, pred = best_time(
        lambda: {q: m.predict(split.Z_test) for q, m in models.items()}, settings.repeats
    )
    crossed = int(np.sum((pred[0.05] > pred[0.5]) | (pred[0.5] > pred[0.95])))
    lo, hi = np.minimum(pred[0.05], pred[0.95]), np.maximum(pred[0.05], pred[0.95])
    record = score_quantiles(pred[0.5], {0.9: (lo, hi)}, split.y_test, km=split.km_test)
    record.update(
        fit_s=fit_s,
        predict_us=1e6 * predict_s / len(split.test),
        load_1min=load,
        extra={"n_estimators": settings.lgbm_stages, "n_crossed_quantiles": crossed},
    )
    return record


def _climatology_keys(trips: pd.DataFrame, tz: str) -> pd.Series:
    slot = trips["start_time"].dt.tz_convert(tz).dt.hour // 3
    coords = trips[["origin_lat", "origin_lon", "dest_lat", "dest_lon"]].round(6).astype(str)
    return coords.agg("|".join, axis=1) + "|" + slot.astype(str)


def empirical_crps(sample: np.ndarray, y: np.ndarray) -> np.ndarray:
    """CRPS of the empirical distribution of ``sample`` at each ``y``.

    E|X - y| - E|X - X'| / 2 with X, X' independent draws of the sample; the second term
    from the sorted sample, sum_i (2i - n - 1) x_(i) / n^2 (i = 1..n).
    """
    x = np.sort(sample)
    n = x.size
    half = np.sum((2 * np.arange(1, n + 1) - n - 1) * x) / n**2
    # E|X - y| from prefix sums: y F - sum_{x<=y} x / n + (sum_{x>y} x / n - y (1 - F))
    cum = np.concatenate([[0.0], np.cumsum(x)])
    k = np.searchsorted(x, y, side="right")
    below = (y * k - cum[k]) / n
    above = ((cum[-1] - cum[k]) - y * (n - k)) / n
    return below + above - half


def run_climatology(split: Split, settings: Settings) -> dict[str, Any]:
    tz = split.featurizer.tz_
    load = load_1min()
    start = time.perf_counter()
    train_key = _climatology_keys(split.train, tz)
    groups = {
        key: np.sort(values.to_numpy())
        for key, values in pd.Series(split.y_train).groupby(train_key.to_numpy())
        if len(values) >= settings.climatology_min_count
    }
    global_sample = np.sort(split.y_train)
    fit_s = time.perf_counter() - start

    def predict():
        keys = _climatology_keys(split.test, tz).to_numpy()
        return [groups.get(k, global_sample) for k in keys]

    predict_s, samples = best_time(predict, settings.repeats)
    y = split.y_test
    probs = sorted({0.5, *[(1 - lv) / 2 for lv in LEVELS], *[(1 + lv) / 2 for lv in LEVELS]})
    q = np.array([np.quantile(s, probs) for s in samples])
    qi = {p: q[:, j] for j, p in enumerate(probs)}
    intervals = {lv: (qi[(1 - lv) / 2], qi[(1 + lv) / 2]) for lv in LEVELS}
    crps = np.array([empirical_crps(s, np.array([v]))[0] for s, v in zip(samples, y, strict=True)])
    record = score_quantiles(qi[0.5], intervals, y, crps=crps, km=split.km_test)
    matched = np.mean([s is not global_sample for s in samples])
    record.update(
        fit_s=fit_s,
        predict_us=1e6 * predict_s / len(split.test),
        load_1min=load,
        extra={
            "min_count": settings.climatology_min_count,
            "n_cells": len(groups),
            "share_test_in_cell": float(matched),
        },
    )
    return record


RUNNERS: dict[str, Callable[[Split, Settings], dict[str, Any]]] = {
    "vrvm": run_vrvm,
    "vrvm_constant_noise": functools.partial(run_vrvm, noise_model="constant"),
    "vrvm_distance_linear_only": functools.partial(run_vrvm, distance_in_kernel=False),
    # the best parameter-only settings of --explore (see the module docstring)
    "vrvm_no_twin_scales": functools.partial(run_vrvm, twin_scales=False),
    "vrvm_no_pair_offsets": functools.partial(run_vrvm, pair_offsets=False, twin_scales=False),
    "vrvm_shard_weight1": functools.partial(
        run_vrvm, shard_weight=1.0, pair_offsets=False, twin_scales=False
    ),
    "vrvm_max_basis2000": functools.partial(run_vrvm, max_basis=2000),
    "vrvm_widths4": functools.partial(run_vrvm, kernel_widths=[0.5, 1.0, 2.0, 4.0]),
    "bayesian_ridge": run_bayesian_ridge,
    "gp_3k": run_gp,
    "ard_rbf": run_ard_rbf,
    "ngboost": run_ngboost,
    "lightgbm": run_lightgbm,
    "climatology": run_climatology,
}


# ---------------------------------------------------------------------------- output
def _fmt(value, digits=0, missing="n/a") -> str:
    if value is None:
        return missing
    return f"{value:,.{digits}f}"


def markdown_table(split: str, results: dict[str, dict]) -> str:
    head = (
        "| model | RMSE s | MAE s | MAPE % | NLL | CRPS s "
        "| cov 50/80/90/95 % | width 50/80/90/95 % (s) | fit s | predict µs/trip | load |"
    )
    rows = [head, "|" + "---|" * 11]
    for name, r in results.items():
        if "error" in r:
            rows.append(f"| {name} | failed: {r['error']} |" + " |" * 9)
            continue
        cov = "/".join(_fmt(r["coverage"][str(lv)], 2, "-") for lv in LEVELS)
        width = "/".join(_fmt(r["width_s"][str(lv)], 0, "-") for lv in LEVELS)
        rows.append(
            f"| {name} | {_fmt(r['rmse_s'])} | {_fmt(r['mae_s'])} | {_fmt(r['mape_pct'], 1)} "
            f"| {_fmt(r['nll'], 3)} | {_fmt(r['crps_s'], 1)} | {cov} | {width} "
            f"| {_fmt(r['fit_s'], 1)} | {_fmt(r['predict_us'], 1)} | {r['load_1min']} |"
        )
    return f"**Split: {split}**\n\n" + "\n".join(rows)


def _git_commit() -> str | None:
    """The repository's commit (with "+dirty" when vrvm/ has uncommitted changes)."""
    import subprocess

    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "vrvm"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty else "")


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def environment() -> dict[str, Any]:
    import scipy
    import sklearn

    import vrvm

    return {
        "vrvm_commit": _git_commit(),
        # where vrvm was imported from (a frozen copy on PYTHONPATH is not the repository's)
        "vrvm_path": str(Path(vrvm.__file__).parent),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "sklearn": sklearn.__version__,
        # None where not installed (the anchors runs need only the models they fit)
        "lightgbm": _version("lightgbm"),
        "ngboost": _version("ngboost"),
        "quantile_forest": _version("quantile-forest"),
        "xgboost": _version("xgboost") or _version("xgboost-cpu"),
        "xgboost_distribution": _version("xgboost-distribution"),
        "load_avg_at_import": list(os.getloadavg()),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
    }


def _strip_full(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "full"}


# ---------------------------------------------------------------------------- anchors (issue 34)
# ``--anchors``: vrvm against the strongest off-the-shelf distributional regressors, all
# scored by one CRPS rule (``score_anchor``), over several seeds (``--seeds``).
ANCHOR_MODELS = ("quantile_forest", "xgb_distribution", "lightgbm_cqr", "knn_empirical")
# the models a plain ``--anchors`` run fits, and the pool of "vrvm / best anchor"
ANCHOR_RUN_MODELS = ("vrvm", "ngboost", *ANCHOR_MODELS)
BEST_ANCHOR_POOL = (*ANCHOR_MODELS, "ngboost")
# The one CRPS rule: 199 quantile levels 1/200 .. 199/200; every central interval of
# LEVELS and the median are among them.
TAU = np.arange(1, 200) / 200.0
MEDIAN_INDEX = 99
# The 99 levels of the LightGBM quantile models (every second level of TAU)
LGBM_LEVELS = np.arange(1, 100) / 100.0
KMEANS_CLUSTERS = 40
# random streams derived from the seed: the validation slice for --tune, the CQR
# calibration slice (numpy default_rng([seed, stream]))
TUNE_STREAM, CALIBRATION_STREAM = 1, 2
CALIBRATION_SHARE = 0.2
# Same-point trips (origin = destination centroid) get log distance log(0.01 km).
LOG_KM_FLOOR = 0.01

# Hyper-parameters chosen by ``--anchors --tune`` (seed 0, random split; fitted on 80 % of
# the training trips, features included, and scored on the other 20 %; validation CRPS in
# seconds by the one CRPS rule; the best, or the cheapest within 0.1 s of it). Full grids
# in BENCHMARKS.md and benchmarks/results/bench_trips_anchors_tune_<city>.json. Measured
# on a shared machine, load average 7-11. ANCHOR_PARAMS: Chicago's (and any other data's).
#   quantile_forest: min_samples_leaf 10, max_features 0.5: 149.22 (leaf 1: 161.4-162.2,
#     leaf 5: 149.7-150.2, leaf 20: 150.4-151.3)
#   xgb_distribution: max_depth 6, learning_rate 0.1, 39 rounds (early stopping): 150.17
#     (depth 4 / 0.05 / 160: 150.62, depth 2: 154.6-155.0)
#   lightgbm_cqr: num_leaves 31, 300 stages: 147.56 (400: 147.54; 15 leaves / 400: 147.69,
#     63 leaves: 148.07-149.28)
#   knn_empirical: k 20 on Z: 159.31 (k 30: 159.73, k 15: 160.51; on the tree set: 163.18+)
ANCHOR_PARAMS: dict[str, dict[str, Any]] = {
    "quantile_forest": {"n_estimators": 300, "min_samples_leaf": 10, "max_features": 0.5},
    "xgb_distribution": {"n_estimators": 39, "learning_rate": 0.1, "max_depth": 6},
    "lightgbm_cqr": {
        "n_estimators": 300,
        "learning_rate": 0.05,
        "num_leaves": 31,
        "min_child_samples": 20,
    },
    "knn_empirical": {"k": 20, "space": "Z"},
}
# Per-city overrides where the tuning chose differently.
# NYC: quantile_forest leaf 5, max_features 0.5: 143.81 (leaf 10: 146.0-146.5, leaf 1:
#   144.3-146.1); xgb_distribution depth 2, lr 0.1, 321 rounds: 137.31 (depth 3 / 0.1 /
#   117: 138.57); lightgbm_cqr 63 leaves, 400 stages: 134.68 (31 / 400: 135.28, 15 / 400:
#   135.29); knn_empirical k 15 on the tree set: 161.89 (Z, k 20: 162.41)
# SF: quantile_forest leaf 5, max_features 0.33: 147.76 (leaf 5 / 0.5: 148.00, leaf 10:
#   148.6-149.3, leaf 1: 151.2-153.3); xgb_distribution depth 6, lr 0.05, 61 rounds:
#   154.99 (depth 6 / 0.1 / 29: 155.13, depth 4 / 0.05 / 89: 155.58); knn_empirical k 20
#   on Z: 159.13 (k 30: 159.22); lightgbm_cqr NOT tuned on SF (the grid was cut for time
#   on the loaded machine): 31 leaves, 400 stages, best or within 0.6 s of the best on
#   Chicago and NYC.
ANCHOR_CITY_PARAMS: dict[str, dict[str, dict[str, Any]]] = {
    "nyc": {
        "quantile_forest": {"min_samples_leaf": 5},
        "xgb_distribution": {"n_estimators": 321, "max_depth": 2},
        "lightgbm_cqr": {"n_estimators": 400, "num_leaves": 63},
        "knn_empirical": {"k": 15, "space": "tree"},
    },
    "sf": {
        "quantile_forest": {"min_samples_leaf": 5, "max_features": 0.33},
        "xgb_distribution": {"n_estimators": 61, "learning_rate": 0.05, "max_depth": 6},
        "lightgbm_cqr": {"n_estimators": 400},
    },
}

# The grids of --tune. LightGBM's n_estimators and XGBoost's are not grid points: LightGBM
# is scored at each stage count of LGBM_TUNE_STAGES from one fit, XGBoost stops early on
# the validation NLL (50 rounds' patience, up to 2,000 rounds).
TUNE_GRIDS: dict[str, dict[str, list]] = {
    "quantile_forest": {"min_samples_leaf": [1, 5, 10, 20], "max_features": [1.0, 0.5, 0.33]},
    "xgb_distribution": {"max_depth": [2, 3, 4, 6], "learning_rate": [0.05, 0.1]},
    "lightgbm_cqr": {"num_leaves": [15, 31, 63]},
    "knn_empirical": {"k": [5, 10, 15, 20, 30, 50, 100], "space": ["tree", "Z"]},
}
LGBM_TUNE_STAGES = (100, 200, 300, 400)
XGB_TUNE_MAX_ROUNDS, XGB_TUNE_PATIENCE = 2000, 50


def anchor_params(model: str, city: str, quick: bool = False) -> dict[str, Any]:
    """The hyper-parameters of an anchor for ``city`` (``--quick``: fewer trees)."""
    params = {**ANCHOR_PARAMS[model], **ANCHOR_CITY_PARAMS.get(city, {}).get(model, {})}
    if quick and "n_estimators" in params:
        params["n_estimators"] = min(params["n_estimators"], 50)
    return params


def _plane(trips: pd.DataFrame, featurizer: TripFeaturizer) -> tuple[np.ndarray, np.ndarray]:
    """Origins and destinations as (n, 2) km on the featurizer's local plane (east, north)."""
    proj = featurizer.projection_
    lat = trips[["origin_lat", "dest_lat"]].to_numpy(np.float64)
    lon = trips[["origin_lon", "dest_lon"]].to_numpy(np.float64)
    x, y = proj.forward(lat, lon)
    return np.column_stack([x[:, 0], y[:, 0]]), np.column_stack([x[:, 1], y[:, 1]])


def _local_clock(trips: pd.DataFrame, tz: str) -> tuple[np.ndarray, np.ndarray]:
    """Fractional local hour in [0, 24) and local weekday (Monday = 0) of each start."""
    times = trips["start_time"]
    if times.dt.tz is not None:
        times = times.dt.tz_convert(tz).dt.tz_localize(None)
    hour = (times - times.dt.normalize()) / pd.Timedelta(hours=1)
    return hour.to_numpy(np.float64), times.dt.weekday.to_numpy(np.float64)


@dataclass
class TreeFeatures:
    """The one feature set of the anchors, every part fitted on the training trips only.

    Columns (``names``): the NGBoost features ``Z`` (the ``TripFeaturizer`` inputs
    ``X``, standardised, and the standardised log(1 + km) column ``d``), then log
    distance (log km, floored at 10 m), the bearing as (sin, cos) (0, 0 for same-point
    trips), the fractional local hour, the local weekday, the origin and the destination
    in the principal axes of the training endpoints (PCA of the local-plane x, y) and
    the k-means cluster of each end (40 clusters of the training endpoints).
    """

    featurizer: TripFeaturizer
    pca: Any
    kmeans: Any
    fit_s: float

    @classmethod
    def fit(cls, train: pd.DataFrame, featurizer: TripFeaturizer, seed: int) -> TreeFeatures:
        from sklearn.cluster import KMeans
        from sklearn.decomposition import PCA

        start = time.perf_counter()
        ends = np.concatenate(_plane(train, featurizer))
        pca = PCA(2).fit(ends)
        kmeans = KMeans(KMEANS_CLUSTERS, n_init=4, random_state=seed).fit(ends)
        return cls(featurizer, pca, kmeans, time.perf_counter() - start)

    @property
    def names(self) -> list[str]:
        return [
            *self.featurizer.feature_names_,
            "d",
            "log_km",
            "bearing_sin",
            "bearing_cos",
            "local_hour",
            "weekday",
            "origin_pc1",
            "origin_pc2",
            "dest_pc1",
            "dest_pc2",
            "origin_cluster",
            "dest_cluster",
        ]

    def transform(self, trips: pd.DataFrame) -> np.ndarray:
        X, d = self.featurizer.transform(trips)
        origin, dest = _plane(trips, self.featurizer)
        delta = dest - origin
        length = np.hypot(delta[:, 0], delta[:, 1])
        unit = np.divide(
            delta, length[:, None], out=np.zeros_like(delta), where=length[:, None] > 0
        )
        km = haversine_km(
            trips["origin_lat"], trips["origin_lon"], trips["dest_lat"], trips["dest_lon"]
        )
        hour, weekday = _local_clock(trips, self.featurizer.tz_)
        return np.column_stack(
            [
                X,
                d,
                np.log(np.maximum(km, LOG_KM_FLOOR)),
                unit[:, 0],  # bearing clockwise from north: sin = east, cos = north
                unit[:, 1],
                hour,
                weekday,
                self.pca.transform(origin),
                self.pca.transform(dest),
                self.kmeans.predict(origin),
                self.kmeans.predict(dest),
            ]
        ).astype(np.float64)


# the cluster ids are nominal: the kNN distance leaves them out
N_CLUSTER_COLUMNS = 2


# ---------------------------------------------------------------------------- the CRPS rule
def pinball_crps(q: np.ndarray, y: np.ndarray) -> np.ndarray:
    """CRPS per trip by the one rule, in seconds, from the 199 quantiles ``q`` (n, 199)
    at the levels TAU: CRPS = 2 int_0^1 pinball_tau(y, q(tau)) dtau, by the trapezoid
    rule on the grid 0, 1/200, .., 1 with the end terms taken as 0 (they are for a
    log-normal), i.e. 2 x the sum of the 199 pinball losses / 200.

    That is 199/200 of "2 x the mean pinball loss over the 199 levels" (``crps_mean199_s``
    in the records): the plain mean weights each level 1/199 for an interval of 1/200 and
    overstates the CRPS by 0.5 % (about 0.8 s here), while this agrees with the closed
    forms of the models that have one (``crps_closed_s``) to 0.05 s on Chicago and NYC and
    0.16 s on SF, whose log-normal upper tails beyond level 199/200 the grid leaves out.
    """
    diff = y[:, None] - q
    return 2.0 * np.sum(np.maximum(TAU * diff, (TAU - 1.0) * diff), axis=1) / (TAU.size + 1)


def score_anchor(q: np.ndarray, y: np.ndarray, dist=None) -> dict[str, Any]:
    """Scores of a predictive given as 199 quantiles ``q`` (seconds, (n, 199), sorted).

    ``crps_s`` by the one rule (:func:`pinball_crps`; ``crps_mean199_s`` the plain mean
    over the levels, 200/199 of it); where the model has a density
    (``dist``, a :class:`MixtureDistribution` on seconds) also ``nll`` (mean -log density
    per second, Jacobian included) and ``crps_closed_s`` (its closed-form CRPS, to show
    the rule's discretisation error); coverage and mean width of the central intervals
    (quantile pairs of TAU), RMSLE, RMSE and MAE of the median (``q`` at level 1/2).
    """
    if q.shape != (len(y), TAU.size) or np.any(np.diff(q, axis=1) < 0):
        raise ValueError("quantiles must be (n, 199) and non-decreasing")
    median = q[:, MEDIAN_INDEX]
    errors = point_errors(median, y)
    crps = pinball_crps(q, y)
    record = {
        "crps_s": float(np.mean(crps)),
        "crps_mean199_s": float(np.mean(crps) * (TAU.size + 1) / TAU.size),
        "crps_closed_s": None if dist is None else float(np.mean(dist.crps(y))),
        "nll": None if dist is None else float(-np.mean(dist.logpdf(y))),
        "rmsle": float(np.sqrt(np.mean((np.log1p(median) - np.log1p(y)) ** 2))),
        "rmse_s": errors["rmse_s"],
        "mae_s": errors["mae_s"],
        "coverage": {},
        "width_s": {},
    }
    for level in LEVELS:
        lo = q[:, round((1 - level) / 2 * 200) - 1]
        hi = q[:, round((1 + level) / 2 * 200) - 1]
        record["coverage"][str(level)] = float(np.mean((y >= lo) & (y <= hi)))
        record["width_s"][str(level)] = float(np.mean(hi - lo))
    return record


def probit_interpolate(q: np.ndarray, levels: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Quantiles at ``targets`` from quantiles ``q`` (n, len(levels)) at sorted ``levels``:
    linear in the standard normal quantile z(level) (exact for a Normal), extrapolated
    from the end segments outside the levels' range."""
    from scipy.special import ndtri

    z, zt = ndtri(levels), ndtri(targets)
    j = np.clip(np.searchsorted(z, zt) - 1, 0, len(z) - 2)
    w = (zt - z[j]) / (z[j + 1] - z[j])
    return q[:, j] * (1.0 - w) + q[:, j + 1] * w


def cqr_shifts(q_cal: np.ndarray, y_cal: np.ndarray) -> np.ndarray:
    """Conformalised quantile regression (Romano, Patterson & Candès 2019) for each central
    pair of LGBM_LEVELS: (level a, 1 - a) gets the ceil((n + 1)(1 - 2a))-th smallest
    conformity score max(q_a - y, y - q_(1-a)) of the calibration trips, the amount by
    which the pair is widened (narrowed if negative). Shape (49,), pair a = 0.01 first."""
    half = q_cal.shape[1] // 2
    lo, hi = q_cal[:, :half], q_cal[:, ::-1][:, :half]
    scores = np.sort(np.maximum(lo - y_cal[:, None], y_cal[:, None] - hi), axis=0)
    n = len(y_cal)
    rank = np.ceil((n + 1) * (1 - 2 * LGBM_LEVELS[:half])).astype(int)
    return scores[np.clip(rank, 1, n) - 1, np.arange(half)]


def apply_cqr(q: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """Widen the central pairs of sorted 99-level quantiles ``q`` by ``shifts``; re-sorted."""
    half = shifts.size
    out = q.copy()
    out[:, :half] -= shifts
    out[:, -half:] += shifts[::-1]
    return np.sort(out, axis=1)


# ---------------------------------------------------------------------------- anchor models
@dataclass
class AnchorFit:
    """What an anchor runner hands to :func:`score_anchor`, with its costs."""

    q: np.ndarray  # (n_test, 199) seconds
    dist: Any  # MixtureDistribution on seconds, or None (no density)
    fit_s: float
    # best of --repeats: test trips -> the 199 quantiles (for the models with a density:
    # their predictive, then its ppf at the 199 levels; the predictive alone in extra)
    predict_s: float
    extra: dict[str, Any] = field(default_factory=dict)


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _mixture_quantiles(dist: MixtureDistribution) -> np.ndarray:
    """The 199 quantiles of a predictive by its own ``ppf``, shape (n, 199)."""
    return dist.ppf(TAU[:, None]).T


def _density_predict(make_dist: Callable[[], MixtureDistribution], settings: Settings):
    """(predict_s, dist, q, extra) for a model with a density: the predictive (best of
    --repeats) then its 199 quantiles (best of --repeats), timed apart."""
    predictive_s, dist = best_time(make_dist, settings.repeats)
    quantile_s, q = best_time(lambda: _mixture_quantiles(dist), settings.repeats)
    n = len(dist)
    extra = {"predictive_us": 1e6 * predictive_s / n, "quantiles_us": 1e6 * quantile_s / n}
    return predictive_s + quantile_s, dist, q, extra


def anchor_vrvm(split: Split, settings: Settings, params: dict[str, Any]) -> AnchorFit:
    """``TravelTimeModel(n_jobs=2, random_state=seed, **params)``; quantiles by its ppf."""
    params = {"n_jobs": 2, "random_state": split.seed, **params}
    fit_s, model = _timed(lambda: TravelTimeModel(**params).fit(split.train))

    predict_s, dist, q, extra = _density_predict(lambda: model.predict_dist(split.test), settings)
    extra["n_relevance"] = model.n_relevance_.tolist()
    return AnchorFit(q, dist, fit_s, predict_s, extra)


def anchor_ngboost(split: Split, settings: Settings, params: dict[str, Any]) -> AnchorFit:
    """``NGBRegressor(Dist=Normal)`` on Z and log seconds (its defaults; --ngboost-stages)."""
    from ngboost import NGBRegressor
    from ngboost.distns import Normal as NGBNormal

    model = NGBRegressor(
        Dist=NGBNormal, n_estimators=settings.ngboost_stages, random_state=split.seed, verbose=False
    )
    fit_s, _ = _timed(lambda: model.fit(split.Z_train, np.log(split.y_train)))

    def predictive():
        p = model.pred_dist(split.Z_test).params
        return lognormal(p["loc"], p["scale"])

    predict_s, dist, q, extra = _density_predict(predictive, settings)
    extra["n_estimators"] = settings.ngboost_stages
    return AnchorFit(q, dist, fit_s, predict_s, extra)


def anchor_quantile_forest(split: Split, settings: Settings, params: dict[str, Any]) -> AnchorFit:
    """``RandomForestQuantileRegressor`` on log seconds, all training values kept in the
    leaves (``max_samples_leaf=None``: Meinshausen's forest); its 199 quantiles."""
    from quantile_forest import RandomForestQuantileRegressor

    model = RandomForestQuantileRegressor(
        **params, max_samples_leaf=None, n_jobs=2, random_state=split.seed
    )
    fit_s, _ = _timed(lambda: model.fit(split.F_train, np.log(split.y_train)))
    predict_s, q = best_time(
        lambda: np.exp(model.predict(split.F_test, quantiles=TAU.tolist())), settings.repeats
    )
    return AnchorFit(np.sort(q, axis=1), None, fit_s, predict_s)


def _xgb_distribution(params: dict[str, Any], seed: int, **extra):
    from xgboost_distribution import XGBDistribution

    return XGBDistribution(
        distribution="normal", **params, **extra, n_jobs=1, random_state=seed, verbosity=0
    )


def _xgb_lognormal(model, F: np.ndarray) -> MixtureDistribution:
    loc, scale = model.predict(F)
    return lognormal(np.asarray(loc, np.float64), np.asarray(scale, np.float64))


def anchor_xgb_distribution(split: Split, settings: Settings, params: dict[str, Any]) -> AnchorFit:
    """``XGBDistribution(distribution="normal")`` on log seconds: a log-normal on seconds."""
    model = _xgb_distribution(params, split.seed)
    fit_s, _ = _timed(lambda: model.fit(split.F_train, np.log(split.y_train), verbose=False))

    predict_s, dist, q, extra = _density_predict(
        lambda: _xgb_lognormal(model, split.F_test), settings
    )
    return AnchorFit(q, dist, fit_s, predict_s, extra)


def _calibration_rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(fit rows, calibration rows): a random CALIBRATION_SHARE of the training trips."""
    rows = np.random.default_rng([seed, CALIBRATION_STREAM]).permutation(n)
    n_cal = round(CALIBRATION_SHARE * n)
    return np.sort(rows[n_cal:]), np.sort(rows[:n_cal])


def _lgbm_fit(split: Split, params: dict[str, Any]):
    """The 99 quantile models on the fit rows (log seconds) and the calibration rows."""
    import lightgbm as lgb

    fit_rows, cal_rows = _calibration_rows(len(split.train), split.seed)
    F, y = split.F_train, np.log(split.y_train)
    # n_jobs=1: 99 small fits; OpenMP threads on a loaded 2-core machine were 20x slower
    models = [
        lgb.LGBMRegressor(
            objective="quantile", alpha=a, **params, n_jobs=1, random_state=split.seed, verbose=-1
        ).fit(F[fit_rows], y[fit_rows])
        for a in LGBM_LEVELS
    ]
    return models, F[cal_rows], y[cal_rows]


def _lgbm_raw(models, F: np.ndarray, stages: int | None = None) -> np.ndarray:
    """The 99 quantiles (log seconds), sorted per trip to remove crossings."""
    return np.sort(np.column_stack([m.predict(F, num_iteration=stages) for m in models]), axis=1)


def _lgbm_cqr_quantiles(models, F_cal, y_cal, F, stages=None) -> tuple[np.ndarray, dict]:
    """CQR-adjusted 199 quantiles in seconds for ``F`` and a summary of the adjustment."""
    raw_cal = _lgbm_raw(models, F_cal, stages)
    shifts = cqr_shifts(raw_cal, y_cal)
    raw = _lgbm_raw(models, F, stages)
    q = np.exp(probit_interpolate(apply_cqr(raw, shifts), LGBM_LEVELS, TAU))
    info = {
        "n_calibration": len(y_cal),
        "shift_log": {str(lv): float(shifts[round(lv * 100) - 1]) for lv in (0.05, 0.25)},
    }
    return q, info


def anchor_lightgbm_cqr(split: Split, settings: Settings, params: dict[str, Any]) -> AnchorFit:
    """99 LightGBM quantile models (levels 0.01..0.99, log seconds) on 80 % of train,
    sorted, conformalised on the other 20 % (:func:`cqr_shifts`); the 199 levels by
    :func:`probit_interpolate`. The calibration is part of the fit time."""
    start = time.perf_counter()
    models, F_cal, y_cal = _lgbm_fit(split, params)
    shifts = cqr_shifts(_lgbm_raw(models, F_cal), y_cal)
    fit_s = time.perf_counter() - start

    def predict():
        raw = _lgbm_raw(models, split.F_test)
        return np.exp(probit_interpolate(apply_cqr(raw, shifts), LGBM_LEVELS, TAU))

    predict_s, q = best_time(predict, settings.repeats)
    # the raw models' crossings on test, before sorting
    unsorted = np.column_stack([m.predict(split.F_test) for m in models])
    extra = {
        "n_calibration": len(y_cal),
        "cqr_shift_log_pair_0.05": float(shifts[4]),
        "cqr_shift_log_pair_0.25": float(shifts[24]),
        "share_test_trips_with_crossing": float(np.mean(np.any(np.diff(unsorted) < 0, axis=1))),
    }
    return AnchorFit(q, None, fit_s, predict_s, extra)


def _knn_space(split: Split, space: str) -> tuple[np.ndarray, np.ndarray]:
    """The kNN inputs: ``tree`` = the tree feature set minus the nominal cluster ids,
    ``Z`` = the NGBoost features; standardised on train in the estimator."""
    if space == "Z":
        return split.Z_train, split.Z_test
    return split.F_train[:, :-N_CLUSTER_COLUMNS], split.F_test[:, :-N_CLUSTER_COLUMNS]


def anchor_knn_empirical(split: Split, settings: Settings, params: dict[str, Any]) -> AnchorFit:
    """The empirical distribution of the travel times of the ``k`` nearest training trips
    (Euclidean, standardised features); its 199 quantiles (numpy's linear method)."""
    from sklearn.neighbors import NearestNeighbors
    from sklearn.preprocessing import StandardScaler

    A, B = _knn_space(split, params["space"])
    k = params["k"]

    def fit():
        scaler = StandardScaler().fit(A)
        return scaler, NearestNeighbors(n_neighbors=k).fit(scaler.transform(A))

    fit_s, (scaler, nn) = _timed(fit)

    def predict():
        idx = nn.kneighbors(scaler.transform(B), return_distance=False)
        return np.quantile(split.y_train[idx], TAU, axis=1).T

    predict_s, q = best_time(predict, settings.repeats)
    return AnchorFit(q, None, fit_s, predict_s)


def _vrvm_runner(params: dict[str, Any]):
    return lambda split, settings, _: anchor_vrvm(split, settings, params)


ANCHOR_RUNNERS: dict[str, Callable[[Split, Settings, dict[str, Any]], AnchorFit]] = {
    "ngboost": anchor_ngboost,
    "quantile_forest": anchor_quantile_forest,
    "xgb_distribution": anchor_xgb_distribution,
    "lightgbm_cqr": anchor_lightgbm_cqr,
    "knn_empirical": anchor_knn_empirical,
}
# vrvm and its variants (the parameters of their RUNNERS entries)
for _name in MODELS:
    if _name.startswith("vrvm"):
        _runner = RUNNERS[_name]
        ANCHOR_RUNNERS[_name] = _vrvm_runner(dict(getattr(_runner, "keywords", {})))


def run_anchor_model(name: str, split: Split, settings: Settings, params: dict) -> dict[str, Any]:
    """Fit one model of the anchors run and score it by :func:`score_anchor`."""
    load = load_1min()
    fit = ANCHOR_RUNNERS[name](split, settings, params)
    record = score_anchor(fit.q, split.y_test, fit.dist)
    record.update(
        fit_s=fit.fit_s,
        predict_us=1e6 * fit.predict_s / len(split.test),
        load_1min=load,
        params=params,
        extra=fit.extra,
    )
    return record


# ---------------------------------------------------------------------------- --tune
def _grid(model: str) -> list[dict[str, Any]]:
    grid = TUNE_GRIDS[model]
    return [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]


def _tune_row(params: dict, record: dict[str, Any], fit_s: float) -> dict[str, Any]:
    return {
        "params": params,
        "crps_s": record["crps_s"],
        "nll": record["nll"],
        "coverage_90": record["coverage"]["0.9"],
        "rmsle": record["rmsle"],
        "fit_s": fit_s,
        "load_1min": load_1min(),
    }


def tune_anchor(model: str, val: Split, settings: Settings) -> list[dict[str, Any]]:
    """Score the grid of ``model`` on the validation split ``val`` (CRPS by the rule)."""
    rows = []
    y = val.y_test
    for point in _grid(model):
        if model == "lightgbm_cqr":
            params = {**ANCHOR_PARAMS[model], **point, "n_estimators": max(LGBM_TUNE_STAGES)}
            fit_s, (models, F_cal, y_cal) = _timed(lambda p=params: _lgbm_fit(val, p))
            for stages in LGBM_TUNE_STAGES:
                q, _ = _lgbm_cqr_quantiles(models, F_cal, y_cal, val.F_test, stages)
                rows.append(
                    _tune_row({**params, "n_estimators": stages}, score_anchor(q, y), fit_s)
                )
        elif model == "xgb_distribution":
            params = {**ANCHOR_PARAMS[model], **point, "n_estimators": XGB_TUNE_MAX_ROUNDS}
            est = _xgb_distribution(params, val.seed, early_stopping_rounds=XGB_TUNE_PATIENCE)
            fit_s, _ = _timed(
                lambda e=est: e.fit(
                    val.F_train,
                    np.log(val.y_train),
                    eval_set=[(val.F_test, np.log(y))],
                    verbose=False,
                )
            )
            dist = _xgb_lognormal(est, val.F_test)  # at the best iteration
            chosen = {**params, "n_estimators": int(est.best_iteration) + 1}
            rows.append(_tune_row(chosen, score_anchor(_mixture_quantiles(dist), y, dist), fit_s))
        else:
            params = {**ANCHOR_PARAMS[model], **point}
            fit = ANCHOR_RUNNERS[model](val, settings, params)
            rows.append(_tune_row(params, score_anchor(fit.q, y, fit.dist), fit.fit_s))
        for row in rows[-len(LGBM_TUNE_STAGES) if model == "lightgbm_cqr" else -1 :]:
            logger.info(
                "[tune %s] %s: CRPS %.2f cov90 %.3f fit %.1f s (load %.2f)",
                model,
                row["params"],
                row["crps_s"],
                row["coverage_90"],
                row["fit_s"],
                row["load_1min"],
            )
    return rows


def tune_table(model: str, rows: list[dict[str, Any]]) -> str:
    keys = [*TUNE_GRIDS[model]] + (["n_estimators"] if "n_estimators" in rows[0]["params"] else [])
    best = min(r["crps_s"] for r in rows)
    lines = [
        f"**{model}** (validation CRPS; best in bold)\n",
        "| " + " | ".join(keys) + " | CRPS s | NLL | cov 90 % | RMSLE | fit s | load |",
        "|" + "---|" * (len(keys) + 6),
    ]
    for r in sorted(rows, key=lambda r: r["crps_s"]):
        crps = f"**{r['crps_s']:.2f}**" if r["crps_s"] == best else f"{r['crps_s']:.2f}"
        lines.append(
            "| "
            + " | ".join(str(r["params"][k]) for k in keys)
            + f" | {crps} | {_fmt(r['nll'], 4)} | {r['coverage_90']:.3f} | {r['rmsle']:.4f} "
            f"| {r['fit_s']:.1f} | {r['load_1min']} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------- seeds, tables
def _flat(record: dict[str, Any]) -> dict[str, float | None]:
    """The scalar figures of a record, coverage and width per level as ``cov_<level>``."""
    out = {k: record[k] for k in ANCHOR_SCALARS}
    for level in LEVELS:
        out[f"cov_{level}"] = record["coverage"][str(level)]
        out[f"width_{level}"] = record["width_s"][str(level)]
    return out


ANCHOR_SCALARS = (
    "crps_s",
    "crps_closed_s",
    "nll",
    "rmsle",
    "rmse_s",
    "mae_s",
    "fit_s",
    "predict_us",
)


def seed_means(per_seed: list[dict[str, dict]]) -> dict[str, dict[str, dict[str, float | None]]]:
    """Mean and standard deviation (ddof=1) across seeds of every scalar, per model."""
    out = {}
    for name in per_seed[0]:
        flats = [_flat(r[name]) for r in per_seed if "error" not in r.get(name, {"error": 1})]
        if not flats:
            continue
        out[name] = {}
        for metric in flats[0]:
            values = [f[metric] for f in flats]
            if any(v is None for v in values):
                out[name][metric] = {"mean": None, "std": None, "n": len(values)}
                continue
            v = np.asarray(values, np.float64)
            std = float(v.std(ddof=1)) if v.size > 1 else None
            out[name][metric] = {"mean": float(v.mean()), "std": std, "n": int(v.size)}
    return out


def best_anchor(means: dict[str, dict]) -> str | None:
    """The anchor of BEST_ANCHOR_POOL with the lowest mean CRPS."""
    pool = [m for m in BEST_ANCHOR_POOL if m in means]
    return min(pool, key=lambda m: means[m]["crps_s"]["mean"]) if pool else None


def anchor_seed_table(results: dict[str, dict]) -> str:
    head = (
        "| model | CRPS s | closed-form CRPS s | NLL | RMSLE | cov 50/80/90/95 % "
        "| width 50/80/90/95 % (s) | fit s | predict µs/trip | load |"
    )
    rows = [head, "|" + "---|" * 10]
    for name, r in results.items():
        if "error" in r:
            rows.append(f"| {name} | failed: {r['error']} |" + " |" * 8)
            continue
        cov = "/".join(_fmt(r["coverage"][str(lv)], 2) for lv in LEVELS)
        width = "/".join(_fmt(r["width_s"][str(lv)], 0) for lv in LEVELS)
        rows.append(
            f"| {name} | {r['crps_s']:.2f} | {_fmt(r['crps_closed_s'], 2)} | {_fmt(r['nll'], 4)} "
            f"| {r['rmsle']:.4f} | {cov} | {width} | {r['fit_s']:.1f} | {r['predict_us']:.1f} "
            f"| {r['load_1min']} |"
        )
    return "\n".join(rows)


MEAN_ROWS = (
    ("CRPS s", "crps_s", 1),
    ("closed-form CRPS s", "crps_closed_s", 2),
    ("NLL", "nll", 4),
    ("RMSLE", "rmsle", 4),
    *((f"cov {round(100 * lv)} %", f"cov_{lv}", 3) for lv in LEVELS),
    *((f"width {round(100 * lv)} % s", f"width_{lv}", 0) for lv in LEVELS),
    ("fit s", "fit_s", 1),
    ("predict µs/trip", "predict_us", 1),
)


def anchor_mean_table(means: dict[str, dict]) -> str:
    """Every model side by side (means across seeds; CRPS mean ± std), and vrvm over the
    best anchor (by CRPS): a ratio, or for the NLL the difference."""
    models = list(means)
    best = best_anchor(means)
    lines = [
        "| metric | " + " | ".join(models) + f" | vrvm / best anchor ({best}) |",
        "|" + "---|" * (len(models) + 2),
    ]
    for label, key, digits in MEAN_ROWS:
        cells = []
        for m in models:
            s = means[m][key]
            cell = _fmt(s["mean"], digits)
            if key == "crps_s" and s["std"] is not None:
                cell += f" ± {s['std']:.1f}"
            cells.append(cell)
        ratio = "n/a"
        if best and "vrvm" in means:
            a, b = means["vrvm"][key]["mean"], means[best][key]["mean"]
            if a is not None and b is not None:
                ratio = f"{a - b:+.4f} (diff)" if key == "nll" else f"{a / b:.3f}"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- --anchors
def run_anchors(args, trips: pd.DataFrame, settings: Settings, meta: dict, city: str) -> int:
    """The anchors run (``--anchors``): every selected model on every seed and split, or
    with ``--tune`` the grids on the validation slice of the first seed's training trips."""
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    models = _selected(args, ANCHOR_RUNS_ALLOWED, ANCHOR_RUN_MODELS)
    wanted = {s.strip() for s in (args.splits or "random").split(",")}
    suffix = city
    meta.update(seeds=seeds, models=models, levels_crps=len(TAU))

    if args.tune:
        split = next(s for s in make_splits(trips, seed=seeds[0]) if s.name in wanted)
        val = split.validation_split()
        meta["tune_split"] = val.summary()
        tuning = {}
        for model in [m for m in models if m in ANCHOR_MODELS]:
            tuning[model] = tune_anchor(model, val, replace(settings, repeats=1))
        meta["load_avg_end"] = list(os.getloadavg())
        print(f"{val.description}: {len(val.train):,} fit / {len(val.test):,} validation\n")
        for model, rows in tuning.items():
            print(tune_table(model, rows), end="\n\n")
        out = args.out or RESULTS / f"bench_trips_anchors_tune_{suffix}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"meta": meta, "tuning": tuning}, indent=1))
        print(f"wrote {out}")
        return 0

    params = {m: anchor_params(m, city, args.quick) if m in ANCHOR_PARAMS else {} for m in models}
    meta["params"] = params
    results: dict[str, dict[str, dict]] = {}
    meta["splits"] = {}
    warmed = False
    for seed in seeds:
        for split in make_splits(trips, seed=seed):
            if split.name not in wanted:
                continue
            if not warmed and any(m.startswith("vrvm") for m in models):
                warm_up(split)
                warmed = True
            key = f"seed{seed}/{split.name}"
            meta["splits"][key] = {
                **split.summary(),
                "tree_features": split.tree.names,
                "tree_features_fit_s": split.tree.fit_s,
            }
            results[key] = {}
            for name in models:
                logger.info("[%s] fitting %s (load %.2f)", key, name, load_1min())
                try:
                    r = run_anchor_model(name, split, settings, params[name])
                except Exception as exc:  # keep the other models' results
                    logger.exception("%s failed on %s", name, key)
                    results[key][name] = {"error": f"{type(exc).__name__}: {exc}"}
                    continue
                results[key][name] = r
                logger.info(
                    "[%s] %s: CRPS %.2f (closed %s) cov90 %.3f fit %.1f s",
                    key,
                    name,
                    r["crps_s"],
                    _fmt(r["crps_closed_s"], 2),
                    r["coverage"]["0.9"],
                    r["fit_s"],
                )
    meta["load_avg_end"] = list(os.getloadavg())

    means = {}
    for split_name in sorted(wanted):
        per_seed = [results[k] for k in results if k.endswith(f"/{split_name}")]
        if per_seed:
            means[split_name] = seed_means(per_seed)
    for key, res in results.items():
        s = meta["splits"][key]
        print(f"**{city}, {key}**: {s['n_train']:,} train / {s['n_test']:,} test trips\n")
        print(anchor_seed_table(res), end="\n\n")
    for split_name, m in means.items():
        print(f"**{city}, {split_name} split, means over seeds {seeds}**\n")
        print(anchor_mean_table(m), end="\n\n")
    loads = meta["load_avg_start"], meta["load_avg_end"]
    print(f"load average (1/5/15 min) at start {loads[0]}, at end {loads[1]}")
    out = args.out or RESULTS / f"bench_trips_anchors_{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "results": results, "means": means}, indent=1))
    print(f"wrote {out}")
    return 0


ANCHOR_RUNS_ALLOWED = tuple(ANCHOR_RUNNERS)


def _selected(args, allowed: tuple[str, ...], default: tuple[str, ...]) -> list[str]:
    """``--models`` (in the given order) or ``default`` minus ``--skip``."""
    names = [SKIP_ALIASES.get(s.strip(), s.strip()) for s in (args.models or "").split(",")]
    names = [n for n in names if n] or list(default)
    skip = {SKIP_ALIASES.get(s.strip(), s.strip()) for s in args.skip.split(",") if s.strip()}
    unknown = (set(names) | skip) - set(allowed)
    if unknown:
        raise SystemExit(f"unknown model(s) {sorted(unknown)}; choose from {allowed}")
    return [n for n in names if n not in skip]


# ---------------------------------------------------------------------------- exploration
def _recalibrate(model, split: Split, dist, *, by_distance: bool, heavy_tails: bool):
    """Prototype only: a spread that depends on distance, and/or Student-t noise tails.

    The members' noise is homoscedastic and (with e' ~ N/2 degrees of freedom) Gaussian
    on the log scale, but the standardised in-sample log residuals z have an excess
    kurtosis near 3 and a spread about twice as large for same-centroid trips as for
    long ones. ``by_distance`` multiplies the members' scales by a factor per distance
    bin: the RMS of z in the bin over the overall RMS (so the overall calibration stays
    the model's own). ``heavy_tails`` then fits a Student-t (location 0) to the rescaled
    z by maximum likelihood and gives every member its degrees of freedom and scale
    factor. Uses only the public ``loc``/``scale``/``df`` of the predictives.
    """
    t = split.train
    train = model.predict_dist(t)
    mean = train.loc.mean(axis=0)
    spread = np.sqrt((train.scale**2).mean(axis=0) + train.loc.var(axis=0))
    z = (np.log(split.y_train) - mean) / spread
    scale, df, extra = dist.scale, dist.df, {}
    if by_distance:
        km_train = haversine_km(t["origin_lat"], t["origin_lon"], t["dest_lat"], t["dest_lon"])
        bins_train = np.digitize(km_train, RESCALE_BINS_KM[1:-1])
        n_bins = len(RESCALE_BINS_KM) - 1
        rms = np.array([np.sqrt(np.mean(z[bins_train == b] ** 2)) for b in range(n_bins)])
        factor = rms / np.sqrt(np.mean(z**2))
        z = z / factor[bins_train]
        scale = scale * factor[np.digitize(split.km_test, RESCALE_BINS_KM[1:-1])]
        extra["distance_factors"] = factor.round(3).tolist()
    if heavy_tails:
        from scipy import stats

        nu, _, c = stats.t.fit(z, floc=0.0)
        scale = scale * c
        df = np.full((dist.loc.shape[0], 1), nu)
        extra["t_df"], extra["t_scale"] = float(nu), float(c)
    return MixtureDistribution(dist.loc, scale, df=df, transform=dist.transform), extra


def _rescale_by_distance(model, split, dist):
    return _recalibrate(model, split, dist, by_distance=True, heavy_tails=False)


def _student_tails(model, split, dist):
    return _recalibrate(model, split, dist, by_distance=False, heavy_tails=True)


def _rescale_and_tails(model, split, dist):
    return _recalibrate(model, split, dist, by_distance=True, heavy_tails=True)


RESCALE_BINS_KM = (0.0, 0.01, 1.0, 2.0, 4.0, 8.0, 16.0, np.inf)

# (name, TravelTimeModel parameters, prototypes). Prototypes, beyond the parameters:
# "rescale" (spread by distance), "tails" (Student-t tails); see the module docstring.
_BOTH = ("rescale", "tails")
_WIDTHS4 = [0.5, 1.0, 2.0, 4.0]
EXPLORE_GRID: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("defaults", {}, ()),
    ("distance_feature=km", {"distance_feature": "km"}, ()),
    ("n_members=4", {"n_members": 4}, ()),
    ("n_members=16", {"n_members": 16}, ()),
    ("max_basis=500", {"max_basis": 500}, ()),
    ("max_basis=2000", {"max_basis": 2000}, ()),
    ("n_widths=1", {"n_widths": 1}, ()),
    ("n_widths=3", {"n_widths": 3}, ()),
    ("kernel_mode=summed", {"kernel_mode": "summed"}, ()),
    ("factorization=meanfield", {"factorization": "meanfield"}, ()),
    ("target=seconds", {"target": "seconds"}, ()),
    ("width_selection=cv", {"width_selection": "cv"}, ()),
    ("kernel_widths=[0.5,1]", {"kernel_widths": [0.5, 1.0]}, ()),
    ("kernel_widths=[1,2]", {"kernel_widths": [1.0, 2.0]}, ()),
    ("kernel_widths=[2,4]", {"kernel_widths": [2.0, 4.0]}, ()),
    ("kernel_widths=[4,8]", {"kernel_widths": [4.0, 8.0]}, ()),
    ("kernel_widths=[0.5,1,2]", {"kernel_widths": [0.5, 1.0, 2.0]}, ()),
    ("kernel_widths=[0.5,1,2,4]", {"kernel_widths": _WIDTHS4}, ()),
    ("kernel_widths=[0.5,1,2,4], n_members=4", {"kernel_widths": _WIDTHS4, "n_members": 4}, ()),
    ("kernel_widths=[0.5,1,2,4], max_basis=500", {"kernel_widths": _WIDTHS4, "max_basis": 500}, ()),
    ("n_widths=3, max_basis=2000", {"n_widths": 3, "max_basis": 2000}, ()),
    ("n_widths=3, target=seconds", {"n_widths": 3, "target": "seconds"}, ()),
    # seed sensitivity of the default and of the best parameter-only settings
    ("defaults, random_state=1", {"random_state": 1}, ()),
    ("defaults, random_state=2", {"random_state": 2}, ()),
    ("n_widths=3, random_state=1", {"n_widths": 3, "random_state": 1}, ()),
    ("n_widths=3, random_state=2", {"n_widths": 3, "random_state": 2}, ()),
    (
        "kernel_widths=[0.5,1,2,4], random_state=1",
        {"kernel_widths": _WIDTHS4, "random_state": 1},
        (),
    ),
    (
        "kernel_widths=[0.5,1,2,4], random_state=2",
        {"kernel_widths": _WIDTHS4, "random_state": 2},
        (),
    ),
    ("PROTOTYPE spread by distance", {}, ("rescale",)),
    ("PROTOTYPE t tails", {}, ("tails",)),
    ("PROTOTYPE spread by distance + t tails", {}, ("rescale", "tails")),
    ("PROTOTYPE spread + t tails, random_state=1", {"random_state": 1}, _BOTH),
    ("PROTOTYPE spread + t tails, random_state=2", {"random_state": 2}, _BOTH),
    ("PROTOTYPE spread + t tails, n_widths=3", {"n_widths": 3}, _BOTH),
    ("PROTOTYPE spread + t tails, n_members=16", {"n_members": 16}, _BOTH),
    ("PROTOTYPE spread + t tails, kernel_widths=[0.5,1,2,4]", {"kernel_widths": _WIDTHS4}, _BOTH),
]


def explore(split: Split, settings: Settings, only: set[str] | None) -> list[dict]:
    warm_up(split)
    rows = []
    for name, params, prototypes in EXPLORE_GRID:
        if only and name not in only:
            continue
        post = {
            (False, False): None,
            (True, False): _rescale_by_distance,
            (False, True): _student_tails,
            (True, True): _rescale_and_tails,
        }["rescale" in prototypes, "tails" in prototypes]
        record = run_vrvm(split, settings, post=post, **params)
        record["by_distance"] = record["full"]["by_distance"]
        record = _strip_full(record)
        record["name"] = name
        rows.append(record)
        logger.info(
            "%-36s CRPS %.1f NLL %.3f cov90 %.3f fit %.1f s pred %.1f us (load %.2f)",
            name,
            record["crps_s"] or np.nan,
            record["nll"] or np.nan,
            record["coverage"]["0.9"],
            record["fit_s"],
            record["predict_us"],
            record["load_1min"],
        )
    return rows


def explore_table(rows: list[dict]) -> str:
    lines = [
        "| setting | widths | RVs/member | RMSE s | CRPS s | NLL | cov 50/90 % | width 90 % s "
        "| medians > 3 h | fit s | predict µs | load |",
        "|" + "---|" * 12,
    ]
    for r in rows:
        e = r["extra"]
        lines.append(
            f"| {r['name']} | {', '.join(f'{w:.2f}' for w in e['kernel_widths'])} "
            f"| {np.mean(e['n_relevance']):.0f} | {_fmt(r['rmse_s'])} | {_fmt(r['crps_s'], 1)} "
            f"| {_fmt(r['nll'], 3)} | {r['coverage']['0.5']:.3f}/{r['coverage']['0.9']:.3f} "
            f"| {_fmt(r['width_s']['0.9'])} | {e['n_median_above_3h']} | {r['fit_s']:.1f} "
            f"| {r['predict_us']:.1f} | {r['load_1min']} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------- main
def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="trip file (CSV/Parquet)")
    parser.add_argument(
        "--city",
        choices=[*sorted(CITIES), "synthetic"],
        default="chicago",
        help="a real sample in ../shared/data (ignored with --data), or 'synthetic': "
        f"{SYNTHETIC_TRIPS:,} trips of synthetic_city(seed=0)",
    )
    parser.add_argument("--skip", default="", help=f"comma-separated models to skip: {MODELS}")
    parser.add_argument(
        "--models",
        default="",
        help="comma-separated models to fit, in this order (default: all of MODELS; with "
        f"--anchors {ANCHOR_RUN_MODELS}, any of {ANCHOR_RUNS_ALLOWED})",
    )
    parser.add_argument(
        "--anchors",
        action="store_true",
        help="the anchors run of issue 34: one CRPS rule (199 quantiles), several seeds",
    )
    parser.add_argument(
        "--seeds",
        default="0,1,2",
        help="with --anchors: comma-separated seeds (split permutation and random states)",
    )
    parser.add_argument(
        "--tune",
        action="store_true",
        help="with --anchors: score the anchors' hyper-parameter grids on a validation slice "
        "of the first seed's training trips instead of the benchmark",
    )
    parser.add_argument(
        "--ngboost-stages", type=int, default=None, help="NGBoost boosting stages (default 500)"
    )
    parser.add_argument("--quick", action="store_true", help="small anchors, for a smoke test")
    parser.add_argument(
        "--splits",
        default=None,
        help="comma-separated: random,time,blocks (default random,time; with --anchors random)",
    )
    parser.add_argument("--gp-restarts", type=int, default=0, help="GP optimizer restarts (cap)")
    parser.add_argument("--gp-max-iter", type=int, default=50, help="GP L-BFGS-B iteration cap")
    parser.add_argument("--ard-max-iter", type=int, default=100, help="ARDRegression max_iter")
    parser.add_argument("--repeats", type=int, default=3, help="predict timing repeats (best of)")
    parser.add_argument("--explore", action="store_true", help="VRVM settings grid instead")
    parser.add_argument("--explore-split", default="random", choices=("random", "time"))
    parser.add_argument("--only", default="", help="with --explore: ';'-separated setting names")
    parser.add_argument("--out", type=Path, default=None, help="JSON output path")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    models = None if args.anchors else _selected(args, MODELS, MODELS)
    overrides = {
        "gp_restarts": args.gp_restarts,
        "gp_max_iter": args.gp_max_iter,
        "ard_max_iter": args.ard_max_iter,
        "repeats": args.repeats,
    }
    if args.ngboost_stages is not None:
        overrides["ngboost_stages"] = args.ngboost_stages
    settings = Settings.quick(**overrides) if args.quick else Settings(**overrides)

    synthetic = args.data is None and args.city == "synthetic"
    if args.data is None and not synthetic:
        args.data = SHARED / CITIES[args.city]
    city = args.city if synthetic or args.data == SHARED / CITIES[args.city] else args.data.stem
    suffix = "" if city == "chicago" else f"_{city}"
    load_start = os.getloadavg()
    cleaning = CleaningConfig()  # documented defaults: 60 s, 3 h, 120 km/h
    if synthetic:
        trips, report = synthetic_trips(cleaning)
    else:
        trips, report = read_trips(args.data, cleaning=cleaning)
    print(report.summary(), end="\n\n")
    wanted = {s.strip() for s in (args.splits or "random,time").split(",")}
    splits = [s for s in make_splits(trips) if s.name in wanted]

    meta = {
        "data": "synthetic_city" if synthetic else str(args.data),
        "city": city,
        "cleaning_config": cleaning.to_dict(),
        "cleaning_report": report.to_dict(),
        "settings": settings.__dict__,
        "environment": environment(),
        "load_avg_start": list(load_start),
    }

    if args.explore:
        split = next(s for s in make_splits(trips) if s.name == args.explore_split)
        only = {s.strip() for s in args.only.split(";") if s.strip()} or None
        rows = explore(split, settings, only)
        meta["split"] = split.summary()
        meta["load_avg_end"] = list(os.getloadavg())
        print(explore_table(rows))
        if args.explore_split != "random":
            suffix += f"_{args.explore_split}"
        out = args.out or RESULTS / f"bench_trips_explore{suffix}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
        print(f"\nwrote {out}")
        return 0
    if args.anchors:
        return run_anchors(args, trips, settings, meta, city)

    results: dict[str, dict[str, dict]] = {}
    meta["splits"] = {}
    for split in splits:
        if "vrvm" in models:
            warm_up(split)
        meta["splits"][split.name] = split.summary()
        results[split.name] = {}
        for name in models:
            logger.info("[%s] fitting %s (load %.2f)", split.name, name, load_1min())
            try:
                results[split.name][name] = RUNNERS[name](split, settings)
            except Exception as exc:  # keep the other models' results
                logger.exception("%s failed on %s", name, split.name)
                results[split.name][name] = {"error": f"{type(exc).__name__}: {exc}"}
                continue
            r = results[split.name][name]
            logger.info(
                "[%s] %s: CRPS %s, fit %.1f s", split.name, name, _fmt(r["crps_s"], 1), r["fit_s"]
            )
    meta["load_avg_end"] = list(os.getloadavg())

    for split in splits:
        s = meta["splits"][split.name]
        print(f"{split.description}: {s['n_train']:,} train / {s['n_test']:,} test trips\n")
        print(markdown_table(split.name, results[split.name]), end="\n\n")
    print(f"load average (1/5/15 min) at start {load_start}, at end {meta['load_avg_end']}")

    out = args.out or RESULTS / f"bench_trips{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
