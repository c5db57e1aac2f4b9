"""Exploration (issue 34): recalibrating the predictive CDF on out-of-shard PIT values.

Not part of the model: nothing in the library is patched. The default
``TravelTimeModel(n_jobs=2, random_state=seed)`` is fitted on the random 80/20 split's
training trips (``numpy.random.default_rng(split_seed).permutation``, as
``bench_trips.py``); its predictive F of each test trip is then recalibrated as

    H(t) = G(F(t)),    h(t) = g(F(t)) f(t),    H^-1(p) = F^-1(G^-1(p)),

with G: [0, 1] -> [0, 1] a monotone map learned from the PIT values u_i = F_i(y_i) of
calibration trips (Kuleshov, Fenner & Ermon 2018). Maps:

``isotonic``
    Kuleshov's isotonic regression of the PITs' empirical CDF on u (here: the
    interpolated empirical CDF of the PITs, pinned at (0, 0) and (1, 1)); its
    "density" is the slope between neighbouring PITs.
``linear``
    Piecewise-linear CDF through the PITs' quantiles at j / 40: a histogram density of
    40 equal-mass bins, a smoothed isotonic map.
``bernstein``
    A smooth density of the PITs: a mixture of the Beta(k, K + 1 - k) densities
    (Bernstein polynomial), weights by maximum likelihood, K in (10, 20, 40, 80, 160) by 5-fold
    cross-validated log likelihood.
``beta``
    The Beta(a, b) CDF, by maximum likelihood (two parameters).
``betacal``
    Beta calibration (Kull, Silva Filho & Flach 2017): logit G(u) = c + a log u -
    b log(1 - u), a, b >= 0, by maximum likelihood.

Every smooth map is fitted by maximum likelihood of the PITs, which is the maximum
likelihood of the recalibrated predictive on the calibration trips (f does not depend
on G). ``*_tercile``: one map per straight-line distance tercile of the calibration
trips. ``scale``: no map; one factor on every component's scale, chosen to minimise
the closed-form mixture CRPS of the calibration trips (the predictive stays an exact
mixture). ``skewtwin`` (beyond the PIT maps, also an exact mixture): the twin
scales' narrow and wide components each get their own shift on the log scale and
scale factor (four parameters, maximum likelihood on the calibration trips), which
lets the mixture be skewed.

Calibration trips (``source``):

``oos``
    The model's own training trips, each predicted by the mixture of the members that
    did not see it (``fit_trips`` returns the deal, ``shard_of_row``), with its
    leave-one-out zone-pair offset and the model's spread (distance scale, twin
    scales): the same held-out predictions ``Spread.fit`` is fitted on. No extra fit.
``holdout``
    A 20 % slice of the training trips held out from a second model fitted on the
    other 80 % (``model80``). Scored two ways: the full model recalibrated with the
    slice's map (``full`` rows, "transfer"), and ``model80`` itself (``m80`` rows),
    which can also be recalibrated by its own ``oos`` PITs for a like-for-like
    comparison of the two sources.

Scores on the test trips, before and after: CRPS by the 199-quantile rule (2 x the
mean pinball loss over the levels k/200, k = 1..199; the quantiles of H exact, by the
mixture's own solver at the mapped levels), the closed-form mixture CRPS (exact
mixtures only: before and ``scale``), NLL per second with the recalibrated density,
coverage of the 50/80/90/95 % central intervals (by the recalibrated PIT), mean width
of the 90 % interval, MAE of the median, the largest deviation of the 10-bin PIT
histogram from flat (density units), and the 90 % coverage per distance tercile.
Paired standard errors of the CRPS change are over test trips. The 1-minute load
average is recorded beside every fit (shared machine).

Each result records which vrvm ran (its directory and the SHA-256 of its sources):
other work may edit the tree during a run, so a fixed copy of the library is safer
(``git archive HEAD vrvm | tar -x -C /tmp/head`` and ``PYTHONPATH=/tmp/head``).

Usage (from the repository root; ``vrvm`` importable, e.g. ``PYTHONPATH=.``)::

    python benchmarks/explore_calibration.py --cities chicago,nyc,sf --out /tmp/cal.json
    python benchmarks/explore_calibration.py --cities sf --seeds 1,2 --no-holdout \\
        --variants scale,bernstein,bernstein_tercile,linear
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special, stats
from sklearn.isotonic import IsotonicRegression

from vrvm import TravelTimeModel
from vrvm.engine import single_threaded_blas
from vrvm.engine.mixture import MixtureDistribution
from vrvm.trips import read_trips
from vrvm.trips.model import _ensemble
from vrvm.trips.model.pair_offsets import fit_model_offsets
from vrvm.trips.places.geo import haversine_km
from vrvm.trips.places.zones import stratified_shards, trip_strata
from vrvm.trips.table import check_trips, trip_provenance

logger = logging.getLogger("explore_calibration")

REPO = Path(__file__).resolve().parent.parent
# the cities and their split are bench_trips.py's (run from the repository root)
from bench_trips import CITIES, SHARED, make_splits  # noqa: E402

LEVELS = (0.5, 0.8, 0.9, 0.95)
TAU = np.arange(1, 200) / 200.0  # the 199-quantile rule
EDGE = 1e-9  # PIT levels are kept inside [EDGE, 1 - EDGE] before the mixture's ppf
MAPS = ("isotonic", "linear", "bernstein", "beta", "betacal")
VARIANTS = ("scale", "skewtwin", *MAPS, *(f"{m}_tercile" for m in MAPS))
HOLDOUT_SHARE = 0.2


def code_version() -> dict[str, Any]:
    """Which vrvm ran: its directory, the SHA-256 of its Python sources, and the
    repository's commit (read-only git)."""
    import hashlib
    import subprocess

    import vrvm

    root = Path(vrvm.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        commit = None
    return {"vrvm_dir": str(root), "sources_sha256": digest.hexdigest(), "repo_head": commit}


def load_1min() -> float:
    return round(os.getloadavg()[0], 2)


# ---------------------------------------------------------------------------- PIT maps
def _bisect(fn, p: np.ndarray, iters: int = 60) -> np.ndarray:
    """The u in [0, 1] with fn(u) = p, fn increasing (vectorised bisection)."""
    lo, hi = np.zeros_like(p), np.ones_like(p)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        below = fn(mid) < p
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return 0.5 * (lo + hi)


class PitMap:
    """A monotone map G of [0, 1] onto itself, with log density and inverse."""

    params: dict

    def fit(self, u: np.ndarray) -> PitMap:
        raise NotImplementedError

    def cdf(self, u):
        raise NotImplementedError

    def logpdf(self, u):
        raise NotImplementedError

    def ppf(self, p):
        return _bisect(self.cdf, np.asarray(p, dtype=np.float64))


class Knots(PitMap):
    """G piecewise linear through increasing knots (x_j, p_j), (0, 0) to (1, 1)."""

    def _set(self, x: np.ndarray, p: np.ndarray) -> None:
        x = np.concatenate([[0.0], x, [1.0]])
        p = np.concatenate([[0.0], p, [1.0]])
        # strictly increasing in both (ties of PITs: keep the last value of each x)
        keep = np.append(np.diff(x) > 1e-12, True)
        x, p = x[keep], p[keep]
        x[0], p[0] = 0.0, 0.0
        self.x, self.p = x, np.maximum.accumulate(p)
        self.slope = np.diff(self.p) / np.diff(self.x)

    def cdf(self, u):
        return np.interp(u, self.x, self.p)

    def logpdf(self, u):
        i = np.clip(np.searchsorted(self.x, u, side="right") - 1, 0, self.slope.size - 1)
        with np.errstate(divide="ignore"):
            return np.log(self.slope[i])

    def ppf(self, p):
        return np.interp(p, self.p, self.x)


class Isotonic(Knots):
    """Kuleshov et al.: isotonic regression of the PITs' empirical CDF on the PITs."""

    def fit(self, u):
        u = np.sort(u)
        # plotting positions i / (n + 1), not i / n: G(max PIT) < 1, so test PITs beyond
        # the calibration range keep a (small) density
        ecdf = np.arange(1, u.size + 1) / (u.size + 1)
        iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True).fit(u, ecdf)
        self._set(iso.X_thresholds_, iso.y_thresholds_)
        self.params = {"knots": int(self.x.size)}
        return self


class Linear(Knots):
    """Piecewise-linear CDF through the PITs' quantiles at j / bins (equal-mass bins)."""

    def __init__(self, bins: int = 40):
        self.bins = bins

    def fit(self, u):
        p = np.arange(1, self.bins) / self.bins
        self._set(np.quantile(u, p), p)
        self.params = {"bins": self.bins}
        return self


class Bernstein(PitMap):
    """Density sum_k w_k Beta(u; k, K + 1 - k), w by maximum likelihood; K by 5-fold CV."""

    GRID = (10, 20, 40, 80, 160)

    def fit(self, u):
        u = np.clip(u, 1e-12, 1 - 1e-12)
        rng = np.random.default_rng(0)
        fold = rng.permutation(u.size) % 5
        scores = {}
        for k in self.GRID:
            dens, total = self._dens(u, k), 0.0
            for f in range(5):
                w = self._em(dens[fold != f])
                total += float(np.sum(np.log(dens[fold == f] @ w)))
            scores[k] = total / u.size
        self.k = max(scores, key=scores.get)
        self.w = self._em(self._dens(u, self.k))
        self.params = {"K": self.k, "cv_loglik": {str(k): round(v, 5) for k, v in scores.items()}}
        return self

    @staticmethod
    def _dens(u, k):
        j = np.arange(1, k + 1)
        u = np.clip(np.asarray(u, dtype=np.float64), 1e-300, 1 - 1e-16)[..., None]
        log = (j - 1) * np.log(u) + (k - j) * np.log1p(-u) - special.betaln(j, k + 1 - j)
        return np.exp(log)

    @staticmethod
    def _em(dens):
        """Mixture weights maximising mean log(dens @ w) on the simplex: L-BFGS on the
        softmax parameters (plain EM crawls here)."""

        def objective(theta):
            w = special.softmax(theta)
            mix = dens @ w
            grad_w = -(dens.T @ (1.0 / mix)) / dens.shape[0]
            return -float(np.mean(np.log(mix))), w * (grad_w - w @ grad_w)

        theta = np.zeros(dens.shape[1])
        res = optimize.minimize(
            objective, theta, jac=True, method="L-BFGS-B", options={"maxiter": 2000}
        )
        return special.softmax(res.x)

    def cdf(self, u):
        j = np.arange(1, self.k + 1)
        return special.betainc(j, self.k + 1 - j, np.asarray(u)[..., None]) @ self.w

    def logpdf(self, u):
        return np.log(self._dens(u, self.k) @ self.w)


class Beta(PitMap):
    """The Beta(a, b) CDF, by maximum likelihood."""

    def fit(self, u):
        u = np.clip(u, 1e-12, 1 - 1e-12)
        self.a, self.b, _, _ = stats.beta.fit(u, floc=0.0, fscale=1.0)
        self.params = {"a": round(float(self.a), 4), "b": round(float(self.b), 4)}
        return self

    def cdf(self, u):
        return stats.beta.cdf(u, self.a, self.b)

    def logpdf(self, u):
        return stats.beta.logpdf(u, self.a, self.b)

    def ppf(self, p):
        return stats.beta.ppf(p, self.a, self.b)


class BetaCalibration(PitMap):
    """logit G(u) = c + a log u - b log(1 - u) (Kull et al. 2017), by maximum likelihood."""

    def fit(self, u):
        u = np.clip(u, 1e-12, 1 - 1e-12)
        lu, l1u = np.log(u), np.log1p(-u)

        def nll(theta):
            a, b, c = theta
            z = c + a * lu - b * l1u
            # log g = log G + log(1 - G) + log(a / u + b / (1 - u))
            return -np.mean(-np.logaddexp(0, -z) - np.logaddexp(0, z) + np.log(a / u + b / (1 - u)))

        bounds = [(1e-4, 20), (1e-4, 20), (-20, 20)]
        res = optimize.minimize(nll, [1.0, 1.0, 0.0], method="L-BFGS-B", bounds=bounds)
        self.a, self.b, self.c = res.x
        self.params = {k: round(float(v), 4) for k, v in zip("abc", res.x, strict=True)}
        return self

    def _z(self, u):
        u = np.clip(u, 1e-300, 1.0)
        with np.errstate(divide="ignore"):
            return self.c + self.a * np.log(u) - self.b * np.log1p(-u)

    def cdf(self, u):
        return special.expit(self._z(u))

    def logpdf(self, u):
        z = self._z(u)
        u = np.clip(u, 1e-300, 1 - 1e-16)
        return -np.logaddexp(0, -z) - np.logaddexp(0, z) + np.log(self.a / u + self.b / (1 - u))


MAKERS = {
    "isotonic": Isotonic,
    "linear": Linear,
    "bernstein": Bernstein,
    "beta": Beta,
    "betacal": BetaCalibration,
}


class Recalibration:
    """One PIT map per group of trips (one group: global; three: distance terciles)."""

    def __init__(self, kind: str, edges_km: tuple[float, ...] = ()):
        self.kind, self.edges = kind, np.asarray(edges_km, dtype=np.float64)

    def group(self, km: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.edges, km, side="right")

    def fit(self, u: np.ndarray, km: np.ndarray) -> Recalibration:
        g = self.group(km)
        self.maps = [MAKERS[self.kind]().fit(u[g == i]) for i in range(self.edges.size + 1)]
        return self

    def _apply(self, method: str, x: np.ndarray, km: np.ndarray) -> np.ndarray:
        g = np.broadcast_to(self.group(km), x.shape)
        out = np.empty(x.shape)
        for i, pit_map in enumerate(self.maps):
            sel = g == i
            # maps are evaluated once per distinct value (the 199 levels of a global map)
            values, inverse = np.unique(x[sel], return_inverse=True)
            out[sel] = getattr(pit_map, method)(values)[inverse.reshape(-1)]
        return out

    def cdf(self, u, km):
        return self._apply("cdf", np.asarray(u, dtype=np.float64), km)

    def logpdf(self, u, km):
        return self._apply("logpdf", np.asarray(u, dtype=np.float64), km)

    def ppf(self, p, km):
        return self._apply("ppf", np.asarray(p, dtype=np.float64), km)

    def describe(self) -> list[dict]:
        return [m.params for m in self.maps]


# ---------------------------------------------------------------------------- mixtures
def rescaled(dist: MixtureDistribution, factor: float) -> MixtureDistribution:
    return MixtureDistribution(dist.loc, dist.scale * factor, df=dist.df, transform=dist.transform)


def fit_scale(dist: MixtureDistribution, y: np.ndarray) -> float:
    """One factor on every scale minimising the mean closed-form CRPS of (dist, y)."""
    res = optimize.minimize_scalar(
        lambda s: float(np.mean(rescaled(dist, np.exp(s)).crps(y))),
        bounds=(-1.0, 1.0),
        method="bounded",
        options={"xatol": 1e-3},
    )
    return float(np.exp(res.x))


def skew_twins(dist: MixtureDistribution, theta) -> MixtureDistribution:
    """The twin components moved apart: the narrow ones (the first half) by
    ``theta[0]`` on the log scale with scales times ``exp(theta[2])``, the wide ones by
    ``theta[1]`` and ``exp(theta[3])``. Still an exact mixture of location-scale
    components, but skewed."""
    half = dist.n_components // 2
    shift = np.repeat([theta[0], theta[1]], half)[:, None]
    factor = np.exp(np.repeat([theta[2], theta[3]], half))[:, None]
    return MixtureDistribution(
        dist.loc + shift, dist.scale * factor, df=dist.df, transform=dist.transform
    )


def fit_skew_twins(dist: MixtureDistribution, y: np.ndarray) -> np.ndarray:
    """theta of :func:`skew_twins` by maximum likelihood of (dist, y)."""
    if dist.n_components != 2 * dist.n_members:
        raise ValueError("skew twins need a model with twin scales")
    res = optimize.minimize(
        lambda theta: -float(np.mean(skew_twins(dist, theta).logpdf(y))),
        np.zeros(4),
        method="Nelder-Mead",
        options={"xatol": 1e-4, "fatol": 1e-7, "maxiter": 2000},
    )
    return res.x


def fit_model(train: pd.DataFrame, seed: int, params: dict) -> tuple[TravelTimeModel, Any, dict]:
    """``TravelTimeModel(n_jobs=2, random_state=seed, **params).fit(train)`` through
    ``fit_trips``, which also returns the deal of the trips to the members
    (``shard_of_row``)."""
    model = TravelTimeModel(n_jobs=2, random_state=seed, **params)
    model.validate_params()
    load = load_1min()
    started = time.perf_counter()
    trips = check_trips(train, with_target=True)
    data = model.fit_trips(trips, None, None, None, started, trip_provenance(train))
    info = {"fit_s": round(time.perf_counter() - started, 1), "load_1min": load}
    # the deal is a function of the trips, the parameters and the seed: a model that
    # has its training trips again (not a loaded one without them) can recompute it
    strata, _ = trip_strata(trips, model.tz_, None, model.h3_resolution, model.target_zones)
    seeds = _ensemble.Seeds(seed, model.n_members)
    again = stratified_shards(strata, model.n_members, random_state=seeds.shards)
    info["shard_of_row_recomputed_equal"] = bool(np.array_equal(again, data.shard_of_row))
    info["twin_scale"] = round(float(model.spread_.twin), 4)
    info["noise_scale_coef"] = np.round(model.spread_.coef, 4).tolist()
    logger.info("fitted on %d trips in %.1f s (load %.2f)", len(train), info["fit_s"], load)
    return model, data, info


def out_of_shard(
    model: TravelTimeModel, data, seconds: np.ndarray, test: pd.DataFrame
) -> MixtureDistribution:
    """Each training trip's predictive by the M - 1 members that did not see it, with its
    leave-one-out pair offset and the model's spread: what ``Spread.fit`` is fitted on,
    as a mixture. ``seconds``: the trips' travel times, in the order of ``data``. Whatever
    a model subtracts from log seconds before its members (``data.y``: nothing in commit
    9c27557; a location stage's out-of-fold location where there is one) is added
    back: calibrating on predictions that miss a stage of the test predictive widens
    it badly."""
    predictives = model.member_predictors()
    n_members = len(predictives)
    loc, scale = _ensemble.member_loc_scale(predictives, data.X, data.d)
    stage = np.log(seconds) - data.y
    if getattr(model, "location_", None) is None and np.max(np.abs(stage)) > 1e-9:
        raise RuntimeError("the members' targets are not log seconds, and no stage says why")
    loc = loc + stage[None, :]
    if model.pair_offsets_ is not None:
        offsets, loo = fit_model_offsets(model, data, model.h3_resolution_)
        same = np.allclose(offsets.offset_of_trips(test), model.pair_offsets_.offset_of_trips(test))
        if not same:
            raise RuntimeError("recomputed pair offsets differ from the model's")
        loc = loc + loo[None, :]
    scale = scale * model.spread_.multiplier(data.d)[None, :]
    keep = data.shard_of_row[None, :] != np.arange(n_members)[:, None]
    rows = np.argsort(~keep, axis=0, kind="stable")[: n_members - 1]  # the kept members
    loc = np.take_along_axis(loc, rows, axis=0)
    scale = np.take_along_axis(scale, rows, axis=0)
    df = _ensemble.degrees_of_freedom(predictives)
    df = None if df is None else df[rows]
    a = model.spread_.twin
    if a > 0:
        loc = np.concatenate([loc, loc])
        scale = np.concatenate([scale * np.exp(-a), scale * np.exp(a)])
        df = None if df is None else np.concatenate([df, df])
    return MixtureDistribution(loc, scale, df=df, transform="log", n_members=n_members - 1)


def trip_km(trips: pd.DataFrame) -> np.ndarray:
    return haversine_km(
        trips["origin_lat"], trips["origin_lon"], trips["dest_lat"], trips["dest_lon"]
    )


# ---------------------------------------------------------------------------- scoring
def score(
    dist: MixtureDistribution,
    y: np.ndarray,
    km: np.ndarray,
    edges: np.ndarray,
    recal: Recalibration | None = None,
    closed_form: bool = False,
) -> tuple[dict[str, Any], np.ndarray]:
    """Scores of H = G o F (F itself without ``recal``) on (y, km); and per-trip CRPS."""
    u = dist.cdf(y)
    logf = dist.logpdf(y)
    levels = np.broadcast_to(TAU[:, None], (TAU.size, y.size))
    if recal is None:
        v, logh = u, logf
    else:
        v = recal.cdf(u, km)
        logh = logf + recal.logpdf(u, km)
        levels = recal.ppf(levels, km)
    q = dist.ppf(np.clip(levels, EDGE, 1 - EDGE))
    err = y[None, :] - q
    pinball = np.maximum(TAU[:, None] * err, (TAU[:, None] - 1) * err)
    crps = 2.0 * pinball.mean(axis=0)
    k = {round(t, 3): i for i, t in enumerate(TAU)}
    cover = {str(lv): float(np.mean((v >= (1 - lv) / 2) & (v <= (1 + lv) / 2))) for lv in LEVELS}
    hist = np.histogram(np.clip(v, 0, 1), bins=10, range=(0, 1))[0] / (y.size / 10)
    tercile = np.searchsorted(edges, km, side="right")
    by_tercile = [
        float(np.mean((v[tercile == i] >= 0.05) & (v[tercile == i] <= 0.95))) for i in range(3)
    ]
    with np.errstate(over="ignore"):
        nll = float(-np.mean(logh))
    record = {
        "crps_q199": float(crps.mean()),
        "crps_closed": float(dist.crps(y).mean()) if closed_form else None,
        "nll": nll,
        "coverage": cover,
        "width_90_s": float(np.mean(q[k[0.95]] - q[k[0.05]])),
        "mae_median_s": float(np.mean(np.abs(q[k[0.5]] - y))),
        "pit_max_dev": float(np.max(np.abs(hist - 1))),
        "pit_hist": np.round(hist, 3).tolist(),
        "pit_deciles": np.round(np.quantile(v, np.arange(1, 10) / 10), 3).tolist(),
        "coverage_90_by_tercile": by_tercile,
    }
    return record, crps


def pit_summary(u: np.ndarray) -> dict[str, Any]:
    hist = np.histogram(np.clip(u, 0, 1), bins=10, range=(0, 1))[0] / (u.size / 10)
    return {
        "n": int(u.size),
        "deciles": np.round(np.quantile(u, np.arange(1, 10) / 10), 3).tolist(),
        "max_dev": round(float(np.max(np.abs(hist - 1))), 3),
        "hist": np.round(hist, 3).tolist(),
        "coverage_90": round(float(np.mean((u >= 0.05) & (u <= 0.95))), 4),
    }


# ---------------------------------------------------------------------------- a run
def split_random(trips: pd.DataFrame, seed: int, share: float = 0.8):
    """``bench_trips.make_splits``' random split with ``seed``: (train, test)."""
    split = make_splits(trips, share, seed)[0]
    return split.train, split.test


def evaluate_case(
    name: str,
    dist: MixtureDistribution,
    test: pd.DataFrame,
    sources: dict[str, tuple[MixtureDistribution, np.ndarray, np.ndarray]],
    variants: list[str],
    edges: np.ndarray,
) -> list[dict[str, Any]]:
    """Rows for one fitted model's test predictive ``dist``: before, then every variant
    recalibrated on every source (calibration mixture, its targets and km)."""
    y, km = test["travel_time_s"].to_numpy(np.float64), trip_km(test)
    before, crps0 = score(dist, y, km, edges, closed_form=True)
    rows = [{"case": name, "source": "-", "variant": "before", **before, "d_crps_se": 0.0}]
    logger.info("[%s] before: CRPS %.2f NLL %.4f", name, before["crps_q199"], before["nll"])
    for source, (cal, y_cal, km_cal) in sources.items():
        u_cal = cal.cdf(y_cal)
        for variant in variants:
            started = time.perf_counter()
            extra: dict[str, Any] = {}
            if variant == "scale":
                factor = fit_scale(cal, y_cal)
                record, crps = score(rescaled(dist, factor), y, km, edges, closed_form=True)
                extra["factor"] = round(factor, 4)
            elif variant == "skewtwin":
                theta = fit_skew_twins(cal, y_cal)
                record, crps = score(skew_twins(dist, theta), y, km, edges, closed_form=True)
                extra["theta"] = np.round(theta, 4).tolist()
            else:
                kind, _, by = variant.partition("_")
                recal = Recalibration(kind, tuple(edges) if by else ()).fit(u_cal, km_cal)
                record, crps = score(dist, y, km, edges, recal)
                extra["maps"] = recal.describe()
            diff = crps - crps0
            rows.append(
                {
                    "case": name,
                    "source": source,
                    "variant": variant,
                    **record,
                    "d_crps_se": float(diff.std(ddof=1) / np.sqrt(diff.size)),
                    "extra": extra,
                    "seconds": round(time.perf_counter() - started, 1),
                }
            )
            logger.info(
                "[%s] %s %s: CRPS %.2f (%+.2f %%) NLL %.4f cov90 %.3f (%.0f s, load %.2f)",
                name,
                source,
                variant,
                record["crps_q199"],
                100 * (record["crps_q199"] / before["crps_q199"] - 1),
                record["nll"],
                record["coverage"]["0.9"],
                rows[-1]["seconds"],
                load_1min(),
            )
    return rows


def run_city(
    city: str, seed: int, split_seed: int, variants: list[str], holdout: bool, params: dict
) -> dict:
    trips, _ = read_trips(SHARED / CITIES[city])
    train, test = split_random(trips, split_seed)
    logger.info("%s seed %d: %d train / %d test trips", city, seed, len(train), len(test))
    km_train = trip_km(train)
    edges = np.quantile(km_train, [1 / 3, 2 / 3])
    out: dict[str, Any] = {
        "city": city,
        "seed": seed,
        "split_seed": split_seed,
        "n_train": len(train),
        "n_test": len(test),
        "tercile_edges_km": np.round(edges, 3).tolist(),
        "params": params,
        "code": code_version(),
        "load_start": list(os.getloadavg()),
    }
    model, data, out["fit_full"] = fit_model(train, seed, params)
    if holdout:
        perm = np.random.default_rng([seed, 34]).permutation(len(train))
        n_hold = round(HOLDOUT_SHARE * len(train))
        part = train.iloc[np.sort(perm[n_hold:])].reset_index(drop=True)
        slice_ = train.iloc[np.sort(perm[:n_hold])].reset_index(drop=True)
        model80, data80, out["fit_80"] = fit_model(part, seed, params)
    # what follows is many small BLAS calls: on a loaded 2-core machine, OpenBLAS's
    # threads made the map fits 30x slower than one thread
    with single_threaded_blas():
        dist = model.predict_dist(test)
        y_train = train["travel_time_s"].to_numpy(np.float64)
        oos = out_of_shard(model, data, y_train, test)
        sources = {"oos": (oos, y_train, km_train)}
        y_test = test["travel_time_s"].to_numpy(np.float64)
        pits = {
            "test_full": pit_summary(dist.cdf(y_test)),
            "oos_full": pit_summary(oos.cdf(y_train)),
        }
        out["oos_crps_closed"] = float(oos.crps(y_train).mean())
        # mass the predictive puts where cleaning left no trips (under 60 s, over 3 h)
        out["test_mass_below_60s"] = float(np.mean(dist.cdf(60.0)))
        out["test_mass_above_3h"] = float(np.mean(dist.sf(10_800.0)))
        rows = []
        if holdout:
            hold = model80.predict_dist(slice_)
            y_slice = slice_["travel_time_s"].to_numpy(np.float64)
            sources["holdout"] = (hold, y_slice, trip_km(slice_))
            y_part = part["travel_time_s"].to_numpy(np.float64)
            oos80 = out_of_shard(model80, data80, y_part, test)
            u_oos80, u_hold = oos80.cdf(y_part), hold.cdf(y_slice)
            dist80 = model80.predict_dist(test)
            pits.update(
                oos_80=pit_summary(u_oos80),
                holdout_80=pit_summary(u_hold),
                test_80=pit_summary(dist80.cdf(y_test)),
            )
            ks = stats.ks_2samp(u_oos80, u_hold)
            out["ks_oos80_vs_holdout"] = {
                "statistic": float(ks.statistic),
                "pvalue": float(ks.pvalue),
            }
            sources80 = {"oos": (oos80, y_part, trip_km(part)), "holdout": sources["holdout"]}
            rows += evaluate_case("m80", dist80, test, sources80, variants, edges)
        rows = evaluate_case("full", dist, test, sources, variants, edges) + rows
    out["pits"] = pits
    out["rows"] = rows
    out["load_end"] = list(os.getloadavg())
    return out


# ---------------------------------------------------------------------------- report
def _fmt(x, digits=3):
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def markdown(result: dict) -> str:
    lines = [
        f"### {result['city']}, model seed {result['seed']} (split seed "
        f"{result['split_seed']}; {result['n_train']:,} train / {result['n_test']:,} test)",
        "",
        "| model | source | variant | CRPS q199 (d %, SE) | closed | NLL | cov 50/80/90/95 "
        "| width90 s | MAE s | PIT maxdev | cov90 by tercile |",
        "|" + "---|" * 11,
    ]
    base: dict[str, float] = {}
    for r in result["rows"]:
        if r["variant"] == "before":
            base[r["case"]] = r["crps_q199"]
        b = base[r["case"]]
        change = (
            ""
            if r["variant"] == "before"
            else f" ({100 * (r['crps_q199'] / b - 1):+.2f} %, {100 * r['d_crps_se'] / b:.2f})"
        )
        cov = "/".join(f"{r['coverage'][str(lv)]:.3f}" for lv in LEVELS)
        lines.append(
            f"| {r['case']} | {r['source']} | {r['variant']} | {r['crps_q199']:.2f}{change} "
            f"| {_fmt(r['crps_closed'], 2)} | {_fmt(r['nll'], 4)} | {cov} "
            f"| {r['width_90_s']:.0f} | {r['mae_median_s']:.1f} | {r['pit_max_dev']:.3f} "
            f"| {'/'.join(f'{c:.3f}' for c in r['coverage_90_by_tercile'])} |"
        )
    return "\n".join(lines)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cities", default="chicago,nyc,sf")
    parser.add_argument("--seeds", default="0", help="model seeds (random_state)")
    parser.add_argument("--split-seed", type=int, default=0, help="seed of the 80/20 split")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"from {VARIANTS}")
    parser.add_argument(
        "--no-holdout", action="store_true", help="skip the 80 %% model (oos source only)"
    )
    parser.add_argument(
        "--params", default="{}", help="more TravelTimeModel parameters, JSON: '{\"n_members\": 4}'"
    )
    parser.add_argument("--out", type=Path, default=None, help="JSON output (default: none)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    logging.getLogger("vrvm").setLevel(logging.WARNING)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"--variants: unknown {sorted(unknown)}; choose from {VARIANTS}")
    results = []
    for city in [c.strip() for c in args.cities.split(",") if c.strip()]:
        for seed in [int(s) for s in args.seeds.split(",")]:
            result = run_city(
                city, seed, args.split_seed, variants, not args.no_holdout, json.loads(args.params)
            )
            results.append(result)
            print(markdown(result), end="\n\n", flush=True)
            print(json.dumps({k: result[k] for k in ("pits", "fit_full")}, indent=None))
            if args.out is not None:
                args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
