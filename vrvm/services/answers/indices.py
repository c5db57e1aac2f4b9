"""Travel-time reliability indices of a trip: planning time, buffer and misery index.

The measures US transport agencies report (FHWA 2006; NCHRP Report 618), computed from
the predictive distribution of one trip instead of from a year of observed trips:

* **planning time index** PTI = t95 / t_ff: how much longer than at free flow to plan
  for, to be on time 19 times out of 20;
* **buffer index** BI = (t95 - mean) / mean: the extra time, as a share of the mean, to
  add to the average trip to be on time 19 times out of 20;
* **misery index** MI = mean(slowest 20 %) / t_ff: how long the worst fifth of trips
  take, against free flow.

Here t95 is the 95th percentile of the travel time T, mean its mean, and
mean(slowest 20 %) = E[T | T > t80] the mean of the distribution above its 80th
percentile, computed exactly (:func:`tail_mean`). NCHRP Report 618 (eq. 2.12) divides
the mean of the slowest 20 % by the *mean* trip and subtracts 1; we divide by the
free-flow time, so that PTI and MI share a scale (1 = free flow) and a trip that is
always slow is miserable even when it is predictable.

**Free-flow time** t_ff is the 15th percentile of the travel time of the same trip at
night: departures every 30 minutes from 02:00 to 04:00 local time on the same day
(5 departures), pooled into one equal-weight mixture (:func:`free_flow_seconds`).
Night hours are when traffic is lightest (Jha 2017 finds them the best reference
window in probe data) and the 15th percentile of travel time is the 85th percentile
of speed, the usual reference ("free-flow") speed of probe-data programmes (Virginia
Transportation Research Council 2025). An index below 1 means the model finds the
trip faster now than at night (sparse night data, or a city whose nights are slow).

References
----------
FHWA (2006), "Travel Time Reliability: Making It There On Time, All The Time",
FHWA-HOP-06-070, https://ops.fhwa.dot.gov/publications/tt_reliability/TTR_Report.htm
(planning time index and buffer index).
Cambridge Systematics et al. (2008), "Cost-Effective Performance Measures for Travel
Time Delay, Variation, and Reliability", NCHRP Report 618, Transportation Research
Board, eq. 2.12 (misery index).
Jha (2017), "Determining reference speed from probe-based travel speed data", M.S.
thesis, Texas A&M University.
Virginia Transportation Research Council (2025), report 25-R21 (reference speeds from
the 85th-percentile speed in low-volume periods).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special, stats

from vrvm.engine.mixture import MixtureDistribution
from vrvm.engine.recalibrated import RecalibratedMixture
from vrvm.trips.model.travel_time import TravelTimeModel

__all__ = [
    "FREE_FLOW_QUANTILE",
    "INDEX_COLUMNS",
    "NIGHT_STEP_MIN",
    "NIGHT_WINDOW",
    "RELIABILITY_INDICES",
    "SLOWEST_SHARE",
    "FreeFlowCache",
    "ReliabilityIndices",
    "definitions",
    "free_flow_seconds",
    "indices_from",
    "night_departures",
    "od_indices",
    "pool_departures",
    "reliability_indices",
    "tail_mean",
]

FREE_FLOW_QUANTILE = 0.15
"""Quantile of the night-time travel time taken as the free-flow time."""
NIGHT_WINDOW: tuple[float, float] = (2.0, 4.0)
"""Local hours between which the night departures lie (both included)."""
NIGHT_STEP_MIN = 30
"""Minutes between two night departures."""
PLANNING_QUANTILE = 0.95
SLOWEST_SHARE = 0.2
"""Share of the slowest trips averaged by the misery index."""

RELIABILITY_INDICES = ("planning_time_index", "buffer_index", "misery_index")
"""The three indices' column names, in the order they are shown."""
INDEX_COLUMNS = (
    "free_flow_min",
    "mean_min",
    "p95_min",
    "slowest20_mean_min",
    "planning_time_index",
    "buffer_index",
    "misery_index",
)


def pool_departures(dist: MixtureDistribution, n_departures: int) -> MixtureDistribution:
    """One equal-weight mixture per query over several departures of it.

    ``dist`` holds ``n_departures`` blocks of ``n`` queries (query ``j`` of block ``k``
    at column ``k n + j``: the same trips at another departure time). Query ``j`` of
    the result is the uniform mixture of the M members of all ``n_departures``
    departures: M * n_departures equally weighted components, which is the travel
    time of a departure drawn uniformly among them. A recalibrated predictive
    (:class:`~vrvm.engine.recalibrated.RecalibratedMixture`) pools as the uniform
    mixture of each departure's recalibrated predictive, (1/K) sum_k G(F_k(t)).

    Examples
    --------
    >>> dist = MixtureDistribution(np.log([[300.0, 600.0, 310.0, 620.0]]), 0.1, transform="log")
    >>> pooled = pool_departures(dist, 2)
    >>> pooled.n_components, len(pooled)
    (2, 2)
    >>> bool(np.allclose(pooled.cdf(305.0), [dist.cdf(305.0)[[0, 2]].mean(), 0.0]))
    True
    """
    n_departures = int(n_departures)
    members, total = dist.loc.shape
    if n_departures < 1 or total % n_departures:
        raise ValueError(
            f"cannot pool {total} queries into {n_departures} departures of the same trips"
        )
    n = total // n_departures

    def stacked(values: np.ndarray) -> np.ndarray:
        # (M, K n) -> (M, K, n) -> (M K, n): component (m, k) of query j
        return values.reshape(members * n_departures, n)

    df = None if dist.df is None else stacked(dist.df)
    pooled = MixtureDistribution(
        stacked(dist.loc),
        stacked(dist.scale),
        df=df,
        transform=dist.transform,
        n_members=dist.n_members * n_departures,  # blocks of twin scales stay blocks
    )
    if isinstance(dist, RecalibratedMixture):
        # component (m, k) sits in row m K + k: departure k's mixture is rows c % K = k
        return RecalibratedMixture.of(pooled, dist.pit_map, groups=dist.groups * n_departures)
    return pooled


def night_departures(start_times, tz: str) -> pd.DatetimeIndex:
    """The night departures of each query's local day, block by block.

    Returns the ``K * n`` departures (K = 5 by default: 02:00, 02:30, ..., 04:00)
    ordered departure-major (block ``k`` holds the k-th night departure of every
    query), as :func:`pool_departures` expects. Naive start times are wall-clock
    times in ``tz``, as the model reads them.

    Examples
    --------
    >>> nights = night_departures(pd.to_datetime(["2016-05-03 08:30"]).tz_localize("UTC"), "UTC")
    >>> len(nights), str(nights[0]), str(nights[-1])
    (5, '2016-05-03 02:00:00+00:00', '2016-05-03 04:00:00+00:00')
    """
    times = pd.DatetimeIndex(start_times)
    local = times if times.tz is None else times.tz_convert(tz).tz_localize(None)
    days = local.normalize()
    first, last = NIGHT_WINDOW
    minutes = np.arange(round(60 * first), round(60 * last) + 1, NIGHT_STEP_MIN)
    naive = pd.DatetimeIndex(
        np.concatenate([(days + pd.Timedelta(minutes=int(m))).to_numpy() for m in minutes])
    )
    # wall-clock times, read as time_of_day_profile reads them across daylight saving
    return naive.tz_localize(tz, ambiguous=True, nonexistent="shift_forward")


def free_flow_seconds(model: TravelTimeModel, queries: pd.DataFrame) -> np.ndarray:
    """Free-flow travel time of each query, in seconds.

    The 15th percentile (:data:`FREE_FLOW_QUANTILE`) of the same trip's travel time
    for a departure drawn uniformly among the night departures of its local day
    (:func:`night_departures`), the night distributions pooled into one mixture by
    :func:`pool_departures`. One model call for all queries.
    """
    nights = night_departures(queries["start_time"], model.tz_)
    n_nights = len(nights) // max(len(queries), 1)
    night = queries.iloc[np.tile(np.arange(len(queries)), n_nights)].reset_index(drop=True)
    night["start_time"] = nights
    pooled = pool_departures(model.predict_dist(night), n_nights)
    return pooled.ppf(FREE_FLOW_QUANTILE)


class FreeFlowCache:
    """Free-flow times already computed with one model, by trip and local day.

    The free-flow time of a trip depends only on its two ends and its local day (the
    night departures of that day), not on the hour it leaves: a server asked again
    and again about the same bases reuses it. Keys are the ends rounded to 1e-6
    degrees and the local date; at most ``max_entries`` are kept, least recently used
    forgotten first. Use one cache per model.

    Examples
    --------
    >>> cache = FreeFlowCache(max_entries=2)
    >>> len(cache)
    0
    """

    def __init__(self, max_entries: int = 100_000) -> None:
        self.max_entries = int(max_entries)
        self._values: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    def free_flow(self, model: TravelTimeModel, queries: pd.DataFrame) -> np.ndarray:
        """:func:`free_flow_seconds` of each query, computing only the ones not kept."""
        local = pd.DatetimeIndex(queries["start_time"])
        if local.tz is not None:
            local = local.tz_convert(model.tz_)
        days = local.normalize().asi8
        ends = np.round(
            queries[["origin_lat", "origin_lon", "dest_lat", "dest_lon"]].to_numpy(float), 6
        )
        keys = [(*row, day) for row, day in zip(map(tuple, ends), days.tolist(), strict=True)]
        out = np.empty(len(keys))
        missing = []
        with self._lock:
            for i, key in enumerate(keys):
                value = self._values.get(key)
                if value is None:
                    missing.append(i)
                else:
                    self._values.move_to_end(key)
                    out[i] = value
        if missing:
            found = free_flow_seconds(model, queries.iloc[missing])
            out[missing] = found
            with self._lock:
                for i, value in zip(missing, found.tolist(), strict=True):
                    self._values[keys[i]] = value
                while len(self._values) > self.max_entries:
                    self._values.popitem(last=False)
        return out


def _variance_matched_lognormal(dist: MixtureDistribution) -> MixtureDistribution:
    """The mixture itself for Gaussian members; for log-t members the variance-matched
    log-normals (scale s sqrt(nu / (nu - 2)), infinite for nu <= 2), which is how
    :meth:`MixtureDistribution.mean` defines the mean of a log-t (it has none)."""
    if dist.df is None:
        return dist
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(dist.df > 2, dist.df / (dist.df - 2), np.inf)
    scale = dist.scale * np.sqrt(np.where(np.isinf(dist.df), 1.0, ratio))
    if not np.all(np.isfinite(scale)):
        raise ValueError("the mean of the slowest trips needs Student-t members with df > 2")
    return MixtureDistribution(dist.loc, scale, transform="log")


#: Gauss-Legendre nodes for the tail mean of a recalibrated predictive.
_TAIL_NODES, _TAIL_WEIGHTS = np.polynomial.legendre.leggauss(64)
#: Upper end of its integral in x = Phi^-1(p): the tail beyond holds 1e-17 of the trips.
_TAIL_END = 8.5


def _recalibrated_tail_mean(dist: RecalibratedMixture, share: float) -> np.ndarray:
    """(1/share) int_{1-share}^1 H^-1(p) dp by 64-point Gauss-Legendre quadrature in
    x = Phi^-1(p) on [Phi^-1(1 - share), 8.5] (the integrand H^-1(Phi(x)) phi(x) is
    smooth there; beyond 8.5 lies 1e-17 of the probability)."""
    start = special.ndtri(1.0 - share)
    half = 0.5 * (_TAIL_END - start)
    x = start + half * (_TAIL_NODES + 1.0)
    # levels past 1 - 2^-53 round to 1 (an infinite quantile): read at the last below 1
    levels = np.minimum(special.ndtr(x), np.nextafter(1.0, 0.0))
    quantiles = dist.ppf(levels[:, None])  # (64, n)
    weights = half * _TAIL_WEIGHTS * stats.norm.pdf(x)
    return weights @ quantiles / share


def tail_mean(dist: MixtureDistribution, share: float = SLOWEST_SHARE) -> np.ndarray:
    r"""Mean of the slowest ``share`` of trips, E[T | T > t_(1-share)], per query.

    Exact, in closed form per member: with c the (1 - share) quantile of the mixture,
    E[T | T > c] = (1/share) (1/M) sum_m E[T_m 1{T_m > c}], where for a log-normal
    member exp(N(mu, s^2)), E[T 1{T > c}] = exp(mu + s^2/2) Phi((mu + s^2 - log c) / s)
    (the partial expectation of the log-normal); for a Gaussian member
    mu S(z) + s phi(z), and for a Student-t member with nu > 1
    mu S_nu(z) + s (nu + z^2) / (nu - 1) f_nu(z), with z = (c - mu) / s. Log-t members
    have no mean: like :meth:`MixtureDistribution.mean`, their variance-matched
    log-normals are used (c is then that mixture's quantile; they agree as nu grows).

    Examples
    --------
    One log-normal, exp(N(0, 1)): E[T | T > t_0.8] = e^(1/2) Phi(1 - z_0.8) / 0.2.

    >>> one = MixtureDistribution([[0.0]], [[1.0]], transform="log")
    >>> expected = np.exp(0.5) * special.ndtr(1 - special.ndtri(0.8)) / 0.2
    >>> bool(np.isclose(tail_mean(one)[0], expected))
    True
    """
    share = float(share)
    if not 0 < share < 1:
        raise ValueError(f"share must lie strictly between 0 and 1, got {share}")
    if isinstance(dist, RecalibratedMixture):
        return _recalibrated_tail_mean(dist, share)
    if dist.transform == "log":
        matched = _variance_matched_lognormal(dist)
        c = matched.ppf(1 - share)
        mu, s = matched.loc, matched.scale
        with np.errstate(over="ignore"):
            partial = np.exp(mu + 0.5 * s**2) * special.ndtr((mu + s**2 - np.log(c)) / s)
        return partial.mean(axis=0) / share
    c = dist.ppf(1 - share)
    mu, s = dist.loc, dist.scale
    z = (c - mu) / s
    if dist.df is None:
        partial = mu * special.ndtr(-z) + s * stats.norm.pdf(z)
    else:
        nu = dist.df
        if np.any(nu <= 1):
            raise ValueError("the mean of the slowest trips needs Student-t members with df > 1")
        gaussian = np.isinf(nu)
        finite = np.where(gaussian, 2.0, nu)
        t_part = mu * stats.t.sf(z, finite) + s * (finite + z**2) / (finite - 1) * stats.t.pdf(
            z, finite
        )
        g_part = mu * special.ndtr(-z) + s * stats.norm.pdf(z)
        partial = np.where(gaussian, g_part, t_part)
    return partial.mean(axis=0) / share


def indices_from(dist: MixtureDistribution, free_flow_s) -> pd.DataFrame:
    """The indices of each query of ``dist`` given its free-flow time in seconds.

    Columns :data:`INDEX_COLUMNS`: ``free_flow_min``, ``mean_min``, ``p95_min``,
    ``slowest20_mean_min`` (minutes) and the three indices (ratios).

    Examples
    --------
    >>> dist = MixtureDistribution(np.log([[600.0]]), 0.2, transform="log")
    >>> row = indices_from(dist, 480.0).iloc[0]
    >>> round(float(row["planning_time_index"]), 3), round(float(row["buffer_index"]), 3)
    (1.737, 0.362)
    """
    free_flow = np.broadcast_to(np.asarray(free_flow_s, dtype=np.float64), dist.shape)
    mean = dist.mean()
    p95 = dist.ppf(PLANNING_QUANTILE)
    slowest = tail_mean(dist, SLOWEST_SHARE)
    return pd.DataFrame(
        {
            "free_flow_min": free_flow / 60.0,
            "mean_min": mean / 60.0,
            "p95_min": p95 / 60.0,
            "slowest20_mean_min": slowest / 60.0,
            "planning_time_index": p95 / free_flow,
            "buffer_index": (p95 - mean) / mean,
            "misery_index": slowest / free_flow,
        }
    )


def reliability_indices(
    model: TravelTimeModel,
    queries: pd.DataFrame,
    dist: MixtureDistribution | None = None,
    *,
    cache: FreeFlowCache | None = None,
) -> pd.DataFrame:
    """Planning time, buffer and misery index of each query (see the module docstring).

    ``queries`` are model queries (``origin_lat``, ..., ``start_time``); ``dist`` their
    predictive distribution if already computed (else predicted here); ``cache`` keeps
    the free-flow times of this model across calls. Returns :func:`indices_from`'s
    columns, one row per query.
    """
    if dist is None:
        dist = model.predict_dist(queries)
    free_flow = (
        free_flow_seconds(model, queries) if cache is None else cache.free_flow(model, queries)
    )
    return indices_from(dist, free_flow)


_MEANINGS = {
    "planning_time_index": (
        "Planning time index",
        "95th percentile / free-flow time: plan this many times the free-flow time to be "
        "on time 19 times out of 20.",
    ),
    "buffer_index": (
        "Buffer index",
        "(95th percentile - mean) / mean: the extra time, as a share of the mean trip, to "
        "be on time 19 times out of 20.",
    ),
    "misery_index": (
        "Misery index",
        "Mean of the slowest 20 % of trips / free-flow time: how bad the bad days are.",
    ),
}


@dataclass(frozen=True)
class ReliabilityIndices:
    """The reliability indices of one trip (times in minutes)."""

    free_flow_min: float
    mean_min: float
    p95_min: float
    slowest20_mean_min: float
    planning_time_index: float
    buffer_index: float
    misery_index: float

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, row: int = 0) -> ReliabilityIndices:
        """The indices of one row of :func:`indices_from` / :func:`reliability_indices`."""
        return cls(**{name: float(frame[name].iloc[row]) for name in INDEX_COLUMNS})

    def table(self) -> pd.DataFrame:
        """``index``, ``value`` and ``meaning`` of the three indices."""
        return pd.DataFrame(
            [
                {"index": label, "value": getattr(self, name), "meaning": meaning}
                for name, (label, meaning) in _MEANINGS.items()
            ]
        )

    def free_flow_sentence(self) -> str:
        """How the free-flow time was found, with its value."""
        first, last = NIGHT_WINDOW
        return (
            f"Free-flow time {self.free_flow_min:.1f} min: the {100 * FREE_FLOW_QUANTILE:g}th "
            f"percentile of the same trip leaving between {first:02.0f}:00 and {last:02.0f}:00 "
            f"that day. Mean {self.mean_min:.1f} min, 95th percentile {self.p95_min:.1f} min, "
            f"slowest 20 % of trips {self.slowest20_mean_min:.1f} min on average."
        )


def definitions() -> str:
    """The indices' definitions in one sentence, for captions.

    Examples
    --------
    >>> definitions().split(";")[0]
    'Reliability indices (FHWA): planning time = 95th percentile / free-flow time'
    """
    first, last = NIGHT_WINDOW
    return (
        f"Reliability indices (FHWA): planning time = {100 * PLANNING_QUANTILE:g}th percentile "
        f"/ free-flow time; buffer = ({100 * PLANNING_QUANTILE:g}th percentile - mean) / mean; "
        f"misery = mean of the slowest {100 * SLOWEST_SHARE:g} % / free-flow time. Free flow "
        f"is the {100 * FREE_FLOW_QUANTILE:g}th percentile of the same trip leaving between "
        f"{first:02.0f}:00 and {last:02.0f}:00 that day."
    )


def od_indices(
    model: TravelTimeModel, queries: pd.DataFrame, dist: MixtureDistribution | None = None
) -> ReliabilityIndices:
    """The indices of the first query (see :func:`reliability_indices`)."""
    first = None if dist is None else dist[0]
    return ReliabilityIndices.from_frame(reliability_indices(model, queries.iloc[:1], first))
