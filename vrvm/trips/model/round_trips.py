"""Round trips: trips that end where they started, predicted from their own station's rides.

A trip whose two ends are less than :data:`~vrvm.trips.model.location.SAME_PLACE_KM`
(1 m) apart has no geometry for the members to read: on the San Francisco bike share
such round trips are leisure rides (1 to 2 minutes to re-dock a bike, or 10 to 50
minutes out and back; median 1,012 s, from 74 s to 9,484 s), and each member, seeing a
few dozen of them in its shard, fits them its own way. What tells one from another is
the station: this module predicts a round trip from the durations of the training round
trips that started in the same H3 cell (:data:`STATION_RESOLUTION`, about 25 m across: a
station, a centroid), shrunk toward all round trips, and blends that with the model's
own predictive.

With ``y_j`` the log durations of the ``n`` training round trips, ``S_c`` the ``n_c`` of
them from cell ``c`` and Phi the standard normal cdf, the regime's cdf of a round trip
from cell ``c`` is the log-normal kernel estimate

.. math::

    R_0(t) = \\frac{1}{n} \\sum_j \\Phi\\Big(\\frac{\\log t - y_j}{h}\\Big), \\qquad
    R_c(t) = \\frac{\\sum_{j \\in S_c} \\Phi((\\log t - y_j) / h) + k\\, R_0(t)}{n_c + k},

the cell's own kernel estimate with ``k`` pseudo-trips of all round trips (the posterior
mean of a Dirichlet process with base measure R_0 and concentration k, smoothed; Ferguson
1973), and the predictive is ``K(t) = w R_c(t) + (1 - w) H(t)``, with H the model's
predictive of the trip. The bandwidth ``h`` and ``k`` minimise the leave-one-out CRPS
of R on the training round trips; ``w`` (one of :data:`WEIGHTS`; 0 turns the regime off)
the CRPS of K with R leave-one-out and H out of shard (each round trip predicted by the
members that did not see it, with its leave-one-out pair offsets, out-of-fold location
and the spread with its PIT map: what :meth:`Spread.fit` scores). Both CRPS by the
trapezoid rule on seconds over :data:`GRID_POINTS` log-spaced points.

The product stays an exact equal-weight mixture: a round trip's C components are
replaced by C components of scale h at the quantiles ``log K^-1(G(v_i))``,
``v_i = (i - 1/2) / C``, where G is the model's PIT map (the identity without one), so
that the recalibrated predictive G o F of the new components is K up to the smoothing
(quantile matching; on San Francisco's 56 test round trips, CRPS 663.7 s against 661.3 s
for K itself, with 16 components). The components keep their members' degrees of
freedom (thousands on the real samples, a Gaussian kernel to 1e-3). Other trips are
untouched.

Updates (:meth:`RoundTrips.learn`) add new round trips to their cells; h, k and w stay
as fitted. On the San Francisco bike share (about 220 training round trips; seeds 0, 1,
2: h = 0.15-0.2, k = 0.5-1, w = 0.75-1) CRPS over all test trips fell from 152.71 to
151.10 s (-1.1 %; its round trips' from 723 to 637 s), NLL 6.510 -> 6.505; on a stream
(fitted on the first 30 % by time, then predicting and learning 50 trips at a time)
155.20 -> 152.11 s. Chicago, whose trips start and end at area centroids (about 940
training trips with both ends at one centroid; k = 16-32, w = 0.75-1), keeps its CRPS
(157.34 -> 157.30 s); the NYC sample has 12-14 and keeps its model
(:data:`MIN_ROUND_TRIPS`; ``BENCHMARKS.md``, issue 34).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from vrvm.engine.mixture import MixtureDistribution
from vrvm.trips.model.location import SAME_PLACE_KM
from vrvm.trips.model.own_durations import (
    grid_crps,
    held_out_cdf,
    kernels,
    replace_components,
)
from vrvm.trips.places.geo import haversine_km
from vrvm.trips.places.zones import latlng_to_cell_ints

__all__ = [
    "BANDWIDTHS",
    "MIN_ROUND_TRIPS",
    "SHRINKAGES",
    "STATION_RESOLUTION",
    "WEIGHTS",
    "RoundTrips",
    "fit_model_round_trips",
    "is_round_trip",
]

#: H3 resolution of a round trip's start cell (edges of about 25 m: one station). On the
#: San Francisco sample resolutions 11 and 13 chose the same cells' trips; coarser
#: levels (7-9) between the station and all round trips were given k = inf.
STATION_RESOLUTION = 11
#: Training round trips below which the regime stays off (w = 0).
MIN_ROUND_TRIPS = 30
#: Bandwidths h tried (log seconds).
BANDWIDTHS = (0.1, 0.15, 0.2, 0.3, 0.45)
#: Shrinkages k tried (pseudo-trips of all round trips; inf: all round trips alike).
SHRINKAGES = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, math.inf)
#: Weights w of the regime tried (0: the model's own predictive).
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: Points of the log-seconds grid the cdfs are evaluated on.
GRID_POINTS = 512
#: The grid reaches this far (log seconds) beyond the training round trips' durations.
GRID_MARGIN = 3.0
#: Training round trips (at most) the choice of h, k and w is scored on.
FIT_ROWS = 2000
#: Trips whose kernels are evaluated at once.
_BLOCK = 2048


def is_round_trip(o_lat, o_lon, d_lat, d_lon) -> np.ndarray:
    """Whether each trip's ends are less than ``SAME_PLACE_KM`` (1 m) apart.

    Examples
    --------
    >>> is_round_trip([37.77, 37.77], [-122.41, -122.41], [37.77, 37.78], [-122.41, -122.41])
    array([ True, False])
    """
    return haversine_km(
        np.asarray(o_lat, np.float64),
        np.asarray(o_lon, np.float64),
        np.asarray(d_lat, np.float64),
        np.asarray(d_lon, np.float64),
    ) < (SAME_PLACE_KM)


class RoundTrips:
    """The round-trip regime of a travel-time model: each start cell's own durations.

    Owned by a fitted :class:`~vrvm.trips.model.travel_time.TravelTimeModel`
    (``model.round_trips_``); see the module's docstring for the maths.

    Parameters
    ----------
    resolution : int, default=STATION_RESOLUTION
        H3 resolution of the start cells.

    Attributes
    ----------
    log_s : ndarray
        Log durations of the round trips learnt (training and updates).
    cell : ndarray of uint64
        Their start cells.
    bandwidth : float
        h (log seconds).
    shrinkage : float
        k (inf: every cell as all round trips).
    weight : float
        w in [0, 1] (0: the regime is off).
    grid_range : tuple of float
        Ends of the log-seconds grid, fixed at fit.
    score : dict
        The training round trips (``n_trips``), those scored (``n_scored``) and the mean
        CRPS (seconds) of the regime (``regime``), the model (``model``) and the blend
        chosen (``blend``), or why the regime is off (``off``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> lat = np.repeat([37.770, 37.780], 40); lon = np.full(80, -122.41)
    >>> log_s = np.where(lat > 37.775, 7.0, 5.0) + rng.normal(0, 0.3, 80)
    >>> model_cdf = lambda rows, grid: kernels(np.full(rows.size, 6.0), grid, 1.5)
    >>> regime = RoundTrips().fit(lat, lon, log_s, model_cdf)
    >>> regime.weight > 0.5, regime.shrinkage < 8
    (True, True)
    >>> median = regime.cdf(np.array([37.770, 37.780]), np.array([-122.41, -122.41]),
    ...                     np.exp(regime.grid()))
    >>> [round(float(np.exp(np.interp(0.5, row, regime.grid())))) for row in median]
    [146, 1221]
    """

    def __init__(self, resolution: int = STATION_RESOLUTION):
        self.resolution = int(resolution)
        self.log_s = np.empty(0)
        self.cell = np.empty(0, dtype=np.uint64)
        self.bandwidth = BANDWIDTHS[2]
        self.shrinkage = 1.0
        self.weight = 0.0
        self.grid_range = (0.0, 1.0)
        self.score: dict = {}
        self._total: np.ndarray | None = None  # sum of the kernels on the grid, cached

    @property
    def active(self) -> bool:
        """Whether round trips are predicted by the regime (w > 0)."""
        return self.weight > 0

    def grid(self) -> np.ndarray:
        """The log-seconds grid the cdfs are tabulated on."""
        return np.linspace(*self.grid_range, GRID_POINTS)

    def cells(self, lat, lon) -> np.ndarray:
        """The start cells (uint64) of points."""
        return latlng_to_cell_ints(
            np.asarray(lat, np.float64), np.asarray(lon, np.float64), self.resolution
        )

    # ------------------------------------------------------------------ fitting
    def fit(
        self,
        o_lat,
        o_lon,
        log_s,
        model_cdf: Callable[[np.ndarray, np.ndarray], np.ndarray],
        *,
        random_state: int = 0,
    ) -> RoundTrips:
        """Fit on the training round trips: their start points and log durations.

        ``model_cdf(rows, grid)`` gives the model's held-out cdf of the round trips
        ``rows`` (indices into these arrays) on the log-seconds ``grid``, shape
        (len(rows), len(grid)). h and k by leave-one-out CRPS, w by the CRPS of the
        blend, on at most :data:`FIT_ROWS` of them (drawn with ``random_state``).
        """
        self.log_s = np.asarray(log_s, np.float64).ravel()
        self.cell = self.cells(o_lat, o_lon)
        if self.cell.size != self.log_s.size or not np.all(np.isfinite(self.log_s)):
            raise ValueError("round trips: one finite log duration per start point expected")
        self._total = None
        n = self.log_s.size
        self.weight, self.score = 0.0, {"n_trips": int(n)}
        if n < MIN_ROUND_TRIPS:
            self.grid_range = (0.0, 1.0) if n == 0 else self._range(self.log_s)
            self.score["off"] = f"fewer than {MIN_ROUND_TRIPS} round trips"
            return self
        self.grid_range = self._range(self.log_s)
        grid = self.grid()
        rows = np.arange(n)
        if n > FIT_ROWS:
            rng = np.random.default_rng(random_state)
            rows = np.sort(rng.choice(n, size=FIT_ROWS, replace=False))
        best = (math.inf, self.bandwidth, self.shrinkage, None)
        for h in BANDWIDTHS:
            for k, cdf in self._left_out(rows, grid, h):
                crps = float(grid_crps(cdf, grid, self.log_s[rows]).mean())
                if crps < best[0]:
                    best = (crps, h, k, cdf)
        regime_crps, self.bandwidth, self.shrinkage, regime = best
        model = np.asarray(model_cdf(rows, grid), np.float64)
        scores = {
            w: float(grid_crps(w * regime + (1 - w) * model, grid, self.log_s[rows]).mean())
            for w in WEIGHTS
        }
        self.weight = min(scores, key=scores.get)
        self.score.update(
            n_scored=int(rows.size),
            regime=regime_crps,
            model=scores[0.0],
            blend=min(scores.values()),
        )
        return self

    @staticmethod
    def _range(log_s: np.ndarray) -> tuple[float, float]:
        return (float(log_s.min()) - GRID_MARGIN, float(log_s.max()) + GRID_MARGIN)

    def _left_out(self, rows: np.ndarray, grid: np.ndarray, h: float):
        """(k, R without the trip itself) of the round trips ``rows`` for every k of
        :data:`SHRINKAGES`: R_c and R_0 each less the trip's own kernel."""
        n = self.log_s.size
        own = kernels(self.log_s[rows], grid, h)
        total = self._kernel_sum(self.log_s, grid, h)
        codes, sums, counts = self._cell_sums(self.cell[rows], grid, h)
        common = (total[None, :] - own) / (n - 1)
        local, n_local = sums[codes] - own, counts[codes] - 1.0
        for k in SHRINKAGES:
            if math.isinf(k):
                yield k, common
            else:
                yield k, (local + k * common) / (n_local + k)[:, None]

    @staticmethod
    def _kernel_sum(log_s: np.ndarray, grid: np.ndarray, h: float) -> np.ndarray:
        """sum_j Phi((grid - y_j) / h), block by block."""
        total = np.zeros(grid.size)
        for start in range(0, log_s.size, _BLOCK):
            total += kernels(log_s[start : start + _BLOCK], grid, h).sum(axis=0)
        return total

    def _cell_sums(self, cells: np.ndarray, grid: np.ndarray, h: float):
        """For query cells: each query's index among the distinct cells, and the distinct
        cells' kernel sums (on ``grid``) and trip counts."""
        distinct, codes = np.unique(cells, return_inverse=True)
        sums = np.zeros((distinct.size, grid.size))
        counts = np.zeros(distinct.size)
        at = np.searchsorted(distinct, self.cell)
        inside = (at < distinct.size) & (distinct[np.minimum(at, distinct.size - 1)] == self.cell)
        rows = np.flatnonzero(inside)
        for start in range(0, rows.size, _BLOCK):
            block = rows[start : start + _BLOCK]
            np.add.at(sums, at[block], kernels(self.log_s[block], grid, h))
        np.add.at(counts, at[rows], 1.0)
        return codes.reshape(-1), sums, counts

    # ------------------------------------------------------------------ prediction
    def cdf(self, o_lat, o_lon, t) -> np.ndarray:
        """R_c(t) of round trips starting at the given points, on the seconds ``t``
        (one row per point; the fitted h and k)."""
        grid = np.log(np.asarray(t, np.float64))
        n = self.log_s.size
        if n == 0:
            raise ValueError("round trips: no round trips learnt")
        common = self._kernel_sum(self.log_s, grid, self.bandwidth) / n
        if math.isinf(self.shrinkage):
            return np.repeat(common[None, :], np.size(o_lat), axis=0)
        codes, sums, counts = self._cell_sums(self.cells(o_lat, o_lon), grid, self.bandwidth)
        k = self.shrinkage
        return (sums[codes] + k * common[None, :]) / (counts[codes] + k)[:, None]

    def _regime_on_grid(self, cells: np.ndarray) -> np.ndarray:
        """R_c on :meth:`grid` for query cells (the kernels' total cached)."""
        grid = self.grid()
        if self._total is None:
            self._total = self._kernel_sum(self.log_s, grid, self.bandwidth)
        common = self._total / self.log_s.size
        if math.isinf(self.shrinkage):
            return np.repeat(common[None, :], cells.size, axis=0)
        codes, sums, counts = self._cell_sums(cells, grid, self.bandwidth)
        k = self.shrinkage
        return (sums[codes] + k * common[None, :]) / (counts[codes] + k)[:, None]

    def apply(self, dist: MixtureDistribution, o_lat, o_lon, d_lat, d_lon):
        """The model's predictive ``dist`` (log transform) with its round trips' components
        replaced by the regime's blend
        (:func:`~vrvm.trips.model.own_durations.replace_components`, scale h); ``dist``
        itself when the regime is off or no query is a round trip."""
        mask = is_round_trip(o_lat, o_lon, d_lat, d_lon)
        if not (self.active and mask.any()):
            return dist
        if dist.transform != "log":
            raise ValueError("round trips: the regime needs a predictive of log seconds")
        cols = np.flatnonzero(mask)
        regime = self._regime_on_grid(self.cells(np.asarray(o_lat)[cols], np.asarray(o_lon)[cols]))
        return replace_components(dist, cols, regime, self.grid(), self.weight, self.bandwidth)

    # ------------------------------------------------------------------ updates
    def learn(self, o_lat, o_lon, d_lat, d_lon, log_s) -> int:
        """Add the round trips among new trips (log durations ``log_s``) to their cells;
        h, k and w stay as fitted. Returns how many were round trips."""
        mask = is_round_trip(o_lat, o_lon, d_lat, d_lon)
        if not mask.any():
            return 0
        new = np.asarray(log_s, np.float64)[mask]
        if not np.all(np.isfinite(new)):
            raise ValueError("round trips: log durations must be finite")
        self.cell = np.concatenate(
            [self.cell, self.cells(np.asarray(o_lat)[mask], np.asarray(o_lon)[mask])]
        )
        self.log_s = np.concatenate([self.log_s, new])
        if self._total is not None:
            self._total = self._total + self._kernel_sum(new, self.grid(), self.bandwidth)
        return int(mask.sum())

    # ------------------------------------------------------------------ storage
    def to_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """JSON metadata and the arrays (``log_s``, ``cell``), for a model file."""
        meta = {
            "resolution": self.resolution,
            "bandwidth": float(self.bandwidth),
            "shrinkage": None if math.isinf(self.shrinkage) else float(self.shrinkage),
            "weight": float(self.weight),
            "grid_range": [float(v) for v in self.grid_range],
            "score": dict(self.score),
        }
        return meta, {"log_s": self.log_s.copy(), "cell": self.cell.copy()}

    @classmethod
    def from_state(cls, meta: Mapping, arrays: Mapping[str, np.ndarray]) -> RoundTrips:
        """The inverse of :meth:`to_state`; raises ValueError on what could not be fitted."""
        regime = cls(int(meta["resolution"]))
        if not 0 <= regime.resolution <= 15:
            raise ValueError(f"round_trips.resolution must be in [0, 15], got {regime.resolution}")
        if set(arrays) != {"log_s", "cell"}:
            raise ValueError(f"round trips: expected arrays log_s and cell, got {sorted(arrays)}")
        regime.log_s = np.asarray(arrays["log_s"], np.float64).ravel()
        regime.cell = np.asarray(arrays["cell"], np.uint64).ravel()
        if regime.log_s.size != regime.cell.size or not np.all(np.isfinite(regime.log_s)):
            raise ValueError("round trips: log_s and cell of different lengths or non-finite")
        regime.bandwidth = float(meta["bandwidth"])
        shrinkage = meta["shrinkage"]
        regime.shrinkage = math.inf if shrinkage is None else float(shrinkage)
        regime.weight = float(meta["weight"])
        low, high = (float(v) for v in meta["grid_range"])
        regime.grid_range = (low, high)
        regime.score = dict(meta.get("score", {}))
        if not (np.isfinite(regime.bandwidth) and regime.bandwidth > 0):
            raise ValueError(f"round_trips.bandwidth must be > 0, got {regime.bandwidth}")
        if not regime.shrinkage > 0:
            raise ValueError(f"round_trips.shrinkage must be > 0 or null, got {shrinkage}")
        if not 0 <= regime.weight <= 1:
            raise ValueError(f"round_trips.weight must be in [0, 1], got {regime.weight}")
        if not (np.isfinite(low) and np.isfinite(high) and low < high):
            raise ValueError(f"round_trips.grid_range must be finite and increasing, got {meta}")
        if regime.active and regime.log_s.size == 0:
            raise ValueError("round trips: a weight > 0 without round trips")
        return regime


def fit_model_round_trips(model, data, loo: np.ndarray, seed: int) -> RoundTrips | None:
    """A fitted model's round-trip regime from its training trips (None with fewer than
    two members or ``target="seconds"``).

    ``data`` is what :meth:`TravelTimeModel.fit_trips` kept, ``loo`` the training trips'
    leave-one-out pair offsets; the model's held-out cdf of a round trip is
    :func:`~vrvm.trips.model.own_durations.held_out_cdf`'s.
    """
    o_lat, o_lon, d_lat, d_lon = data.raw[:, :4].T
    rows = np.flatnonzero(is_round_trip(o_lat, o_lon, d_lat, d_lon))
    model_cdf = held_out_cdf(model, data, loo, rows)
    if model_cdf is None:
        return None
    log_t = np.log(data.raw[rows, 5])
    return RoundTrips().fit(o_lat[rows], o_lon[rows], log_t, model_cdf, random_state=seed)
