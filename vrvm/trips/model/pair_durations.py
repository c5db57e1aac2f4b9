"""A pair of places seen before: its own trips' durations, blended with the model's.

Between two bike stations seen a few times in training, the members and the pair offsets
(:mod:`~vrvm.trips.model.pair_offsets`) predict a smooth function of the ends shifted by
a shrunk mean, where a quantile forest keeps the pair's own durations in its leaves. This
module keeps them too: the training trips (round trips excepted, which
:mod:`~vrvm.trips.model.round_trips` predicts) are grouped by the pair of H3 cells of
their ends (:data:`PAIR_RESOLUTION`), and a trip between a pair ``g`` of ``n_g`` training
trips with log durations ``y_j`` is predicted by

.. math::

    R_g(t) = \\frac{1}{n_g} \\sum_{j \\in g} \\Phi\\Big(\\frac{\\log t - y_j}{h}\\Big),
    \\qquad K(t) = w_g R_g(t) + (1 - w_g) H(t), \\qquad w_g = \\frac{n_g}{n_g + k},

the pair's log-normal kernel estimate shrunk toward the model's predictive H with ``k``
pseudo-trips of it (the posterior mean of a Dirichlet process with base measure H and
concentration k, smoothed; Ferguson 1973), for pairs of at least two trips. The
bandwidth ``h`` and ``k`` are chosen per band of ``n_g`` (:data:`BANDS`: 2-5 and 6 or
more) by the CRPS of K over training trips, each with its pair's kernel estimate without
itself and H out of shard (the members that did not see it, its leave-one-out pair
offsets, out-of-fold location and the spread with its PIT map:
:func:`~vrvm.trips.model.own_durations.held_out_cdf`); a band whose blend gains less
than :data:`MIN_GAIN` keeps ``k = inf``, the model's own predictive. The product stays
an exact mixture (:func:`~vrvm.trips.model.own_durations.replace_components`: a trip's
components at the quantiles of K, each at least as wide as the gaps to its neighbours,
:data:`SPACING`). Updates (:meth:`PairDurations.learn`) add new trips to their pairs;
h and k stay as fitted.

On the San Francisco bike share (about 11,500 training trips; 40 % of the test trips
between station pairs seen at least twice) seed 0 chose h = 0.1, k = 4 for pairs of 2-5
trips and left pairs of 6 or more to the model (a gain of 1.7 %, under
:data:`MIN_GAIN`); over seeds 0, 1, 2 CRPS over all test trips fell from 151.10 to
150.34 s (-0.5 %; its pairs of 2-5 trips from 119.3 to 115.7 s on seed 0, the quantile
forest's 111.9), NLL rose from 6.505 to 6.558. Chicago's taxi trips, between area
centroids, and the NYC sample keep the model's own predictive (``BENCHMARKS.md``,
issue 34).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
from scipy import special

from vrvm.engine.mixture import MixtureDistribution
from vrvm.trips.model.own_durations import (
    grid_crps,
    held_out_cdf,
    kernels,
    replace_components,
)
from vrvm.trips.model.round_trips import is_round_trip
from vrvm.trips.places.zones import latlng_to_cell_ints

__all__ = [
    "BANDS",
    "BANDWIDTHS",
    "MAX_TRIPS",
    "MIN_GAIN",
    "PAIR_RESOLUTION",
    "SHRINKAGES",
    "PairDurations",
    "fit_model_pair_durations",
]

#: H3 resolution of the cells of a trip's two ends (edges of about 65 m: a station and
#: its street corner).
PAIR_RESOLUTION = 10
#: Bands of a pair's training trips n, by their lower ends: each band has its own h and
#: k (a band where blending does not help keeps k = inf: the model's own predictive).
BANDS = (2, 6)
#: Bandwidths h tried (log seconds).
BANDWIDTHS = (0.05, 0.1, 0.15, 0.2, 0.3)
#: Shrinkages k tried (pseudo-trips of the model's predictive; inf: the regime off).
SHRINKAGES = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, math.inf)
#: The least relative gain in CRPS (training trips, out of shard) for which a band is
#: turned on: below it the gain is within what the draw of the scored trips changes
#: (on Chicago's taxi trips 0.03 % on one draw of the scored trips and none on three
#: others; 1.2 % on the prequential benchmark's first 2,812 trips, which made the
#: stream's CRPS 0.8 % worse).
MIN_GAIN = 0.02
#: A pair's kernel estimate keeps its last this many trips (and n is at most this): the
#: weight n / (n + k) is not carried beyond the pairs it was chosen on, a pair's recent
#: trips follow drift on a stream, and a prediction costs at most this many kernels.
MAX_TRIPS = 32
#: Points of the log-seconds grid the cdfs are evaluated on.
GRID_POINTS = 512
#: The grid reaches this far (log seconds) beyond the training trips' durations.
GRID_MARGIN = 3.0
#: Training trips (at most) the choice of h and k is scored on.
FIT_ROWS = 2000
#: A blended trip's components are at least this many times the gap between their
#: neighbours wide (:func:`~vrvm.trips.model.own_durations.replace_components`).
SPACING = 1.0
#: Kernels evaluated at once (rows of the grid).
_BLOCK = 4096


class PairDurations:
    """The pairs' own durations of a travel-time model (see the module's docstring).

    Owned by a fitted :class:`~vrvm.trips.model.travel_time.TravelTimeModel`
    (``model.pair_durations_``).

    Parameters
    ----------
    resolution : int, default=PAIR_RESOLUTION
        H3 resolution of the cells of both ends.
    Attributes
    ----------
    log_s : ndarray
        Log durations of the trips learnt (training and updates; no round trips).
    origin, dest : ndarray of uint64
        Their cells.
    bandwidth : float
        h (log seconds).
    shrinkage : float
        k (inf: the regime is off).
    Bandwidths and shrinkages are one per band of :data:`BANDS`.
    grid_range : tuple of float
        Ends of the log-seconds grid, fixed at fit.
    score : dict
        The training trips (``n_trips``), those scored (``n_scored``) and the mean CRPS
        (seconds) of the model (``model``) and of the blend chosen (``blend``), or why
        the regime is off (``off``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> o_lat = np.repeat([37.770, 37.780], 100); o_lon = np.full(200, -122.41)
    >>> d_lat = o_lat + 0.01; d_lon = o_lon
    >>> log_s = np.where(o_lat > 37.775, 7.0, 5.0) + rng.normal(0, 0.1, 200)
    >>> model_cdf = lambda rows, grid: kernels(np.full(rows.size, 6.0), grid, 1.0)
    >>> pairs = PairDurations().fit(o_lat, o_lon, d_lat, d_lon, log_s, model_cdf)
    >>> pairs.active, bool(pairs.shrinkage[-1] < 8)   # pairs of 100 trips: the last band
    (True, True)
    >>> w = pairs.weight(np.array([1, 100, 1000]))   # n / (n + k)
    >>> bool(w[0] == 0 and 0.9 < w[1] < w[2] < 1)
    True
    """

    def __init__(self, resolution: int = PAIR_RESOLUTION):
        self.resolution = int(resolution)
        self.log_s = np.empty(0)
        self.origin = np.empty(0, dtype=np.uint64)
        self.dest = np.empty(0, dtype=np.uint64)
        self.bandwidth = np.full(len(BANDS), BANDWIDTHS[2])
        self.shrinkage = np.full(len(BANDS), math.inf)
        self.grid_range = (0.0, 1.0)
        self.score: dict = {}
        self._pairs: dict[tuple[int, int], list[int]] | None = None  # pair -> its trips

    @property
    def active(self) -> bool:
        """Whether pairs' own durations are blended in (k finite)."""
        return bool(np.isfinite(self.shrinkage).any())

    def grid(self) -> np.ndarray:
        """The log-seconds grid the cdfs are tabulated on."""
        return np.linspace(*self.grid_range, GRID_POINTS)

    def weight(self, n) -> np.ndarray:
        """w = n / (n + k) of pairs of ``n`` trips, k of their band (0 below the first band
        and in bands that are off)."""
        n = np.asarray(n, np.float64)
        k = self.shrinkage[self.band(n)]
        on = (n >= BANDS[0]) & np.isfinite(k)
        return np.where(on, n / (n + np.where(on, k, 1.0)), 0.0)

    @staticmethod
    def band(n) -> np.ndarray:
        """The band (index into :data:`BANDS`) of pairs of ``n`` trips (0 below the first)."""
        return np.maximum(np.searchsorted(BANDS, np.asarray(n), side="right") - 1, 0)

    def cells(self, o_lat, o_lon, d_lat, d_lon) -> tuple[np.ndarray, np.ndarray]:
        """The cells (uint64) of trips' two ends (one lookup for both: a one-trip update
        pays the lookup's fixed cost once)."""
        lat = np.concatenate([np.ravel(o_lat), np.ravel(d_lat)]).astype(np.float64)
        lon = np.concatenate([np.ravel(o_lon), np.ravel(d_lon)]).astype(np.float64)
        both = latlng_to_cell_ints(lat, lon, self.resolution)
        return both[: both.size // 2], both[both.size // 2 :]

    def _table(self) -> dict[tuple[int, int], list[int]]:
        """Each pair's trips (positions), built once and kept up to date by :meth:`learn`."""
        if self._pairs is None:
            table: dict[tuple[int, int], list[int]] = {}
            keys = zip(self.origin.tolist(), self.dest.tolist(), strict=True)
            for at, key in enumerate(keys):
                table.setdefault(key, []).append(at)
            self._pairs = table
        return self._pairs

    def trips_of(self, origin: np.ndarray, dest: np.ndarray) -> list[list[int]]:
        """The trips (positions) of each query's pair of cells, the last :data:`MAX_TRIPS`
        learnt (empty: unseen)."""
        table = self._table()
        keys = zip(np.asarray(origin).tolist(), np.asarray(dest).tolist(), strict=True)
        return [table.get(key, [])[-MAX_TRIPS:] for key in keys]

    # ------------------------------------------------------------------ fitting
    def fit(
        self,
        o_lat,
        o_lon,
        d_lat,
        d_lon,
        log_s,
        model_cdf: Callable[[np.ndarray, np.ndarray], np.ndarray],
        *,
        random_state: int = 0,
    ) -> PairDurations:
        """Fit on training trips (no round trips): their ends and log durations.

        ``model_cdf(rows, grid)`` gives the model's held-out cdf of the trips ``rows``
        (indices into these arrays) on the log-seconds ``grid``, shape
        (len(rows), len(grid)). h and k by the CRPS of the blend with each trip's pair
        without itself, on at most :data:`FIT_ROWS` of the trips whose pair keeps a
        trip without them (drawn with ``random_state``), band by band of the pair's other
        trips (:data:`BANDS`).
        """
        self.log_s = np.asarray(log_s, np.float64).ravel()
        self.origin, self.dest = self.cells(o_lat, o_lon, d_lat, d_lon)
        if self.origin.size != self.log_s.size or not np.all(np.isfinite(self.log_s)):
            raise ValueError("pair durations: one finite log duration per trip expected")
        self._pairs = None
        self.shrinkage = np.full(len(BANDS), math.inf)
        n = self.log_s.size
        self.score = {"n_trips": int(n)}
        self.grid_range = (
            (0.0, 1.0)
            if n == 0
            else (float(self.log_s.min()) - GRID_MARGIN, float(self.log_s.max()) + GRID_MARGIN)
        )
        members = self._table()
        keys = list(zip(self.origin.tolist(), self.dest.tolist(), strict=True))
        others = np.array([min(len(members[key]) - 1, MAX_TRIPS) for key in keys], np.float64)
        rows = np.flatnonzero(others >= BANDS[0])
        if rows.size == 0:
            self.score["off"] = "no pair with two training trips"
            return self._without_trips()
        if rows.size > FIT_ROWS:
            rng = np.random.default_rng(random_state)
            rows = np.sort(rng.choice(rows, size=FIT_ROWS, replace=False))
        grid = self.grid()
        y = self.log_s[rows]
        model = np.asarray(model_cdf(rows, grid), np.float64)
        model_crps = grid_crps(model, grid, y)
        n_own = others[rows]
        band = self.band(n_own)
        # per band: the model's own (k = inf), or the best h and k
        best = [
            (float(model_crps[band == b].sum()), BANDWIDTHS[2], math.inf) for b in range(len(BANDS))
        ]
        # each trip's pair without the trip itself (its last MAX_TRIPS others)
        left = [[j for j in members[keys[r]] if j != r][-MAX_TRIPS:] for r in rows]
        for h in BANDWIDTHS:
            own = self._pair_cdfs(left, grid, h)
            for k in SHRINKAGES[:-1]:
                w = (n_own / (n_own + k))[:, None]
                crps = grid_crps(w * own + (1 - w) * model, grid, y)
                for b in range(len(BANDS)):
                    total = float(crps[band == b].sum())
                    if total < best[b][0]:
                        best[b] = (total, h, k)
        bands = []
        for b, (total, _, _) in enumerate(best):
            model_total = float(model_crps[band == b].sum())
            if total >= (1.0 - MIN_GAIN) * model_total:  # too little to be told from chance
                best[b] = (model_total, BANDWIDTHS[2], math.inf)
            scored = int(np.sum(band == b))
            bands.append(
                {
                    "n_scored": scored,
                    "model": model_total / max(scored, 1),
                    "blend": total / max(scored, 1),
                }
            )
        self.bandwidth = np.array([h for _, h, _ in best])
        self.shrinkage = np.array([k for _, _, k in best])
        self.score.update(
            n_scored=int(rows.size),
            model=float(model_crps.mean()),
            blend=sum(total for total, _, _ in best) / rows.size,
            bands=bands,
        )
        return self if self.active else self._without_trips()

    def _without_trips(self) -> PairDurations:
        """Off (no band blends): the trips are dropped, as updates never turn it on. A
        model file keeps no trip durations it does not use (trip records are personal)."""
        self.log_s = np.empty(0)
        self.origin = np.empty(0, dtype=np.uint64)
        self.dest = np.empty(0, dtype=np.uint64)
        self._pairs = None
        return self

    def _pair_cdfs(self, trips: list, grid: np.ndarray, h: float) -> np.ndarray:
        """R_g on ``grid`` for each list of trips (positions) in ``trips``."""
        lens = np.array([len(t) for t in trips], dtype=np.intp)
        out = np.zeros((len(trips), grid.size))
        flat = np.fromiter((j for t in trips for j in t), np.intp, int(lens.sum()))
        starts = np.concatenate([[0], np.cumsum(lens)])
        nonempty = np.flatnonzero(lens > 0)
        chunk = starts[nonempty] // _BLOCK  # whole lists, about _BLOCK kernels at once
        for c in np.unique(chunk):
            lists = nonempty[chunk == c]
            low, high = starts[lists[0]], starts[lists[-1] + 1]
            values = kernels(self.log_s[flat[low:high]], grid, h)
            out[lists] = np.add.reduceat(values, starts[lists] - low, axis=0)
        return out / np.maximum(lens, 1)[:, None]

    # ------------------------------------------------------------------ prediction
    def _own(self, trips: list, grid: np.ndarray) -> np.ndarray:
        """R_g on ``grid`` of pairs with the trips (positions) ``trips``, each with its
        band's h."""
        n = np.array([len(t) for t in trips])
        band = self.band(n)
        out = np.empty((len(trips), grid.size))
        for b in np.unique(band):
            rows = np.flatnonzero(band == b)
            out[rows] = self._pair_cdfs([trips[r] for r in rows], grid, self.bandwidth[b])
        return out

    def cdf(self, o_lat, o_lon, d_lat, d_lon, t) -> np.ndarray:
        """R_g(t) of trips between the given ends, on the seconds ``t`` (one row per trip,
        h of its pair's band; NaN for pairs without trips)."""
        trips = self.trips_of(*self.cells(o_lat, o_lon, d_lat, d_lon))
        out = self._own(trips, np.log(np.asarray(t, np.float64)))
        out[[len(t) == 0 for t in trips]] = np.nan
        return out

    def apply(self, dist: MixtureDistribution, o_lat, o_lon, d_lat, d_lon):
        """The model's predictive ``dist`` (log transform) with the components of trips
        between pairs seen in training (in a band that is on) replaced by those of K
        (:func:`~vrvm.trips.model.own_durations.replace_components`: scale h, at least
        :data:`SPACING` times the gaps); ``dist`` itself when the regime is off or no
        query has such a pair. Round trips are left to the round-trip regime."""
        if not self.active or self.log_s.size == 0:
            return dist
        ends = [np.asarray(v, np.float64) for v in (o_lat, o_lon, d_lat, d_lon)]
        trips = self.trips_of(*self.cells(*ends))
        n = np.array([len(t) for t in trips], np.float64)
        w = self.weight(n)
        w[is_round_trip(*ends)] = 0.0
        cols = np.flatnonzero(w > 0)
        if cols.size == 0:
            return dist
        chosen = [trips[c] for c in cols]
        lens = np.array([len(t) for t in chosen], dtype=np.intp)
        flat = np.fromiter((j for t in chosen for j in t), np.intp, int(lens.sum()))
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        y = self.log_s[flat]
        h = self.bandwidth[self.band(lens)]
        row_of = np.repeat(np.arange(cols.size), lens)

        def own_at(x: np.ndarray) -> np.ndarray:  # R_g at x (rows, P), the kernels at once
            z = (x[row_of] - y[:, None]) / h[row_of, None]
            return np.add.reduceat(special.ndtr(z), starts, axis=0) / lens[:, None]

        def bracket(p: np.ndarray) -> np.ndarray:  # R^-1(p) within y_min, y_max + h Phi^-1(p)
            low = np.minimum.reduceat(y, starts) + h * special.ndtri(p[0])
            high = np.maximum.reduceat(y, starts) + h * special.ndtri(p[1])
            return np.stack([low, high])

        return replace_components(dist, cols, (own_at, bracket), None, w[cols], h, spacing=SPACING)

    # ------------------------------------------------------------------ updates
    def learn(self, o_lat, o_lon, d_lat, d_lon, log_s) -> int:
        """Add new trips (not round trips; log durations ``log_s``) to their pairs; h and k
        stay as fitted. Returns how many were added: none when the regime is off, which
        updates never turn on (so its pairs would only grow, unused, with the stream)."""
        keep = ~is_round_trip(o_lat, o_lon, d_lat, d_lon)
        if not self.active or not keep.any():
            return 0
        new = np.asarray(log_s, np.float64)[keep]
        if not np.all(np.isfinite(new)):
            raise ValueError("pair durations: log durations must be finite")
        ends = (np.asarray(v, np.float64)[keep] for v in (o_lat, o_lon, d_lat, d_lon))
        origin, dest = self.cells(*ends)
        table = self._table()
        first = self.log_s.size
        for at, key in enumerate(zip(origin.tolist(), dest.tolist(), strict=True)):
            table.setdefault(key, []).append(first + at)
        self.origin = np.concatenate([self.origin, origin])
        self.dest = np.concatenate([self.dest, dest])
        self.log_s = np.concatenate([self.log_s, new])
        return int(keep.sum())

    # ------------------------------------------------------------------ storage
    def to_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """JSON metadata and the arrays (``log_s``, ``origin``, ``dest``), for a model file."""
        meta = {
            "resolution": self.resolution,
            "bands": list(BANDS),
            "bandwidth": [float(h) for h in self.bandwidth],
            "shrinkage": [None if math.isinf(k) else float(k) for k in self.shrinkage],
            "grid_range": [float(v) for v in self.grid_range],
            "score": dict(self.score),
        }
        arrays = {
            "log_s": self.log_s.copy(),
            "origin": self.origin.copy(),
            "dest": self.dest.copy(),
        }
        return meta, arrays

    @classmethod
    def from_state(cls, meta: Mapping, arrays: Mapping[str, np.ndarray]) -> PairDurations:
        """The inverse of :meth:`to_state`; raises ValueError on what could not be fitted."""
        pairs = cls(int(meta["resolution"]))
        if not 0 <= pairs.resolution <= 15:
            raise ValueError(
                f"pair_durations.resolution must be in [0, 15], got {pairs.resolution}"
            )
        if list(meta["bands"]) != list(BANDS):
            raise ValueError(f"pair_durations.bands must be {list(BANDS)}, got {meta['bands']}")
        if set(arrays) != {"log_s", "origin", "dest"}:
            raise ValueError(
                f"pair durations: expected arrays log_s, origin and dest, got {sorted(arrays)}"
            )
        pairs.log_s = np.asarray(arrays["log_s"], np.float64).ravel()
        pairs.origin = np.asarray(arrays["origin"], np.uint64).ravel()
        pairs.dest = np.asarray(arrays["dest"], np.uint64).ravel()
        if not (pairs.log_s.size == pairs.origin.size == pairs.dest.size):
            raise ValueError("pair durations: log_s, origin and dest of different lengths")
        if not np.all(np.isfinite(pairs.log_s)):
            raise ValueError("pair durations: non-finite log durations")
        pairs.bandwidth = np.asarray(meta["bandwidth"], np.float64)
        pairs.shrinkage = np.array(
            [math.inf if k is None else float(k) for k in meta["shrinkage"]], np.float64
        )
        low, high = (float(v) for v in meta["grid_range"])
        pairs.grid_range = (low, high)
        pairs.score = dict(meta.get("score", {}))
        if pairs.bandwidth.shape != (len(BANDS),) or pairs.shrinkage.shape != (len(BANDS),):
            raise ValueError(f"pair durations: one bandwidth and shrinkage per band, got {meta}")
        if not np.all(np.isfinite(pairs.bandwidth) & (pairs.bandwidth > 0)):
            raise ValueError(f"pair_durations.bandwidth must be > 0, got {meta['bandwidth']}")
        if not np.all(pairs.shrinkage > 0):
            raise ValueError(
                f"pair_durations.shrinkage must be > 0 or null, got {meta['shrinkage']}"
            )
        if not (np.isfinite(low) and np.isfinite(high) and low < high):
            raise ValueError(f"pair_durations.grid_range must be finite and increasing, got {meta}")
        return pairs


def fit_model_pair_durations(model, data, loo: np.ndarray, seed: int) -> PairDurations | None:
    """A fitted model's pairs' own durations from its training trips (round trips
    excepted; None with fewer than two members or ``target="seconds"``).

    ``data`` is what :meth:`TravelTimeModel.fit_trips` kept, ``loo`` the training trips'
    leave-one-out pair offsets; the model's held-out cdf of a trip is
    :func:`~vrvm.trips.model.own_durations.held_out_cdf`'s.
    """
    o_lat, o_lon, d_lat, d_lon = data.raw[:, :4].T
    rows = np.flatnonzero(~is_round_trip(o_lat, o_lon, d_lat, d_lon))
    model_cdf = held_out_cdf(model, data, loo, rows)
    if model_cdf is None:
        return None
    log_t = np.log(data.raw[rows, 5])
    return PairDurations().fit(
        o_lat[rows], o_lon[rows], d_lat[rows], d_lon[rows], log_t, model_cdf, random_state=seed
    )
