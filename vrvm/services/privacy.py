"""What a viewer may see of the training trips: private mode's aggregates.

Trip records are personal data (the 2014 NYC taxi release was re-identified to
passengers and drivers; aggregated products such as Uber Movement suppress zone pairs
with too few trips). On real data a viewer therefore sees trips only in aggregate
(:func:`privacy_view` decides when):

* observed trips between two zones as counts and quartiles per time of day, and only
  where at least k trips (``VRVM_PRIVATE_MIN_TRIPS``, default 5) stand behind a figure
  (:func:`observed_summary`), never as dots;
* relevance vectors (each one a training trip) between the centres of the zones their
  ends lie in, counted per zone pair (:func:`relevance_arcs`), and a relevance table
  with zones, weekday or weekend and the hour instead of coordinates and start times,
  travel times to the minute (:func:`private_relevance_table`).

Analysts may switch to the raw views (:data:`vrvm.services.access.PERMISSIONS`,
``raw_trips``). ``docs/security.md`` says what this protects and what it does not.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import h3
import numpy as np
import pandas as pd

from vrvm.services.access import Access
from vrvm.services.area import ServiceArea
from vrvm.trips.settings import private_min_trips, private_mode

__all__ = [
    "OBSERVED_BIN_HOURS",
    "PrivacyView",
    "observed_summary",
    "privacy_view",
    "private_relevance_table",
    "relevance_arcs",
]

OBSERVED_BIN_HOURS = 3
"""Observed trips are summarised per this many hours of the day in private mode."""

_SUMMARY_COLUMNS = ["hour_from", "hour_to", "hour", "n", "q25", "median", "q75"]


@dataclass(frozen=True)
class PrivacyView:
    """Whether the page shows trips in aggregate only, and with which k.

    Attributes
    ----------
    private : bool
        Aggregates only (private mode).
    min_trips : int
        k: the fewest trips behind any observed-trip figure.
    can_switch : bool
        Whether this user may switch to the raw views (an analyst, on data where private
        mode applies).
    """

    private: bool
    min_trips: int
    can_switch: bool = False

    def sentence(self) -> str:
        """What private mode means, for a caption."""
        if not self.private:
            return ""
        return (
            f"Private mode: training trips are shown only in aggregate (zone pairs with at "
            f"least {self.min_trips} trips, relevance vectors at zone centres, no exact "
            "coordinates or start times)."
        )


def privacy_view(
    *,
    synthetic: bool,
    access: Access,
    raw: bool = False,
    environ: Mapping[str, str] | None = None,
) -> PrivacyView:
    """Private mode for this page: on real data (``VRVM_PRIVATE_MODE``) unless an analyst
    asked for the raw view.

    Examples
    --------
    >>> from vrvm.services.access import ANALYST, VIEWER, Access
    >>> viewer, analyst = Access(VIEWER, "", "none"), Access(ANALYST, "ana", "passphrase")
    >>> privacy_view(synthetic=False, access=viewer, raw=True, environ={}).private
    True
    >>> privacy_view(synthetic=False, access=analyst, raw=True, environ={}).private
    False
    >>> privacy_view(synthetic=True, access=viewer, environ={}).private
    False
    >>> privacy_view(synthetic=True, access=viewer, environ={"VRVM_PRIVATE_MODE": "always"}).private
    True
    """
    environ = os.environ if environ is None else environ
    mode, k = private_mode(environ), private_min_trips(environ)
    applies = mode == "always" or (mode == "real" and not synthetic)
    if not applies:
        return PrivacyView(private=False, min_trips=k)
    can_switch = access.may("raw_trips")
    return PrivacyView(private=not (raw and can_switch), min_trips=k, can_switch=can_switch)


def observed_summary(
    observed: pd.DataFrame, min_trips: int, *, bin_hours: int = OBSERVED_BIN_HOURS
) -> pd.DataFrame:
    """Observed trips between two zones as counts and quartiles per time of day.

    Parameters
    ----------
    observed : pandas.DataFrame
        The trips (``hour``, local and fractional, and ``minutes``), as
        :func:`vrvm.services.forecast.observed_pair_trips` gives them.
    min_trips : int
        k: a time-of-day bin is shown only when at least k trips fell in it. When no bin
        has k but all the trips together do, one all-day row is shown; fewer than k
        trips in all show nothing.
    bin_hours : int, default=3
        Width of the bins (a divisor of 24).

    Returns
    -------
    pandas.DataFrame
        ``hour_from``, ``hour_to``, ``hour`` (the bin's middle), ``n``, ``q25``,
        ``median``, ``q75`` (minutes).

    Examples
    --------
    >>> trips = pd.DataFrame({"hour": [7.0, 7.25, 7.5, 8.0, 8.5, 17.0],
    ...                       "minutes": [10.0, 12, 11, 13, 15, 20]})
    >>> observed_summary(trips, 5)[["hour_from", "hour_to", "n", "median"]]
       hour_from  hour_to  n  median
    0          6        9  5    12.0
    >>> len(observed_summary(trips.head(4), 5))
    0
    """
    if 24 % bin_hours:
        raise ValueError(f"bin_hours must divide 24, got {bin_hours}")
    if len(observed) < min_trips:
        return pd.DataFrame(columns=_SUMMARY_COLUMNS)
    hours = np.asarray(observed["hour"], dtype=float) % 24.0
    minutes = np.asarray(observed["minutes"], dtype=float)
    start = (np.floor(hours / bin_hours) * bin_hours).astype(int)
    rows = []
    for first in np.unique(start):
        values = minutes[start == first]
        if values.size >= min_trips:
            rows.append(_summary_row(int(first), int(first) + bin_hours, values))
    if not rows:
        rows.append(_summary_row(0, 24, minutes))
    return pd.DataFrame(rows, columns=_SUMMARY_COLUMNS)


def _summary_row(first: int, last: int, values: np.ndarray) -> dict:
    q25, median, q75 = np.quantile(values, [0.25, 0.5, 0.75])
    return {
        "hour_from": first,
        "hour_to": last,
        "hour": 0.5 * (first + last),
        "n": int(values.size),
        "q25": round(float(q25), 1),
        "median": round(float(median), 1),
        "q75": round(float(q75), 1),
    }


def _zone_ends(area: ServiceArea, lat, lon) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The centre (lat, lon) and label of the zone holding each point.

    A point in none of the clickable zones stands for the centre of its H3 cell at the
    area's resolution.
    """
    lat, lon = np.asarray(lat, dtype=float), np.asarray(lon, dtype=float)
    rows = area.zone_rows(lat, lon)
    grid = area.grid
    out_lat = np.where(rows >= 0, grid["lat"].to_numpy()[np.maximum(rows, 0)], np.nan)
    out_lon = np.where(rows >= 0, grid["lon"].to_numpy()[np.maximum(rows, 0)], np.nan)
    labels = np.where(rows >= 0, grid["label"].to_numpy()[np.maximum(rows, 0)], "").astype(object)
    for i in np.flatnonzero(rows < 0):
        cell = h3.latlng_to_cell(lat[i], lon[i], area.resolution)
        out_lat[i], out_lon[i] = (round(v, 6) for v in h3.cell_to_latlng(cell))
        labels[i] = "outside the zones"
    return out_lat, out_lon, list(labels)


def private_relevance_table(table: pd.DataFrame, area: ServiceArea) -> pd.DataFrame:
    """The relevance table without coordinates or start times.

    ``table`` is :func:`vrvm.services.relevance.relevance_table`'s; each trip is given
    by the labels of the zones its ends lie in, ``day`` (weekday or weekend) and its
    start ``hour``, its travel time in whole minutes, and the model's numbers (member,
    weight, kernel width).
    """
    _, _, origins = _zone_ends(area, table["origin_lat"], table["origin_lon"])
    _, _, dests = _zone_ends(area, table["dest_lat"], table["dest_lon"])
    weekend = pd.to_datetime(table["start_time"]).dt.dayofweek.to_numpy() >= 5
    return pd.DataFrame(
        {
            "member": table["member"].to_numpy(),
            "origin zone": origins,
            "destination zone": dests,
            "day": np.where(weekend, "weekend", "weekday"),
            "hour": table["hour"].to_numpy(),
            "travel (min)": np.round(table["travel_time_s"].to_numpy(float) / 60.0).astype(int),
            "weight": table["weight"].to_numpy(float),
            "width": table["width"].to_numpy(float),
            "n_widths": table["n_widths"].to_numpy(),
        }
    )


def relevance_arcs(table: pd.DataFrame, area: ServiceArea) -> pd.DataFrame:
    """Relevance vectors counted per pair of zones, drawn between the zones' centres.

    Returns one row per (origin zone, destination zone): ``origin_lat``, ``origin_lon``,
    ``dest_lat``, ``dest_lon`` (the zones' centres), ``origin``, ``destination`` (their
    labels), ``n`` (relevance vectors), ``weight`` (their summed |weight|), ``width``
    (the kernel width of the strongest of them) and ``hours`` (the range of their start
    hours, as text), most weight first.
    """
    columns = ["origin_lat", "origin_lon", "dest_lat", "dest_lon", "origin", "destination"]
    columns += ["n", "weight", "width", "hours"]
    if len(table) == 0:
        return pd.DataFrame(columns=columns)
    o_lat, o_lon, origins = _zone_ends(area, table["origin_lat"], table["origin_lon"])
    d_lat, d_lon, dests = _zone_ends(area, table["dest_lat"], table["dest_lon"])
    ends = pd.DataFrame(
        {
            "origin_lat": o_lat,
            "origin_lon": o_lon,
            "dest_lat": d_lat,
            "dest_lon": d_lon,
            "origin": origins,
            "destination": dests,
            "weight": table["weight"].to_numpy(float),
            "width": table["width"].to_numpy(float),
            "hour": table["hour"].to_numpy(int),
        }
    )
    keys = ["origin_lat", "origin_lon", "dest_lat", "dest_lon", "origin", "destination"]
    strongest = ends.loc[ends.groupby(keys, sort=False)["weight"].idxmax(), [*keys, "width"]]
    grouped = (
        ends.groupby(keys, sort=False)
        .agg(n=("weight", "size"), weight=("weight", "sum"), lo=("hour", "min"), hi=("hour", "max"))
        .reset_index()
        .merge(strongest, on=keys)
    )
    grouped["hours"] = [
        f"{lo:02d}:00" if lo == hi else f"{lo:02d}-{hi:02d} h"
        for lo, hi in zip(grouped["lo"], grouped["hi"], strict=True)
    ]
    grouped = grouped.sort_values("weight", ascending=False, kind="stable")
    return grouped[columns].reset_index(drop=True)
