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

from collections.abc import Sequence

import numpy as np
import pandas as pd

from vrvm.trips._ensemble import member_loc_scale
from vrvm.trips.zones import choose_h3_resolution, latlng_to_cell_ints

__all__ = ["ENDS", "PairOffsets", "fit_model_offsets", "loo_shrinkage"]

#: Levels of cell pairs: the model's zone resolution and the two finer ones.
FINER_LEVELS = 2
_ARRAYS = ("origin", "dest", "n", "offset")
#: The columns of a trip's two ends, in the order the methods take them.
ENDS = ("origin_lat", "origin_lon", "dest_lat", "dest_lon")


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
    def _pairs(origin: np.ndarray, dest: np.ndarray) -> pd.MultiIndex:
        return pd.MultiIndex.from_arrays([origin, dest])

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
        for resolution in self.resolutions:
            codes, pairs = self._pairs(*self._cells(ends, resolution)).factorize()
            k = loo_shrinkage(codes, left)
            if not np.isfinite(k):
                continue
            counts = np.bincount(codes, minlength=len(pairs)).astype(np.float64)
            sums = np.bincount(codes, weights=left, minlength=len(pairs))
            offset = sums / (counts + k)
            # each trip's pair without the trip: (S_g - r_i) / (n_g - 1 + k)
            own = (sums[codes] - left) / (counts[codes] - 1 + k)
            loo += own
            left = left - own
            self.levels.append(
                {
                    "resolution": resolution,
                    "k": float(k),
                    "origin": pairs.get_level_values(0).to_numpy(np.uint64),
                    "dest": pairs.get_level_values(1).to_numpy(np.uint64),
                    "n": counts.astype(np.int64),
                    "offset": offset,
                }
            )
        return loo

    def _lookup(self, i: int) -> dict[tuple[int, int], int]:
        """Level ``i``'s pairs as a dict to their positions (built once): a query costs a
        hash lookup per level."""
        lookups = self.__dict__.setdefault("_lookups", {})
        if i not in lookups:
            level = self.levels[i]
            keys = zip(level["origin"].tolist(), level["dest"].tolist(), strict=True)
            lookups[i] = {key: at for at, key in enumerate(keys)}
        return lookups[i]

    def _positions(self, i: int, ends) -> tuple[np.ndarray, list]:
        """Each trip's position among level ``i``'s pairs (-1: unseen), and its pair."""
        origin, dest = self._cells(ends, self.levels[i]["resolution"])
        pairs = list(zip(origin.tolist(), dest.tolist(), strict=True))
        table = self._lookup(i)
        return np.fromiter((table.get(p, -1) for p in pairs), np.intp, count=len(pairs)), pairs

    def offset(self, o_lat, o_lon, d_lat, d_lon) -> np.ndarray:
        """The offset of each query (log scale): the sum over levels, 0 for unseen pairs."""
        ends = (o_lat, o_lon, d_lat, d_lon)
        total = np.zeros(np.size(o_lat))
        for i, level in enumerate(self.levels):
            at, _ = self._positions(i, ends)
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
            at, pairs = self._positions(i, ends)
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
    loc, _ = member_loc_scale(model._predictives(), data.X, data.d)
    held_out = data.shard_of_row[None, :] != np.arange(n_members)[:, None]
    residual = data.y - (loc * held_out).sum(axis=0) / held_out.sum(axis=0)
    o_lat, o_lon, d_lat, d_lon = data.raw[:, :4].T
    if resolution is None:
        resolution = choose_h3_resolution(o_lat, o_lon, target_zones=model.target_zones)
    top = min(int(resolution) + FINER_LEVELS, 15)
    offsets = PairOffsets(range(int(resolution), top + 1))
    loo = offsets.fit(o_lat, o_lon, d_lat, d_lon, residual)
    return (offsets if offsets.levels else None), loo
