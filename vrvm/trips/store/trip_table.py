"""Trips at rest in Parquet, read a row group at a time: counts, ranges, pruned reads, samples.

A model's training trips (``training/<sha256>.parquet`` in the data home) and the trip
store's parts can hold ten million trips, about half a gigabyte in memory. The
dashboard never needs them all at once: it asks how many there are and over which
time span (the Parquet footers answer), where they are (the row groups' statistics),
a bounded sample of their ends, and the trips from a few zones (a zone index, see
:mod:`vrvm.trips.store.zone_index`). :class:`TripTable` is the one place those questions
are asked of a file or a folder of files, so that nothing reads every trip by accident.

Whatever is derived from *all* the trips once (the map's zones, the model's area) is
kept next to them in a small cache folder (:meth:`TripTable.cached_json`): a training
file is named by the hash of its content and never changes, so its cache never goes
stale. A table built from a DataFrame (:meth:`TripTable.from_frame`; tests, small data
sets) answers the same questions from memory, through the same code, without a cache.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> from vrvm.trips.synthetic import synthetic_city
>>> trips = synthetic_city(1000, seed=0)
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = write_trips(trips, Path(tmp) / "trips.parquet", row_group_rows=300)
...     table = TripTable.open(path, tz="UTC")
...     start, end = table.time_range()
...     head = table.read(groups=[0])
>>> len(table), table.n_groups, len(head), table.groups_read
(1000, 4, 300, 1)
>>> start == trips["start_time"].min(), end == trips["start_time"].max()
(True, True)
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from vrvm.trips.store.durable import atomic_write, atomic_write_json

__all__ = ["ROW_GROUP_ROWS", "TripTable", "write_trips"]

ROW_GROUP_ROWS = 65_536
"""Rows per Parquet row group when vrvm writes trips: small enough that a read of a few
zones or a sample touches a few megabytes, large enough that footers stay small."""

_END_COLUMNS = ("origin_lat", "origin_lon", "dest_lat", "dest_lon")


def write_trips(
    trips: pd.DataFrame | pa.Table,
    path: str | os.PathLike[str],
    *,
    row_group_rows: int = ROW_GROUP_ROWS,
    metadata: dict[bytes, bytes] | None = None,
) -> Path:
    """Write trips to ``path`` atomically, in row groups of ``row_group_rows`` rows.

    Every column gets min/max statistics, which :class:`TripTable` reads instead of
    the data; ``metadata`` is added to the schema's key-value metadata.
    """
    table = (
        trips if isinstance(trips, pa.Table) else pa.Table.from_pandas(trips, preserve_index=False)
    )
    if metadata:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    return atomic_write(
        path, lambda tmp: pq.write_table(table, tmp, row_group_size=int(row_group_rows))
    )


@dataclass(frozen=True)
class _Group:
    """One row group: which piece it is in, its position there, its rows."""

    piece: int
    index: int
    first_row: int
    n_rows: int


class TripTable:
    """Canonical trips in Parquet files (or in memory), read a row group at a time.

    Parameters
    ----------
    files : sequence of path-like
        Parquet files with the canonical columns (and possibly others), in order.
    tz : str, default="UTC"
        Time zone ``start_time`` is returned in.
    cache_dir : path-like, optional
        Folder for what is derived once from all the trips (:meth:`cached_json`);
        None: nothing is kept.

    Attributes
    ----------
    groups_read : int
        Row groups read so far (what the tests check pruning with).
    """

    def __init__(
        self,
        files: Sequence[str | os.PathLike[str]],
        *,
        tz: str = "UTC",
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.tz = str(tz)
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.groups_read = 0
        self._files = [Path(f) for f in files]
        self._memory: pa.Table | None = None
        self._meta = [pq.read_metadata(f) for f in self._files]
        groups, first = [], 0
        for piece, meta in enumerate(self._meta):
            for index in range(meta.num_row_groups):
                n = meta.row_group(index).num_rows
                groups.append(_Group(piece, index, first, n))
                first += n
        self._groups = groups
        self._n_rows = first
        schema = self._meta[0].schema.to_arrow_schema() if self._meta else None
        self.columns: tuple[str, ...] = tuple(schema.names) if schema is not None else ()

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        tz: str = "UTC",
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> TripTable:
        """A Parquet file, or every ``*.parquet`` file of a folder (in name order)."""
        path = Path(path)
        files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
        return cls(files, tz=tz, cache_dir=cache_dir)

    @classmethod
    def from_frame(cls, trips: pd.DataFrame, *, row_group_rows: int = ROW_GROUP_ROWS) -> TripTable:
        """Trips held in memory, as a table of ``row_group_rows``-row groups (no cache).

        The time zone is that of ``start_time`` (UTC when naive or absent).
        """
        tz = "UTC"
        if "start_time" in trips.columns and getattr(trips["start_time"].dt, "tz", None):
            tz = str(trips["start_time"].dt.tz)
        table = cls([], tz=tz)
        memory = pa.Table.from_pandas(trips.reset_index(drop=True), preserve_index=False)
        table._memory = memory.replace_schema_metadata(None)
        step = max(int(row_group_rows), 1)
        n = memory.num_rows
        table._groups = [
            _Group(0, i, first, min(step, n - first)) for i, first in enumerate(range(0, n, step))
        ]
        table._n_rows = n
        table.columns = tuple(memory.schema.names)
        return table

    def __len__(self) -> int:
        return self._n_rows

    def __repr__(self) -> str:
        where = "memory" if self._memory is not None else f"{len(self._files)} file(s)"
        return f"TripTable({self._n_rows:,} trips in {where})"

    @property
    def n_trips(self) -> int:
        """Number of trips (from the footers)."""
        return self._n_rows

    @property
    def n_groups(self) -> int:
        """Number of row groups."""
        return len(self._groups)

    @property
    def files(self) -> tuple[Path, ...]:
        """The Parquet files read (empty for a table in memory)."""
        return tuple(self._files)

    # ---------------------------------------------------------------- statistics
    def group_ranges(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """Min and max of ``column`` in each row group, from the footers.

        Object arrays; None where a row group has no statistics (or only nulls).
        """
        lows = np.full(self.n_groups, None, dtype=object)
        highs = np.full(self.n_groups, None, dtype=object)
        if self._memory is not None:
            import pyarrow.compute as pc

            for i, group in enumerate(self._groups):
                piece = self._memory[column].slice(group.first_row, group.n_rows)
                found = pc.min_max(piece)
                lows[i], highs[i] = found["min"].as_py(), found["max"].as_py()
            return lows, highs
        for i, group in enumerate(self._groups):
            meta = self._meta[group.piece].row_group(group.index)
            for c in range(meta.num_columns):
                chunk = meta.column(c)
                if chunk.path_in_schema != column:
                    continue
                stats = chunk.statistics
                if stats is not None and stats.has_min_max:
                    lows[i], highs[i] = stats.min, stats.max
        return lows, highs

    def time_range(self) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
        """First and last ``start_time`` (in :attr:`tz`), from the footers; None when empty.

        Row groups without statistics are read (only their ``start_time``).
        """
        lows, highs = self.group_ranges("start_time")
        missing = [
            i
            for i, g in enumerate(self._groups)
            if g.n_rows and (lows[i] is None or highs[i] is None)
        ]
        found = [self._utc(v) for v in (*lows, *highs) if v is not None]
        if missing:
            times = self.read(["start_time"], groups=missing)["start_time"].dropna()
            found += [self._utc(v) for v in (times.min(), times.max()) if v is not pd.NaT]
        if not found:
            return None, None
        return min(found).tz_convert(self.tz), max(found).tz_convert(self.tz)

    def bbox(self) -> tuple[float, float, float, float] | None:
        """``(lat_min, lon_min, lat_max, lon_max)`` of both ends of every trip (footers)."""
        edges = {}
        for column in _END_COLUMNS:
            lows, highs = self.group_ranges(column)
            if any(v is None for g, v in zip(self._groups, lows, strict=True) if g.n_rows):
                values = self.read([column])[column].to_numpy(float)
                values = values[np.isfinite(values)]
                edges[column] = (values.min(), values.max()) if values.size else None
            else:
                kept = [float(v) for v in lows if v is not None]
                tops = [float(v) for v in highs if v is not None]
                edges[column] = (min(kept), max(tops)) if kept else None
        lat = [e for c, e in edges.items() if e is not None and c.endswith("_lat")]
        lon = [e for c, e in edges.items() if e is not None and c.endswith("_lon")]
        if not lat or not lon:
            return None
        return (
            float(min(e[0] for e in lat)),
            float(min(e[0] for e in lon)),
            float(max(e[1] for e in lat)),
            float(max(e[1] for e in lon)),
        )

    @staticmethod
    def _utc(value: Any) -> pd.Timestamp:
        stamp = pd.Timestamp(value)
        return stamp.tz_localize("UTC") if stamp.tz is None else stamp.tz_convert("UTC")

    # ------------------------------------------------------------------- reading
    def groups_overlapping(self, column: str, ranges: Sequence[tuple[Any, Any]]) -> list[int]:
        """Row groups whose ``[min, max]`` of ``column`` meets one of ``ranges`` (inclusive).

        Row groups without statistics are always included: pruning never drops a row.
        """
        lows, highs = self.group_ranges(column)
        out = []
        for i in range(self.n_groups):
            lo, hi = lows[i], highs[i]
            if lo is None or hi is None or any(a <= hi and lo <= b for a, b in ranges):
                out.append(i)
        return out

    def read(
        self, columns: Sequence[str] | None = None, *, groups: Sequence[int] | None = None
    ) -> pd.DataFrame:
        """The trips of row groups ``groups`` (all by default), in table order.

        ``start_time`` is returned in :attr:`tz`; only ``columns`` are read.
        """
        arrow = self.read_arrow(columns, groups=groups)
        frame = arrow.to_pandas()
        if "start_time" in frame.columns:
            frame["start_time"] = pd.to_datetime(frame["start_time"], utc=True).dt.tz_convert(
                self.tz
            )
        return frame

    def read_arrow(
        self, columns: Sequence[str] | None = None, *, groups: Sequence[int] | None = None
    ) -> pa.Table:
        """:meth:`read` as a pyarrow Table (times as stored, UTC instants)."""
        columns = list(self.columns if columns is None else columns)
        chosen = range(self.n_groups) if groups is None else sorted(set(int(g) for g in groups))
        chosen = [self._groups[i] for i in chosen]
        self.groups_read += len(chosen)
        if self._memory is not None:
            parts = [self._memory.select(columns).slice(g.first_row, g.n_rows) for g in chosen]
        else:
            parts = []
            by_piece: dict[int, list[int]] = {}
            for group in chosen:
                by_piece.setdefault(group.piece, []).append(group.index)
            for piece, indices in by_piece.items():
                with pq.ParquetFile(self._files[piece], metadata=self._meta[piece]) as handle:
                    parts.append(handle.read_row_groups(indices, columns=columns))
        if not parts:
            return self._empty(columns)
        parts = [p.replace_schema_metadata(None) for p in parts]
        return pa.concat_tables(parts, promote_options="permissive")

    def _empty(self, columns: list[str]) -> pa.Table:
        if self._memory is not None:
            return self._memory.select(columns).slice(0, 0).replace_schema_metadata(None)
        if self._meta:
            schema = self._meta[0].schema.to_arrow_schema()
            return schema.empty_table().select(columns).replace_schema_metadata(None)
        return pa.table({c: pa.array([], type=pa.float64()) for c in columns})

    def iter_groups(
        self, columns: Sequence[str] | None = None, *, groups_per_batch: int = 4
    ) -> Iterator[tuple[int, pd.DataFrame]]:
        """``(first_row, trips)`` batch by batch, ``groups_per_batch`` row groups each."""
        for start in range(0, self.n_groups, groups_per_batch):
            chosen = range(start, min(start + groups_per_batch, self.n_groups))
            yield self._groups[start].first_row, self.read(columns, groups=chosen)

    def group_rows(self, group: int) -> tuple[int, int]:
        """``(first_row, n_rows)`` of row group ``group``."""
        found = self._groups[group]
        return found.first_row, found.n_rows

    def sample(
        self, n: int, *, seed: int = 0, columns: Sequence[str] | None = None
    ) -> pd.DataFrame:
        """At most ``n`` trips: all of them (in order) when there are no more, else a
        seeded sample read from whole row groups chosen at random (bounded reads).

        The row groups are drawn without replacement until they hold ``2 n`` rows (a
        cluster sample: enough groups that one busy file or hour does not dominate),
        then ``n`` of their rows, in table order.
        """
        if self._n_rows <= n:
            return self.read(columns)
        rng = np.random.default_rng(seed)
        order = rng.permutation(self.n_groups)
        sizes = np.array([self._groups[i].n_rows for i in order])
        enough = int(np.searchsorted(np.cumsum(sizes), 2 * n)) + 1
        chosen = np.sort(order[:enough])
        frame = self.read(columns, groups=chosen)
        rows = np.sort(rng.choice(len(frame), min(n, len(frame)), replace=False))
        return frame.iloc[rows].reset_index(drop=True)

    # --------------------------------------------------------------------- cache
    def cache_path(self, name: str) -> Path | None:
        """Where the derived file ``name`` is kept (None: this table keeps nothing)."""
        return None if self.cache_dir is None else self.cache_dir / name

    def cached_json(self, name: str, compute: Callable[[], dict]) -> dict:
        """``compute()``, kept as ``name`` in the cache folder and read back next time.

        A cache that cannot be written (a read-only home) is computed every time.
        """
        path = self.cache_path(name)
        if path is not None and path.is_file():
            try:
                return json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                pass  # unreadable: compute it again
        document = compute()
        if path is not None:
            try:
                atomic_write_json(path, document)
            except OSError:
                pass
        return document
