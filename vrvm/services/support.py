"""How much data stands behind an answer: training trips near the origin and destination.

A travel-time model answers for any two points, but its answer between two places no
training trip joined is an extrapolation. :class:`TripSupport` indexes the model's
training trips by zone once per service area; :func:`pair_support` then counts, in a
few microseconds, the trips that started in the origin's zone or a neighbouring one
and ended in the destination's zone or a neighbouring one, in all and within
``WINDOW_MIN`` minutes of the departure's time of day; :func:`origin_support` counts
them from one origin to every zone (the reach map). Fewer than ``THIN_TRIPS`` such
trips is *thin support*, which the pages say in plain words. Zones are H3 cells
(:func:`build_trip_support`, neighbours are the touching cells) or a planner's
polygons (:func:`index_trips` with ``neighbours=None``: trips are counted between exactly
the two polygons, which are already the areas a planner reasons in);
:func:`observed_trips` lists the training trips between two zones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

from vrvm.trips.trip_zones import zone_neighbours
from vrvm.trips.zones import latlng_to_zone

__all__ = [
    "THIN_TRIPS",
    "WINDOW_MIN",
    "PairSupport",
    "TripSupport",
    "build_trip_support",
    "index_trips",
    "minute_of_day",
    "observed_trips",
    "origin_support",
    "pair_support",
]

THIN_TRIPS = 5
"""Support is thin when fewer training trips than this joined the two places' areas."""
WINDOW_MIN = 60
"""Trips "at this time of day" departed within this many minutes of the departure."""
_DAY_MIN = 24 * 60


@dataclass(frozen=True)
class TripSupport:
    """The training trips indexed by zone (one service area's grid order).

    Trips are sorted by origin zone, so that the trips from zone ``z`` are the rows
    ``offsets[z]:offsets[z + 1]`` of ``dest`` and ``minute`` (a compressed sparse row
    layout); trips starting outside every zone are left out.

    Attributes
    ----------
    neighbours : scipy.sparse.csr_matrix
        ``(n_zones, n_zones)`` boolean, True where two zones touch and on the diagonal.
    offsets : numpy.ndarray of int64, shape (n_zones + 1,)
    dest : numpy.ndarray of int64
        Destination zone row of each trip (-1 outside every zone).
    minute : numpy.ndarray of float64
        Local departure time of day of each trip, in minutes after midnight.
    n_trips : int
        All training trips, inside the zones or not.
    trip_row : numpy.ndarray of int64 or None
        Position of each indexed trip in the training table (same order as ``dest``).
    with_neighbours : bool
        Whether trips from and to the touching zones count too (H3 cells), or only
        those between exactly the two zones (a planner's polygons).
    """

    neighbours: sparse.csr_matrix
    offsets: np.ndarray
    dest: np.ndarray
    minute: np.ndarray
    n_trips: int
    trip_row: np.ndarray | None = None
    with_neighbours: bool = True

    @property
    def n_zones(self) -> int:
        return int(self.offsets.size - 1)

    def near(self, row: int) -> np.ndarray:
        """Rows of zone ``row`` and of the zones touching it."""
        indptr, indices = self.neighbours.indptr, self.neighbours.indices
        return indices[indptr[row] : indptr[row + 1]]

    def _from_near(self, row: int) -> np.ndarray:
        """Positions (in ``dest``, ``minute``) of the trips from ``row`` or a neighbour."""
        starts, stops = self.offsets[self.near(row)], self.offsets[self.near(row) + 1]
        lengths = stops - starts
        # concatenated aranges without a Python loop over the (at most 7) zones
        return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())


def minute_of_day(when, tz: str | None = None) -> float:
    """Local wall-clock time of ``when`` in minutes after midnight (in ``tz`` if aware).

    Examples
    --------
    >>> minute_of_day(pd.Timestamp("2024-03-05 08:15", tz="UTC"), "America/Chicago")
    135.0
    """
    when = pd.Timestamp(when)
    if when.tz is not None and tz is not None:
        when = when.tz_convert(tz)
    return float(when.hour * 60 + when.minute + when.second / 60.0)


def build_trip_support(
    zones: Sequence[str], resolution: int, trips: pd.DataFrame, tz: str | None = None
) -> TripSupport:
    """Index training trips by the zones (H3 ids at ``resolution``, in grid order).

    ``start_time`` is read in ``tz`` when it is timezone-aware, as the wall clock
    otherwise. Trips from and to touching cells count as near (:func:`pair_support`).
    """
    index = pd.Index(list(zones))
    origin = index.get_indexer(latlng_to_zone(trips["origin_lat"], trips["origin_lon"], resolution))
    dest = index.get_indexer(latlng_to_zone(trips["dest_lat"], trips["dest_lon"], resolution))
    return index_trips(origin, dest, trips["start_time"], zone_neighbours(index), tz)


def index_trips(
    origin_row: np.ndarray,
    dest_row: np.ndarray,
    start_time: pd.Series,
    neighbours: sparse.csr_matrix | int,
    tz: str | None = None,
) -> TripSupport:
    """Index training trips whose zone rows are known (-1: outside every zone).

    Parameters
    ----------
    origin_row, dest_row : numpy.ndarray of int
        Zone row of each trip's origin and destination.
    start_time : pandas.Series of datetime
        Each trip's departure, read in ``tz`` when timezone-aware.
    neighbours : scipy.sparse.csr_matrix or int
        Which zones touch (see :func:`~vrvm.trips.trip_zones.zone_neighbours`), or the
        number of zones: then a zone's only neighbour is itself and trips are counted
        between exactly the two zones (a planner's polygons).

    Examples
    --------
    >>> start = pd.Series(pd.to_datetime(["2024-03-05 08:00", "2024-03-05 09:30"]))
    >>> support = index_trips(np.array([1, 0]), np.array([0, -1]), start, 2)
    >>> support.offsets.tolist(), support.dest.tolist(), support.trip_row.tolist()
    ([0, 1, 2], [-1, 0], [1, 0])
    >>> pair_support(support, 1, 0, 8 * 60).n_near, support.with_neighbours
    (1, False)
    """
    origin_row = np.asarray(origin_row, dtype=np.int64)
    dest_row = np.asarray(dest_row, dtype=np.int64)
    with_neighbours = not isinstance(neighbours, int | np.integer)
    if not with_neighbours:
        neighbours = sparse.identity(int(neighbours), dtype=bool, format="csr")
    start = start_time
    if start.dt.tz is not None and tz is not None:
        start = start.dt.tz_convert(tz)
    minute = (start.dt.hour * 60 + start.dt.minute + start.dt.second / 60.0).to_numpy(float)
    inside = np.flatnonzero(origin_row >= 0)
    order = inside[np.argsort(origin_row[inside], kind="stable")]
    offsets = np.searchsorted(origin_row[order], np.arange(neighbours.shape[0] + 1))
    return TripSupport(
        neighbours=neighbours,
        offsets=offsets.astype(np.int64),
        dest=dest_row[order],
        minute=minute[order],
        n_trips=int(origin_row.size),
        trip_row=order.astype(np.int64),
        with_neighbours=with_neighbours,
    )


def _within_window(minute: np.ndarray, departure_min: float, window_min: float) -> np.ndarray:
    gap = np.abs(minute - departure_min) % _DAY_MIN
    return np.minimum(gap, _DAY_MIN - gap) <= window_min  # circular: 23:30 is near 00:10


@dataclass(frozen=True)
class PairSupport:
    """Training trips behind one origin-destination answer.

    Attributes
    ----------
    n_zone_pair : int
        Trips from the origin's zone to the destination's zone.
    n_near : int
        Trips from the origin's zone or a neighbouring one to the destination's zone
        or a neighbouring one, at any time.
    n_near_at_time : int
        Those of ``n_near`` that departed within ``window_min`` of the departure's
        time of day (any day).
    window_min : float
    threshold : int
        Support is thin below this many trips (:data:`THIN_TRIPS`).
    with_neighbours : bool
        Whether neighbouring zones count (H3 cells); False for a planner's polygons,
        where ``n_near`` equals ``n_zone_pair``.
    """

    n_zone_pair: int
    n_near: int
    n_near_at_time: int
    window_min: float = WINDOW_MIN
    threshold: int = THIN_TRIPS
    with_neighbours: bool = True

    @property
    def thin(self) -> bool:
        """Fewer than ``threshold`` trips between the two places' areas."""
        return self.n_near < self.threshold

    @property
    def thin_at_time(self) -> bool:
        """Fewer than ``threshold`` of them around this time of day."""
        return self.n_near_at_time < self.threshold

    def sentence(self) -> str:
        """What stands behind the answer, in plain words.

        Examples
        --------
        >>> PairSupport(0, 0, 0).sentence().split(":")[0]
        'No training trip went between these two areas (the same or neighbouring zones)'
        >>> print(PairSupport(3, 12, 2).sentence())  # doctest: +NORMALIZE_WHITESPACE
        12 training trips went between these two areas (the same or neighbouring
        zones), 3 of them between exactly these zones and 2 within ±1 h of this
        time of day: at this hour the answer leans on trips at other times.
        >>> PairSupport(7, 7, 6, with_neighbours=False).sentence()
        '7 training trips went between these two zones, 6 within ±1 h of this time of day.'
        """
        where = "between these two areas (the same or neighbouring zones)"
        if not self.with_neighbours:
            where = "between these two zones"
        hours = f"within ±{self.window_min / 60:g} h of this time of day"
        if self.n_near == 0:
            return (
                f"No training trip went {where}: this answer is extrapolated from other "
                "trips. Treat it with caution."
            )
        trips = "trip" if self.n_near == 1 else "trips"
        if self.thin:
            return (
                f"Only {self.n_near} training {trips} went {where}, {self.n_near_at_time} "
                f"{hours}: little data stands behind this answer. Treat it with caution."
            )
        line = (
            f"{self.n_near:,} training trips went {where}, {self.n_zone_pair:,} of them "
            f"between exactly these zones and {self.n_near_at_time:,} {hours}"
        )
        if not self.with_neighbours:
            line = f"{self.n_near:,} training trips went {where}, {self.n_near_at_time:,} {hours}"
        if self.thin_at_time:
            return line + ": at this hour the answer leans on trips at other times."
        return line + "."


def pair_support(
    support: TripSupport,
    origin_row: int,
    dest_row: int,
    departure_min: float,
    *,
    window_min: float = WINDOW_MIN,
) -> PairSupport:
    """Count the training trips behind the answer from zone row to zone row."""
    rows = support._from_near(origin_row)
    dest, minute = support.dest[rows], support.minute[rows]
    near_dest = np.zeros(support.n_zones + 1, dtype=bool)  # the last entry: outside (-1)
    near_dest[support.near(dest_row)] = True
    hit = near_dest[dest]
    at_time = hit & _within_window(minute, departure_min, window_min)
    own = slice(support.offsets[origin_row], support.offsets[origin_row + 1])
    return PairSupport(
        n_zone_pair=int(np.count_nonzero(support.dest[own] == dest_row)),
        n_near=int(np.count_nonzero(hit)),
        n_near_at_time=int(np.count_nonzero(at_time)),
        window_min=float(window_min),
        with_neighbours=support.with_neighbours,
    )


def origin_support(
    support: TripSupport,
    origin_row: int,
    departure_min: float,
    *,
    window_min: float = WINDOW_MIN,
) -> pd.DataFrame:
    """Training trips from near one origin to near every zone (grid order).

    Columns ``support_trips`` (any time) and ``support_trips_at_time`` (within
    ``window_min`` of the departure's time of day), as :func:`pair_support` counts them.
    """
    rows = support._from_near(origin_row)
    dest, minute = support.dest[rows], support.minute[rows]
    n = support.n_zones
    inside = dest >= 0
    to_zone = np.bincount(dest[inside], minlength=n)
    at_time = np.bincount(
        dest[inside & _within_window(minute, departure_min, window_min)], minlength=n
    )
    # trips ending in a zone or one of its neighbours: the (symmetric) neighbour matrix
    return pd.DataFrame(
        {
            "support_trips": support.neighbours @ to_zone,
            "support_trips_at_time": support.neighbours @ at_time,
        }
    ).astype(np.int64)


def observed_trips(
    support: TripSupport,
    trips: pd.DataFrame,
    origin_row: int,
    dest_row: int,
    tz: str | None = None,
) -> pd.DataFrame:
    """The training trips from zone row ``origin_row`` to zone row ``dest_row``.

    ``trips`` is the table ``support`` indexes. Columns as
    :func:`vrvm.services.forecast.observed_pair_trips` gives them, for the time-of-day
    overlay: ``hour`` (local, fractional), ``minutes``, ``start_time``, ``weekend``.
    """
    if support.trip_row is None:
        raise ValueError("this support index does not keep the trips' rows")
    own = slice(support.offsets[origin_row], support.offsets[origin_row + 1])
    rows = support.trip_row[own][support.dest[own] == dest_row]
    chosen = trips.iloc[np.sort(rows)]
    start = chosen["start_time"]
    if tz is not None and start.dt.tz is not None:
        start = start.dt.tz_convert(tz)
    return pd.DataFrame(
        {
            "hour": (start.dt.hour + start.dt.minute / 60.0).to_numpy(),
            "minutes": chosen["travel_time_s"].to_numpy(float) / 60.0,
            "start_time": start.to_numpy(),
            "weekend": (start.dt.dayofweek >= 5).to_numpy(),
        }
    )
