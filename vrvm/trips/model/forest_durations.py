"""A trip's neighbours in a quantile forest: their durations pooled with the model's.

The members and the location stage predict a smooth function of a trip's ends and
time; a quantile forest (Meinshausen 2006) predicts a trip from the training trips that
share its leaves, with whatever shape their durations have. On the San Francisco bike
share neither is best alone: the forest is sharper, vrvm's density better calibrated,
and a pool of the two beats both. This module keeps such a forest on the location
stage's inputs (:meth:`~vrvm.trips.model.location.LocationStage.inputs`): :data:`FOREST`
trees grown as scikit-learn's random forest grows them (bootstrap samples, a share of
the inputs tried per split), each leaf summarised by :data:`LEAF_VALUES` quantiles of
the log durations of the training trips in its bootstrap sample. A query's forest
distribution R is the union of its leaves' values (every tree alike, Meinshausen's
weights), kept as C normals at R's quantiles ``(k - 1/2) / C``, each as wide as the
gap to its neighbours (at least :data:`SCALE_FLOOR`), C the model's components:

.. math::

    R(t) = \\frac{1}{C} \\sum_k \\Phi\\Big(\\frac{\\log t - q_k}{s_k}\\Big),
    \\qquad K(t) = G'\\Big(\\tfrac12 F(t) + \\tfrac12 R(t)\\Big),

the linear pool of R with the members' mixture F, read through a PIT map G' fitted on
the pooled PITs of training trips (Kuleshov et al. 2018; the model's own map G was
fitted for F alone). The pool is still an exact equal-weight mixture: F's components
and R's normals, member m keeping its own and the pair ``q_m``, ``q_{C-1-m}``
(symmetric about R's median, so no member is moved to one side of it; the pair, shared
by every member, narrows their spread, and what the members alone say is
``predict_dist(queries, forest=False)``). The forest is kept when K beats
the model's predictive H = G o F by :data:`MIN_GAIN` in CRPS over at most
:data:`FIT_ROWS` training trips: each trip's R from the trees whose bootstrap sample
left it out (out of bag), its F out of shard
(:func:`~vrvm.trips.model.own_durations.held_out_cdf`), and G' fitted on their PITs.
Otherwise it is dropped: the model file keeps no trees it does not use, and predictions
cost nothing more.

On the San Francisco bike share the pool takes CRPS below the quantile forest's;
Chicago's taxi trips and the NYC sample keep the model's own predictive
(``BENCHMARKS.md``, issue 34).

The trees are kept as flat arrays (a model file holds numbers only) and walked by
scikit-learn's compiled tree code, rebuilt from the arrays; the rebuilt trees must
reach the same leaves as a walk in NumPy on probe inputs at every threshold, or the
NumPy walk is used (:meth:`ForestDurations.leaves`). Between refreshes, updates leave
the forest as it is: new trips reach the members, the pair offsets and the own-duration
regimes; when a model fitted in this process refreshes its location stage on the trips
it has learned, the trees grow again on them too (:meth:`ForestDurations.regrow`; the
pool and G' stay as fitted).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from scipy import special
from sklearn.tree import DecisionTreeRegressor

from vrvm.engine.calibration import PitMap, fit_pit_map
from vrvm.engine.mixture import MixtureDistribution
from vrvm.engine.recalibrated import RecalibratedMixture
from vrvm.trips.model.location import check_trees
from vrvm.trips.model.own_durations import grid_crps, held_out_cdf

logger = logging.getLogger(__name__)

__all__ = [
    "FOREST",
    "LEAF_VALUES",
    "MIN_GAIN",
    "ForestDurations",
    "fit_model_forest_durations",
    "forest_cdf",
    "normal_parts",
]

#: The forest: trees, trips a leaf (of a bootstrap sample) and the share of inputs tried
#: per split, those of the benchmark's quantile forest on San Francisco; with 32 trees
#: the pool scored 148.12 on SF's three seeds against 147.66 with 64 (BENCHMARKS.md,
#: issue 34).
FOREST = {"n_estimators": 64, "min_samples_leaf": 5, "max_features": 0.33}
#: Quantiles ``(j - 1/2) / L`` of its trips' log durations kept per leaf (SF seed 0: 16
#: gave the same CRPS to 0.01 s).
LEAF_VALUES = 8
#: The least relative gain in CRPS (training trips, out of bag and out of shard) for
#: which the forest is kept.
MIN_GAIN = 0.005
#: Training trips (at most, drawn at random; on a refresh the latest) the forest grows on:
#: SF's and Chicago's samples whole, and a bounded cost and model file on more (64 trees
#: of 12,000 trips are about 150,000 nodes and 4 MB of arrays).
FOREST_ROWS = 12_000
#: Training trips (at most, of those) the forest is scored and its PIT map fitted on.
FIT_ROWS = 3000
#: The least scale of R's normals (log seconds): two leaves' equal values are not a
#: spike.
SCALE_FLOOR = 0.02
#: Points of the log-seconds grid the pool is scored on (0.03 log seconds apart on SF;
#: the members' held-out cdf on it is most of the choice's cost), and how far it
#: reaches beyond the training trips' durations.
GRID_POINTS = 256
GRID_MARGIN = 1.0
#: Queries walked through the trees at once.
_BLOCK_ROWS = 4096
#: Probe inputs the compiled walk is checked on.
_PROBES = 256


def _grow(F32: np.ndarray, y: np.ndarray, counts: np.ndarray, seed: int):
    """One tree on the bootstrap sample ``counts`` (times each trip was drawn)."""
    tree = DecisionTreeRegressor(
        min_samples_leaf=FOREST["min_samples_leaf"],
        max_features=FOREST["max_features"],
        random_state=seed,
    )
    return tree.fit(F32, y, sample_weight=counts.astype(np.float64)).tree_


def _leaf_quantiles(leaf: np.ndarray, y: np.ndarray, n_levels: int) -> tuple:
    """The distinct leaves of ``leaf`` (one per trip) and their trips' ``y`` at the levels
    ``(j - 1/2) / n_levels`` (linear interpolation, NumPy's default), shape
    (leaves, n_levels)."""
    order = np.lexsort((y, leaf))
    leaf, y = leaf[order], y[order]
    ids, start, size = np.unique(leaf, return_index=True, return_counts=True)
    at = ((np.arange(n_levels) + 0.5) / n_levels)[None, :] * (size[:, None] - 1)
    low = np.floor(at).astype(np.int64)
    high = np.minimum(low + 1, size[:, None] - 1)
    frac = at - low
    lo, hi = y[start[:, None] + low], y[start[:, None] + high]
    return ids, lo + frac * (hi - lo)


def _order_statistics(atoms: np.ndarray, counts: np.ndarray, n: int) -> np.ndarray:
    """Quantiles ``(k - 1/2) / n`` of each row's first ``counts`` sorted ``atoms``: the
    atom of rank ``floor((k - 1/2) count / n)``, shape (rows, n)."""
    rank = np.floor((np.arange(n) + 0.5) / n * counts[:, None]).astype(np.int64)
    return np.take_along_axis(atoms, rank, axis=1).astype(np.float64)


def normal_parts(q: np.ndarray) -> np.ndarray:
    """Scales of R's normals at the quantiles ``q`` (rows, C): the local gap between
    neighbours (one-sided at the ends), at least :data:`SCALE_FLOOR`.

    Examples
    --------
    >>> normal_parts(np.array([[0.0, 0.1, 0.3, 0.3]])).round(3)
    array([[0.1 , 0.15, 0.1 , 0.02]])
    """
    return np.maximum(np.gradient(q, axis=1), SCALE_FLOOR)


def forest_cdf(q: np.ndarray, x: np.ndarray) -> np.ndarray:
    """R at log seconds ``x`` (rows, P) of rows with quantiles ``q`` (rows, C).

    Examples
    --------
    >>> q = np.linspace(4.0, 6.0, 16)[None, :]
    >>> float(forest_cdf(q, np.array([[5.0]]))[0, 0])
    0.5
    """
    s = normal_parts(q)
    return special.ndtr((x[:, :, None] - q[:, None, :]) / s[:, None, :]).mean(axis=2)


def member_order(n_members: int, n_components: int) -> np.ndarray:
    """Which of R's ``n_components`` quantiles goes to each appended component: blocks of
    ``n_members``, block ``j`` and block ``B - 1 - j`` mirrored, so that member m holds
    the pairs ``q_{jM+m}`` and ``q_{C-1-(jM+m)}`` (symmetric about R's median).

    Examples
    --------
    >>> member_order(3, 6).tolist()
    [0, 1, 2, 5, 4, 3]
    """
    blocks = n_components // n_members
    order = np.empty(n_components, np.int64)
    first = np.arange(blocks // 2)[:, None] * n_members + np.arange(n_members)[None, :]
    for j, at in enumerate(first):
        order[j * n_members : (j + 1) * n_members] = at
        mirror = blocks - 1 - j
        order[mirror * n_members : (mirror + 1) * n_members] = n_components - 1 - at
    return order


@dataclass
class _Nodes:
    """Flat node arrays in the layout :func:`~vrvm.trips.model.location.check_trees`
    reads (global child indices, ``leaf`` flags, the trees' ``roots``)."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    leaf: np.ndarray
    roots: np.ndarray


class ForestDurations:
    """A quantile forest's neighbours of each query, pooled with the model's mixture.

    Node ``i`` splits on ``feature[i]`` at ``threshold[i]`` (``x <= threshold`` goes to
    ``left[i]``, else ``right[i]``, global indices); a leaf (``value_row[i] >= 0``)
    holds the row ``value_row[i]`` of ``values``, its trips' :data:`LEAF_VALUES`
    quantiles of log seconds. ``roots`` are the trees' first nodes, grown on
    ``n_trips`` trips; ``pit_map`` is G' (None: the pool is read as it is); ``active``
    whether the pool is used.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> F = rng.uniform(size=(600, 2))
    >>> y = np.where(F[:, 0] < 0.5, 5.0, 6.0) + 0.1 * rng.normal(size=600)
    >>> def flat(rows, grid):  # a model that knows nothing: y in [4.5, 6.5]
    ...     return np.clip((grid[None, :] - 4.5) / 2.0, 0.0, 1.0).repeat(rows.size, 0)
    >>> forest = ForestDurations().fit(F, y, flat, None, n_components=16, random_state=0)
    >>> forest.active
    True
    >>> forest.quantiles(np.array([[0.2, 0.5], [0.8, 0.5]]), 16)[:, 8].round(1).tolist()
    [5.0, 6.0]
    """

    def __init__(self):
        self.n_inputs = 0
        self.n_components = 0
        self.n_trips = 0
        self.pit_map: PitMap | None = None
        self.score: dict = {}
        self._drop_trees()

    @property
    def active(self) -> bool:
        """Whether the forest is pooled with the predictive (trees kept)."""
        return self.roots.size > 0

    def _drop_trees(self) -> ForestDurations:
        """No trees (the forest off): nothing kept, nothing spent on predictions."""
        self.feature = np.empty(0, np.int64)
        self.threshold = np.empty(0, np.float64)
        self.left = np.empty(0, np.int64)
        self.right = np.empty(0, np.int64)
        self.value_row = np.empty(0, np.int64)
        self.values = np.empty((0, LEAF_VALUES), np.float32)
        self.roots = np.empty(0, np.int64)
        self.pit_map = None
        self.__dict__.pop("_compiled", None)
        return self

    # ------------------------------------------------------------------ fitting
    def fit(
        self,
        F: np.ndarray,
        log_s: np.ndarray,
        model_cdf: Callable[[np.ndarray, np.ndarray], np.ndarray],
        model_map: PitMap | None,
        *,
        n_components: int,
        recalibrate: bool = True,
        random_state: int = 0,
        n_jobs: int | None = 1,
    ) -> ForestDurations:
        """Grow the forest on inputs ``F`` and log durations ``log_s``; keep it if the
        pool beats the model.

        ``model_cdf(rows, grid)`` gives the model's held-out mixture F (before its PIT
        map ``model_map``) of the trips ``rows`` (indices into ``F``) on the
        log-seconds ``grid``, shape (len(rows), len(grid)); ``n_components`` the
        components C of the pool's R (twice the members). The trees grow on at most
        :data:`FOREST_ROWS` of the trips. With ``recalibrate`` G' is fitted on the
        pooled PITs (:func:`~vrvm.engine.calibration.fit_pit_map`, kept when it gains).
        The scores are over at most :data:`FIT_ROWS` of the trips grown on (drawn with
        ``random_state``), each trip's R from the trees it was out of bag of.
        """
        F = np.asarray(F, np.float64)
        y = np.asarray(log_s, np.float64).ravel()
        if F.ndim != 2 or F.shape[0] != y.size or not np.all(np.isfinite(y)):
            raise ValueError(
                "forest durations: one row of inputs and one finite log duration a trip"
            )
        self.n_inputs = F.shape[1]
        self.n_components = int(n_components)
        rng = np.random.default_rng(random_state)
        grown = np.arange(y.size)
        if y.size > FOREST_ROWS:
            grown = np.sort(rng.choice(y.size, size=FOREST_ROWS, replace=False))
        self.n_trips = int(grown.size)
        F32 = F[grown].astype(np.float32)  # what scikit-learn's trees split and walk on
        trees, counts = self._grow_all(F32, y[grown], rng, n_jobs)
        self._keep(trees, F32, y[grown], counts)
        rows = np.arange(grown.size)  # of the trips grown on
        if rows.size > FIT_ROWS:
            rows = np.sort(rng.choice(rows.size, size=FIT_ROWS, replace=False))
        q = self._out_of_bag(F32[rows], counts[:, rows])
        return self._choose(
            lambda sub, grid: model_cdf(grown[sub], grid),
            model_map,
            rows,
            q,
            y[grown[rows]],
            recalibrate,
            random_state,
        )

    def regrow(
        self, F: np.ndarray, log_s: np.ndarray, *, random_state: int = 0, n_jobs: int | None = 1
    ) -> ForestDurations:
        """Grow the trees again on the trips ``F``, ``log_s`` (the latest
        :data:`FOREST_ROWS`; a refresh of the location stage on the trips a model has
        learned); the pool and its PIT map G' stay as fitted. Nothing is done when the
        forest is off."""
        if not self.active:
            return self
        F32 = np.asarray(F, np.float64)[-FOREST_ROWS:].astype(np.float32)
        y = np.asarray(log_s, np.float64).ravel()[-FOREST_ROWS:]
        self.n_trips = int(y.size)
        trees, counts = self._grow_all(F32, y, np.random.default_rng(random_state), n_jobs)
        self._keep(trees, F32, y, counts)
        return self

    def _grow_all(self, F32: np.ndarray, y: np.ndarray, rng, n_jobs) -> tuple[list, np.ndarray]:
        """:data:`FOREST` trees on bootstrap samples drawn with ``rng``, and the samples
        (times each trip was drawn, one row per tree)."""
        n, n_trees = y.size, FOREST["n_estimators"]
        counts = rng.multinomial(n, np.full(n, 1.0 / n), size=n_trees)
        seeds = rng.integers(0, 2**31 - 1, size=n_trees)
        trees = Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(_grow)(F32, y, counts[t], int(seeds[t])) for t in range(n_trees)
        )
        return trees, counts

    def _keep(self, trees: list, F32: np.ndarray, y: np.ndarray, counts: np.ndarray) -> None:
        """The fitted trees as flat arrays, each leaf with its bootstrap trips' quantiles."""
        sizes = np.array([tree.node_count for tree in trees], np.int64)
        self.roots = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        feature, threshold, left, right, value_row, values = [], [], [], [], [], []
        n_rows = 0
        for tree, root, drawn in zip(trees, self.roots, counts, strict=True):
            leaf = tree.children_left < 0
            feature.append(np.where(leaf, 0, tree.feature).astype(np.int64))
            threshold.append(np.where(leaf, 0.0, tree.threshold).astype(np.float64))
            left.append(np.where(leaf, 0, tree.children_left + root).astype(np.int64))
            right.append(np.where(leaf, 0, tree.children_right + root).astype(np.int64))
            inbag = np.flatnonzero(drawn > 0)
            ids, q = _leaf_quantiles(tree.apply(F32[inbag]), y[inbag], LEAF_VALUES)
            if ids.size != leaf.sum():
                raise ValueError("forest durations: a leaf without a trip of its sample")
            row = np.full(tree.node_count, -1, np.int64)
            row[ids] = n_rows + np.arange(ids.size)
            n_rows += ids.size
            value_row.append(row)
            values.append(q.astype(np.float32))
        self.feature, self.threshold = np.concatenate(feature), np.concatenate(threshold)
        self.left, self.right = np.concatenate(left), np.concatenate(right)
        self.value_row, self.values = np.concatenate(value_row), np.concatenate(values)
        self.__dict__.pop("_compiled", None)

    def _out_of_bag(self, F32: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """R's quantiles (rows, C) of the trips ``F32`` from the trees whose samples left
        them out (``counts``: (trees, rows) times drawn)."""
        nodes = self.leaves(F32)  # (rows, trees)
        atoms = self.values[self.value_row[nodes]].astype(np.float64)  # (rows, trees, L)
        atoms[counts.T > 0] = np.inf  # in the tree's sample: not a neighbour out of bag
        atoms = np.sort(atoms.reshape(len(F32), -1), axis=1)
        n_out = np.isfinite(atoms).sum(axis=1)
        if np.any(n_out == 0):
            raise ValueError("forest durations: a trip in every tree's sample")
        return _order_statistics(atoms, n_out, self.n_components)

    def _choose(self, model_cdf, model_map, rows, q, y, recalibrate, seed) -> ForestDurations:
        """Keep the forest if the pool K beats H = G o F on the trips ``rows`` (R's
        quantiles ``q``, log durations ``y``) by :data:`MIN_GAIN` in CRPS."""
        grid = np.linspace(y.min() - GRID_MARGIN, y.max() + GRID_MARGIN, GRID_POINTS)
        mixture = np.asarray(model_cdf(rows, grid), np.float64)
        model = mixture if model_map is None else model_map.cdf(mixture)
        pool = 0.5 * mixture + 0.5 * forest_cdf(q, np.broadcast_to(grid, (rows.size, grid.size)))
        self.pit_map, record = None, None
        if recalibrate:  # G' on the pooled PITs: each trip's pool at its own duration
            pits = np.array([np.interp(y[i], grid, pool[i]) for i in range(rows.size)])
            self.pit_map, record = fit_pit_map(pits, random_state=seed)
        pooled = pool if self.pit_map is None else self.pit_map.cdf(pool)
        model_crps = float(grid_crps(model, grid, y).mean())
        pool_crps = float(grid_crps(pooled, grid, y).mean())
        self.score = {
            "n_scored": int(rows.size),
            "model": round(model_crps, 4),
            "pool": round(pool_crps, 4),
            "pit_map": record,
        }
        keep = pool_crps <= (1.0 - MIN_GAIN) * model_crps  # else too little to tell from chance
        logger.info(
            "forest durations: out-of-bag CRPS %.2f against the model's %.2f; %s",
            pool_crps,
            model_crps,
            "pooled" if keep else "off",
        )
        return self if keep else self._drop_trees()

    # ------------------------------------------------------------------ prediction
    @functools.cached_property
    def _compiled(self) -> list | None:
        """scikit-learn's compiled trees rebuilt from the arrays, or None (the NumPy walk)
        when they cannot be built or do not reach the NumPy walk's leaves on probes at
        every threshold (a change in scikit-learn's private tree layout)."""
        try:
            from sklearn.tree._tree import NODE_DTYPE, Tree

            compiled = []
            ends = np.append(self.roots[1:], self.feature.size)
            for root, end in zip(self.roots, ends, strict=True):
                leaf = self.value_row[root:end] >= 0
                nodes = np.zeros(end - root, dtype=NODE_DTYPE)
                nodes["left_child"] = np.where(leaf, -1, self.left[root:end] - root)
                nodes["right_child"] = np.where(leaf, -1, self.right[root:end] - root)
                nodes["feature"] = np.where(leaf, -2, self.feature[root:end])
                nodes["threshold"] = np.where(leaf, -2.0, self.threshold[root:end])
                nodes["n_node_samples"] = 1
                nodes["weighted_n_node_samples"] = 1.0
                tree = Tree(self.n_inputs, np.array([1], dtype=np.intp), 1)
                tree.__setstate__(
                    {
                        "max_depth": int(end - root),
                        "node_count": int(end - root),
                        "nodes": nodes,
                        "values": np.zeros((end - root, 1, 1)),
                    }
                )
                compiled.append(tree)
            probes = self._probes()
            walked = self._walk(probes)
            fast = np.column_stack([t.apply(probes) for t in compiled]) + self.roots
            if np.array_equal(walked, fast):
                return compiled
        except Exception as error:
            logger.warning("forest durations: walking the trees in NumPy (%s)", error)
            return None
        logger.warning("forest durations: compiled trees disagree on probes; walking in NumPy")
        return None

    def _probes(self) -> np.ndarray:
        """Inputs at, just below and just above the splits' thresholds (float32)."""
        inner = np.flatnonzero(self.value_row < 0)
        rng = np.random.default_rng(0)
        probes = np.zeros((_PROBES, self.n_inputs), np.float32)
        for f in range(self.n_inputs):
            at = self.threshold[inner[self.feature[inner] == f]].astype(np.float32)
            if at.size:
                pick = rng.choice(at, size=_PROBES)
                nudge = rng.integers(-1, 2, size=_PROBES)  # below, at, above
                probes[:, f] = np.nextafter(pick, np.where(nudge < 0, -np.inf, np.inf))
                probes[nudge == 0, f] = pick[nudge == 0]
        return probes

    def _walk(self, F32: np.ndarray) -> np.ndarray:
        """The leaf (global node) of each row in each tree, shape (rows, trees): every
        (row, tree) pair still at a split moves one level at a time."""
        n_trees = self.roots.size
        node = np.tile(self.roots, len(F32))
        flat = np.ascontiguousarray(F32, np.float32).ravel()
        base = np.repeat(np.arange(len(F32)) * F32.shape[1], n_trees)
        moving = np.flatnonzero(self.value_row[node] < 0)
        while moving.size:
            at = node[moving]
            go_left = flat[base[moving] + self.feature[at]] <= self.threshold[at]
            node[moving] = np.where(go_left, self.left[at], self.right[at])
            moving = moving[self.value_row[node[moving]] < 0]
        return node.reshape(len(F32), n_trees)

    def leaves(self, F: np.ndarray) -> np.ndarray:
        """The leaf (global node index) of each row of inputs ``F`` in each tree, shape
        (rows, trees); inputs are compared in single precision, as the trees were grown."""
        F32 = np.ascontiguousarray(F, np.float32)
        compiled = self._compiled
        if compiled is None:
            return self._walk(F32)
        return np.column_stack([tree.apply(F32) for tree in compiled]) + self.roots

    def quantiles(self, F: np.ndarray, n: int) -> np.ndarray:
        """R's quantiles ``(k - 1/2) / n`` (log seconds) of each row of inputs ``F``:
        order statistics of the union of its leaves' values, shape (rows, n)."""
        F = np.asarray(F)
        out = np.empty((len(F), n))
        for start in range(0, len(F), _BLOCK_ROWS):
            nodes = self.leaves(F[start : start + _BLOCK_ROWS])
            atoms = np.sort(self.values[self.value_row[nodes]].reshape(len(nodes), -1), axis=1)
            counts = np.full(len(nodes), atoms.shape[1])
            out[start : start + len(nodes)] = _order_statistics(atoms, counts, n)
        return out

    def apply(self, dist: MixtureDistribution, F: np.ndarray) -> MixtureDistribution:
        """The pool of the predictive ``dist`` (log transform; its mixture F, before any
        PIT map) with R of queries with inputs ``F``: F's components, then R's normals
        (:func:`member_order`), read through G'; ``dist`` itself when the forest is off.
        A mixture of one component per member has each taken twice, so that every
        member holds a symmetric pair of R's."""
        if not self.active or len(F) == 0:
            return dist
        if dist.transform != "log":
            raise ValueError("forest durations: pooling needs a predictive of log seconds")
        base = dist.base if isinstance(dist, RecalibratedMixture) else dist
        members = dist.n_members
        loc = np.asarray(base.loc, np.float64)
        scale = np.broadcast_to(np.asarray(base.scale, np.float64), loc.shape)
        df = None if base.df is None else np.broadcast_to(base.df, loc.shape)
        if (loc.shape[0] // members) % 2:  # one component a member: each taken twice
            loc, scale = np.concatenate([loc, loc]), np.concatenate([scale, scale])
            df = None if df is None else np.concatenate([df, df])
        n = loc.shape[0]
        q = self.quantiles(F, n)
        order = member_order(members, n)
        loc = np.concatenate([loc, q[:, order].T])
        scale = np.concatenate([scale, normal_parts(q)[:, order].T])
        if df is not None:
            df = np.concatenate([df, np.full(df.shape, np.inf)])
        if self.pit_map is None:
            return MixtureDistribution(loc, scale, df, "log", n_members=members)
        return RecalibratedMixture(loc, scale, df, "log", n_members=members, pit_map=self.pit_map)

    # ------------------------------------------------------------------ storage
    def to_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """JSON metadata and the arrays (the nodes and the leaves' values), for a model file."""
        meta = {
            "forest": dict(FOREST),
            "leaf_values": LEAF_VALUES,
            "n_inputs": int(self.n_inputs),
            "n_components": int(self.n_components),
            "n_trips": int(self.n_trips),
            "pit_map": None if self.pit_map is None else self.pit_map.to_state(),
            "score": dict(self.score),
        }
        arrays = {"threshold": self.threshold.copy(), "values": self.values.copy()}
        for name in ("feature", "left", "right", "value_row", "roots"):  # half the bytes
            arrays[name] = getattr(self, name).astype(np.int32)
        return meta, arrays

    @classmethod
    def from_state(cls, meta: Mapping, arrays: Mapping[str, np.ndarray]) -> ForestDurations:
        """The inverse of :meth:`to_state`; raises ValueError on what could not be fitted."""
        forest = cls()
        expected = {"feature", "threshold", "left", "right", "value_row", "values", "roots"}
        if set(arrays) != expected:
            raise ValueError(
                f"forest durations: expected arrays {sorted(expected)}, got {sorted(arrays)}"
            )
        if int(meta["leaf_values"]) != LEAF_VALUES:
            raise ValueError(
                f"forest durations: {LEAF_VALUES} leaf values expected, got {meta['leaf_values']}"
            )
        forest.n_inputs = int(meta["n_inputs"])
        forest.n_components = int(meta["n_components"])
        forest.n_trips = int(meta["n_trips"])
        forest.score = dict(meta.get("score", {}))
        for name in ("feature", "left", "right", "value_row", "roots"):
            setattr(forest, name, np.asarray(arrays[name], np.int64).ravel())
        forest.threshold = np.asarray(arrays["threshold"], np.float64).ravel()
        forest.values = np.asarray(arrays["values"], np.float32)
        if forest.roots.size == 0:
            return forest._drop_trees()
        if meta.get("pit_map") is not None:
            forest.pit_map = PitMap.from_state(meta["pit_map"])
        leaf = forest.value_row >= 0
        nodes = _Nodes(
            forest.feature, forest.threshold, forest.left, forest.right, leaf, forest.roots
        )
        check_trees(nodes, forest.n_inputs, max_leaves=None, what="forest durations")
        rows = forest.value_row[leaf]
        if forest.values.shape != (rows.size, LEAF_VALUES) or not np.array_equal(
            np.sort(rows), np.arange(rows.size)
        ):
            raise ValueError("forest durations: leaves and value rows do not match")
        if not np.all(np.isfinite(forest.values)):
            raise ValueError("forest durations: non-finite leaf values")
        return forest


def fit_model_forest_durations(model, data, loo: np.ndarray, F: np.ndarray, seed: int):
    """A fitted model's forest of its training trips ``data`` (what
    :meth:`TravelTimeModel.fit_trips` kept) with the location stage's inputs ``F``;
    ``loo`` the trips' leave-one-out pair offsets. None with fewer than two members or
    ``target="seconds"`` (no held-out mixture to score the pool by)."""
    rows = np.arange(data.y.size)
    model_cdf = held_out_cdf(model, data, loo, rows, mapped=False)
    if model_cdf is None:
        return None
    return ForestDurations().fit(
        F,
        np.log(data.raw[:, 5]),
        model_cdf,
        model.spread_.pit_map,
        n_components=2 * len(model.members_),
        recalibrate=model.spread_.recalibrate,
        random_state=seed,
        n_jobs=model.n_jobs,
    )
