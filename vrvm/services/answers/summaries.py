"""Many trips' answers at once: mean, median, quantiles, P(T <= t), indices, support.

:func:`trip_summaries` turns a table of model queries into one row of numbers per trip
from its predictive distribution (:meth:`vrvm.TravelTimeModel.predict_dist`: the
ensemble's exact mixture, or that mixture read through the model's PIT map), all trips
in one model call: ``mean_s``, ``median_s``, one ``q<q>_s`` per quantile, one
``p_within_<t>s`` = P(T <= t) per threshold (the columns of :func:`summary_columns`),
and optionally the reliability indices (:mod:`vrvm.services.answers.indices`, their own
model call for the night departures) and the training trips behind each answer
(:func:`vrvm.services.map.support.origin_support`, the counts the reach map shows). It
is what an OD matrix (:mod:`vrvm.services.answers.matrix`)
computes per batch of pairs and what the HTTP API answers per request.

Why one call for many trips: answering one trip costs a few milliseconds, almost all
of it fixed overhead (building the query frame, the members' Python loop, the root
finder's set-up), so 8 trips cost 1.2 times one and 128 trips 2.7 times one
(measured on the demo model). A server answering many clients at once gathers their
trips into one call (:mod:`vrvm.api.batching`) rather than running one call per client
in threads, which only take turns at the interpreter lock.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from vrvm.services.answers.indices import (
    RELIABILITY_INDICES,
    FreeFlowCache,
    pool_departures,
    reliability_indices,
)
from vrvm.services.display.formatting import format_number
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.support import THIN_TRIPS, local_minutes, origin_support, thin_days
from vrvm.trips.model.travel_time import TravelTimeModel

__all__ = [
    "INDEX_SUMMARY_COLUMNS",
    "SUPPORT_COLUMNS",
    "checked_levels",
    "summary_columns",
    "trip_summaries",
    "trips_support",
]

INDEX_SUMMARY_COLUMNS = ("free_flow_s", "p95_s", *RELIABILITY_INDICES)
"""The reliability columns :func:`trip_summaries` adds with ``indices=True``."""
SUPPORT_COLUMNS = ("support_trips", "support_trips_at_time", "thin")
"""The data-support columns :func:`trip_summaries` adds with an area that indexes trips."""


def checked_levels(values: Sequence[float], what: str, low: float, high: float) -> np.ndarray:
    """``values`` as a float array, each strictly between ``low`` and ``high``.

    Examples
    --------
    >>> checked_levels([0.5, 0.9], "quantiles", 0, 1)
    array([0.5, 0.9])
    >>> checked_levels([1.5], "quantiles", 0, 1)
    Traceback (most recent call last):
    ...
    ValueError: quantiles must lie strictly between 0 and 1, got 1.5
    """
    levels = np.asarray(list(values), dtype=np.float64).ravel()
    bad = levels[~((levels > low) & (levels < high))]
    if bad.size:
        raise ValueError(
            f"{what} must lie strictly between {low:g} and {high:g}, got {float(bad[0])!r}"
        )
    return levels


def summary_columns(quantiles: Sequence[float] = (), thresholds_s: Sequence[float] = ()):
    """The summary columns: mean, median, one per quantile and one per threshold.

    Examples
    --------
    >>> summary_columns([0.9], [600])
    ['mean_s', 'median_s', 'q0.9_s', 'p_within_600s']
    """
    names = [
        "mean_s",
        "median_s",
        *(f"q{format_number(q)}_s" for q in checked_levels(quantiles, "quantiles", 0, 1)),
        *(
            f"p_within_{format_number(t)}s"
            for t in checked_levels(thresholds_s, "thresholds", 0, np.inf)
        ),
    ]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"quantiles and thresholds must differ: {', '.join(twice)} twice")
    return names


def trips_support(
    area: ServiceArea, model: TravelTimeModel, queries: pd.DataFrame
) -> dict[str, np.ndarray]:
    """Training trips behind each query's answer (the arrays :data:`SUPPORT_COLUMNS`).

    ``support_trips`` counts the training trips from the origin's zone or a neighbour
    to the destination's zone or a neighbour (for polygons: between the two polygons),
    ``support_trips_at_time`` those of them within an hour of the departure's time of
    day, and ``thin`` says fewer than :data:`~vrvm.services.map.support.THIN_TRIPS` of
    them, or fewer than that many of all the training trips on the departure's kind of
    day (:meth:`~vrvm.services.map.support.TripSupport.day_kind_trips`: a model that
    learned from weekdays alone answers for a Saturday with what it learned on
    weekdays). The counts are those the reach map shows
    (:func:`~vrvm.services.map.support.origin_support`). An end outside every zone has
    no indexed trips (0). The queries are grouped by origin zone and minute, one count
    per group over all zones.
    """
    support = area.support
    if support is None or support.n_zones != len(area.grid):
        raise ValueError("the service area does not index its training trips")
    origin = area.zone_rows(queries["origin_lat"], queries["origin_lon"])
    dest = area.zone_rows(queries["dest_lat"], queries["dest_lon"])
    minute = local_minutes(queries["start_time"], model.tz_)
    total = np.zeros(len(queries), dtype=np.int64)
    at_time = np.zeros(len(queries), dtype=np.int64)
    known = np.flatnonzero((origin >= 0) & (dest >= 0))
    groups = {}  # (origin row, minute) -> positions, one count over all zones each
    keys = zip(origin[known].tolist(), minute[known].tolist(), strict=True)
    for i, key in zip(known.tolist(), keys, strict=True):
        groups.setdefault(key, []).append(i)
    for (row, when), where in groups.items():
        counts = origin_support(support, int(row), float(when))
        total[where] = counts["support_trips"].to_numpy()[dest[where]]
        at_time[where] = counts["support_trips_at_time"].to_numpy()[dest[where]]
    thin = (total < THIN_TRIPS) | thin_days(support, queries["start_time"], model.tz_)
    return {"support_trips": total, "support_trips_at_time": at_time, "thin": thin}


def trip_summaries(
    model: TravelTimeModel,
    queries: pd.DataFrame,
    *,
    quantiles: Sequence[float] = (),
    thresholds_s: Sequence[float] = (),
    indices: bool = False,
    area: ServiceArea | None = None,
    free_flow: FreeFlowCache | None = None,
    departures: int = 1,
) -> pd.DataFrame:
    """Each query's travel-time summaries from its predictive distribution.

    Parameters
    ----------
    model : TravelTimeModel
        The fitted model.
    queries : pandas.DataFrame
        Model queries: ``origin_lat``, ``origin_lon``, ``dest_lat``, ``dest_lon`` and
        ``start_time`` (a naive time is a wall-clock time in the model's zone).
    quantiles : sequence of float, default=()
        Levels q in (0, 1) of the columns ``q<q>_s``.
    thresholds_s : sequence of float, default=()
        Times t > 0 in seconds of the columns ``p_within_<t>s`` = P(T <= t).
    indices : bool, default=False
        Also ``free_flow_s``, ``p95_s`` and the three reliability indices (one more
        model call, for the night departures of each trip's day).
    area : ServiceArea, optional
        With an area that indexes its training trips, also :data:`SUPPORT_COLUMNS`.
    free_flow : FreeFlowCache, optional
        Free-flow times kept across calls with this model (a server's).
    departures : int, default=1
        The queries are this many blocks of the same n trips, each block at other
        departure times (the block of a window's k-th departure); each trip's answer
        is then the travel time of a departure drawn uniformly among its blocks
        (:func:`~vrvm.services.answers.indices.pool_departures`), and the support
        counts are those of the first block. Not with ``indices``.

    Returns
    -------
    pandas.DataFrame
        One row per query (per trip of a block with ``departures`` > 1) in order:
        :func:`summary_columns`, then the optional ones. Times in seconds,
        probabilities in [0, 1].

    Examples
    --------
    >>> from vrvm import TravelTimeModel, synthetic_city
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=60,
    ...                         random_state=0).fit(synthetic_city(800, seed=0))
    >>> table = trip_summaries(model, synthetic_city(3, seed=1), quantiles=[0.9],
    ...                        thresholds_s=[600], indices=True)
    >>> list(table.columns)[:4], len(table)
    (['mean_s', 'median_s', 'q0.9_s', 'p_within_600s'], 3)
    >>> bool((table["q0.9_s"] > table["median_s"]).all())
    True
    """
    columns = summary_columns(quantiles, thresholds_s)
    q = np.asarray(list(quantiles), dtype=np.float64)
    t = np.asarray(list(thresholds_s), dtype=np.float64)
    departures = int(departures)
    if departures < 1 or len(queries) % departures:
        raise ValueError(f"{len(queries)} queries are not {departures} blocks of the same trips")
    if departures > 1 and indices:
        raise ValueError("reliability indices are for one departure time, not a window")
    dist = model.predict_dist(queries)
    if departures > 1:
        dist = pool_departures(dist, departures)
        queries = queries.iloc[: len(queries) // departures]
    # the median and the quantiles solved together, each distinct level once
    levels, level_of = np.unique(np.r_[0.5, q], return_inverse=True)
    values = [dist.mean(), *dist.ppf(levels[:, None])[level_of]]
    if t.size:
        values.extend(dist.cdf(t[:, None]))
    table = dict(zip(columns, values, strict=True))
    if indices:
        found = reliability_indices(model, queries, dist, cache=free_flow)
        table["free_flow_s"] = 60.0 * found["free_flow_min"].to_numpy()
        table["p95_s"] = 60.0 * found["p95_min"].to_numpy()
        for name in RELIABILITY_INDICES:
            table[name] = found[name].to_numpy()
    if area is not None and area.support is not None and area.support.n_zones == len(area.grid):
        table.update(trips_support(area, model, queries))
    table = pd.DataFrame(table)
    return table
