"""When to leave: the latest departure that arrives by a deadline, and departure windows.

**Arrive by.** To be at B by a deadline d with probability p, leave A at the latest
departure t with

    P(t + T_t <= d) = F_t(d - t) >= p,

where F_t is the predictive cdf of the travel time T_t of a departure at t. Because
F_t itself changes with the time of day (the rush hour is slower), this is a search,
not d minus a quantile: :func:`arrive_by` evaluates the on-time probability on a grid
of departures (every ``step_s`` seconds over the ``search_hours`` before the deadline,
in one model call), takes the latest grid departure that meets p and refines the
crossing between it and the next grid departure (which does not) by bisection to the
second (at most ceil(log2(step_s)) model calls of one query).

**Departure windows.** A departure drawn uniformly from a window [a, b] has the travel
time whose distribution is the average of F_t over the window. :func:`depart_within`
approximates it by an equal-weight mixture over departures at the midpoints of
``step_s``-second slices of the window (one a minute by default): every member of every
departure becomes one component (:func:`vrvm.services.answers.indices.pool_departures`), and the
result is shown like a single departure's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta

import numpy as np
import pandas as pd

from vrvm.engine.mixture import MixtureDistribution
from vrvm.services.answers.forecast import (
    ODForecast,
    density_curve,
    forecast_od,
    interval_table,
    quantile_table,
    query_frame,
)
from vrvm.services.answers.indices import ReliabilityIndices, od_indices, pool_departures
from vrvm.services.display.csv_cells import safe_cells
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import Place, busiest_zones, place_from_zone
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.places.geo import haversine_km

__all__ = [
    "ARRIVE_QUANTILES",
    "DEFAULT_SEARCH_HOURS",
    "DEFAULT_STEP_S",
    "ArriveBy",
    "DepartureWindow",
    "arrive_by",
    "curve_csv",
    "default_deadline",
    "default_pair",
    "depart_within",
    "local_time",
    "on_time_probability",
    "window_departures",
    "window_distribution",
]

DEFAULT_SEARCH_HOURS = 3.0
DEFAULT_STEP_S = 60
MAX_SEARCH_HOURS = 24.0
ARRIVE_QUANTILES: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95)


# --------------------------------------------------------------------------- inputs
def _check_prob(prob: float) -> float:
    prob = float(prob)
    if not 0 < prob < 1:
        raise ValueError(f"the probability must lie strictly between 0 and 1, got {prob}")
    return prob


def local_time(value, tz: str, what: str = "departure") -> pd.Timestamp:
    """``value`` as a timestamp in ``tz``: a naive one is a wall-clock time there (an
    ambiguous one the first, daylight-saving one; one that does not exist moved forward),
    an aware one converted. ``ValueError`` names ``what`` when ``value`` is no time.

    Examples
    --------
    >>> local_time("2016-05-03 08:00", "America/Chicago")
    Timestamp('2016-05-03 08:00:00-0500', tz='America/Chicago')
    >>> local_time("2016-11-06 01:30", "America/Chicago").utcoffset()  # the first 01:30
    datetime.timedelta(days=-1, seconds=68400)
    """
    try:
        stamp = pd.Timestamp(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what}: {value!r} is not a date and time") from None
    if pd.isna(stamp):
        raise ValueError(f"{what}: a date and time is needed, got {value!r}")
    if stamp.tz is None:
        return stamp.tz_localize(tz, ambiguous=True, nonexistent="shift_forward")
    return stamp.tz_convert(tz)


def _od_queries(origin: Place, dest: Place, departures: pd.DatetimeIndex) -> pd.DataFrame:
    """Model queries of one trip at many departure times (one row each)."""
    frame = query_frame(origin, dest, departures[0])
    frame = frame.iloc[np.zeros(len(departures), dtype=np.intp)].reset_index(drop=True)
    frame["start_time"] = departures
    return frame


def default_deadline(tz: str, now: datetime | None = None) -> pd.Timestamp:
    """09:00 on the next weekday after today, in ``tz`` (the arrive-by section's default).

    Examples
    --------
    >>> default_deadline("UTC", pd.Timestamp("2024-03-08 17:30", tz="UTC"))  # a Friday
    Timestamp('2024-03-11 09:00:00+0000', tz='UTC')
    >>> default_deadline("UTC", pd.Timestamp("2024-03-05 07:00", tz="UTC"))
    Timestamp('2024-03-06 09:00:00+0000', tz='UTC')
    """
    now = pd.Timestamp.now(tz=tz) if now is None else pd.Timestamp(now).tz_convert(tz)
    day = now.date() + timedelta(days=1)
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return local_time(datetime.combine(day, time(9, 0)), tz, "deadline")


def default_pair(area: ServiceArea, *, candidates: int = 10) -> tuple[Place, Place]:
    """A busy trip to open on: from the zone with the most trip ends to the one of the
    next ``candidates`` busiest zones farthest from it."""
    if len(area.grid) < 2:
        raise ValueError("the service area needs at least two zones")
    first, *others = (place_from_zone(area, z) for z in busiest_zones(area, 1 + candidates))
    km = [haversine_km(first.lat, first.lon, o.lat, o.lon) for o in others]
    return first, others[int(np.argmax(km))]


# --------------------------------------------------------------------------- arrive by
def on_time_probability(
    model: TravelTimeModel, origin: Place, dest: Place, departures, deadline
) -> np.ndarray:
    """P(arrive by ``deadline``) = F_t(deadline - t) for each departure t (one model call).

    Departures at or after the deadline have probability 0.
    """
    departures = pd.DatetimeIndex(departures)
    deadline = local_time(deadline, model.tz_, "deadline")
    if departures.tz is None:
        departures = departures.tz_localize(model.tz_, ambiguous=True)
    dist = model.predict_dist(_od_queries(origin, dest, departures))
    return _on_time(dist, (deadline - departures).total_seconds().to_numpy())


def _on_time(dist: MixtureDistribution, budget_s: np.ndarray) -> np.ndarray:
    budget_s = np.asarray(budget_s, dtype=np.float64)
    return np.where(budget_s > 0, dist.cdf(np.maximum(budget_s, 0.0)), 0.0)


@dataclass(frozen=True)
class ArriveBy:
    """The latest departure that arrives by the deadline with probability ``prob``.

    Attributes
    ----------
    origin, dest : Place
    deadline : pandas.Timestamp
        When to be at the destination (in the model's time zone).
    prob : float
        The required probability p of arriving by the deadline.
    search_hours, step_s : float, int
        The searched window before the deadline and the grid's spacing.
    curve : pandas.DataFrame
        One row per grid departure, earliest first: ``departure``, ``minutes_before``
        (the deadline), ``prob_on_time`` (P(arrive by the deadline)), ``median_min`` and
        ``quantile_min`` (the travel time's median and p-quantile).
    departure : pandas.Timestamp or None
        The latest departure (to the second) with P(on time) >= p; None if no departure
        in the searched window meets p (see ``reason``).
    prob_at_departure : float or None
        P(on time) when leaving at ``departure``.
    best_departure, best_prob : pandas.Timestamp, float
        The grid departure with the highest P(on time), and that probability.
    forecast : ODForecast or None
        The trip leaving at ``departure``: median, intervals, and P(T <= the time left)
        (= ``prob_at_departure``).
    quantiles : pandas.DataFrame or None
        The travel time's quantiles (``q``, ``minutes``) leaving at ``departure``.
    indices : ReliabilityIndices
        Reliability indices leaving at ``departure`` (or ``best_departure``).
    reason : str
        Why there is no answer ("" when there is one).
    n_refinements : int
        Bisection steps (model calls of one query) used to reach the second.
    """

    origin: Place
    dest: Place
    deadline: pd.Timestamp
    prob: float
    search_hours: float
    step_s: int
    curve: pd.DataFrame = field(repr=False)
    departure: pd.Timestamp | None
    prob_at_departure: float | None
    best_departure: pd.Timestamp
    best_prob: float
    forecast: ODForecast | None = field(repr=False)
    quantiles: pd.DataFrame | None = field(repr=False)
    indices: ReliabilityIndices = field(repr=False)
    reason: str = ""
    n_refinements: int = 0

    @property
    def found(self) -> bool:
        return self.departure is not None

    @property
    def minutes_allowed(self) -> float | None:
        """Deadline minus the latest departure, in minutes (None without an answer)."""
        if self.departure is None:
            return None
        return (self.deadline - self.departure).total_seconds() / 60.0

    def arrival_table(self) -> pd.DataFrame | None:
        """Leaving at ``departure``: each quantile of the travel time and the arrival
        time it gives (``quantile`` "95 %", ``minutes``, ``arrival`` "HH:MM:SS")."""
        if self.departure is None or self.quantiles is None:
            return None
        arrivals = self.departure + pd.to_timedelta(self.quantiles["minutes"], unit="min")
        return pd.DataFrame(
            {
                "quantile": [_percent(q) for q in self.quantiles["q"]],
                "minutes": self.quantiles["minutes"].to_numpy(),
                "arrival": [f"{stamp:%H:%M:%S}" for stamp in arrivals],
            }
        )

    def _clock(self, stamp: pd.Timestamp) -> str:
        same_day = stamp.date() == self.deadline.date()
        return f"{stamp:%H:%M}" if same_day else f"{stamp:%a %d %b %H:%M}"

    def sentence(self) -> str:
        """The answer in words (plain text: escape the places' labels before Markdown).

        The departure is rounded down to the minute (leaving earlier only helps near
        the answer); the exact second is in ``departure``.
        """
        if self.departure is None:
            return self.reason
        leave = self._clock(self.departure.floor("min"))
        return (
            f"Leave {self.origin.label} by {leave} to be at {self.dest.label} by "
            f"{self._clock(self.deadline)} with {_percent(self.prob)} probability."
        )


def _percent(p: float) -> str:
    """A probability as a percentage, with decimals only when it needs them.

    Examples
    --------
    >>> _percent(0.95), _percent(0.975), _percent(0.5), _percent(0.9999)
    ('95 %', '97.5 %', '50 %', '99.99 %')
    """
    return f"{100 * p:.4g} %"


def _span(hours: float) -> str:
    """A searched span in words.

    Examples
    --------
    >>> _span(3.0), _span(1.5), _span(0.25)
    ('3 h', '1.5 h', '15 min')
    """
    return f"{hours:g} h" if hours >= 1 else f"{60 * hours:g} min"


def _no_answer(prob: float, search_hours: float, best: pd.Timestamp, best_prob: float, earliest):
    text = (
        f"No departure in the {_span(search_hours)} before the deadline arrives by it with "
        f"{_percent(prob)} probability. The best is {_percent(best_prob)}, leaving at "
        f"{best:%H:%M}"
    )
    if best == earliest:
        return (
            text + ", the earliest departure searched: search further back, or accept a "
            "lower probability."
        )
    return (
        text + "; leaving earlier than that does not help (the trip is slower then): "
        "accept a lower probability or a later deadline."
    )


def arrive_by(
    model: TravelTimeModel,
    origin: Place,
    dest: Place,
    deadline,
    prob: float,
    *,
    search_hours: float = DEFAULT_SEARCH_HOURS,
    step_s: int = DEFAULT_STEP_S,
    quantiles: Sequence[float] = ARRIVE_QUANTILES,
) -> ArriveBy:
    """The latest departure from ``origin`` that reaches ``dest`` by ``deadline`` with
    probability at least ``prob`` (see the module docstring for the search).

    Parameters
    ----------
    model : TravelTimeModel
    origin, dest : Place
    deadline : timestamp or str
        Naive times are wall-clock times in the model's time zone ``model.tz_``.
    prob : float
        Required probability p of arriving by the deadline, in (0, 1).
    search_hours : float, default 3
        How far before the deadline departures are searched (at most 24 h).
    step_s : int, default 60
        Spacing of the grid of departures, in seconds (the curve's resolution).
    quantiles : sequence of float
        Travel-time quantiles reported at the answer.

    Returns
    -------
    ArriveBy
    """
    prob = _check_prob(prob)
    deadline = local_time(deadline, model.tz_, "deadline").floor("s")
    search_hours = float(search_hours)
    if not 0 < search_hours <= MAX_SEARCH_HOURS:
        raise ValueError(f"search_hours must lie in (0, {MAX_SEARCH_HOURS:g}], got {search_hours}")
    step_s = int(step_s)
    if step_s < 1 or step_s > 3600 * search_hours:
        raise ValueError(
            f"step_s must be a whole number of seconds from 1 to the searched window, got {step_s}"
        )
    n_steps = int(3600 * search_hours // step_s)
    leads = np.arange(n_steps + 1, dtype=np.int64) * step_s  # seconds before the deadline
    departures = deadline - pd.to_timedelta(leads, unit="s")
    dist = model.predict_dist(_od_queries(origin, dest, departures))
    probs = _on_time(dist, leads)
    spread = dist.ppf(np.array([[0.5], [prob]])) / 60.0
    order = slice(None, None, -1)  # earliest departure first
    curve = pd.DataFrame(
        {
            "departure": departures[order],
            "minutes_before": leads[order] / 60.0,
            "prob_on_time": probs[order],
            "median_min": spread[0][order],
            "quantile_min": spread[1][order],
        }
    )
    best = n_steps - int(np.argmax(probs))  # the latest of equal maxima, in the curve
    best_departure = curve["departure"].iloc[best]
    best_prob = float(curve["prob_on_time"].iloc[best])
    meets = np.flatnonzero(probs >= prob)
    common = dict(
        origin=origin,
        dest=dest,
        deadline=deadline,
        prob=prob,
        search_hours=search_hours,
        step_s=step_s,
        curve=curve,
        best_departure=best_departure,
        best_prob=best_prob,
    )
    if meets.size == 0:
        reason = _no_answer(prob, search_hours, best_departure, best_prob, departures[-1])
        indices = od_indices(model, _od_queries(origin, dest, pd.DatetimeIndex([best_departure])))
        return ArriveBy(
            **common,
            departure=None,
            prob_at_departure=None,
            forecast=None,
            quantiles=None,
            indices=indices,
            reason=reason,
        )
    # leads[k] meets p and leads[k - 1] does not (k >= 1: P = 0 at the deadline itself);
    # bisect on whole seconds keeping lo meeting p and hi not
    k = int(meets[0])
    lo, hi = int(leads[k]), int(leads[k - 1])
    lo_prob = float(probs[k])
    steps = 0
    for _ in range(max(1, math.ceil(math.log2(step_s))) + 1):
        if lo - hi <= 1:
            break
        mid = (lo + hi) // 2
        when = pd.DatetimeIndex([deadline - pd.Timedelta(seconds=mid)])
        p_mid = float(_on_time(model.predict_dist(_od_queries(origin, dest, when)), [mid])[0])
        steps += 1
        if p_mid >= prob:
            lo, lo_prob = mid, p_mid
        else:
            hi = mid
    departure = deadline - pd.Timedelta(seconds=lo)
    forecast = forecast_od(model, origin, dest, departure, threshold_min=lo / 60.0)
    return ArriveBy(
        **common,
        departure=departure,
        prob_at_departure=lo_prob,
        forecast=forecast,
        quantiles=quantile_table(forecast.dist, [*quantiles]),
        indices=od_indices(
            model, _od_queries(origin, dest, pd.DatetimeIndex([departure])), forecast.dist
        ),
        n_refinements=steps,
    )


def curve_csv(answer: ArriveBy, *, synthetic: bool = False) -> bytes:
    """The curve P(arrive by the deadline) against departure time as CSV (UTF-8)."""
    out = answer.curve.copy()
    out["departure"] = [stamp.isoformat() for stamp in out["departure"]]
    out = out.rename(columns={"quantile_min": f"q{answer.prob:g}_min"})
    out.insert(0, "origin_lat", answer.origin.lat)
    out.insert(1, "origin_lon", answer.origin.lon)
    out.insert(2, "dest_lat", answer.dest.lat)
    out.insert(3, "dest_lon", answer.dest.lon)
    out.insert(4, "deadline", answer.deadline.isoformat())
    out.insert(5, "required_prob", answer.prob)
    out["latest_departure"] = "" if answer.departure is None else answer.departure.isoformat()
    if synthetic:
        out["data"] = "SYNTHETIC (Synthetica, not a real city)"
    return safe_cells(out).to_csv(index=False, float_format="%.8g").encode("utf-8")


# --------------------------------------------------------------------------- windows
def window_departures(start, end, *, step_s: int = DEFAULT_STEP_S) -> pd.DatetimeIndex:
    """Departures standing for a window: the midpoints of ``ceil((end - start) / step_s)``
    equal slices of [start, end] (the start alone for an empty window).

    Examples
    --------
    >>> start = pd.Timestamp("2016-05-03 08:00")
    >>> times = window_departures(start, start + pd.Timedelta(hours=1))
    >>> len(times), str(times[0].time()), str(times[-1].time())
    (60, '08:00:30', '08:59:30')
    """
    start, end = pd.Timestamp(start), pd.Timestamp(end)
    if end < start:
        raise ValueError(f"the window ends ({end}) before it starts ({start})")
    if end - start > pd.Timedelta(hours=MAX_SEARCH_HOURS):
        raise ValueError(f"a departure window spans at most {MAX_SEARCH_HOURS:g} hours")
    if int(step_s) < 1:
        raise ValueError(f"step_s must be at least 1 second, got {step_s}")
    span_s = (end - start).total_seconds()
    if span_s == 0:
        return pd.DatetimeIndex([start])
    n = math.ceil(span_s / int(step_s))
    offsets = (np.arange(n) + 0.5) * (span_s / n)
    return pd.DatetimeIndex(start + pd.to_timedelta(offsets, unit="s"))


def window_distribution(
    model: TravelTimeModel,
    origin: Place,
    dest: Place,
    start,
    end,
    *,
    step_s: int = DEFAULT_STEP_S,
) -> MixtureDistribution:
    """Travel time of a departure drawn uniformly from [start, end]: one query, the
    equal-weight mixture of every member at every departure of :func:`window_departures`."""
    tz = model.tz_
    departures = window_departures(
        local_time(start, tz, "window start"), local_time(end, tz, "window end"), step_s=step_s
    )
    dist = model.predict_dist(_od_queries(origin, dest, departures))
    return pool_departures(dist, len(departures))


@dataclass(frozen=True)
class DepartureWindow:
    """The trip for a departure anywhere in a window, shown like a single departure.

    ``forecast`` is an :class:`ODForecast` of the pooled distribution (its
    ``departure`` is the window's start); ``density`` the mixture density (minutes,
    density: its hundreds of components are not drawn); ``quantiles`` its quantiles;
    ``indices`` its reliability indices (free flow at night on the start's day).
    """

    forecast: ODForecast
    start: pd.Timestamp
    end: pd.Timestamp
    n_departures: int
    density: pd.DataFrame = field(repr=False)
    quantiles: pd.DataFrame = field(repr=False)
    indices: ReliabilityIndices = field(repr=False)

    def sentence(self) -> str:
        """A sentence a planner can paste into a report."""
        return self.forecast.summary_text(
            f"Leaving at any time between {self.start:%H:%M} and {self.end:%H:%M} "
            f"({self.start:%a %d %b %Y})"
        )


def depart_within(
    model: TravelTimeModel,
    origin: Place,
    dest: Place,
    start,
    end,
    threshold_min: float,
    *,
    step_s: int = DEFAULT_STEP_S,
    quantiles: Sequence[float] = ARRIVE_QUANTILES,
) -> DepartureWindow:
    """Median, mean, intervals, P(T <= threshold), density and indices of the trip for a
    departure uniform over [start, end] (:func:`window_distribution`)."""
    tz = model.tz_
    start, end = local_time(start, tz, "window start"), local_time(end, tz, "window end")
    n_departures = len(window_departures(start, end, step_s=step_s))
    dist = window_distribution(model, origin, dest, start, end, step_s=step_s)
    forecast = ODForecast(
        origin=origin,
        dest=dest,
        departure=start,
        median_min=float(dist.median()[0]) / 60.0,
        mean_min=float(dist.mean()[0]) / 60.0,
        std_min=float(dist.std()[0]) / 60.0,
        intervals=interval_table(dist),
        threshold_min=float(threshold_min),
        prob_within=float(dist.prob_within(60.0 * float(threshold_min))[0]),
        dist=dist,
    )
    queries = _od_queries(origin, dest, pd.DatetimeIndex([start]))
    return DepartureWindow(
        forecast=forecast,
        start=start,
        end=end,
        n_departures=n_departures,
        density=density_curve(dist, members=False),
        quantiles=quantile_table(dist, [*quantiles]),
        indices=od_indices(model, queries, dist),
    )
