"""The answer for one trip: median, mean, intervals, P(arrive within T), density, day profile.

:func:`answer_od` is what the Predict page shows for an origin, a destination and a
departure time, computed in one call: the predictive summary (:class:`ODForecast`), the
predictive density with its members, the quantiles, the time-of-day profile (fan
chart), the observed training trips between the two zones, and how much data stands
behind the answer (:mod:`vrvm.services.map.support`: the training trips near the origin and
the destination, and how far the ensemble's members disagree), and the trip's reliability
indices (:mod:`vrvm.services.answers.indices`). Times are in minutes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time

import h3
import numpy as np
import pandas as pd

from vrvm.engine.mixture import MixtureDistribution
from vrvm.engine.recalibrated import RecalibratedMixture
from vrvm.services.answers.indices import ReliabilityIndices, od_indices
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import Place
from vrvm.services.map.support import (
    PairSupport,
    minute_of_day,
    observed_frame,
    pair_support,
    weekday_of,
)
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.places.zones import latlng_to_zone
from vrvm.trips.store.trip_table import TripTable

__all__ = [
    "INTERVAL_LEVELS",
    "ODAnswer",
    "ODForecast",
    "answer_od",
    "combine_departure",
    "default_departure",
    "density_curve",
    "density_description",
    "forecast_od",
    "interval_table",
    "member_medians",
    "observed_pair_trips",
    "od_support",
    "quantile_table",
    "query_frame",
    "time_of_day_profile",
]

INTERVAL_LEVELS: tuple[float, ...] = (0.5, 0.8, 0.95)


def default_departure(tz: str, now: datetime | None = None) -> pd.Timestamp:
    """Now in the model's time zone, rounded up to the next 5 minutes.

    Examples
    --------
    >>> default_departure("UTC", pd.Timestamp("2024-03-05 08:11:30", tz="UTC"))
    Timestamp('2024-03-05 08:15:00+0000', tz='UTC')
    """
    now = pd.Timestamp.now(tz=tz) if now is None else pd.Timestamp(now).tz_convert(tz)
    return now.ceil("5min")


def combine_departure(day: date, clock: time, tz: str) -> pd.Timestamp:
    """A local date and wall-clock time in ``tz`` as a timezone-aware timestamp."""
    stamp = pd.Timestamp(datetime.combine(day, clock))
    return stamp.tz_localize(tz, ambiguous=True, nonexistent="shift_forward")


def query_frame(
    origin: Place, dest: Place | Sequence[Place] | pd.DataFrame, departure
) -> pd.DataFrame:
    """Model queries from one origin to one or many destinations at one departure time."""
    if isinstance(dest, pd.DataFrame):
        d_lat, d_lon = dest["lat"].to_numpy(float), dest["lon"].to_numpy(float)
    elif isinstance(dest, Place):
        d_lat, d_lon = np.array([dest.lat]), np.array([dest.lon])
    else:
        d_lat = np.array([p.lat for p in dest], dtype=float)
        d_lon = np.array([p.lon for p in dest], dtype=float)
    n = d_lat.size
    return pd.DataFrame(
        {
            "origin_lat": np.full(n, origin.lat),
            "origin_lon": np.full(n, origin.lon),
            "dest_lat": d_lat,
            "dest_lon": d_lon,
            "start_time": pd.DatetimeIndex([pd.Timestamp(departure)] * n),
        }
    )


def interval_table(
    dist: MixtureDistribution, levels: Sequence[float] = INTERVAL_LEVELS
) -> pd.DataFrame:
    """Central predictive intervals of the first query, in minutes.

    Columns ``level`` (0.5, ...), ``interval`` ("80 %"), ``lower_min``, ``upper_min``,
    ``width_min``.
    """
    rows = []
    for level in levels:
        lo, hi = dist.interval(level)
        rows.append(
            {
                "level": float(level),
                "interval": f"{100 * level:g} %",
                "lower_min": float(lo[0]) / 60.0,
                "upper_min": float(hi[0]) / 60.0,
                "width_min": float(hi[0] - lo[0]) / 60.0,
            }
        )
    return pd.DataFrame(rows)


def quantile_table(dist: MixtureDistribution, quantiles: Sequence[float]) -> pd.DataFrame:
    """Predictive quantiles of the first query, in minutes (``q``, ``minutes``)."""
    q = np.asarray(quantiles, dtype=float)
    values = dist.ppf(q[:, None])[:, 0] / 60.0
    return pd.DataFrame({"q": q, "minutes": values})


@dataclass(frozen=True)
class ODForecast:
    """Everything the page says about one trip (times in minutes)."""

    origin: Place
    dest: Place
    departure: pd.Timestamp
    median_min: float
    mean_min: float
    std_min: float
    intervals: pd.DataFrame
    threshold_min: float
    prob_within: float
    dist: MixtureDistribution = field(repr=False)

    def summary_text(self, leaving: str | None = None) -> str:
        """A sentence a planner can paste into a report; ``leaving`` replaces its start
        ("Leaving Tue 03 May 2016 08:15", for a departure window for example)."""
        ninety = self.intervals.set_index("level")
        if leaving is None:
            leaving = f"Leaving {self.departure:%a %d %b %Y %H:%M}"
        line = f"{leaving}: typically {self.median_min:.0f} min (median)"
        if 0.8 in ninety.index:
            lo, hi = ninety.loc[0.8, ["lower_min", "upper_min"]]
            line += f", 8 in 10 trips take {lo:.0f}-{hi:.0f} min"
        line += f"; P(arrive within {self.threshold_min:g} min) = {100 * self.prob_within:.0f} %."
        return line

    def answer_sentence(self) -> str:
        """The answer in one plain sentence naming both places, to copy onto a slide.

        Examples
        --------
        >>> import numpy as np
        >>> from vrvm import MixtureDistribution
        >>> dist = MixtureDistribution(np.log([[600.0]]), 0.2, df=np.array([[30.0]]),
        ...                            transform="log")
        >>> a, b = Place(0.0, 0.0, "a", "Harbour"), Place(0.1, 0.1, "b", "Old Town")
        >>> answer = ODForecast(a, b, pd.Timestamp("2024-03-05 08:15"), 10.0, 10.2, 2.0,
        ...                     interval_table(dist), 12.0, 0.8, dist)
        >>> answer.answer_sentence()
        'From Harbour to Old Town, leaving Tue 05 Mar 2024 08:15: typically 10 min (median), 8 in 10 trips take 8-13 min; P(arrive within 12 min) = 80 %.'
        """  # noqa: E501
        leaving = f"leaving {self.departure:%a %d %b %Y %H:%M}"
        return self.summary_text(f"From {self.origin.label} to {self.dest.label}, {leaving}")

    def at_threshold(self, threshold_min: float) -> ODForecast:
        """The same forecast for another threshold: P(T <= threshold) from the same
        predictive distribution, as :func:`forecast_od` computes it.

        Examples
        --------
        >>> import numpy as np
        >>> from vrvm import MixtureDistribution
        >>> dist = MixtureDistribution(np.log([[600.0]]), 0.2, df=np.array([[30.0]]),
        ...                            transform="log")
        >>> a, b = Place(0.0, 0.0, "a", "Harbour"), Place(0.1, 0.1, "b", "Old Town")
        >>> answer = ODForecast(a, b, pd.Timestamp("2024-03-05 08:15"), 10.0, 10.2, 2.0,
        ...                     interval_table(dist), 12.0, 0.8, dist)
        >>> round(answer.at_threshold(10.0).prob_within, 2)
        0.5
        """
        return replace(
            self,
            threshold_min=float(threshold_min),
            prob_within=float(self.dist.prob_within(60.0 * threshold_min)[0]),
        )


def forecast_od(
    model: TravelTimeModel,
    origin: Place,
    dest: Place,
    departure,
    threshold_min: float,
    *,
    levels: Sequence[float] = INTERVAL_LEVELS,
) -> ODForecast:
    """Predictive summary of one trip: median, mean, intervals and P(T <= threshold)."""
    dist = model.predict_dist(query_frame(origin, dest, departure))
    return ODForecast(
        origin=origin,
        dest=dest,
        departure=pd.Timestamp(departure),
        median_min=float(dist.median()[0]) / 60.0,
        mean_min=float(dist.mean()[0]) / 60.0,
        std_min=float(dist.std()[0]) / 60.0,
        intervals=interval_table(dist, levels),
        threshold_min=float(threshold_min),
        prob_within=float(dist.prob_within(60.0 * threshold_min)[0]),
        dist=dist,
    )


def density_curve(
    dist: MixtureDistribution,
    *,
    n_points: int = 300,
    lower_q: float = 0.001,
    upper_q: float = 0.995,
    members: bool = True,
) -> pd.DataFrame:
    """The predictive density of the first query and its members, per minute.

    Columns ``minutes``, ``density`` (probability per minute) and, unless
    ``members=False``, ``member_0``, ... (each member's density divided by the number
    of members, so that they add up to the mixture: what each member contributes).
    """
    lo, hi = dist.ppf(np.array([[lower_q], [upper_q]]))[:, 0]
    pad = 0.05 * (hi - lo)
    t = np.linspace(max(lo - pad, 1e-3 * lo), hi + pad, n_points)
    density = dist.pdf(t[:, None])[:, 0] * 60.0
    frame = pd.DataFrame({"minutes": t / 60.0, "density": density})
    if not members:
        return frame
    parts = dist.member_pdf(t[:, None])[:, :, 0] * 60.0 / dist.n_members
    for m in range(dist.n_members):
        frame[f"member_{m}"] = parts[m]
    return frame


def density_description(dist: MixtureDistribution, *, forest: bool = False) -> str:
    """What the density chart of ``dist`` shows, in one sentence for its caption;
    ``forest``: the model pools its members with a forest's neighbours
    (:meth:`TravelTimeModel.forest_pooled
    <vrvm.trips.model.travel_time.TravelTimeModel.forest_pooled>`).

    Examples
    --------
    >>> dist = MixtureDistribution(np.log([[600.0], [660.0]]), 0.2, transform="log")
    >>> density_description(dist)[:38]
    'Exact mixture of 2 ensemble members (f'
    >>> density_description(dist, forest=True)[:60]
    'The mixture of 2 ensemble members, each pooled half and half'
    """
    members = dist.n_members
    if forest:
        mapped = (
            " and read through the pool's PIT map" if isinstance(dist, RecalibratedMixture) else ""
        )
        return (
            f"The mixture of {members} ensemble members, each pooled half and half with "
            "the durations of the trip's neighbours in a quantile forest (training trips "
            f"that share its leaves){mapped} (faint curves: each member's share of the "
            "density, its neighbours' included, so they add up to it)."
        )
    if isinstance(dist, RecalibratedMixture):
        return (
            f"The mixture of {members} ensemble members read through the model's PIT map, "
            "which corrects the shape of its intervals to what held-out trips showed "
            "(faint curves: each member's share of the density, so they add up to it)."
        )
    return (
        f"Exact mixture of {members} ensemble members (faint curves, each drawn at 1/M of "
        "its density so they add up to the mixture)."
    )


PROFILE_QUANTILES: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95)


def _q_name(q: float) -> str:
    return f"q{round(100 * q):02d}"


def time_of_day_profile(
    model: TravelTimeModel,
    origin: Place,
    dest: Place,
    day: date | datetime | pd.Timestamp,
    *,
    step_min: int = 15,
    quantiles: Sequence[float] = PROFILE_QUANTILES,
    mean: bool = True,
) -> pd.DataFrame:
    """Predictive quantiles of the same trip for departures across one local day.

    Parameters
    ----------
    model : TravelTimeModel
    origin, dest : Place
    day : date, datetime or pandas.Timestamp
        The local day (a time is read in the model's time zone; only its date counts).
    step_min : int, default=15
        Minutes between departures, from 00:00 to 24:00 of the day.
    quantiles : sequence of float, default=PROFILE_QUANTILES
        The levels of the quantile columns.
    mean : bool, default=True
        Also the predictive mean of each departure. A model whose predictive is read
        through a PIT map has no closed-form mean: it is then found by quadrature (40
        quantile solves a departure, about ten times the quantiles' cost), so the
        Predict page's fan chart, which shows quantiles only, leaves it out.

    Returns
    -------
    pandas.DataFrame
        ``hour`` (0 to 24, fractional), ``departure``, ``mean`` (with ``mean=True``) and
        one column per quantile named ``q05``, ``q10``, ... in minutes (fan chart data).
    """
    tz = model.tz_
    day = pd.Timestamp(day)
    if day.tz is not None:
        day = day.tz_convert(tz)
    minutes = np.arange(0, 24 * 60 + 1, step_min)
    local_naive = pd.Timestamp(day.date()) + pd.to_timedelta(minutes, unit="min")
    # wall-clock times: the repeated hour when daylight saving ends is read as its first
    # occurrence, and times in the spring-forward gap move to the first valid instant
    departures = local_naive.tz_localize(tz, ambiguous=True, nonexistent="shift_forward")
    n = len(departures)
    queries = pd.DataFrame(
        {
            "origin_lat": np.full(n, origin.lat),
            "origin_lon": np.full(n, origin.lon),
            "dest_lat": np.full(n, dest.lat),
            "dest_lon": np.full(n, dest.lon),
            "start_time": departures,
        }
    )
    dist = model.predict_dist(queries)
    q = np.asarray(quantiles, dtype=float)
    values = dist.ppf(q[:, None]) / 60.0
    frame = pd.DataFrame({"hour": minutes / 60.0, "departure": departures})
    if mean:
        frame["mean"] = dist.mean() / 60.0
    for qi, row in zip(q, values, strict=True):
        frame[_q_name(qi)] = row
    return frame


def observed_pair_trips(
    trips: pd.DataFrame | TripTable | None,
    origin: Place,
    dest: Place,
    resolution: int,
    *,
    tz: str | None = None,
    min_trips: int = 3,
    max_rings: int = 1,
    area: ServiceArea | None = None,
) -> tuple[pd.DataFrame, int]:
    """Observed trips between the two zones, for the time-of-day overlay.

    Trips whose origin lies in the origin's zone and destination in the
    destination's zone; if fewer than ``min_trips``, zones within ``max_rings``
    rings of them. Returns ``(frame, rings_used)`` with ``hour`` (local, fractional),
    ``minutes``, ``start_time`` and ``weekend``. With the service ``area`` whose
    support indexes ``trips`` by hexagons of this ``resolution``, only the trips from
    the origin's disk are read (:meth:`ServiceArea.observed_near`); else every trip.
    """
    columns = ["hour", "minutes", "start_time", "weekend"]
    empty = pd.DataFrame(columns=columns)
    if trips is None or len(trips) == 0 or origin.zone is None or dest.zone is None:
        return empty, 0
    o_zone = h3.latlng_to_cell(origin.lat, origin.lon, resolution)
    d_zone = h3.latlng_to_cell(dest.lat, dest.lon, resolution)
    if area is not None and area.resolution == resolution:
        found = area.observed_near(o_zone, d_zone, tz, min_trips=min_trips, max_rings=max_rings)
        if found is not None:  # from the trips of the origin's disk only
            return found
    if not isinstance(trips, pd.DataFrame):  # no index to ask: every trip is read
        trips = trips.read(
            ["origin_lat", "origin_lon", "dest_lat", "dest_lon", "start_time", "travel_time_s"]
        )
    o_cells = latlng_to_zone(trips["origin_lat"], trips["origin_lon"], resolution)
    d_cells = latlng_to_zone(trips["dest_lat"], trips["dest_lon"], resolution)
    for rings in range(max_rings + 1):
        o_set = set(h3.grid_disk(o_zone, rings))
        d_set = set(h3.grid_disk(d_zone, rings))
        mask = pd.Series(o_cells).isin(o_set).to_numpy() & pd.Series(d_cells).isin(d_set).to_numpy()
        if mask.sum() >= min_trips or rings == max_rings:
            break
    chosen = trips.loc[mask]
    frame = observed_frame(chosen["start_time"], chosen["travel_time_s"].to_numpy(float), tz)
    return frame.reset_index(drop=True), rings


def member_medians(dist: MixtureDistribution) -> np.ndarray:
    """Each ensemble member's median travel time (seconds), shape ``(n_members, n)``.

    Each member is a Bayesian model fitted on its own shard of the trips; where data is
    thin their fits differ, so the spread of their medians is a cheap measure of the
    model's own (epistemic) uncertainty, beside the trip-to-trip spread of the
    predictive interval (the Predict page's members, the comparison of two versions).
    A member's components share their location (the twin scales change the scale only)
    and are symmetric on the model scale, so its median is that location, read on
    seconds; members whose components differ in location (a pair's own durations
    blended in, a forest's neighbours pooled with each member) are solved by bisection
    on :meth:`~vrvm.engine.mixture.MixtureDistribution.member_cdf`. These are the
    members of the mixture F: a PIT map corrects the mixture's probabilities, not the
    members' disagreement.

    Examples
    --------
    >>> mix = MixtureDistribution(np.log([[300.0, 600.0], [330.0, 660.0]]), 0.2,
    ...                           transform="log")
    >>> member_medians(mix).round(6)
    array([[300., 600.],
           [330., 660.]])
    """
    m = dist.n_members
    loc = np.asarray(dist.loc, dtype=np.float64)
    blocks = loc.reshape(dist.n_components // m, m, len(dist))
    if np.all(blocks == blocks[:1]):
        centre = blocks[0]
        return np.exp(centre) if dist.transform == "log" else centre.copy()
    return _bisect_member_medians(dist)


def _bisect_member_medians(dist: MixtureDistribution) -> np.ndarray:
    """Member medians by bisection (components of a member at different locations)."""
    m, n = dist.n_members, len(dist)
    # F = mean of the member cdfs, so F_m <= M F and 1 - F_m <= M (1 - F): every member's
    # median lies between F's quantiles at 1/(2M) and 1 - 1/(2M)
    base = dist.base if hasattr(dist, "base") else dist
    lo_q, hi_q = base.ppf(np.array([[0.5 / m], [1.0 - 0.5 / m]]))
    lo = np.broadcast_to(lo_q, (m, n)).copy()
    hi = np.broadcast_to(hi_q, (m, n)).copy()
    members = np.arange(m)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        below = np.empty((m, n), dtype=bool)
        for k in members:  # member k at its own points
            below[k] = base.member_cdf(mid[k])[k] < 0.5
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def od_support(
    area: ServiceArea, origin: Place, dest: Place, departure, tz: str
) -> PairSupport | None:
    """Training trips behind the answer from ``origin`` to ``dest`` (None if not kept).

    See :func:`vrvm.services.map.support.pair_support`: trips from the origin's zone or a
    neighbouring one to the destination's zone or a neighbouring one, those of
    them within an hour of the departure's time of day, and all the training trips on
    the departure's kind of day (weekday or weekend).

    Raises
    ------
    ValueError
        When either place is not one of ``area``'s zones (picked on another map): its
        support is not "unknown", the question is about other zones.
    """
    o_row, d_row = _zone_rows(area, origin, dest)
    if area.support is None or area.support.n_zones != len(area.grid):
        return None
    return pair_support(
        area.support, o_row, d_row, minute_of_day(departure, tz), weekday=weekday_of(departure, tz)
    )


def _zone_rows(area: ServiceArea, origin: Place, dest: Place) -> tuple[int, int]:
    """The grid rows of the two places' zones; a clear error for a place of another map."""
    rows = []
    for name, place in (("origin", origin), ("destination", dest)):
        row = area.zone_row(place.zone)
        if row is None:
            raise ValueError(
                f"the {name} {place.label!r} is not one of the map's zones (it was picked "
                "on other zones): choose it again"
            )
        rows.append(row)
    return rows[0], rows[1]


ANSWER_QUANTILES: tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, 0.9)


@dataclass(frozen=True)
class ODAnswer:
    """Everything the Predict page shows for one trip (times in minutes).

    Attributes
    ----------
    forecast : ODForecast
        Median, mean, intervals and P(arrive within the threshold).
    density : pandas.DataFrame
        The predictive density and its members (:func:`density_curve`).
    quantiles : pandas.DataFrame
        Predictive quantiles ``q``, ``minutes`` (:func:`quantile_table`).
    profile : pandas.DataFrame
        Quantiles for departures across the local day (:func:`time_of_day_profile`).
    observed : pandas.DataFrame
        Observed training trips between the two zones (:func:`observed_pair_trips`).
    observed_rings : int
        How many rings around the two zones the observed trips were gathered from.
    support : PairSupport or None
        Training trips near the origin and the destination (:func:`od_support`), or
        None when the training trips were not kept.
    member_medians_min : numpy.ndarray
        Each ensemble member's median (:func:`member_medians`).
    indices : ReliabilityIndices or None
        Planning time, buffer and misery index (:mod:`vrvm.services.answers.indices`).
    """

    forecast: ODForecast
    density: pd.DataFrame
    quantiles: pd.DataFrame
    profile: pd.DataFrame
    observed: pd.DataFrame
    observed_rings: int
    support: PairSupport | None = None
    member_medians_min: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    indices: ReliabilityIndices | None = None

    def at_threshold(self, threshold_min: float) -> ODAnswer:
        """The same answer for another threshold (:meth:`ODForecast.at_threshold`): all
        else depends on the trip alone, so a page changing only the threshold keeps the
        rest."""
        return replace(self, forecast=self.forecast.at_threshold(threshold_min))

    def spread_sentence(self) -> str:
        """How far the ensemble's members disagree, in plain words ("" for one member)."""
        medians = self.member_medians_min
        if medians.size < 2:
            return ""
        return (
            f"The {medians.size} ensemble members' medians range from {medians.min():.1f} to "
            f"{medians.max():.1f} min: the wider this range, the less sure the model itself is."
        )


def answer_od(
    model: TravelTimeModel,
    origin: Place,
    dest: Place,
    departure,
    threshold_min: float,
    *,
    trips: pd.DataFrame | TripTable | None,
    resolution: int,
    area: ServiceArea | None = None,
    profile: pd.DataFrame | None = None,
) -> ODAnswer:
    """The whole answer for one origin, destination and departure time, in one call.

    ``trips`` are the model's training trips (a :class:`~vrvm.trips.store.trip_table.TripTable`
    over the kept file, a DataFrame, or None when they were not kept) and
    ``resolution`` the H3 resolution of the map's zones, which decides which observed
    trips count as "between the two zones". With the service ``area`` (whose
    ``support`` indexes the same trips) the answer also says how many training trips
    stand behind it.

    ``profile``: the :func:`time_of_day_profile` of this trip on the departure's day,
    computed before (it depends on neither the clock time nor the threshold, so a page
    keeps it while only those change); computed here when None.

    Raises
    ------
    ValueError
        When ``area`` is given and either place is not one of its zones.
    """
    if area is not None:
        _zone_rows(area, origin, dest)  # before any work: places of another map are refused
    forecast = forecast_od(model, origin, dest, departure, threshold_min)
    if area is not None and area.kind == "polygons":
        # the planner's zones: the training trips between exactly the two polygons
        rings = 0
        observed = area.observed_between(trips, origin.zone, dest.zone, model.tz_)
    else:
        observed, rings = observed_pair_trips(
            trips, origin, dest, resolution, tz=model.tz_, area=area
        )
    support = None
    if area is not None:
        support = od_support(area, origin, dest, departure, model.tz_)
    return ODAnswer(
        forecast=forecast,
        density=density_curve(forecast.dist),
        quantiles=quantile_table(forecast.dist, ANSWER_QUANTILES),
        profile=(
            time_of_day_profile(model, origin, dest, departure) if profile is None else profile
        ),
        observed=observed,
        observed_rings=rings,
        support=support,
        member_medians_min=member_medians(forecast.dist[:1])[:, 0] / 60.0,
        indices=od_indices(model, query_frame(origin, dest, departure), forecast.dist),
    )
