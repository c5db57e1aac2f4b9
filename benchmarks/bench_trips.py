"""Benchmark of the travel-time model against the anchors people would otherwise use.

On the Chicago taxi sample (``../shared/data/chicago_taxi_trips.csv`` from the repository
root; ``--city nyc`` and ``--city sf`` for the NYC 2016 taxi and San Francisco bike-share
samples there, ``--city synthetic`` for 14,000 trips of Synthetica), after the documented
cleaning of :func:`vrvm.read_trips` (defaults: drop trips
shorter than 60 s, longer than 3 h or faster than 120 km/h straight-line), two splits
are scored:

* ``random``: a random 80/20 split (``numpy.random.default_rng(0).permutation``);
* ``time``: train on the earliest 80 % of trips by start time, test on the rest.

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

Usage::

    python benchmarks/bench_trips.py                         # full run, ~15 min
    python benchmarks/bench_trips.py --skip gp,ard --quick   # smoke test, ~1 min
    python benchmarks/bench_trips.py --explore               # VRVM settings grid, ~8 min
    python benchmarks/bench_trips.py --city nyc --splits random   # NYC 2016 (or sf)

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
from dataclasses import dataclass, field
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


def make_splits(trips: pd.DataFrame, train_share: float = 0.8) -> list[Split]:
    n_train = round(train_share * len(trips))
    perm = np.random.default_rng(SEED).permutation(len(trips))
    order = np.argsort(trips["start_time"].to_numpy(), kind="stable")

    def take(rows):
        return trips.iloc[np.sort(rows)].reset_index(drop=True)

    return [
        Split(
            "random",
            f"random 80/20 (numpy default_rng({SEED}).permutation)",
            take(perm[:n_train]),
            take(perm[n_train:]),
        ),
        Split(
            "time",
            "time-ordered: earliest 80 % train",
            take(order[:n_train]),
            take(order[n_train:]),
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


def environment() -> dict[str, Any]:
    import lightgbm
    import ngboost
    import scipy
    import sklearn

    return {
        "vrvm_commit": _git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "sklearn": sklearn.__version__,
        "lightgbm": lightgbm.__version__,
        "ngboost": ngboost.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
    }


def _strip_full(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "full"}


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
    parser.add_argument("--quick", action="store_true", help="small anchors, for a smoke test")
    parser.add_argument("--splits", default="random,time", help="comma-separated: random,time")
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
    skip = {SKIP_ALIASES.get(s.strip(), s.strip()) for s in args.skip.split(",") if s.strip()}
    unknown = skip - set(MODELS)
    if unknown:
        raise SystemExit(f"--skip: unknown model(s) {sorted(unknown)}; choose from {MODELS}")
    overrides = {
        "gp_restarts": args.gp_restarts,
        "gp_max_iter": args.gp_max_iter,
        "ard_max_iter": args.ard_max_iter,
        "repeats": args.repeats,
    }
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
    wanted = {s.strip() for s in args.splits.split(",")}
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

    results: dict[str, dict[str, dict]] = {}
    meta["splits"] = {}
    for split in splits:
        if "vrvm" not in skip:
            warm_up(split)
        meta["splits"][split.name] = split.summary()
        results[split.name] = {}
        for name in MODELS:
            if name in skip:
                continue
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
