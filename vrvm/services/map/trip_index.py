"""The map's zones and the trips indexed by them, derived once from all training trips.

Which hexagons hold trip ends (:func:`vrvm.trips.places.trip_zones.trip_zones`), how many
ends each holds, and every trip's origin and destination zone (a
:class:`~vrvm.trips.store.zone_index.ZoneIndex`, sorted by origin zone) cost one pass over
every training trip: seconds for the demo's 20,000 trips, a few minutes for ten
million. They depend only on the trips, the zones asked for and the time zone, so for
trips kept in the data home (:class:`~vrvm.trips.store.trip_table.TripTable` with a cache
folder) they are computed once and kept beside them, as a small JSON document and a
Parquet index; every later start of the dashboard reads the document (a few hundred
kilobytes) and opens the index, whose row groups an answer reads for a few zones.
Trips given as a DataFrame are indexed in memory the same way, by the same code.

:func:`hexagon_layout` gives the H3 zones (in the map's reading order) and
:func:`polygon_layout` the polygons of a planner's zone file holding trip ends, each
with a :class:`~vrvm.services.map.support.TripSupport`.
"""

from __future__ import annotations

import json

import h3
import numpy as np
import pandas as pd
from scipy import sparse

from vrvm.services.map.support import TripSupport, index_trips
from vrvm.trips.places.trip_zones import trip_polygons, trip_zones, zone_neighbours
from vrvm.trips.places.zone_files import ZoneFile
from vrvm.trips.places.zones import boundary_lonlat, latlng_to_cell_ints
from vrvm.trips.store.durable import atomic_write_json
from vrvm.trips.store.trip_table import TripTable
from vrvm.trips.store.zone_index import ZoneIndex

__all__ = [
    "as_trip_table",
    "cells_grid",
    "hexagon_layout",
    "in_id_order",
    "polygon_layout",
    "reading_order",
    "trip_zone_layout",
]


def reading_order(grid: pd.DataFrame, resolution: int) -> pd.DataFrame:
    """Zones in reading order: north to south in rows of about one zone height, west to
    east; index reset."""
    row_height = np.sqrt(h3.average_hexagon_area(resolution, unit="km^2")) / 111.195
    row = np.floor((grid["lat"].max() - grid["lat"]) / row_height).astype(int)
    grid = grid.assign(_row=row).sort_values(["_row", "lon"]).drop(columns="_row")
    return grid.reset_index(drop=True)


def cells_grid(zones, **columns) -> pd.DataFrame:
    """``zone``, ``lat``, ``lon`` (centre) and ``boundary`` of H3 cells, then ``columns``."""
    centres = np.array([h3.cell_to_latlng(c) for c in zones], dtype=np.float64).reshape(-1, 2)
    grid = pd.DataFrame(
        {
            "zone": pd.Series(list(zones), dtype=object),
            "lat": centres[:, 0],
            "lon": centres[:, 1],
            "boundary": [boundary_lonlat(c) for c in zones],
        }
    )
    for name, values in columns.items():
        grid[name] = np.asarray(values, dtype=np.int64)
    return grid


_DERIVED_VERSION = 1  # part of every cached file's name: bump when what is kept changes
_TRIP_COLUMNS = ["origin_lat", "origin_lon", "dest_lat", "dest_lon", "start_time", "travel_time_s"]


def as_trip_table(trips: pd.DataFrame | TripTable | None) -> TripTable | None:
    """The trips as a :class:`TripTable` (a DataFrame is held in memory); None if none."""
    if trips is None:
        return None
    table = trips if isinstance(trips, TripTable) else TripTable.from_frame(trips)
    return table if len(table) else None


def _cache_key(*parts) -> str:
    text = "-".join(str(p) for p in parts)
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def _kept_index(table: TripTable, name: str, build) -> tuple[dict, TripSupport]:
    """A layout and its support index, kept as ``name``.json/.parquet beside the trips.

    ``build(path)`` computes them (writing the index to ``path``, or to memory when
    None). The JSON is written last, so that it names a complete index; a cache that
    cannot be read is built again, and so is one kept before the index counted the
    trips by kind of day (:meth:`TripSupport.day_kind_trips`); one that cannot be
    written is kept in memory.
    """
    document_path, index_path = (
        table.cache_path(name + ".json"),
        table.cache_path(name + ".parquet"),
    )
    if document_path is not None and document_path.is_file() and index_path.is_file():
        try:
            layout = json.loads(document_path.read_text(encoding="utf-8"))
            index = ZoneIndex.open(index_path)
            if "day_kind_trips" in index.meta:  # else from before the counts: build again
                return layout, _support_of(layout, index)
        except (OSError, ValueError, KeyError):
            pass  # damaged: build it again
    try:
        layout, support = build(index_path)
    except OSError:  # a read-only home: keep it in memory
        if index_path is None:
            raise
        layout, support = build(None)
        return layout, support
    if document_path is not None:
        try:
            atomic_write_json(document_path, layout)
        except OSError:
            pass
    return layout, support


def _support_of(layout: dict, index: ZoneIndex) -> TripSupport:
    if layout["kind"] == "hexagons":
        return TripSupport(zone_neighbours(layout["zones"]), index, layout["n_trips"], True)
    neighbours = sparse.identity(len(layout["where"]), dtype=bool, format="csr")
    return TripSupport(neighbours, index, layout["n_trips"], False)


def trip_zone_layout(table: TripTable, resolution: int | None, max_zones: int) -> dict:
    """:func:`~vrvm.trips.places.trip_zones.trip_zones` of all the trips, kept beside them."""

    def compute() -> dict:
        ends = table.read(_TRIP_COLUMNS[:4])
        found = trip_zones(
            *(ends[c] for c in _TRIP_COLUMNS[:4]), resolution=resolution, max_zones=max_zones
        )
        median = found.median_trip_km
        return {
            "zones": found.grid["zone"].tolist(),
            "cluster": found.grid["cluster"].tolist(),
            "resolution": int(found.resolution),
            "focus": list(found.focus_bbox),
            "median_km": None if not np.isfinite(median) else float(median),
        }

    key = _cache_key("trip-zones", f"v{_DERIVED_VERSION}", resolution or "auto", max_zones)
    return table.cached_json(key + ".json", compute)


def hexagon_layout(
    table: TripTable, tz: str, resolution: int | None, max_zones: int
) -> tuple[dict, TripSupport]:
    """The hexagons holding trip ends (display order) and the trips indexed by them."""

    def build(path):
        found = trip_zone_layout(table, resolution, max_zones)
        res = found["resolution"]
        trips = table.read(_TRIP_COLUMNS)
        # Ends are counted in the cell that holds them at this resolution (an H3 parent
        # need not contain its children's points), as clicks, links and the support
        # counts find them.
        o_cells = latlng_to_cell_ints(trips["origin_lat"], trips["origin_lon"], res)
        d_cells = latlng_to_cell_ints(trips["dest_lat"], trips["dest_lon"], res)
        counts = pd.Series(np.concatenate([o_cells, d_cells])).value_counts()
        grid = cells_grid(found["zones"], cluster=found["cluster"])
        grid["n_points"] = counts.reindex(_cell_ints(grid["zone"]), fill_value=0).to_numpy()
        empty = grid["n_points"].to_numpy() == 0
        grid = reading_order(grid.loc[~empty], res)
        zone_index = pd.Index(_cell_ints(grid["zone"]))
        layout = {
            "kind": "hexagons",
            "zones": grid["zone"].tolist(),
            "n_points": grid["n_points"].tolist(),
            "cluster": grid["cluster"].tolist(),
            "idle": [z for z, e in zip(found["zones"], empty, strict=True) if e],
            "resolution": res,
            "focus": found["focus"],
            "median_km": found["median_km"],
            "n_trips": len(trips),
            "tz": tz,
        }
        support = index_trips(
            zone_index.get_indexer(o_cells),
            zone_index.get_indexer(d_cells),
            trips["start_time"],
            zone_neighbours(grid["zone"]),
            tz,
            extra={"origin_cell": o_cells, "dest_cell": d_cells, **_times(trips)},
            path=path,
        )
        return layout, support

    name = _cache_key("hexagons", f"v{_DERIVED_VERSION}", resolution or "auto", max_zones, tz)
    return _kept_index(table, name, build)


def polygon_layout(table: TripTable, zones: ZoneFile, tz: str) -> tuple[dict, TripSupport]:
    """The polygons of ``zones`` holding trip ends and the trips indexed by them."""

    def build(path):
        trips = table.read(_TRIP_COLUMNS)
        found = trip_polygons(zones, *(trips[c] for c in _TRIP_COLUMNS[:4]))
        where = in_id_order(zones.ids, found.positions)
        rows = np.empty(len(zones) + 1, dtype=np.int64)  # file position -> grid row; -1 -> -1
        rows[-1] = -1
        rows[where] = np.arange(where.size)
        origin_row = rows[found.positions[found.origin_row]]
        origin_row[found.origin_row < 0] = -1
        dest_row = rows[found.positions[found.dest_row]]
        dest_row[found.dest_row < 0] = -1
        layout = {
            "kind": "polygons",
            "positions": found.positions.tolist(),
            "n_points": found.n_points.tolist(),
            "where": where.tolist(),
            "n_trips": len(trips),
            "tz": tz,
        }
        support = index_trips(
            origin_row,
            dest_row,
            trips["start_time"],
            where.size,
            tz,
            extra=_times(trips),
            path=path,
        )
        return layout, support

    name = _cache_key("polygons", f"v{_DERIVED_VERSION}", zones.fingerprint[:32], tz)
    return _kept_index(table, name, build)


def _cell_ints(cells) -> np.ndarray:
    """H3 ids (text) as unsigned 64-bit integers."""
    return np.array([h3.str_to_int(c) for c in cells], dtype=np.uint64)


def _times(trips: pd.DataFrame) -> dict[str, np.ndarray]:
    """``start_time`` (UTC instants) and ``travel_time_s``, as the index keeps them."""
    start = pd.to_datetime(trips["start_time"], utc=True).dt.tz_localize(None)
    return {
        "start_time": start.to_numpy(dtype="datetime64[ns]"),
        "travel_time_s": trips["travel_time_s"].to_numpy(float),
    }


def in_id_order(ids: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``positions`` sorted by their zones' ids: numbers as numbers, then text.

    Examples
    --------
    >>> in_id_order(np.array(["10", "9", "B", "1.5"], dtype=object), np.arange(4)).tolist()
    [3, 1, 0, 2]
    """
    keys = ids[positions].astype(str)
    numbers = pd.to_numeric(pd.Series(keys), errors="coerce").to_numpy(float)
    order = np.lexsort((keys, np.nan_to_num(numbers, nan=np.inf), np.isnan(numbers)))
    return positions[order]
