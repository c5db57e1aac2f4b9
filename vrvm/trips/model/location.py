"""The location stage: a boosted estimate of log travel time learned before the members.

Travel times depend on where and when a trip runs in ways that are sharp in some
directions and smooth in others (a river crossing, an avenue's bearing, the morning
peak on weekdays only). Gradient-boosted trees find such cuts quickly; the VRVM members
then model what the trees leave, with a full predictive density, exact mixtures and
sequential Bayesian updates (the members still learn every new trip). This follows the
winners of the NYC taxi trip-duration competition, whose inputs are used here: log
distance, bearing, rotated coordinates, the hour and the weekday.

:class:`LocationStage` fits scikit-learn's
:class:`~sklearn.ensemble.HistGradientBoostingRegressor` (absolute error, one OpenMP
thread) on log seconds with these inputs. Each training trip's location is predicted
*out of fold* (K folds, each stopping early on a tenth of its trips), so that the
members see residuals as large as those of new trips (in-sample locations made NYC's
90 % intervals cover 0.77); the stage kept for new trips is fitted on all trips with
the folds' mean number of iterations.

The fitted trees are kept as plain arrays (split input, threshold, children, leaf
value) and evaluated here by QuickScorer (:class:`Trees`), vectorised over trees and
rows: a model file holds numbers only, never a pickle, and loading checks that the
arrays form trees. The arrays are read from scikit-learn's fitted ``TreePredictor``
node records (the private ``_predictors`` attribute, unchanged since scikit-learn
0.21); :meth:`LocationStage.fit` checks that the arrays give the fitted estimator's own
predictions to 1e-9 on the training trips and refuses to go on otherwise, so a change
in scikit-learn cannot pass unnoticed.

Beside them the stage keeps a second set of trees, the *median trees*: boosted (squared
error) on a quantile forest's median of the training trips' log seconds (Meinshausen
2006, ``quantile-forest``), so that a model file keeps the forest's median as trees of
the same kind, evaluated at the same cost, and not the forest with every leaf's trips.
The forest and the boosting see the same inputs; their location is grown out of fold as
the stage's (each fold's forest on the trips the fold fitted). The members do not learn
on it: the model moves its predictive's location toward it after the members, by a
weight chosen on the training trips out of shard
(:meth:`~vrvm.trips.model.travel_time.TravelTimeModel.median_shift`).

Between refreshes, updates leave the trees as they are: the members and the pair offsets
learn what the trees leave of each new trip. A model fitted in this process keeps the
trips it learns and refits the trees on them, out of fold, whenever the trips learned
since the last fit reach a fraction of those it was fitted on (:meth:`LocationStage.refit`,
:mod:`vrvm.trips.model._online`).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from quantile_forest import RandomForestQuantileRegressor
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

from vrvm.engine import watched_parallel
from vrvm.trips.model.features import (
    _EPOCH_WEEKDAY,
    _US_PER_DAY,
    TripFeaturizer,
    _local_wall_clock_us,
)

__all__ = ["MEDIAN_WEIGHTS", "MIN_TRIPS", "LocationStage", "Trees", "check_trees"]

#: Training trips below which a model fits no stage. Five folds of trees that stop early
#: on a tenth of each fold need trips to find cuts: on 3,000 trips of each city the stage
#: took CRPS down 3 % (Chicago) and 6-9 % (NYC), on 1,000 or 300 its effect was erratic
#: (San Francisco +2 % at 1,000, one NYC seed +83 % at 300; BENCHMARKS.md, issue 34).
MIN_TRIPS = 2000

#: The quantile forest whose median of the training trips the median trees learn: the
#: leaf size and inputs per split of the benchmark's forest on San Francisco, 30 trees
#: (100 gave the same CRPS: the boosting smooths the forest's noise), one random trip's
#: log seconds kept per leaf (the package's default; BENCHMARKS.md, issue 34).
MEDIAN_FOREST = {"n_estimators": 30, "min_samples_leaf": 5, "max_features": 0.33}

#: Weights of the median trees tried after the members (0: none), at fit time
#: (:meth:`~vrvm.trips.model.travel_time.TravelTimeModel.median_shift`) and on the stream
#: of updates (:meth:`~vrvm.trips.model._online.OnlineState.refit_scale`).
MEDIAN_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)

#: The boosting of the median trees (squared error: the forest's median is a smooth target).
MEDIAN_BOOSTING = {"learning_rate": 0.1, "max_leaf_nodes": 31, "max_iter": 500}

#: Trips (at most, drawn at random) the forest and the median trees of one fit learn: the
#: benchmark's samples whole (SF's 11,685 training trips; at 10,000 its seed 0 lost 0.15 %
#: CRPS), a bounded cost on more (the dashboard's first start fits 20,000 trips).
MEDIAN_ROWS = 12_000

#: Ends closer than this (km, on the model's local plane) are one place for the bearing:
#: 1 m, below GPS precision, far above the 1e-10 degrees a CRS round trip moves a point.
SAME_PLACE_KM = 0.001

#: Rows evaluated at once (an ``(rows, trees)`` array of node indices per step).
_BLOCK_ROWS = 2048

#: Inputs of the stage, in order (documented in :meth:`LocationStage.inputs`).
INPUT_NAMES = (
    "origin_x_km",
    "origin_y_km",
    "dest_x_km",
    "dest_y_km",
    "tod_sin",
    "tod_cos",
    "is_weekend",
    "distance",
    "bearing_sin",
    "bearing_cos",
    "hour",
    "weekday",
    "origin_u_km",
    "origin_v_km",
    "dest_u_km",
    "dest_v_km",
    "grid_km",
)
#: The featurizer's kernel inputs the stage reads back (unstandardised).
_KERNEL_INPUTS = INPUT_NAMES[:7]


def check_trees(trees, n_inputs: int, *, max_leaves: int | None, what: str) -> None:
    """Check that flat node arrays form trees (ValueError naming ``what`` otherwise).

    ``trees`` has node arrays ``feature``, ``threshold``, ``left``, ``right`` and ``leaf``
    and the trees' first nodes ``roots`` (as :class:`Trees`): each tree a consecutive
    node range, every split on one of ``n_inputs`` inputs at a finite threshold, its
    children after it inside its tree, every node but a root the child of exactly one
    split, and at most ``max_leaves`` leaves a tree (None: any number).
    """
    n = trees.feature.size
    if any(
        np.shape(getattr(trees, name)) != (n,) for name in ("threshold", "left", "right", "leaf")
    ):
        raise ValueError(f"{what}: node arrays of different lengths")
    roots = trees.roots
    if roots.ndim != 1 or not roots.size or n == 0:
        raise ValueError(f"{what}: no trees")
    ends = np.append(roots[1:], n)
    if roots[0] != 0 or np.any(ends <= roots):
        raise ValueError(f"{what}: trees that are not consecutive node ranges")
    if not np.all(np.isfinite(trees.threshold)):
        raise ValueError(f"{what}: non-finite leaf values or thresholds")
    leaf = trees.leaf
    inner = np.flatnonzero(~leaf)
    if np.any((trees.feature[inner] < 0) | (trees.feature[inner] >= n_inputs)):
        raise ValueError(f"{what}: a split on an input it does not have")
    tree_of = np.repeat(np.arange(roots.size), ends - roots)
    tree_end = ends[tree_of]
    for child in (trees.left[inner], trees.right[inner]):
        if np.any((child <= inner) | (child >= tree_end[inner])):
            raise ValueError(f"{what}: a child outside its tree or before its parent")
    # every node but a root is the child of exactly one split: the nodes form trees
    children = np.concatenate([trees.left[inner], trees.right[inner]])
    if np.unique(children).size != children.size or children.size != n - roots.size:
        raise ValueError(f"{what}: nodes that do not form trees")
    if max_leaves is not None and np.any(np.bincount(tree_of, weights=leaf) > max_leaves):
        raise ValueError(f"{what}: a tree of more than {max_leaves} leaves")


@dataclass
class Trees:
    """Regression trees as flat arrays: node ``i`` splits on ``feature[i]`` at
    ``threshold[i]`` (``x <= threshold`` goes to ``left[i]``, else ``right[i]``), a
    leaf adds ``value[i]``. ``roots`` are the first node of each tree; children always
    come after their parent. Inputs are finite (the stage's own), so no missing values.

    Evaluation follows QuickScorer (Lucchese et al., SIGIR 2015): a tree's leaves are
    numbered left to right, and every split whose test fails (``x > threshold``) rules
    out the leaves of its left subtree, a bit mask; the leaf reached is the leftmost
    one no failed test rules out. The failed tests on an input are the splits with the
    smallest thresholds (one ``searchsorted`` per input), so the masks are kept as
    running ANDs per input in threshold order: a row costs one search and one AND per
    input and tree, whatever the depth.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    leaf: np.ndarray
    roots: np.ndarray

    FIELDS = ("feature", "threshold", "left", "right", "value", "leaf", "roots")

    @classmethod
    def from_sklearn(cls, estimator: HistGradientBoostingRegressor, n_inputs: int) -> Trees:
        """The trees of a fitted single-output estimator on ``n_inputs`` numeric inputs."""
        nodes = [predictors[0].nodes for predictors in estimator._predictors]
        sizes = np.array([len(n) for n in nodes], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        flat = np.concatenate(nodes)
        shift = np.repeat(offsets, sizes)
        leaf = flat["is_leaf"].astype(bool)
        if np.any(flat["is_categorical"][~leaf]):
            raise ValueError("the location stage has numeric inputs only")
        trees = cls(
            feature=np.where(leaf, 0, flat["feature_idx"]).astype(np.int64),
            threshold=np.where(leaf, 0.0, flat["num_threshold"]).astype(np.float64),
            left=np.where(leaf, 0, flat["left"].astype(np.int64) + shift),
            right=np.where(leaf, 0, flat["right"].astype(np.int64) + shift),
            value=np.asarray(flat["value"], dtype=np.float64),
            leaf=leaf,
            roots=offsets,
        )
        trees.check(n_inputs)
        return trees

    def check(self, n_inputs: int) -> None:
        """Check that the arrays describe trees of at most 64 leaves on ``n_inputs``
        inputs (ValueError otherwise)."""
        n = self.feature.size
        if any(getattr(self, name).shape != (n,) for name in self.FIELDS[:6]):
            raise ValueError("location stage: node arrays of different lengths")
        if not np.all(np.isfinite(self.value)):
            raise ValueError("location stage: non-finite leaf values or thresholds")
        check_trees(self, n_inputs, max_leaves=64, what="location stage")

    def _tree_of(self) -> np.ndarray:
        """The tree of each node (trees are consecutive node ranges from their roots)."""
        sizes = np.diff(np.append(self.roots, self.feature.size))
        return np.repeat(np.arange(self.roots.size), sizes)

    @functools.cached_property
    def _scorer(self) -> tuple[list, np.ndarray, type]:
        """Per input: the sorted thresholds of its splits and the running AND of their
        masks per tree (``(splits + 1, trees)``); and each tree's leaf values in
        left-to-right order (``(trees, 64)``); and the masks' unsigned integer type."""
        n_trees = self.roots.size
        tree_of = self._tree_of()
        first = np.zeros(self.feature.size, dtype=np.int64)  # a subtree's first leaf
        count = np.zeros(self.feature.size, dtype=np.int64)  # and how many it has
        leaf_values = np.zeros((n_trees, 64))
        for t, root in enumerate(self.roots):  # in order, left subtree first
            stack, seen, next_leaf = [root], set(), 0
            while stack:
                node = stack.pop()
                if self.leaf[node]:
                    first[node] = next_leaf  # leaves numbered left to right
                    count[node] = 1
                    leaf_values[t, next_leaf] = self.value[node]
                    next_leaf += 1
                elif node in seen:
                    first[node] = first[self.left[node]]
                    count[node] = count[self.left[node]] + count[self.right[node]]
                else:
                    seen.add(node)
                    stack += [node, self.right[node], self.left[node]]
        inner = np.flatnonzero(~self.leaf)
        left = self.left[inner]
        ones = np.uint64(2**64 - 1)
        # a failed test rules out the leaves first[left] .. first[left] + count[left] - 1
        span = np.where(
            count[left] >= 64, ones, (np.uint64(1) << count[left].astype(np.uint64)) - np.uint64(1)
        )
        masks = ~(span << first[left].astype(np.uint64))
        # 32-bit masks when every tree has at most 32 leaves: half the memory traffic
        word = np.uint32 if count[self.roots].max() <= 32 else np.uint64
        masks = (masks & np.uint64(np.iinfo(word).max)).astype(word)
        tables = []
        for f in range(int(self.feature.max()) + 1 if inner.size else 0):
            on = inner[self.feature[inner] == f]
            if not on.size:
                continue
            order = np.argsort(self.threshold[on], kind="stable")
            on = on[order]
            running = np.full((on.size + 1, n_trees), np.iinfo(word).max, dtype=word)
            running[np.arange(1, on.size + 1), tree_of[on]] = masks[np.searchsorted(inner, on)]
            np.bitwise_and.accumulate(running, axis=0, out=running)
            tables.append((f, self.threshold[on], running))
        return tables, leaf_values, word

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        """The sum of the trees' leaf values for each row of ``inputs``."""
        tables, leaf_values, word = self._scorer
        out = np.empty(len(inputs))
        trees = np.arange(self.roots.size)
        for start in range(0, len(inputs), _BLOCK_ROWS):
            block = inputs[start : start + _BLOCK_ROWS]
            alive = np.full((len(block), trees.size), np.iinfo(word).max, dtype=word)
            for f, thresholds, running in tables:
                # the tests that fail: thresholds below the input
                alive &= running[np.searchsorted(thresholds, block[:, f], side="left")]
            lowest = alive & (~alive + word(1))  # the leftmost leaf left
            leaf = np.log2(lowest.astype(np.float64)).astype(np.int64)  # exact: a power of 2
            out[start : start + len(block)] = leaf_values[trees, leaf].sum(axis=1)
        return out


#: Each fold's boosting stops when a tenth of its trips has not improved for 30 rounds.
_EARLY_STOPPING = {"early_stopping": True, "validation_fraction": 0.1, "n_iter_no_change": 30}


def _median_boosting(F: np.ndarray, y: np.ndarray, seed: int) -> HistGradientBoostingRegressor:
    """The median trees of inputs ``F`` and log seconds ``y``: a quantile forest
    (:data:`MEDIAN_FOREST`, one job) and boosting (:data:`MEDIAN_BOOSTING`, stopping early
    on a tenth of the trips) fitted to its median of each trip, on at most
    :data:`MEDIAN_ROWS` of the trips."""
    if y.size > MEDIAN_ROWS:
        rows = np.sort(np.random.default_rng(seed).choice(y.size, MEDIAN_ROWS, replace=False))
        F, y = F[rows], y[rows]
    forest = RandomForestQuantileRegressor(**MEDIAN_FOREST, n_jobs=1, random_state=seed)
    median = forest.fit(F, y).predict(F, quantiles=0.5)
    booster = HistGradientBoostingRegressor(
        loss="squared_error",
        l2_regularization=1.0,
        min_samples_leaf=20,
        random_state=seed,
        **MEDIAN_BOOSTING,
        **_EARLY_STOPPING,
    )
    return booster.fit(F, median)


def _fit_fold(k: int, booster: HistGradientBoostingRegressor, F_fit, y_fit, F_out):
    """Fold ``k``'s boosting fit: ``("fold", k, iterations, its predictions of the trips it
    left out)`` (module level, to run in a worker process; on one OpenMP thread there
    too)."""
    with threadpool_limits(1, user_api="openmp"):
        booster.fit(F_fit, y_fit)
        return "fold", k, int(booster.n_iter_), booster.predict(F_out)


def _fit_median(k: int | None, seed: int, F_fit, y_fit, F_out):
    """Fold ``k``'s median trees: ``("median", k, None, their predictions of the trips it
    left out)``; with ``k`` None the final median trees, fitted on all trips:
    ``("median", None, None, the fitted boosting)`` (as :func:`_fit_fold`)."""
    with threadpool_limits(1, user_api="openmp"):
        booster = _median_boosting(F_fit, y_fit, seed)
        return "median", k, None, booster if k is None else booster.predict(F_out)


class LocationStage:
    """Boosted trees for log travel time, fitted before the members (their residuals).

    Parameters
    ----------
    n_folds : int, default=5
        Folds of the out-of-fold locations of the training trips.
    learning_rate, max_leaf_nodes, min_samples_leaf, l2_regularization : float or int
        Of :class:`~sklearn.ensemble.HistGradientBoostingRegressor` (absolute error:
        1-1.4 % lower CRPS than squared error on Chicago and SF, equal on NYC).
    max_iter : int, default=500
        The most boosting iterations a fold may use before it stops early.
    random_state : int, default=0
        Seed of the folds, of the boosting's early-stopping slices and of the forests.
    median_trees : bool, default=True
        Also grow the median trees (a quantile forest's median learned by boosting),
        toward which the model may move its location after the members.

    Attributes
    ----------
    trees_ : Trees
        The stage fitted on all training trips.
    baseline_ : float
        Its constant (the mean log seconds the trees start from).
    center_ : float
        Mean out-of-fold location of the training trips: :meth:`offset` is the
        location minus this, so that the members' targets keep their level.
    rotation_, rotation_mean_ : ndarray
        The principal axes (2 x 2) and mean (2,) of the training trips' end points on
        the model's local plane (km).
    n_iter_ : list of int
        Boosting iterations each fold stopped at; the final stage uses their mean.
    oof_rmse_ : float
        RMSE of the out-of-fold locations (log seconds).
    median_trees_ : Trees or None
        The median trees fitted on all training trips (None without ``median_trees``).
    median_baseline_ : float
        Their constant.
    median_gap_ : ndarray or None
        Out-of-fold median trees minus out-of-fold offset, of each training trip of the
        last fit (log seconds, on the scale of the members' targets; not saved): what
        the model chooses its weight on.
    median_weight_ : float
        The weight ``w`` of the median trees in the model's location (0 until the model
        chooses it, and for stages saved before them).
    median_scores_ : dict
        The out-of-shard mean log density of each weight tried, set when the model
        chooses (not saved).

    Examples
    --------
    >>> import numpy as np
    >>> from vrvm import synthetic_city
    >>> from vrvm.trips.model.features import TripFeaturizer
    >>> trips = synthetic_city(1000, seed=0)
    >>> featurizer = TripFeaturizer(distance="log1p").fit(trips)
    >>> X, d = featurizer.transform(trips)
    >>> y = np.log(trips["travel_time_s"].to_numpy())
    >>> stage = LocationStage(random_state=0)
    >>> oof = stage.fit(featurizer, trips, X, d, y)
    >>> bool(stage.oof_rmse_ < y.std())  # the trees explain part of log travel time
    True
    >>> stage.offset(featurizer, trips.head(3), X[:3], d[:3]).shape
    (3,)
    """

    def __init__(
        self,
        *,
        n_folds: int = 5,
        learning_rate: float = 0.05,
        max_leaf_nodes: int = 31,
        min_samples_leaf: int = 20,
        l2_regularization: float = 1.0,
        max_iter: int = 500,
        random_state: int = 0,
        median_trees: bool = True,
    ):
        self.n_folds = n_folds
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.l2_regularization = l2_regularization
        self.max_iter = max_iter
        self.random_state = random_state
        self.median_trees = median_trees

    def _booster(self, seed: int, **params) -> HistGradientBoostingRegressor:
        return HistGradientBoostingRegressor(
            loss="absolute_error",
            learning_rate=self.learning_rate,
            max_leaf_nodes=self.max_leaf_nodes,
            min_samples_leaf=self.min_samples_leaf,
            l2_regularization=self.l2_regularization,
            random_state=seed,
            **params,
        )

    # ------------------------------------------------------------------ inputs
    def inputs(self, featurizer: TripFeaturizer, trips: pd.DataFrame, X, d) -> np.ndarray:
        """The stage's inputs (:data:`INPUT_NAMES`) of ``trips``, whose kernel inputs and
        distance column by the model's ``featurizer`` are ``X`` and ``d``: both ends on
        the model's local plane (km), the local hour on the circle, the weekend flag,
        the distance column (trees need no log: any increasing function of the
        distance splits alike), the bearing (sin, cos), the local hour and weekday,
        both ends on the principal axes of the training trips' end points, and the
        distance along those axes (a street grid's distance when the grid follows
        them)."""
        names = featurizer.feature_names_
        at = [names.index(name) for name in _KERNEL_INPUTS]
        raw = X[:, at] * featurizer.scale_[at] + featurizer.mean_[at]  # unstandardised
        ends = raw[:, :4]
        u = ((ends.reshape(-1, 2) - self.rotation_mean_) @ self.rotation_).reshape(-1, 4)
        lat1, lon1, lat2, lon2 = (np.radians(trips[c].to_numpy(np.float64)) for c in _ENDS)
        dlon = lon2 - lon1
        bearing = np.arctan2(
            np.sin(dlon) * np.cos(lat2),
            np.cos(lat1) * np.sin(lat2) - np.sin(lat1) * np.cos(lat2) * np.cos(dlon),
        )
        # ends closer than SAME_PLACE_KM are one place: the bearing of identical ends
        # (atan2(0, 0) = 0), not a direction drawn from float noise (a CRS round trip)
        apart = np.hypot(ends[:, 2] - ends[:, 0], ends[:, 3] - ends[:, 1])
        bearing = np.where(apart < SAME_PLACE_KM, 0.0, bearing)
        hour = np.mod(np.arctan2(raw[:, 4], raw[:, 5]) * (12.0 / np.pi), 24.0)
        local_us = _local_wall_clock_us(trips["start_time"], featurizer.tz_)
        weekday = np.mod(np.floor_divide(local_us, _US_PER_DAY) + _EPOCH_WEEKDAY, 7)
        grid = np.abs(u[:, 2] - u[:, 0]) + np.abs(u[:, 3] - u[:, 1])
        columns = [raw, d, np.sin(bearing), np.cos(bearing), hour, weekday, u, grid]
        return np.column_stack(columns).astype(np.float64)

    # ------------------------------------------------------------------ fitting
    def fit(
        self,
        featurizer: TripFeaturizer,
        trips: pd.DataFrame,
        X,
        d,
        y,
        *,
        n_jobs: int | None = None,
        progress=None,
    ) -> np.ndarray:
        """Fit on training trips of log seconds ``y`` (``featurizer``: the model's, fitted
        on them; ``X``, ``d``: its inputs of them); returns their out-of-fold offsets
        (location minus :attr:`center_`).

        The folds' fits (boosting, and median trees with the final ones) run in
        ``n_jobs`` worker processes (loky, as the members; None or 1: in this process),
        the final boosting here after them; ``progress(done, total)`` is called as each
        fit ends. The result does not depend on ``n_jobs``: each fit has its own seed."""
        names = featurizer.feature_names_
        at = [names.index(name) for name in _KERNEL_INPUTS[:4]]
        ends = (X[:, at] * featurizer.scale_[at] + featurizer.mean_[at]).reshape(-1, 2)
        self.rotation_mean_ = ends.mean(axis=0)
        # principal axes of the end points: eigenvectors of their 2 x 2 covariance
        _, vectors = np.linalg.eigh(np.cov((ends - self.rotation_mean_).T))
        self.rotation_ = vectors[:, ::-1].copy()  # largest variance first
        F = self.inputs(featurizer, trips, X, d)
        # one OpenMP thread: its threads spin while they wait, and on a shared machine two
        # made a boosting fit ~9x slower than one (10,000 trips, load 8-10)
        with threadpool_limits(1, user_api="openmp"):
            return self._fit(F, y, n_jobs, progress or (lambda done, total: None))

    def _fit(
        self, F: np.ndarray, y: np.ndarray, n_jobs, progress, *, median_folds: bool = True
    ) -> np.ndarray:
        """The fit of :meth:`fit` and :meth:`refit` (``median_folds``: also each fold's
        median trees, for the out-of-fold gap the weight is chosen on; a refit keeps its
        weight and grows the final median trees alone)."""
        n = y.size
        folds = list(
            KFold(min(self.n_folds, n), shuffle=True, random_state=self.random_state).split(F)
        )
        oof = np.empty(n)
        median_oof = np.empty(n)
        self.n_iter_ = [0] * len(folds)
        tasks = [
            (
                _fit_fold,
                k,
                self._booster(self.random_state + k, **_EARLY_STOPPING, max_iter=self.max_iter),
                F[fit_rows],
                y[fit_rows],
                F[out_rows],
            )
            for k, (fit_rows, out_rows) in enumerate(folds)
        ]
        if self.median_trees:  # each fold's median trees, and the final ones, as tasks too
            seeds = [self.random_state + k for k in range(len(folds))]
            tasks += [
                (_fit_median, k, seed, F[fit_rows], y[fit_rows], F[out_rows])
                for k, ((fit_rows, out_rows), seed) in enumerate(zip(folds, seeds, strict=True))
                if median_folds
            ]
            tasks.append((_fit_median, None, self.random_state, F, y, None))
        total = len(tasks) + 1
        if n_jobs in (None, 1):
            done_tasks = (task[0](*task[1:]) for task in tasks)
        else:
            from joblib import delayed

            parallel = watched_parallel(n_jobs, return_as="generator_unordered")
            done_tasks = parallel(delayed(task[0])(*task[1:]) for task in tasks)
        median = None
        for done, (kind, k, n_iter, predicted) in enumerate(done_tasks, 1):
            if kind == "fold":
                oof[folds[k][1]] = predicted
                self.n_iter_[k] = n_iter
            elif k is None:
                median = predicted
            else:
                median_oof[folds[k][1]] = predicted
            progress(done, total)
        final = self._booster(
            self.random_state, max_iter=max(1, round(np.mean(self.n_iter_))), early_stopping=False
        ).fit(F, y)
        self.trees_, self.baseline_ = _checked_trees(final, F)
        self.median_trees_, self.median_baseline_, self.median_gap_ = None, 0.0, None
        self.median_weight_ = getattr(self, "median_weight_", 0.0)  # a refit keeps it
        if median is not None:
            self.median_trees_, self.median_baseline_ = _checked_trees(median, F, median=True)
        self.center_ = float(oof.mean())
        if self.median_trees and median_folds:  # on the members' scale, as their targets
            self.median_gap_ = median_oof - oof + self.center_
        self.oof_rmse_ = float(np.sqrt(np.mean((oof - y) ** 2)))
        progress(total, total)
        return oof - self.center_

    def refit(
        self,
        F: np.ndarray,
        y: np.ndarray,
        *,
        n_folds: int | None = None,
        learning_rate: float | None = None,
        n_jobs: int | None = None,
    ) -> np.ndarray:
        """Fit the trees again on the inputs ``F`` (:meth:`inputs`) and log seconds ``y``
        of more trips, out of fold as :meth:`fit` does (in ``n_folds`` folds at
        ``learning_rate``; None: the stage's own); the rotation of the ends stays the
        first fit's (so the inputs of kept trips stay valid). Returns the trips'
        out-of-fold offsets. The median trees grow again too, and keep their weight.
        What online updates run on the trips they keep (:mod:`vrvm.trips.model._online`);
        the stage's parameters stay as they were."""
        F = np.asarray(F, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if F.ndim != 2 or F.shape != (y.size, len(INPUT_NAMES)):
            raise ValueError(
                f"location stage: inputs of shape {F.shape} for {y.size} targets, expected "
                f"({y.size}, {len(INPUT_NAMES)})"
            )
        fresh = copy.copy(self)  # this stage changes only once the new trees are checked
        if n_folds is not None:
            fresh.n_folds = int(n_folds)
        if learning_rate is not None:
            fresh.learning_rate = float(learning_rate)
        with threadpool_limits(1, user_api="openmp"):
            # the final median trees grow again, their weight the fit's: no fold's are needed
            oof = fresh._fit(F, y, n_jobs, lambda done, total: None, median_folds=False)
        fresh.n_folds, fresh.learning_rate = self.n_folds, self.learning_rate  # its own
        self.__dict__.update(fresh.__dict__)
        return oof

    def offset(self, featurizer: TripFeaturizer, trips: pd.DataFrame, X, d) -> np.ndarray:
        """The location of each trip (log seconds) minus :attr:`center_`: what the
        members' predictions are shifted by."""
        return self.offset_of_inputs(self.inputs(featurizer, trips, X, d))

    def offset_of_inputs(self, F: np.ndarray) -> np.ndarray:
        """:meth:`offset` of trips whose inputs (:meth:`inputs`) are ``F``."""
        return self.trees_(F) + (self.baseline_ - self.center_)

    def drop_median_trees(self) -> None:
        """Keep no median trees (a model whose forest pool stands for them): weight 0,
        and refreshes grow none."""
        self.median_trees = False
        self.median_trees_, self.median_baseline_, self.median_gap_ = None, 0.0, None
        self.median_weight_, self.median_scores_ = 0.0, {}

    def median_location_of_inputs(self, F: np.ndarray) -> np.ndarray:
        """The median trees' location (log seconds) of trips whose inputs are ``F``."""
        return self.median_trees_(F) + self.median_baseline_

    # ------------------------------------------------------------------ files
    def to_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """JSON metadata and arrays, for a model file."""
        meta = {
            "params": {
                "n_folds": self.n_folds,
                "learning_rate": self.learning_rate,
                "max_leaf_nodes": self.max_leaf_nodes,
                "min_samples_leaf": self.min_samples_leaf,
                "l2_regularization": self.l2_regularization,
                "max_iter": self.max_iter,
                "random_state": self.random_state,
                "median_trees": self.median_trees,
            },
            "baseline": self.baseline_,
            "center": self.center_,
            "n_iter": list(self.n_iter_),
            "oof_rmse": self.oof_rmse_,
            "median": None,
        }
        arrays = {name: getattr(self.trees_, name) for name in Trees.FIELDS}
        arrays["rotation"] = self.rotation_
        arrays["rotation_mean"] = self.rotation_mean_
        if self.median_trees_ is not None:
            meta["median"] = {"baseline": self.median_baseline_, "weight": self.median_weight_}
            arrays.update(
                {f"{_MEDIAN}{name}": getattr(self.median_trees_, name) for name in Trees.FIELDS}
            )
        return meta, arrays

    @classmethod
    def from_state(cls, meta: Mapping, arrays: Mapping[str, np.ndarray]) -> LocationStage:
        """The inverse of :meth:`to_state`; ValueError on anything inconsistent. A stage
        saved before the median trees (model format 9 and older) has none."""
        median = meta.get("median")
        expected = {*Trees.FIELDS, "rotation", "rotation_mean"}
        if median is not None:
            expected |= {f"{_MEDIAN}{name}" for name in Trees.FIELDS}
        if set(arrays) != expected:
            raise ValueError(
                f"location stage: arrays {sorted(arrays)}, expected {sorted(expected)}"
            )
        params = {"median_trees": False, **dict(meta["params"])}
        stage = cls(**params)
        stage.trees_ = _trees_of_arrays(arrays, "")
        stage.median_trees_, stage.median_baseline_, stage.median_weight_ = None, 0.0, 0.0
        stage.median_gap_ = None
        if median is not None:
            stage.median_trees_ = _trees_of_arrays(arrays, _MEDIAN)
            stage.median_baseline_ = float(median["baseline"])
            stage.median_weight_ = float(median["weight"])
            if not (np.isfinite(stage.median_baseline_) and 0.0 <= stage.median_weight_ <= 1.0):
                raise ValueError("location stage: a median weight outside [0, 1]")
        stage.rotation_ = np.asarray(arrays["rotation"], dtype=np.float64).reshape(2, 2)
        stage.rotation_mean_ = np.asarray(arrays["rotation_mean"], dtype=np.float64).reshape(2)
        stage.baseline_ = float(meta["baseline"])
        stage.center_ = float(meta["center"])
        stage.n_iter_ = [int(i) for i in meta["n_iter"]]
        stage.oof_rmse_ = float(meta["oof_rmse"])
        numbers = [stage.baseline_, stage.center_, *stage.rotation_.ravel(), *stage.rotation_mean_]
        if not np.all(np.isfinite(numbers)):
            raise ValueError("location stage: non-finite constants")
        return stage


_ENDS = ("origin_lat", "origin_lon", "dest_lat", "dest_lon")
_MEDIAN = "median_"  # prefix of the median trees' arrays


def _checked_trees(
    estimator: HistGradientBoostingRegressor, F: np.ndarray, *, median: bool = False
) -> tuple[Trees, float]:
    """A fitted estimator's trees and constant, checked to give its own predictions of
    ``F`` to 1e-9 (RuntimeError otherwise, naming the stage's trees or, with ``median``,
    the median trees, and the switch that fits without them)."""
    trees = Trees.from_sklearn(estimator, F.shape[1])
    own = trees(F)
    theirs = estimator.predict(F)
    baseline = float(np.mean(theirs - own))
    if not np.allclose(own + baseline, theirs, rtol=0, atol=1e-9):
        which, switch = ("median trees", "median_trees") if median else ("trees", "location_stage")
        raise RuntimeError(
            f"the location stage's {which} do not reproduce scikit-learn's predictions: "
            f"this scikit-learn stores its trees differently; fit with {switch}=False"
        )
    return trees, baseline


def _trees_of_arrays(arrays: Mapping[str, np.ndarray], prefix: str) -> Trees:
    """Trees from a file's arrays ``{prefix}{field}``, checked (ValueError)."""
    dtypes = {"threshold": np.float64, "value": np.float64, "leaf": bool}
    trees = Trees(
        **{
            name: np.asarray(arrays[f"{prefix}{name}"], dtype=dtypes.get(name, np.int64)).ravel()
            for name in Trees.FIELDS
        },
    )
    trees.check(len(INPUT_NAMES))
    return trees
