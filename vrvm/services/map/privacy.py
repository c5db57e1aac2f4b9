"""What a viewer may see of the training trips: private mode's aggregates.

Trip records are personal data (the 2014 NYC taxi release was re-identified to
passengers and drivers; aggregated products such as Uber Movement suppress zone pairs
with too few trips). On real data a viewer therefore sees trips only in aggregate
(:func:`privacy_view` decides when):

* observed trips between two zones as counts and quartiles per time of day, and only
  where at least k trips (``VRVM_PRIVATE_MIN_TRIPS``, default 5) stand behind a figure
  (:func:`observed_summary`), never as dots;
* relevance vectors (each one a training trip) only per pair of zones their ends lie
  in, and only pairs of at least k trips (:func:`relevance_groups`): arcs between the
  zones' centres (:func:`relevance_arcs`) and a table of the pairs, with the trips of
  the smaller pairs together in one last row when they are k or more
  (:func:`private_relevance_table`); never a coordinate, a start time or a single
  trip's row.

A wrong privacy setting (``VRVM_PRIVATE_MODE``, ``VRVM_PRIVATE_MIN_TRIPS``) fails
closed: private mode on every model, with k the default when its own setting is the
wrong one, and no switch to the raw views (:attr:`PrivacyView.problem`).

Analysts may switch to the raw views (:data:`vrvm.services.access.policy.PERMISSIONS`,
``raw_trips``). ``docs/security.md`` says what this protects and what it does not.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import h3
import numpy as np
import pandas as pd

from vrvm.services.access.policy import Access
from vrvm.services.access.settings import DEFAULT_PRIVATE_MIN_TRIPS, private_min_trips, private_mode
from vrvm.services.map.area import ServiceArea

__all__ = [
    "OBSERVED_BIN_HOURS",
    "PrivacyView",
    "observed_summary",
    "privacy_view",
    "private_relevance_table",
    "relevance_arcs",
    "relevance_groups",
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
    problem : str
        What is wrong with the privacy settings, when something is (then private mode
        applies to every model and nobody may switch); else ``""``.
    """

    private: bool
    min_trips: int
    can_switch: bool = False
    problem: str = ""

    def sentence(self) -> str:
        """What private mode means, for a caption."""
        if not self.private:
            return ""
        return (
            f"Private mode: training trips are shown only in aggregate (zone pairs with at "
            f"least {self.min_trips} trips, at zone centres, no exact coordinates or start "
            "times)."
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
    >>> from vrvm.services.access.policy import ANALYST, VIEWER, Access
    >>> viewer, analyst = Access(VIEWER, "", "none"), Access(ANALYST, "ana", "passphrase")
    >>> privacy_view(synthetic=False, access=viewer, raw=True, environ={}).private
    True
    >>> privacy_view(synthetic=False, access=analyst, raw=True, environ={}).private
    False
    >>> privacy_view(synthetic=True, access=viewer, environ={}).private
    False
    >>> privacy_view(synthetic=True, access=viewer, environ={"VRVM_PRIVATE_MODE": "always"}).private
    True

    A wrong setting fails closed, for analysts too:

    >>> wrong = privacy_view(synthetic=True, access=analyst, raw=True,
    ...                      environ={"VRVM_PRIVATE_MODE": "", "VRVM_PRIVATE_MIN_TRIPS": "8"})
    >>> wrong.private, wrong.can_switch, wrong.min_trips
    (True, False, 8)
    >>> wrong.problem
    '$VRVM_PRIVATE_MODE is set but blank: expected one of real, always, off (or unset it)'
    """
    environ = os.environ if environ is None else environ
    try:
        k = private_min_trips(environ)
    except ValueError as exc:
        return PrivacyView(private=True, min_trips=DEFAULT_PRIVATE_MIN_TRIPS, problem=str(exc))
    try:
        mode = private_mode(environ)
    except ValueError as exc:
        return PrivacyView(private=True, min_trips=k, problem=str(exc))
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
        :func:`vrvm.services.answers.forecast.observed_pair_trips` gives them.
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


_GROUP_KEYS = ["origin_lat", "origin_lon", "dest_lat", "dest_lon", "origin", "destination"]
_GROUP_COLUMNS = [*_GROUP_KEYS, "n", "weight", "width", "hours", "q25", "median", "q75"]
_GROUP_DTYPES = dict.fromkeys(["origin_lat", "origin_lon", "dest_lat", "dest_lon"], float)
_GROUP_DTYPES |= dict.fromkeys(["weight", "width"], float) | dict.fromkeys(
    ["n", "q25", "median", "q75"], int
)
_TRIP_KEYS = ["origin_lat", "origin_lon", "dest_lat", "dest_lon", "start_time", "travel_time_s"]


def _hour_bands(q25, q75) -> list[str]:
    """The middle half of start hours, as text (``07-10 h``), from their quartiles."""
    lo = np.floor(np.asarray(q25, dtype=float)).astype(int)
    hi = np.ceil(np.asarray(q75, dtype=float)).astype(int)
    return [
        f"{a:02d} h" if a == b else f"{a:02d}-{b:02d} h"
        for a, b in zip(lo.tolist(), hi.tolist(), strict=True)
    ]


def _with_zones(table: pd.DataFrame, area: ServiceArea) -> pd.DataFrame:
    """The table's rows with their zones' centres and labels, and a ``trip`` id.

    A trip that is a relevance vector of two members has one ``trip`` id, so it counts
    once towards k.
    """
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
            "trip": table.groupby(_TRIP_KEYS, sort=False, dropna=False).ngroup().to_numpy(),
            "hour": table["hour"].to_numpy(float),
            "minutes": table["travel_time_s"].to_numpy(float) / 60.0,
            "weight": table["weight"].to_numpy(float),
            "width": table["width"].to_numpy(float),
        },
        index=table.index,
    )
    return ends


def _summaries(ends: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of ``keys``: ``n`` distinct trips, summed |weight|, the strongest's
    width, the middle half of start hours and the quartiles of minutes (whole)."""
    groups = ends.groupby(keys, sort=False, dropna=False)
    out = groups.agg(n=("trip", "nunique"), weight=("weight", "sum"))
    # every column below is aligned on the groups' keys (quantile sorts them)
    strongest = groups["weight"].idxmax()
    out["width"] = pd.Series(ends.loc[strongest.to_numpy(), "width"].to_numpy(), strongest.index)
    hours = groups["hour"].quantile([0.25, 0.75]).unstack()
    out["hours"] = pd.Series(_hour_bands(hours[0.25], hours[0.75]), index=hours.index)
    minutes = groups["minutes"].quantile([0.25, 0.5, 0.75]).unstack()
    for name, q in (("q25", 0.25), ("median", 0.5), ("q75", 0.75)):
        out[name] = minutes[q].round().astype(int)
    return out.reset_index()


def relevance_groups(
    table: pd.DataFrame, area: ServiceArea, *, min_trips: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Relevance vectors per pair of zones, only pairs of at least ``min_trips`` trips.

    Each relevance vector is a training trip; a viewer sees them only in these groups
    (:func:`relevance_arcs`, :func:`private_relevance_table`). The groups partition the
    vectors (no vector is in two), so no group can be subtracted from another to single
    one out.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`vrvm.services.analyst.relevance.relevance_table`'s rows.
    area : ServiceArea
        The zones: an end lies in a clickable zone, or stands for its H3 cell.
    min_trips : int
        k: a pair is shown only when at least k distinct training trips stand behind it.

    Returns
    -------
    shown : pandas.DataFrame
        One row per zone pair of at least k trips, most weight first: ``origin_lat``,
        ``origin_lon``, ``dest_lat``, ``dest_lon`` (the zones' centres), ``origin``,
        ``destination`` (their labels), ``n`` (trips), ``weight`` (their summed
        |weight|), ``width`` (the kernel width of the strongest), ``hours`` (the middle
        half of their start hours, as text), ``q25``, ``median``, ``q75`` (travel time,
        whole minutes).
    rest : pandas.DataFrame
        The rows of ``table`` in pairs of fewer than k trips (never shown one by one).
    """
    if len(table) == 0:
        return pd.DataFrame(columns=_GROUP_COLUMNS).astype(_GROUP_DTYPES), table.iloc[0:0]
    ends = _with_zones(table, area)
    groups = _summaries(ends, _GROUP_KEYS)
    kept = groups["n"].to_numpy() >= min_trips
    shown = groups.loc[kept, _GROUP_COLUMNS].astype(_GROUP_DTYPES)
    shown = shown.sort_values("weight", ascending=False, kind="stable").reset_index(drop=True)
    pair_trips = ends.groupby(_GROUP_KEYS, sort=False, dropna=False)["trip"].transform("nunique")
    rest = table.loc[pair_trips.to_numpy() < min_trips]
    return shown, rest


def relevance_arcs(table: pd.DataFrame, area: ServiceArea, *, min_trips: int) -> pd.DataFrame:
    """Relevance vectors per pair of zones of at least ``min_trips`` trips, as arcs.

    :func:`relevance_groups`' shown pairs (the centres are the arcs' ends).
    """
    shown, _ = relevance_groups(table, area, min_trips=min_trips)
    return shown


PRIVATE_TABLE_COLUMNS = {
    "origin": "origin zone",
    "destination": "destination zone",
    "n": "trips",
    "hours": "start hours (middle half)",
    "q25": "travel q25 (min)",
    "median": "travel median (min)",
    "q75": "travel q75 (min)",
    "weight": "summed |weight|",
    "width": "width of the strongest",
}
"""The columns of :func:`private_relevance_table`, as shown."""
OTHER_PAIRS = "other zone pairs"
"""The origin zone of :func:`private_relevance_table`'s row of the smaller pairs."""


def private_relevance_table(
    table: pd.DataFrame, area: ServiceArea, *, min_trips: int
) -> pd.DataFrame:
    """The relevance table a viewer sees: zone pairs of at least ``min_trips`` trips.

    One row per pair of :func:`relevance_groups`, then one row ``other zone pairs``
    holding the trips of all smaller pairs together, when they are at least k (else
    none): zones, trips, the middle half of their start hours, the quartiles of their
    travel time in whole minutes, their summed |weight| and the width of the
    strongest. No coordinate, no start time, no row of fewer than k trips.

    Examples
    --------
    >>> empty = pd.DataFrame(columns=_TRIP_KEYS)
    >>> private_relevance_table(empty, None, min_trips=5).columns.tolist()[:4]
    ['origin zone', 'destination zone', 'trips', 'start hours (middle half)']
    """
    shown, rest = relevance_groups(table, area, min_trips=min_trips)
    rows = shown.to_dict("records")
    if len(rest):
        ends = _with_zones(rest, area)
        other = _summaries(ends.assign(all=0), ["all"]).iloc[0].to_dict()
        if other["n"] >= min_trips:
            pairs = ends.groupby(_GROUP_KEYS, sort=False, dropna=False).ngroups
            rows.append(other | {"origin": OTHER_PAIRS, "destination": f"{pairs} pairs"})
    return pd.DataFrame(rows, columns=list(PRIVATE_TABLE_COLUMNS)).rename(
        columns=PRIVATE_TABLE_COLUMNS
    )
