"""Zone-pair offsets: what the kernels miss about a particular origin-destination pair.

Trips between the same two places differ from the smooth function of coordinates and
time that the members' kernels can represent (a bridge, a one-way system, a station's
dock a street away): the out-of-shard residuals of the training trips of one pair of
H3 cells share a mean. Each pair's offset is that mean's posterior under a random
effect ``u ~ N(0, tau^2)`` with noise ``N(0, sigma^2)``:

.. math:: \\hat u_g = \\frac{S_g}{n_g + k}, \\qquad k = \\sigma^2 / \\tau^2,

with ``S_g`` the sum of the ``n_g`` residuals of pair ``g`` (a pair with few trips moves
little). ``k`` is chosen per level by leave-one-out prediction of the residuals
(:func:`loo_shrinkage`; the analysis-of-variance moment estimate of ``sigma^2 / tau^2``
was tried and kept no level finer than the zones on the Chicago sample, where held-out
trips gain from them). Levels are nested: coarse cell pairs first, each finer level
fitted on what the coarser ones leave. A query's
offset is the sum over the levels of its pairs' offsets (0 for a pair without training
trips); adding it to every member's location keeps the prediction an exact mixture.

For the training trips themselves, :meth:`PairOffsets.fit` also returns leave-one-out
offsets (each trip's pair offset without that trip), so that the spread fitted after
the offsets is not fitted on residuals the offsets have already seen.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pandas as pd

from vrvm.trips.model._ensemble import member_loc
from vrvm.trips.places.zones import choose_h3_resolution, latlng_to_cell_ints

__all__ = [
    "ENDS",
    "PairOffsets",
    "add_pair_sums",
    "fit_model_offsets",
    "loo_shrinkage",
    "offset_resolutions",
    "out_of_shard_residual",
]

#: Levels of cell pairs: the model's zone resolution and the two finer ones, and at
#: least down to :data:`FINEST_RESOLUTION`.
FINER_LEVELS = 2
#: The finest level always tried: H3 resolution 9 (cells of about 0.1 km2, a bike
#: station's or a block's), kept only where leave-one-out says so. Where the zones are
#: coarse (the San Francisco sample's three clusters give resolution 6) it adds the
#: levels that separate stations: CRPS -1.2 % there over three seeds, no change in
#: Chicago, New York or Synthetica, whose zones reach it already (BENCHMARKS.md).
FINEST_RESOLUTION = 9
_ARRAYS = ("origin", "dest", "n", "offset")
#: The columns of a trip's two ends, in the order the methods take them.
ENDS = ("origin_lat", "origin_lon", "dest_lat", "dest_lon")


_INDEX_LOCK = threading.Lock()

#: Trips up to which :meth:`PairOffsets._positions` looks pairs up one by one (a
#: single-trip prediction: 0.8 ms instead of 1.0 with the array lookup).
_FEW_TRIPS = 32

#: Shrinkage constants tried for each level (prior pseudo-trips of offset 0).
SHRINKAGE_GRID = (1.0, 2.0, 3.0, 5.0, 8.0, 12.0, 20.0, 30.0, 50.0, 100.0, 200.0, 500.0)


def loo_shrinkage(codes: np.ndarray, residual: np.ndarray, grid=SHRINKAGE_GRID) -> float:
    """The ``k`` of ``grid`` whose leave-one-out offsets predict the residuals best.

    Each residual is predicted by its group's offset without it,
    ``(S_g - r_i) / (n_g - 1 + k)``, and scored by the mean absolute error (the
    absolute error is the CRPS of a point forecast: robust to the heavy tails of travel
    times). Returns ``inf`` when no ``k`` predicts better than no offset at all.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> codes = np.repeat(np.arange(400), 25)
    >>> effects = rng.normal(0.0, 0.2, 400)             # tau = 0.2
    >>> residual = effects[codes] + rng.normal(0.0, 0.4, codes.size)   # sigma = 0.4
    >>> loo_shrinkage(codes, residual)                  # sigma^2 / tau^2 = 4
    5.0
    >>> loo_shrinkage(codes, rng.normal(0.0, 0.4, codes.size)) >= 200   # no effects
    True
    """
    codes = np.asarray(codes)
    residual = np.asarray(residual, dtype=np.float64)
    counts = np.bincount(codes).astype(np.float64)[codes]
    sums = np.bincount(codes, weights=residual)[codes] - residual  # the group without i
    best, best_error = float("inf"), float(np.abs(residual).mean())
    for k in grid:
        error = float(np.abs(residual - sums / (counts - 1.0 + k)).mean())
        if error < best_error:
            best, best_error = float(k), error
    return best


class PairOffsets:
    """Offsets of the model's log travel time per pair of H3 cells, at nested resolutions.

    Parameters
    ----------
    resolutions : sequence of int
        H3 resolutions of the levels, coarse to fine (each at least the previous).

    Attributes
    ----------
    levels : list of dict
        Per level: ``resolution``, ``k`` (the shrinkage, ``sigma^2 / tau^2``) and the
        arrays ``origin``, ``dest`` (uint64 cells), ``n`` (training trips) and
        ``offset`` of the pairs it holds (only levels with a finite ``k``).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> lat = rng.uniform(41.80, 41.95, (4000, 2)); lon = rng.uniform(-87.75, -87.60, (4000, 2))
    >>> cells = latlng_to_cell_ints(lat[:, 0], lon[:, 0], 7)
    >>> residual = 0.3 * (cells % 3 == 0) + rng.normal(0, 0.2, 4000)  # some origins slower
    >>> offsets = PairOffsets([7])
    >>> loo = offsets.fit(lat[:, 0], lon[:, 0], lat[:, 1], lon[:, 1], residual)
    >>> bool(np.corrcoef(offsets.offset(lat[:, 0], lon[:, 0], lat[:, 1], lon[:, 1]),
    ...                  residual)[0, 1] > 0.5)
    True
    """

    def __init__(self, resolutions: Sequence[int]):
        self.resolutions = [int(r) for r in resolutions]
        if any(b < a for a, b in zip(self.resolutions, self.resolutions[1:], strict=False)):
            raise ValueError(f"resolutions must go from coarse to fine, got {self.resolutions}")
        self.levels: list[dict] = []

    @staticmethod
    def _cells(ends, resolution: int) -> tuple[np.ndarray, np.ndarray]:
        """The cells (integers) holding each trip's two ends at ``resolution``: the
        cells of the points themselves (an H3 cell's children do not tile it exactly,
        so a finer cell's parent can differ from the coarser cell of the point)."""
        o_lat, o_lon, d_lat, d_lon = ends
        return (
            latlng_to_cell_ints(o_lat, o_lon, resolution),
            latlng_to_cell_ints(d_lat, d_lon, resolution),
        )

    def fit(self, o_lat, o_lon, d_lat, d_lon, residual) -> np.ndarray:
        """Fit the levels on the training trips' residuals; returns their leave-one-out
        offsets (the sum over the levels, each without the trip itself)."""
        residual = np.asarray(residual, dtype=np.float64)
        ends = (o_lat, o_lon, d_lat, d_lon)
        left = residual.copy()  # what the coarser levels leave
        loo = np.zeros_like(residual)
        self.levels = []
        self.__dict__.pop("_lookups", None)
        self.__dict__.pop("_indexes", None)
        for resolution in self.resolutions:
            codes, *pairs = _factorize_pairs(*self._cells(ends, resolution))
            k = loo_shrinkage(codes, left)
            if not np.isfinite(k):
                continue
            counts = np.bincount(codes, minlength=pairs[0].size).astype(np.float64)
            sums = np.bincount(codes, weights=left, minlength=pairs[0].size)
            offset = sums / (counts + k)
            # each trip's pair without the trip: (S_g - r_i) / (n_g - 1 + k)
            own = (sums[codes] - left) / (counts[codes] - 1 + k)
            loo += own
            left = left - own
            self.levels.append(_level(resolution, k, pairs, counts, offset))
        return loo

    def _lookup(self, i: int) -> dict[tuple[int, int], int]:
        """Level ``i``'s pairs as a dict to their positions (built once), for
        :meth:`learn`'s trip-by-trip additions."""
        lookups = self.__dict__.setdefault("_lookups", {})
        if i not in lookups:
            level = self.levels[i]
            keys = zip(level["origin"].tolist(), level["dest"].tolist(), strict=True)
            lookups[i] = {key: at for at, key in enumerate(keys)}
        return lookups[i]

    def _index(self, i: int) -> tuple[pd.Index, pd.Index, pd.Index]:
        """Level ``i``'s origins, destinations and pairs (as origin code x destinations
        + destination code) as hash indexes (built once): trips are looked up as arrays."""
        indexes = self.__dict__.setdefault("_indexes", {})
        if i in indexes:
            return indexes[i]
        # predictions run in threads (vrvm predict), and a pandas Index builds its hash
        # table on first use, which is not thread-safe: build and warm them under a lock
        with _INDEX_LOCK:
            if i not in indexes:
                level = self.levels[i]
                o_codes, origins = pd.factorize(level["origin"])
                d_codes, dests = pd.factorize(level["dest"])
                keys = o_codes.astype(np.int64) * dests.size + d_codes
                built = (pd.Index(origins), pd.Index(dests), pd.Index(keys))
                for index in built:
                    index.get_indexer(index[:1])
                indexes[i] = built
        return indexes[i]

    def _positions(self, i: int, ends) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each trip's position among level ``i``'s pairs (-1: unseen), and its cells."""
        origin, dest = self._cells(ends, self.levels[i]["resolution"])
        if origin.size <= _FEW_TRIPS:  # a hash lookup each beats building index arrays
            table = self._lookup(i)
            keys = zip(origin.tolist(), dest.tolist(), strict=True)
            return np.fromiter((table.get(k, -1) for k in keys), np.intp, origin.size), origin, dest
        origins, dests, pairs = self._index(i)
        o, d = origins.get_indexer(origin), dests.get_indexer(dest)
        known = (o >= 0) & (d >= 0)
        at = np.full(origin.size, -1, dtype=np.intp)
        at[known] = pairs.get_indexer(o[known].astype(np.int64) * dests.size + d[known])
        return at, origin, dest

    @staticmethod
    def pair_sums(resolutions, ends, residual) -> pd.DataFrame:
        """Trips' residuals summed per combination of their cell pairs at ``resolutions``.

        One row per distinct combination: columns ``origin_<i>``, ``dest_<i>`` (the
        cells of level ``i``), ``n`` and ``sum``. Such frames of disjoint trips add up
        (:func:`add_pair_sums`), and :meth:`from_pair_sums` fits the levels from the total
        exactly as :meth:`fit` from the trips, for given shrinkages.
        """
        columns = {}
        for i, resolution in enumerate(resolutions):
            columns[f"origin_{i}"], columns[f"dest_{i}"] = PairOffsets._cells(ends, resolution)
        columns["n"] = np.ones(np.size(residual), dtype=np.int64)
        columns["sum"] = np.asarray(residual, dtype=np.float64)
        return _summed(pd.DataFrame(columns))

    @classmethod
    def from_pair_sums(cls, sums: pd.DataFrame, levels: Sequence[tuple[int, float]]):
        """The offsets of ``levels`` (``(resolution, k)``, coarse to fine, the levels of
        :meth:`pair_sums`) from summed residuals.

        The same nesting as :meth:`fit`, on sums: level ``l``'s pair ``g`` gets
        ``S_g / (n_g + k)`` of what the coarser levels left, and each combination ``c``
        of ``n_c`` trips leaves ``L_c - (n_c S_g - L_c) / (n_g - 1 + k)`` (the sum of its
        trips' residuals less their leave-one-out offsets) to the finer levels.
        """
        offsets = cls([resolution for resolution, _ in levels])
        n_c = sums["n"].to_numpy(np.float64)
        left = sums["sum"].to_numpy(np.float64).copy()
        for i, (resolution, k) in enumerate(levels):
            cells = (sums[f"origin_{i}"].to_numpy(np.uint64), sums[f"dest_{i}"].to_numpy(np.uint64))
            codes, *pairs = _factorize_pairs(*cells)
            counts = np.bincount(codes, weights=n_c, minlength=pairs[0].size)
            total = np.bincount(codes, weights=left, minlength=pairs[0].size)
            left = left - (n_c * total[codes] - left) / (counts[codes] - 1.0 + k)
            offsets.levels.append(_level(resolution, k, pairs, counts, total / (counts + k)))
        return offsets

    def leave_one_out(self, o_lat, o_lon, d_lat, d_lon, residual) -> np.ndarray:
        """Each training trip's offset without itself (the sum over the levels), from the
        fitted levels and the residual the trip was fitted with: what :meth:`fit`
        returns, for trips whose levels were fitted from sums."""
        ends = (o_lat, o_lon, d_lat, d_lon)
        left = np.asarray(residual, dtype=np.float64).copy()
        loo = np.zeros_like(left)
        for i, level in enumerate(self.levels):
            at = self._positions(i, ends)[0]
            seen = at >= 0
            n = level["n"][at[seen]].astype(np.float64)
            sums = level["offset"][at[seen]] * (n + level["k"])
            own = np.zeros_like(left)
            own[seen] = (sums - left[seen]) / (n - 1.0 + level["k"])
            loo += own
            left -= own
        return loo

    def offset(self, o_lat, o_lon, d_lat, d_lon) -> np.ndarray:
        """The offset of each query (log scale): the sum over levels, 0 for unseen pairs."""
        ends = (o_lat, o_lon, d_lat, d_lon)
        total = np.zeros(np.size(o_lat))
        for i, level in enumerate(self.levels):
            at = self._positions(i, ends)[0]
            seen = at >= 0
            total[seen] += level["offset"][at[seen]]
        return total

    def learn(self, o_lat, o_lon, d_lat, d_lon, residual) -> None:
        """Add new trips' residuals (of the members' predictions made before they learn
        them) to their pairs' sums: ``S_g += r``, ``n_g += 1``, the offset ``S_g / (n_g +
        k)`` with each level's ``k`` as fitted; a pair seen for the first time joins.
        Each level learns what the coarser ones did not explain."""
        ends = (o_lat, o_lon, d_lat, d_lon)
        left = np.asarray(residual, dtype=np.float64).copy()
        for i, level in enumerate(self.levels):
            at, origin, dest = self._positions(i, ends)
            pairs = list(zip(origin.tolist(), dest.tolist(), strict=True))
            explained = np.where(at >= 0, level["offset"][np.maximum(at, 0)], 0.0)
            table, k = self._lookup(i), level["k"]
            n, offset = level["n"], level["offset"]
            fresh: list[list] = []  # pairs seen for the first time: [pair, sum, count]
            for j, pair in enumerate(pairs):  # a batch is small; a pair may repeat in it
                g = table.get(pair)
                if g is None:
                    table[pair] = n.size + len(fresh)
                    fresh.append([pair, left[j], 1])
                elif g >= n.size:  # joined earlier in this batch
                    fresh[g - n.size][1] += left[j]
                    fresh[g - n.size][2] += 1
                else:
                    total = offset[g] * (n[g] + k) + left[j]
                    n[g] += 1
                    offset[g] = total / (n[g] + k)
            if fresh:
                sums = np.array([total for _, total, _ in fresh])
                counts = np.array([count for _, _, count in fresh], dtype=np.int64)
                level["origin"] = np.concatenate(
                    [level["origin"], np.array([p[0] for p, _, _ in fresh], dtype=np.uint64)]
                )
                level["dest"] = np.concatenate(
                    [level["dest"], np.array([p[1] for p, _, _ in fresh], dtype=np.uint64)]
                )
                level["n"] = np.concatenate([n, counts])
                level["offset"] = np.concatenate([offset, sums / (counts + k)])
                self.__dict__.get("_indexes", {}).pop(i, None)  # new pairs: index again
            left = left - explained

    def offset_of_trips(self, trips: pd.DataFrame) -> np.ndarray:
        """:meth:`offset` of canonical trips (columns ``origin_lat`` ... ``dest_lon``)."""
        return self.offset(*(trips[column] for column in ENDS))

    def coarsened(self, resolution: int) -> PairOffsets | None:
        """A copy with the levels no finer than ``resolution`` (None when none is): what a
        model snapped to zones of that resolution may tell about its trips."""
        kept = [level for level in self.levels if level["resolution"] <= resolution]
        if not kept:
            return None
        copy = PairOffsets([level["resolution"] for level in kept])
        copy.levels = [
            {key: np.copy(value) if key in _ARRAYS else value for key, value in level.items()}
            for level in kept
        ]
        return copy

    # ------------------------------------------------------------------ storage
    def to_state(self) -> tuple[list[dict], dict[str, np.ndarray]]:
        """JSON metadata (resolution and ``k`` per level) and the arrays, for a model file."""
        meta = [{"resolution": lv["resolution"], "k": lv["k"]} for lv in self.levels]
        arrays = {
            f"{i}__{name}": np.asarray(lv[name])
            for i, lv in enumerate(self.levels)
            for name in _ARRAYS
        }
        return meta, arrays

    @classmethod
    def from_state(cls, meta: list[dict], arrays: dict[str, np.ndarray]) -> PairOffsets:
        """The inverse of :meth:`to_state`; raises ValueError on inconsistent arrays."""
        offsets = cls([int(level["resolution"]) for level in meta])
        for i, level in enumerate(meta):
            record = {"resolution": int(level["resolution"]), "k": float(level["k"])}
            dtypes = {"origin": np.uint64, "dest": np.uint64, "n": np.int64, "offset": np.float64}
            for name in _ARRAYS:
                record[name] = np.asarray(arrays[f"{i}__{name}"], dtype=dtypes[name]).ravel()
            if len({record[name].size for name in _ARRAYS}) != 1:
                raise ValueError(f"pair offsets of level {i}: arrays of different lengths")
            if not np.all(np.isfinite(record["offset"])):
                raise ValueError(f"pair offsets of level {i}: non-finite offsets")
            offsets.levels.append(record)
        if len(arrays) != len(_ARRAYS) * len(meta):
            raise ValueError("pair offsets: unexpected arrays")
        return offsets


def _factorize_pairs(origin, dest) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes of the (origin, destination) pairs, and the distinct pairs' origins and
    destinations (in order of first appearance): each end factorized by hashing, then
    the pairs as origin code x destinations + destination code."""
    o_codes, origins = pd.factorize(np.asarray(origin, dtype=np.uint64))
    d_codes, dests = pd.factorize(np.asarray(dest, dtype=np.uint64))
    codes, keys = pd.factorize(o_codes.astype(np.int64) * dests.size + d_codes)
    return codes, origins[keys // dests.size], dests[keys % dests.size]


def _level(resolution: int, k: float, pairs, counts, offset) -> dict:
    """A fitted level's record (see :attr:`PairOffsets.levels`); ``pairs`` the pairs'
    origin and destination cells."""
    return {
        "resolution": int(resolution),
        "k": float(k),
        "origin": np.asarray(pairs[0], dtype=np.uint64),
        "dest": np.asarray(pairs[1], dtype=np.uint64),
        "n": np.asarray(counts).astype(np.int64),
        "offset": np.asarray(offset, dtype=np.float64),
    }


def _summed(frame: pd.DataFrame) -> pd.DataFrame:
    """``n`` and ``sum`` added up per combination of the cell columns."""
    keys = [column for column in frame.columns if column not in ("n", "sum")]
    return frame.groupby(keys, sort=False, as_index=False)[["n", "sum"]].sum()


def add_pair_sums(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """The pair sums (:meth:`PairOffsets.pair_sums`) of two disjoint sets of trips."""
    return _summed(pd.concat([a, b], ignore_index=True))


def offset_resolutions(model, o_lat, o_lon, resolution: int | None) -> range:
    """The levels' resolutions: the zones' (None: chosen from the origins) and the finer,
    :data:`FINER_LEVELS` of them and at least to :data:`FINEST_RESOLUTION`."""
    if resolution is None:
        resolution = choose_h3_resolution(o_lat, o_lon, target_zones=model.target_zones)
    finest = max(int(resolution) + FINER_LEVELS, FINEST_RESOLUTION)
    return range(int(resolution), min(finest, 15) + 1)


def out_of_shard_residual(predictives, X, d, y, member) -> np.ndarray:
    """Each trip's target less the location of the member after its own
    (``(member + 1) % M``), which did not see it: one member's design per trip, for
    the residuals of all of a two-stage fit's trips."""
    other = (np.asarray(member) + 1) % len(predictives)
    residual = np.asarray(y, dtype=np.float64).copy()
    for m, predictive in enumerate(predictives):
        rows = np.flatnonzero(other == m)
        if rows.size:
            residual[rows] -= predictive.loc(X[rows], d[rows, None])
    return residual


def fit_model_offsets(model, data, resolution: int | None) -> tuple[PairOffsets | None, np.ndarray]:
    """A fitted model's pair offsets from its training trips' out-of-shard residuals.

    ``data`` is what :meth:`TravelTimeModel._fit` kept (features ``X``, targets ``y``,
    distances ``d``, ``shard_of_row`` and ``raw`` coordinates); ``resolution`` the
    zone resolution of its strata (None: chosen from the origins). Each trip's residual
    is its target less the mean location of the members that did not see it. Returns
    the offsets (None with fewer than two members or without a level worth keeping)
    and the training trips' leave-one-out offsets (zeros without offsets).
    """
    n_members = len(model.members_)
    if n_members < 2:
        return None, np.zeros(data.y.size)
    loc = member_loc(model.member_predictors(), data.X, data.d)
    held_out = data.shard_of_row[None, :] != np.arange(n_members)[:, None]
    residual = data.y - (loc * held_out).sum(axis=0) / held_out.sum(axis=0)
    o_lat, o_lon, d_lat, d_lon = data.raw[:, :4].T
    offsets = PairOffsets(offset_resolutions(model, o_lat, o_lon, resolution))
    loo = offsets.fit(o_lat, o_lon, d_lat, d_lon, residual)
    return (offsets if offsets.levels else None), loo
