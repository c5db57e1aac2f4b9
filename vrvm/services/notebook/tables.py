"""Answers as long tables and matrices for a notebook: travel-time matrices and coverage.

:func:`travel_time_matrix` is the OD matrix of ``vrvm matrix`` and the Plan page
(:func:`vrvm.services.answers.matrix.iter_matrix`, batch by batch in threads) in r5py's
long format: ``from_id``, ``to_id``, ``travel_time_p{N}`` for percentile N and
``travel_time_mean`` in minutes, and ``p_within_{T}min`` = P(travel time <= T minutes)
per threshold; with a departure window the answer is the travel time of a departure drawn
uniformly in it (the Predict page's window). :func:`coverage_matrix` is the candidates x
demand matrix of P(within T) that optimal siting solves on
(:func:`vrvm.services.planning.siting.siting_probabilities`, read through the model's PIT
map as fleet coverage reads it), as a DataFrame that spopt-style location models take
(``1 - P`` as a cost, ``1 - p`` as the service radius).

Both compute exactly what the CLI, the HTTP API and the dashboard compute for the same
points: no number here has a second implementation.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from vrvm.services.answers.matrix import iter_matrix
from vrvm.services.answers.summaries import SUPPORT_COLUMNS, checked_levels
from vrvm.services.display.formatting import format_number
from vrvm.services.notebook.inputs import answer_area, outside_area, place_table
from vrvm.services.planning.siting import siting_probabilities
from vrvm.trips.model.travel_time import TravelTimeModel

__all__ = ["coverage_matrix", "travel_time_matrix"]


def _distinct(values: np.ndarray, what: str) -> np.ndarray:
    twice = sorted({format_number(v) for v in values if (values == v).sum() > 1})
    if twice:
        raise ValueError(f"{what} must differ: {', '.join(twice)} given twice")
    return values


def _thresholds_min(within_min) -> np.ndarray:
    values = np.atleast_1d(np.asarray(within_min, dtype=np.float64)).ravel()
    bad = values[~(np.isfinite(values) & (values > 0))]
    if bad.size:
        raise ValueError(f"within_min must be positive numbers of minutes, got {float(bad[0])!r}")
    return _distinct(values, "within_min")


def travel_time_matrix(
    model: TravelTimeModel,
    origins,
    destinations,
    *,
    departure,
    percentiles: Sequence[float] = (50,),
    within_min: Sequence[float] | float = (),
    departure_window_min: float = 0,
    trips: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Every origin-destination pair's travel-time distribution, summarised, in long format.

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model.
    origins, destinations : geopandas.GeoDataFrame, pandas.DataFrame or sequence of str
        GeoDataFrames with an ``id`` column (points, or polygons at their representative
        point; any CRS), DataFrames with ``id``, ``lat`` and ``lon``, or H3 cell ids
        (see :func:`~vrvm.services.notebook.inputs.place_table`).
    departure : datetime-like
        The departure time; a naive time is a wall-clock time in the model's time zone.
    percentiles : sequence of float, default=(50,)
        Percentiles N in (0, 100) of the columns ``travel_time_p{N}`` (minutes).
    within_min : float or sequence of float, default=()
        Thresholds T > 0 in minutes of the columns ``p_within_{T}min`` = P(T_trip <= T).
    departure_window_min : float, default=0
        With w > 0, each pair's distribution is that of a departure drawn uniformly from
        [departure, departure + w minutes] (about w times the work).
    trips : pandas.DataFrame, optional
        The model's training trips: each row then also has ``support_trips``
        (training trips from near the origin to near the destination, as the
        dashboard counts them), ``support_trips_at_time`` (within an hour of the
        departure's time of day) and ``thin`` (fewer than 5).

    Returns
    -------
    pandas.DataFrame
        One row per pair, origin by origin (every destination in order): ``from_id``,
        ``to_id``, the ``travel_time_p{N}`` columns, ``travel_time_mean``, the
        ``p_within_{T}min`` columns, ``outside_area`` (an end lies outside the model's
        extent: the answer there is an extrapolation) and, with ``trips``, the support
        columns.

    Examples
    --------
    >>> from vrvm import TravelTimeModel, synthetic_city
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=60,
    ...                         random_state=0).fit(synthetic_city(800, seed=0))
    >>> places = pd.DataFrame({"id": ["a", "b"], "lat": [-40.0, -39.95],
    ...                        "lon": [-30.0, -29.9]})
    >>> table = travel_time_matrix(model, places, places, departure="2024-03-12 08:00",
    ...                            percentiles=(50, 90), within_min=15)
    >>> list(table.columns)  # doctest: +NORMALIZE_WHITESPACE
    ['from_id', 'to_id', 'travel_time_p50', 'travel_time_p90', 'travel_time_mean',
     'p_within_15min', 'outside_area']
    >>> bool((table["travel_time_p90"] > table["travel_time_p50"]).all())
    True
    """
    levels = _distinct(checked_levels(percentiles, "percentiles", 0, 100), "percentiles")
    if levels.size == 0:
        raise ValueError("give at least one percentile, e.g. percentiles=(50,)")
    thresholds = _thresholds_min(within_min)
    from_table = place_table(origins, "origins")
    to_table = place_table(destinations, "destinations")
    quantiles = [float(q) for q in levels / 100.0]
    extra = [q for q in quantiles if q != 0.5]  # the median is always computed
    tables = iter_matrix(
        model,
        from_table.rename(columns={"id": "label"}),
        to_table.rename(columns={"id": "label"}),
        departure,
        quantiles=extra,
        thresholds_s=[float(t) for t in 60.0 * thresholds],
        area=answer_area(model, trips) if trips is not None else None,
        window_min=departure_window_min,
    )
    frame = pd.concat(list(tables), ignore_index=True)
    out = pd.DataFrame({"from_id": frame["origin"], "to_id": frame["destination"]})
    for n, q in zip(levels, quantiles, strict=True):
        source = "median_s" if q == 0.5 else f"q{format_number(q)}_s"
        out[f"travel_time_p{format_number(n)}"] = frame[source].to_numpy() / 60.0
    out["travel_time_mean"] = frame["mean_s"].to_numpy() / 60.0
    for t in thresholds:
        out[f"p_within_{format_number(t)}min"] = frame[
            f"p_within_{format_number(60.0 * t)}s"
        ].to_numpy()
    n_to = len(to_table)
    from_out = outside_area(model, from_table["lat"], from_table["lon"])
    to_out = outside_area(model, to_table["lat"], to_table["lon"])
    out["outside_area"] = np.repeat(from_out, n_to) | np.tile(to_out, len(from_table))
    for column in SUPPORT_COLUMNS:
        if column in frame.columns:
            out[column] = frame[column].to_numpy()
    return out


def coverage_matrix(
    model: TravelTimeModel,
    candidates,
    demand,
    *,
    departure,
    within_min: float,
) -> pd.DataFrame:
    """P(travel time <= ``within_min``) from every candidate site to every demand point.

    The matrix optimal siting maximises over (``vrvm site``, ``POST /v1/site``, the Plan
    page): each entry read through the model's PIT map as fleet coverage reads it,
    averaged over the departures when several are given.

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model.
    candidates, demand : geopandas.GeoDataFrame, pandas.DataFrame or sequence of str
        As the origins of :func:`travel_time_matrix`.
    departure : datetime-like or sequence of datetime-like
        The departure time(s); naive times are wall-clock times in the model's zone.
    within_min : float
        The threshold T > 0 in minutes.

    Returns
    -------
    pandas.DataFrame
        Index: the candidates' ids (named ``candidate``); columns: the demand ids (named
        ``demand``); values in [0, 1]. ``attrs["outside_area"]`` lists the ids (of
        either input) outside the model's extent, where the values are extrapolations;
        a warning names them too.

    Examples
    --------
    >>> from vrvm import TravelTimeModel, synthetic_city
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=60,
    ...                         random_state=0).fit(synthetic_city(800, seed=0))
    >>> sites = pd.DataFrame({"id": ["s1", "s2"], "lat": [-40.0, -39.95],
    ...                       "lon": [-30.0, -29.9]})
    >>> cover = coverage_matrix(model, sites, sites, departure="2024-03-12 08:00",
    ...                         within_min=20)
    >>> cover.shape, cover.index.name, cover.columns.name
    ((2, 2), 'candidate', 'demand')
    >>> # spopt-style: cost = 1 - P (demand x candidates), covered when cost <= 1 - p
    >>> cost = 1.0 - cover.T.to_numpy()
    """
    if np.ndim(within_min) != 0:
        raise ValueError("within_min must be one number of minutes for a coverage matrix")
    threshold = float(_thresholds_min(within_min)[0])
    sites = place_table(candidates, "candidates")
    points = place_table(demand, "demand")
    departures = (
        list(departure)
        if isinstance(departure, Sequence | pd.Index | np.ndarray)
        and not isinstance(departure, str)
        else departure
    )
    prob = siting_probabilities(model, sites, points, 60.0 * threshold, departures)
    out = pd.DataFrame(
        prob,
        index=pd.Index(sites["id"].to_numpy(), name="candidate"),
        columns=pd.Index(points["id"].to_numpy(), name="demand"),
    )
    outside = [
        *sites["id"][outside_area(model, sites["lat"], sites["lon"])],
        *points["id"][outside_area(model, points["lat"], points["lon"])],
    ]
    out.attrs["outside_area"] = outside
    if outside:
        warnings.warn(
            f"outside the model's extent (its answers there are extrapolations): {outside[:5]}"
            + (f" and {len(outside) - 5} more" if len(outside) > 5 else ""),
            stacklevel=2,
        )
    return out
