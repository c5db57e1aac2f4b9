"""How much data stands behind an answer: training trips near the origin and destination.

A travel-time model answers for any two points, but its answer between two places no
training trip joined is an extrapolation. :class:`TripSupport` indexes the model's
training trips by zone once per service area; :func:`pair_support` then counts, reading
only the trips from near the origin, the trips that started in the origin's zone or a
neighbouring one and ended in the destination's zone or a neighbouring one, in all and
within ``WINDOW_MIN`` minutes of the departure's time of day; :func:`origin_support` counts
them from one origin to every zone (the reach map). Fewer than ``THIN_TRIPS`` such
trips is *thin support*, which the pages say in plain words. The index also counts all
training trips by kind of day (:data:`DAY_KINDS`): a model that learned from weekdays
alone (the San Francisco bike-share sample has no weekend trip) answers for a Saturday
with what it learned on weekdays, and :meth:`PairSupport.sentence` says so. Zones are H3 cells
(:func:`build_trip_support`, neighbours are the touching cells) or a planner's
polygons (:func:`index_trips` with ``neighbours=None``: trips are counted between exactly
the two polygons, which are already the areas a planner reasons in);
:func:`observed_trips` and :func:`observed_near` list the training trips between two
zones. The index is a :class:`~vrvm.trips.store.zone_index.ZoneIndex`: in memory for a small
table, a Parquet file beside the training trips for a large one, from which an answer
reads a few row groups (the trips from the origin's zone and its neighbours).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import h3
import numpy as np
import pandas as pd
from scipy import sparse

from vrvm.trips.places.trip_zones import zone_neighbours
from vrvm.trips.places.zones import latlng_to_zone
from vrvm.trips.store.zone_index import ZoneIndex
from vrvm.trips.table import DAY_KINDS, day_kind, day_kind_counts, local_weekday

__all__ = [
    "DAY_KINDS",
    "THIN_TRIPS",
    "WINDOW_MIN",
    "PairSupport",
    "TripSupport",
    "build_trip_support",
    "day_kind",
    "day_kinds_warning",
    "day_note",
    "index_trips",
    "learned_on_clause",
    "local_minutes",
    "local_weekday",
    "minute_of_day",
    "observed_frame",
    "observed_near",
    "observed_trips",
    "origin_support",
    "pair_support",
    "thin_day_queries",
    "thin_days",
    "weekday_of",
]

THIN_TRIPS = 5
"""Support is thin when fewer training trips than this joined the two places' areas."""
WINDOW_MIN = 60
MEMO_TRIPS = 2_000_000
"""Most trips :meth:`TripSupport.trips_from` remembers (about 32 bytes each)."""
"""Trips "at this time of day" departed within this many minutes of the departure."""
_DAY_MIN = 24 * 60
_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@dataclass(frozen=True)
class TripSupport:
    """The training trips indexed by zone (one service area's grid order).

    The trips are kept in a :class:`~vrvm.trips.store.zone_index.ZoneIndex`, sorted by origin
    zone, so that the trips from zone ``z`` are the rows ``offsets[z]:offsets[z + 1]``
    (a compressed sparse row layout) and a question about a few zones reads only
    theirs: in memory for small tables, from a Parquet file beside the training trips
    for large ones (see :func:`vrvm.services.map.area.build_service_area`). Trips starting
    outside every zone are kept after the others and counted in no answer.

    Attributes
    ----------
    neighbours : scipy.sparse.csr_matrix
        ``(n_zones, n_zones)`` boolean, True where two zones touch and on the diagonal.
    index : ZoneIndex
        Each trip's origin and destination zone rows (-1 outside every zone), local
        departure minute of the day and position in the training table, sorted by
        origin zone.
    n_trips : int
        All training trips, inside the zones or not.
    with_neighbours : bool
        Whether trips from and to the touching zones count too (H3 cells), or only
        those between exactly the two zones (a planner's polygons).
    """

    neighbours: sparse.csr_matrix
    index: ZoneIndex
    n_trips: int
    with_neighbours: bool = True

    @property
    def n_zones(self) -> int:
        return int(self.index.n_zones)

    @property
    def offsets(self) -> np.ndarray:
        """Rows ``offsets[z]:offsets[z + 1]`` of the index are the trips from zone ``z``."""
        return self.index.offsets[: self.n_zones + 1]

    @property
    def dest(self) -> np.ndarray:
        """Destination zone row of every trip starting in a zone (reads them all)."""
        return self.index.column("dest", inside_only=True).astype(np.int64)

    @property
    def minute(self) -> np.ndarray:
        """Local departure minute of the day of every trip starting in a zone (all read)."""
        return self.index.column("minute", inside_only=True)

    @property
    def trip_row(self) -> np.ndarray:
        """Position in the training table of every trip starting in a zone (all read)."""
        return self.index.column("row", inside_only=True)

    def day_kind_trips(self, kind: str) -> int | None:
        """All training trips (in a zone or not) that departed on a ``kind`` of day
        (:data:`DAY_KINDS`), or None for an index built before they were counted."""
        counts = self.index.meta.get("day_kind_trips")
        return None if counts is None else int(counts.get(kind, 0))

    def near(self, row: int) -> np.ndarray:
        """Rows of zone ``row`` and of the zones touching it."""
        indptr, indices = self.neighbours.indptr, self.neighbours.indices
        return indices[indptr[row] : indptr[row + 1]]

    def trips_from(self, rows, columns: Sequence[str]) -> dict[str, np.ndarray]:
        """``columns`` (and ``origin``) of the trips from zone rows ``rows`` (-1: no zone).

        Reads only those zones' trips, every column of the index at once, and
        remembers the most recently asked zones' trips (up to :data:`MEMO_TRIPS` trips
        in all, least recently used forgotten first): one click asks about the same
        zones for the support counts and the observed trips, and a server answering
        many trips from the same bases reads each base's trips once.
        """
        zones = tuple(sorted({int(r) for r in rows}))
        memo, lock = self._memo
        with lock:
            found = memo.get(zones)
            if found is not None:
                memo.move_to_end(zones)
                return found
        found = self.index.trips_from(zones, self.index.columns)
        with lock:
            memo[zones] = found
            held = sum(len(next(iter(v.values()), ())) for v in memo.values())
            while len(memo) > 1 and held > MEMO_TRIPS:
                _, dropped = memo.popitem(last=False)
                held -= len(next(iter(dropped.values()), ()))
        return found

    @property
    def _memo(self) -> tuple[OrderedDict, threading.Lock]:
        # a frozen dataclass: its __dict__ gets the memo once (setdefault is atomic)
        return self.__dict__.setdefault("_lru", (OrderedDict(), threading.Lock()))


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


def weekday_of(when, tz: str | None = None) -> int:
    """Local weekday (Monday = 0) of ``when`` (in ``tz`` if aware), as
    :func:`minute_of_day` reads its clock.

    Examples
    --------
    >>> weekday_of(pd.Timestamp("2024-03-09 05:00", tz="UTC"), "America/Chicago")  # Friday
    4
    """
    return int(local_weekday(pd.Series([pd.Timestamp(when)]), tz)[0])


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
    *,
    extra: dict[str, np.ndarray] | None = None,
    path: str | os.PathLike[str] | None = None,
) -> TripSupport:
    """Index training trips whose zone rows are known (-1: outside every zone).

    Parameters
    ----------
    origin_row, dest_row : numpy.ndarray of int
        Zone row of each trip's origin and destination.
    start_time : pandas.Series of datetime
        Each trip's departure, read in ``tz`` when timezone-aware.
    neighbours : scipy.sparse.csr_matrix or int
        Which zones touch (see :func:`~vrvm.trips.places.trip_zones.zone_neighbours`), or the
        number of zones: then a zone's only neighbour is itself and trips are counted
        between exactly the two zones (a planner's polygons).
    tz : str, optional
        Time zone of the local departure minute.
    extra : dict of str to numpy.ndarray, optional
        More per-trip columns to keep in the index (``start_time``, ``travel_time_s``,
        the ends' H3 cells), so that observed trips need not read the trip table.
    path : path-like, optional
        Keep the index in this Parquet file (default: in memory).

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
    with_neighbours = not isinstance(neighbours, int | np.integer)
    if not with_neighbours:
        neighbours = sparse.identity(int(neighbours), dtype=bool, format="csr")
    columns = {
        "origin": origin_row,
        "dest": np.asarray(dest_row, dtype=np.int64),
        "minute": local_minutes(start_time, tz),
        **(extra or {}),
    }
    meta = {
        "tz": tz,
        "with_neighbours": with_neighbours,
        "day_kind_trips": day_kind_counts(start_time, tz),
    }
    index = ZoneIndex.build(columns, n_zones=neighbours.shape[0], meta=meta, path=path)
    return TripSupport(neighbours, index, int(origin_row.size), with_neighbours)


def local_minutes(start_time: pd.Series, tz: str | None = None) -> np.ndarray:
    """Local wall-clock minute of the day of each departure (read in ``tz`` if aware).

    Examples
    --------
    >>> local_minutes(pd.Series(pd.to_datetime(["2024-03-05 08:15:30"], utc=True)), "UTC")
    array([495.5])
    """
    start = start_time
    if start.dt.tz is not None and tz is not None:
        start = start.dt.tz_convert(tz)
    return (start.dt.hour * 60 + start.dt.minute + start.dt.second / 60.0).to_numpy(float)


def thin_days(support: TripSupport, start_time: pd.Series, tz: str | None = None) -> np.ndarray:
    """Whether fewer than :data:`THIN_TRIPS` of all the training trips departed on each
    departure's kind of day (:data:`DAY_KINDS`, read in ``tz``); False throughout for an
    index without the counts.

    Examples
    --------
    >>> start = pd.Series(pd.date_range("2024-03-05 08:00", periods=6, freq="h"))  # Tuesday
    >>> support = index_trips(np.zeros(6, int), np.zeros(6, int), start, 1)
    >>> asked = pd.Series(pd.to_datetime(["2024-03-09 08:00", "2024-03-12 08:00"]))
    >>> thin_days(support, asked).tolist()  # a Saturday, a Tuesday
    [True, False]
    """
    kinds = day_kind(local_weekday(start_time, tz))
    thin = np.zeros(len(kinds), dtype=bool)
    for kind in DAY_KINDS:
        n_day = support.day_kind_trips(kind)
        if n_day is not None and n_day < THIN_TRIPS:
            thin |= kinds == kind
    return thin


def thin_day_queries(model, queries: pd.DataFrame) -> dict[str, int]:
    """How many ``queries`` depart on each kind of day (:data:`DAY_KINDS`) on which
    fewer than :data:`THIN_TRIPS` of the model's training trips departed, by kind (only
    the kinds with some): what the model's recorded counts say
    (:meth:`~vrvm.trips.model.travel_time.TravelTimeModel.trips_on_day_kind`), with or
    without a trip index; ``{}`` for a model saved before it recorded them.

    Examples
    --------
    >>> from vrvm import TravelTimeModel, synthetic_city
    >>> trips = synthetic_city(800, seed=0)
    >>> weekdays = trips[trips["start_time"].dt.weekday < 5]
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.5], max_basis=40,
    ...                         random_state=0).fit(weekdays)
    >>> thin_day_queries(model, trips) == {"weekend": len(trips) - len(weekdays)}
    True
    >>> thin_day_queries(model, weekdays)
    {}
    """
    if not len(queries):
        return {}
    n_day = model.trips_on_day_kind(queries)
    if n_day is None:
        return {}
    thin = n_day < THIN_TRIPS
    if not thin.any():
        return {}
    # the kinds of the thin queries alone (almost always none)
    kinds = day_kind(local_weekday(queries["start_time"][thin], model.tz_))
    counted = {kind: int(np.count_nonzero(kinds == kind)) for kind in DAY_KINDS}
    return {kind: n for kind, n in counted.items() if n}


def day_kinds_warning(
    model, thin_queries: dict[str, int], n_queries: int, *, noun: str = "queries"
) -> str:
    """One line saying how many of ``n_queries`` queries (``noun``: what they are called)
    depart on a kind of day the model hardly learned (``thin_queries``, see
    :func:`thin_day_queries`) and what it answers them with, or ``""`` when none does.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> counts = {"weekday": 900, "weekend": 0}
    >>> model = SimpleNamespace(training_summary_={"day_kind_trips": counts})
    >>> day_kinds_warning(model, {"weekend": 12}, 40)  # doctest: +NORMALIZE_WHITESPACE
    '12 of 40 queries depart on a weekend, but none of the training trips did: the model
    answers for them with what it learned on weekdays'
    >>> day_kinds_warning(model, {}, 40)
    ''
    >>> day_kinds_warning(model, {"weekend": 6}, 6, noun="pairs")[:33]
    '6 of 6 pairs depart on a weekend,'
    """
    lines = []
    for kind, n in thin_queries.items():
        depart, them = ("departs", "it") if n == 1 else ("depart", "them")
        lines.append(
            f"{n:,} of {n_queries:,} {noun} {depart} on a {kind}, "
            + learned_on_clause(model, kind, them)
        )
    return "; ".join(lines)


def learned_on_clause(model, kind: str, them: str = "them") -> str:
    """The end of a sentence saying something departs on a ``kind`` of day
    (:data:`DAY_KINDS`): how many of the model's training trips did, and what it answers
    for ``them`` with (:func:`day_kinds_warning`'s words, for other subjects).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> model = SimpleNamespace(training_summary_={"day_kind_trips": {"weekday": 9, "weekend": 1}})
    >>> learned_on_clause(model, "weekend", "the pairs that leave then")  # doctest: +ELLIPSIS
    'but only 1 training trip did: the model answers for the pairs ... mostly with ...'
    """
    counts = (model.training_summary_ or {}).get("day_kind_trips") or {}
    n_day = int(counts.get(kind, 0))
    other = DAY_KINDS[kind == DAY_KINDS[0]]
    did = "none of the training trips" if n_day == 0 else f"only {n_day:,} training trips"
    if n_day == 1:
        did = "only 1 training trip"
    mostly = "" if n_day == 0 else "mostly "
    return f"but {did} did: the model answers for {them} {mostly}with what it learned on {other}s"


def day_note(support: TripSupport, departure, tz: str | None = None) -> str:
    """:meth:`PairSupport.day_sentence` for one ``departure`` (read in ``tz`` if aware):
    what the model learned of its kind of day when too little, else ``""``.

    Examples
    --------
    >>> start = pd.Series(pd.date_range("2024-03-05 08:00", periods=6, freq="h"))  # Tuesday
    >>> support = index_trips(np.zeros(6, int), np.zeros(6, int), start, 1)
    >>> day_note(support, "2024-03-10 08:00").split(":")[0]
    'None of the training trips departed on a weekend'
    >>> day_note(support, "2024-03-12 08:00")
    ''
    """
    weekday = weekday_of(departure, tz)
    n_day = support.day_kind_trips(day_kind(weekday))
    return "" if n_day is None or n_day >= THIN_TRIPS else _day_text(weekday, n_day)


def _day_text(weekday: int, n_day: int) -> str:
    kind = day_kind(weekday)
    other, day = DAY_KINDS[kind == DAY_KINDS[0]], _DAY_NAMES[weekday]
    if n_day == 0:
        return (
            f"None of the training trips departed on a {kind}: for a {day} this model "
            f"answers with what it learned on {other}s."
        )
    trips = "trip" if n_day == 1 else "trips"
    return (
        f"Only {n_day} training {trips} departed on a {kind}: for a {day} "
        f"this model answers mostly with what it learned on {other}s."
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
    weekday : int or None
        The departure's local weekday (Monday = 0); None when not asked.
    n_day_kind : int or None
        All the model's training trips, anywhere, that departed on the same kind of
        day (:data:`DAY_KINDS`) as the departure; None when not counted.
    """

    n_zone_pair: int
    n_near: int
    n_near_at_time: int
    window_min: float = WINDOW_MIN
    threshold: int = THIN_TRIPS
    with_neighbours: bool = True
    weekday: int | None = None
    n_day_kind: int | None = None

    @property
    def thin(self) -> bool:
        """Fewer than ``threshold`` trips between the two places' areas."""
        return self.n_near < self.threshold

    @property
    def thin_at_time(self) -> bool:
        """Fewer than ``threshold`` of them around this time of day."""
        return self.n_near_at_time < self.threshold

    @property
    def day_kind(self) -> str | None:
        """The departure's kind of day (:data:`DAY_KINDS`), or None when not asked."""
        return None if self.weekday is None else day_kind(self.weekday)

    @property
    def thin_day(self) -> bool:
        """Fewer than ``threshold`` of the model's training trips departed on this kind
        of day: the answer is what the model learned on the other kind."""
        return self.n_day_kind is not None and self.n_day_kind < self.threshold

    @property
    def caution(self) -> bool:
        """Whether the answer should be read with caution: thin support for the pair
        (:attr:`thin`) or for the kind of day (:attr:`thin_day`)."""
        return self.thin or self.thin_day

    def day_sentence(self) -> str:
        """What the model learned of the departure's kind of day, when too little.

        Examples
        --------
        >>> print(PairSupport(9, 9, 9, weekday=5, n_day_kind=0).day_sentence())
        ... # doctest: +NORMALIZE_WHITESPACE
        None of the training trips departed on a weekend: for a Saturday this model
        answers with what it learned on weekdays.
        >>> print(PairSupport(9, 9, 9, weekday=0, n_day_kind=2).day_sentence())
        ... # doctest: +NORMALIZE_WHITESPACE
        Only 2 training trips departed on a weekday: for a Monday this model answers
        mostly with what it learned on weekends.
        >>> PairSupport(9, 9, 9, weekday=0, n_day_kind=200).day_sentence()
        ''
        """
        return _day_text(self.weekday, self.n_day_kind) if self.thin_day else ""

    def sentence(self) -> str:
        """What stands behind the answer, in plain words (with :meth:`day_sentence`).

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
        >>> print(PairSupport(7, 7, 6, with_neighbours=False, weekday=6, n_day_kind=0).sentence())
        ... # doctest: +NORMALIZE_WHITESPACE
        7 training trips went between these two zones, 6 within ±1 h of this time of
        day. None of the training trips departed on a weekend: for a Sunday this model
        answers with what it learned on weekdays. Treat it with caution.
        """
        line = self._pair_sentence()
        day = self.day_sentence()
        if not day:
            return line
        if line.endswith("Treat it with caution."):
            return f"{line.removesuffix(' Treat it with caution.')} {day} Treat it with caution."
        return f"{line} {day} Treat it with caution."

    def _pair_sentence(self) -> str:
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
    weekday: int | None = None,
) -> PairSupport:
    """Count the training trips behind the answer from zone row to zone row; with the
    departure's local ``weekday`` (Monday = 0), also all the training trips on its kind
    of day (:meth:`TripSupport.day_kind_trips`)."""
    found = support.trips_from(support.near(origin_row), ("dest", "minute"))
    dest, minute = found["dest"].astype(np.int64), found["minute"]
    near_dest = np.zeros(support.n_zones + 1, dtype=bool)  # the last entry: outside (-1)
    near_dest[support.near(dest_row)] = True
    hit = near_dest[dest]
    at_time = hit & _within_window(minute, departure_min, window_min)
    own = found["origin"] == origin_row
    return PairSupport(
        n_zone_pair=int(np.count_nonzero(dest[own] == dest_row)),
        n_near=int(np.count_nonzero(hit)),
        n_near_at_time=int(np.count_nonzero(at_time)),
        window_min=float(window_min),
        with_neighbours=support.with_neighbours,
        weekday=None if weekday is None else int(weekday),
        n_day_kind=None if weekday is None else support.day_kind_trips(day_kind(weekday)),
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
    found = support.trips_from(support.near(origin_row), ("dest", "minute"))
    dest, minute = found["dest"].astype(np.int64), found["minute"]
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
    trips: pd.DataFrame | None,
    origin_row: int,
    dest_row: int,
    tz: str | None = None,
) -> pd.DataFrame:
    """The training trips from zone row ``origin_row`` to zone row ``dest_row``.

    ``trips`` is the table ``support`` indexes; it is not needed (None) when the index
    keeps ``start_time`` and ``travel_time_s`` (then only the origin zone's trips are
    read). Columns as :func:`vrvm.services.answers.forecast.observed_pair_trips` gives them,
    for the time-of-day overlay: ``hour`` (local, fractional), ``minutes``,
    ``start_time``, ``weekend``.
    """
    held = {"start_time", "travel_time_s"} <= set(support.index.columns)
    if not held and trips is None:
        raise ValueError("this support index does not keep the trips' times: pass the trips")
    columns = ["dest", "row", *(["start_time", "travel_time_s"] if held else [])]
    found = support.trips_from([origin_row], columns)
    own = (found["origin"] == origin_row) & (found["dest"] == dest_row)
    order = np.argsort(found["row"][own], kind="stable")
    if held:
        chosen = {c: found[c][own][order] for c in ("start_time", "travel_time_s")}
        start = pd.Series(pd.to_datetime(chosen["start_time"], utc=True))
        return observed_frame(start, chosen["travel_time_s"], tz or support.index.meta.get("tz"))
    chosen = trips.iloc[found["row"][own][order]]
    return observed_frame(chosen["start_time"], chosen["travel_time_s"].to_numpy(float), tz)


def observed_near(
    support: TripSupport,
    zone_rows: pd.Index,
    origin_cell: str,
    dest_cell: str,
    *,
    tz: str | None = None,
    min_trips: int = 3,
    max_rings: int = 1,
) -> tuple[pd.DataFrame, int]:
    """Training trips between two H3 cells, or their disks when fewer than ``min_trips``.

    Trips whose origin lies in ``origin_cell`` and destination in ``dest_cell`` (at
    the index's resolution); if fewer than ``min_trips``, those within 1, 2, ...,
    ``max_rings`` rings of them. ``zone_rows`` are the zones' ids in grid order.
    Reads only the trips from the cells of the origin's disk (needs an index that
    keeps the ends' cells, ``origin_cell`` and ``dest_cell``). Returns ``(frame,
    rings_used)`` as :func:`vrvm.services.answers.forecast.observed_pair_trips` does.
    """
    disk = [
        np.array([h3.str_to_int(c) for c in h3.grid_disk(origin_cell, r)], dtype=np.uint64)
        for r in range(max_rings + 1)
    ]
    to_disk = [
        np.array([h3.str_to_int(c) for c in h3.grid_disk(dest_cell, r)], dtype=np.uint64)
        for r in range(max_rings + 1)
    ]
    cells = list(h3.grid_disk(origin_cell, max_rings))
    rows = zone_rows.get_indexer(cells)
    zones = [int(r) for r in rows if r >= 0] + ([-1] if (rows < 0).any() else [])
    columns = ("origin_cell", "dest_cell", "row", "start_time", "travel_time_s")
    found = support.trips_from(zones, columns)
    for rings in range(max_rings + 1):
        mask = np.isin(found["origin_cell"], disk[rings]) & np.isin(
            found["dest_cell"], to_disk[rings]
        )
        if mask.sum() >= min_trips or rings == max_rings:
            break
    order = np.argsort(found["row"][mask], kind="stable")
    start = pd.Series(pd.to_datetime(found["start_time"][mask][order], utc=True))
    travel = found["travel_time_s"][mask][order]
    frame = observed_frame(start, travel, tz or support.index.meta.get("tz"))
    return frame, rings


def observed_frame(
    start: pd.Series, travel_time_s: np.ndarray, tz: str | None = None
) -> pd.DataFrame:
    """Observed trips for the time-of-day overlay: ``hour`` (local, fractional),
    ``minutes``, ``start_time`` (local) and ``weekend``."""
    if tz is not None and start.dt.tz is not None:
        start = start.dt.tz_convert(tz)
    return pd.DataFrame(
        {
            "hour": (start.dt.hour + start.dt.minute / 60.0).to_numpy(),
            "minutes": np.asarray(travel_time_s, dtype=float) / 60.0,
            "start_time": start.to_numpy(),
            "weekend": (start.dt.dayofweek >= 5).to_numpy(),
        }
    )
