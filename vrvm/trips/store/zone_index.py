"""Trips indexed by zone: each trip's origin and destination zone, sorted by origin zone.

The dashboard asks, after every click, about the trips *from a few zones*: how many
went from near the origin to near the destination (support counts), which went
between the two zones (the observed trips on the time-of-day chart). A
:class:`ZoneIndex` holds, for every trip, the row of its origin and destination zone
(-1: in no zone) and the few values those answers need (local minute of the day,
start, travel time, position in the trip table, and optionally the trip ends' H3
cells), sorted by origin zone. The trips from zone ``z`` are then the contiguous rows
``offsets[z]:offsets[z + 1]`` (those in no zone come last), so that on disk a
question about seven zones reads a few row groups, whatever the number of trips.

The index is kept as a Parquet file (beside the trips it indexes, see
:meth:`vrvm.trips.store.trip_table.TripTable.cache_path`) or in memory.

Examples
--------
>>> import numpy as np
>>> index = ZoneIndex.build(
...     {"origin": np.array([1, 0, -1, 1]), "dest": np.array([0, 1, 1, -1]),
...      "minute": np.array([10.0, 20.0, 30.0, 40.0])},
...     n_zones=2,
... )
>>> index.offsets.tolist(), index.n_trips
([0, 1, 3, 4], 4)
>>> found = index.trips_from([1], ["dest", "minute", "row"])
>>> found["origin"].tolist(), found["dest"].tolist(), found["row"].tolist()
([1, 1], [0, -1], [0, 3])
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vrvm.trips.store.durable import atomic_write

__all__ = ["INDEX_ROW_GROUP_ROWS", "ZoneIndex"]

INDEX_ROW_GROUP_ROWS = 16_384
"""Rows per row group of an index file: the trips of a quiet zone are one row group, a
busy zone's a few; reading seven zones of ten million trips decodes a few megabytes."""

_META_KEY = b"vrvm.zone_index"


class ZoneIndex:
    """Trips sorted by origin zone, in memory or in a Parquet file (see the module docs).

    Build one with :meth:`build` and open a kept one with :meth:`open`.

    Attributes
    ----------
    offsets : numpy.ndarray of int64, shape (n_zones + 2,)
        The trips from zone ``z`` are rows ``offsets[z]:offsets[z + 1]``; those in no
        zone are ``offsets[n_zones]:offsets[n_zones + 1]``.
    n_zones : int
    meta : dict
        What the builder recorded (time zone, zones' fingerprint, ...).
    columns : tuple of str
        The columns kept; always ``origin``, ``dest`` and ``row``.
    groups_read : int
        Row groups read from the file so far (0 in memory).
    """

    def __init__(
        self,
        offsets: np.ndarray,
        meta: Mapping[str, Any],
        *,
        columns: dict[str, np.ndarray] | None = None,
        path: Path | None = None,
    ) -> None:
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.n_zones = int(self.offsets.size - 2)
        self.meta = dict(meta)
        self.path = path
        self.groups_read = 0
        self._columns = columns
        if columns is not None:
            self.columns = tuple(columns)
            self._group_rows = np.zeros(0, dtype=np.int64)
        else:
            self._metadata = pq.read_metadata(path)
            self.columns = tuple(self._metadata.schema.to_arrow_schema().names)
            sizes = [
                self._metadata.row_group(i).num_rows for i in range(self._metadata.num_row_groups)
            ]
            self._group_rows = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])

    def __repr__(self) -> str:
        where = "memory" if self.path is None else self.path.name
        return f"ZoneIndex({self.n_trips:,} trips, {self.n_zones:,} zones, {where})"

    @property
    def n_trips(self) -> int:
        """Every trip indexed, in a zone or not."""
        return int(self.offsets[-1])

    # ----------------------------------------------------------------- building
    @classmethod
    def build(
        cls,
        columns: Mapping[str, np.ndarray],
        *,
        n_zones: int,
        meta: Mapping[str, Any] | None = None,
        path: str | os.PathLike[str] | None = None,
        row_group_rows: int | None = None,
    ) -> ZoneIndex:
        """Sort trips by origin zone and keep them (in ``path``, else in memory).

        Parameters
        ----------
        columns : mapping of str to numpy.ndarray
            One value per trip, in trip-table order: ``origin`` and ``dest`` (zone
            rows, -1 in no zone) and any others (``minute``, ``start_time``, ...).
            ``row`` (the position in the table) is added.
        n_zones : int
            Number of zones (rows are ``0 .. n_zones - 1``).
        meta : mapping, optional
            JSON-serialisable facts kept with the index.
        path : path-like, optional
            The Parquet file to write (atomically); None keeps the index in memory.
        row_group_rows : int, optional
            Rows per row group of the file (default :data:`INDEX_ROW_GROUP_ROWS`).
        """
        origin = np.asarray(columns["origin"], dtype=np.int64)
        key = np.where(origin < 0, n_zones, origin)  # trips in no zone go last
        order = np.argsort(key, kind="stable")  # table order within a zone
        offsets = np.searchsorted(key[order], np.arange(n_zones + 2)).astype(np.int64)
        sorted_columns: dict[str, np.ndarray] = {
            "origin": origin[order].astype(np.int32),
            "dest": np.asarray(columns["dest"])[order].astype(np.int32),
            "row": order.astype(np.int64),
        }
        for name, values in columns.items():
            if name not in sorted_columns:
                sorted_columns[name] = np.asarray(values)[order]
        meta = dict(meta or {})
        if path is None:
            return cls(offsets, meta, columns=sorted_columns)
        path = Path(path)
        rows_per_group = int(row_group_rows or INDEX_ROW_GROUP_ROWS)
        document = {"offsets": offsets.tolist(), "meta": meta}
        table = pa.table(sorted_columns).replace_schema_metadata(
            {_META_KEY: json.dumps(document).encode("utf-8")}
        )
        atomic_write(path, lambda tmp: pq.write_table(table, tmp, row_group_size=rows_per_group))
        return cls.open(path)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> ZoneIndex:
        """A kept index; ValueError when ``path`` is not one."""
        path = Path(path)
        raw = (pq.read_schema(path).metadata or {}).get(_META_KEY)
        if raw is None:
            raise ValueError(f"{path.name} is not a zone index")
        document = json.loads(raw.decode("utf-8"))
        return cls(np.asarray(document["offsets"]), document.get("meta", {}), path=path)

    # ------------------------------------------------------------------ reading
    def _ranges(self, zones: Sequence[int]) -> list[tuple[int, int]]:
        """Row ranges of the trips from ``zones`` (-1: those in no zone), in zone order."""
        out = []
        for zone in zones:
            z = self.n_zones if int(zone) < 0 else int(zone)
            if not 0 <= z <= self.n_zones:
                raise IndexError(f"zone row {zone} out of range for {self.n_zones} zones")
            if self.offsets[z + 1] > self.offsets[z]:
                out.append((int(self.offsets[z]), int(self.offsets[z + 1])))
        return out

    def trips_from(
        self, zones: Sequence[int], columns: Sequence[str] = ("dest",)
    ) -> dict[str, np.ndarray]:
        """``columns`` of the trips whose origin zone is one of ``zones``.

        Always with ``origin`` (each trip's origin zone row). Zones are taken in the
        order given, each zone's trips in table order; -1 stands for the trips in no
        zone. From a file, only the row groups holding those trips are read.
        """
        wanted = list(dict.fromkeys(["origin", *columns]))
        missing = [c for c in wanted if c not in self.columns]
        if missing:
            raise KeyError(f"the zone index has no column(s) {missing}")
        ranges = self._ranges(zones)
        if self._columns is not None:
            pieces = [np.arange(a, b) for a, b in ranges]
            rows = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
            return {c: self._columns[c][rows] for c in wanted}
        return self._read_ranges(ranges, wanted)

    def _read_ranges(self, ranges: list[tuple[int, int]], wanted: list[str]) -> dict:
        bounds = self._group_rows
        groups = sorted(
            {
                g
                for a, b in ranges
                for g in range(
                    int(np.searchsorted(bounds, a, side="right")) - 1,
                    int(np.searchsorted(bounds, b, side="left")),
                )
            }
        )
        if not groups:
            schema = self._metadata.schema.to_arrow_schema()
            empty = schema.empty_table()
            return {c: empty[c].to_numpy() for c in wanted}
        self.groups_read += len(groups)
        with pq.ParquetFile(self.path, metadata=self._metadata) as handle:
            table = handle.read_row_groups(groups, columns=wanted)
        # positions of the wanted rows inside the concatenated row groups
        starts = bounds[groups]
        lengths = bounds[np.asarray(groups) + 1] - starts
        local_start = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        where = []
        for a, b in ranges:
            g = int(np.searchsorted(starts, a, side="right")) - 1
            where.append(np.arange(a, b) - starts[g] + local_start[g])
        take = np.concatenate(where)
        return {c: _numpy(table[c])[take] for c in wanted}

    def column(self, name: str, *, inside_only: bool = False) -> np.ndarray:
        """A whole column in index order (``inside_only``: the trips in a zone only).

        Reads every trip's value: for tests and small tables, not for a page.
        """
        stop = int(self.offsets[self.n_zones]) if inside_only else self.n_trips
        if self._columns is not None:
            return self._columns[name][:stop]
        values = _numpy(pq.read_table(self.path, columns=[name])[name])
        return values[:stop]


def _numpy(column: pa.ChunkedArray) -> np.ndarray:
    """A column as numpy (timestamps as UTC ``datetime64[ns]``)."""
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("ns", tz=column.type.tz))
        return column.to_numpy().astype("datetime64[ns]")
    return column.to_numpy()
