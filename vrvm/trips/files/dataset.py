"""Trips too many to hold in memory: Parquet files read part by part.

A :class:`TripDataset` describes a data set by where it is, not by its rows: a
Parquet file, a folder of Parquet files (a partitioned export, the trip store of a
data home), a CSV file, or a list of these. Opening it reads the footers and takes
the format decisions once per file (the first pass of
:func:`~vrvm.trips.files.reader.iter_trips`); it is then cut into :class:`TripPart`\\ s —
consecutive row groups of one file, about ``part_rows`` rows each — that any process
can read and clean on its own with :meth:`TripDataset.read`. A part is named by a path
and row-group numbers, so a Dask worker is sent a few bytes, never rows.

Every part is cleaned as :func:`~vrvm.trips.files.reader.read_trips` cleans a whole file,
except for the two checks that need all rows at once: the ``max_radius_km`` check
measures from a given centre (:attr:`CleaningConfig.center`; the model's training
takes the median point of a uniform sample) and duplicates are dropped within each
batch of rows (65,536 rows of Parquet), not across the file.

:meth:`TripDataset.from_frame` wraps trips already in memory in the same interface
(parts are row slices), so one training procedure serves both.

Examples
--------
>>> import tempfile, os
>>> from vrvm.trips.synthetic import synthetic_city
>>> trips = synthetic_city(3000, seed=0)
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = os.path.join(tmp, "trips.parquet")
...     trips.to_parquet(path, row_group_size=1000)
...     data = TripDataset(path, part_rows=2000)
...     sizes = [len(t) for part in data.parts for t, _ in data.read(part)]
>>> data.n_rows, len(data.parts), sum(sizes)
(3000, 2, 3000)
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from vrvm.trips.files._batches import (
    PARQUET_BATCH_ROWS,
    Reading,
    Survey,
    clean_batches,
    joined,
    layout_batches,
    parquet_batches,
    survey_file,
)
from vrvm.trips.files._source import (
    EXPECTED,
    Source,
    TripFileError,
    as_zone_file,
    file_columns,
    open_source,
    read_csv_header,
    short_error,
)
from vrvm.trips.files._survey import TimeSurvey
from vrvm.trips.files.cleaning import CleaningConfig, CleaningReport, as_config
from vrvm.trips.files.formats import TimeFormats
from vrvm.trips.files.layouts import Layout, resolve_layout
from vrvm.trips.places.timezones import check_zone
from vrvm.trips.table import check_trips

if TYPE_CHECKING:
    from vrvm.trips.places.zone_files import ZoneFile

__all__ = ["PART_ROWS", "TripDataset", "TripPart"]

#: Rows per part (at least one row group): large enough that a part's fixed costs are
#: small, small enough that a worker holds a few of its batches at most.
PART_ROWS = 1_000_000

_PARQUET_SUFFIXES = (".parquet", ".pq")


@dataclass(frozen=True)
class TripPart:
    """One piece of a :class:`TripDataset` that a process can read on its own.

    Attributes
    ----------
    index : int
        Position of the part in the data set (parts are in file order).
    file : int
        Index of its file in :attr:`TripDataset.files` (-1 for a table in memory).
    row_groups : tuple of int or None
        Consecutive Parquet row groups of the file; None for a whole CSV file.
    start : int
        Offset of the part's first row in its file (or table).
    n_rows : int
        Rows before cleaning (from the Parquet footer; 0 for a CSV file, whose rows
        are not counted before it is read).
    skip : int
        Rows of its row groups before the part's first row (a row group larger than
        ``part_rows`` is cut into several parts).
    """

    index: int
    file: int
    row_groups: tuple[int, ...] | None
    start: int
    n_rows: int
    skip: int = 0


@dataclass(frozen=True)
class _FilePlan:
    """What reading one file needs in any process: where, its layout, the decisions."""

    source: Source
    layout: Layout
    survey: Survey | None
    sep: str | None  # CSV delimiter


class TripDataset:
    """Trips in Parquet (or CSV) files, read and cleaned part by part.

    Parameters
    ----------
    paths : path or sequence of paths
        Parquet files, folders holding Parquet files (searched recursively, in sorted
        order; a data home's trip store is such a folder) or CSV files (each one part,
        read in batches).
    schema, tz, column_map, date_format, clock_format, weekday_format, zones
        As for :func:`vrvm.read_trips`, applied to every file.
    cleaning : CleaningConfig, dict or None
        As for :func:`vrvm.read_trips` (see the module docstring for the two checks
        that work differently out of core).
    part_rows : int, default=PART_ROWS
        Rows per part, at least one row group.

    Attributes
    ----------
    files : list of str
        The files, in the order their parts are numbered.
    parts : list of TripPart
    n_rows : int
        Rows of all files before cleaning (Parquet footers; CSV files count 0 until
        read).
    name : str
        The data set's name in messages and model summaries.
    """

    def __init__(
        self,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        schema: str = "auto",
        tz: str | None = None,
        column_map: Mapping[str, str] | None = None,
        cleaning: CleaningConfig | Mapping | None = None,
        date_format: str | None = None,
        clock_format: str | None = None,
        weekday_format: str | None = None,
        zones: ZoneFile | str | os.PathLike[str] | None = None,
        part_rows: int = PART_ROWS,
    ):
        if isinstance(part_rows, bool) or not isinstance(part_rows, int | np.integer):
            raise ValueError(f"part_rows must be a positive integer, got {part_rows!r}")
        if part_rows < 1:
            raise ValueError(f"part_rows must be a positive integer, got {part_rows!r}")
        self.cleaning = as_config(cleaning)
        formats = TimeFormats(date_format or "auto", clock_format or "auto", weekday_format)
        self._reading = Reading(check_zone(tz), formats, as_zone_file(zones))
        self._frame: pd.DataFrame | None = None
        single = isinstance(paths, str | os.PathLike)
        roots = [paths] if single else list(paths)
        if not roots:
            raise ValueError("TripDataset needs at least one path")
        self.files = _expand(roots)
        self.name = Path(roots[0]).name if len(roots) == 1 else f"{len(self.files)} files"
        self._plans = [self._plan(path, schema, column_map) for path in self.files]
        self.parts = []
        for i, plan in enumerate(self._plans):
            self.parts.extend(_file_parts(plan.source, i, len(self.parts), part_rows))
        self.n_rows = int(sum(part.n_rows for part in self.parts))

    @classmethod
    def from_frame(cls, trips: pd.DataFrame, *, part_rows: int = PART_ROWS) -> TripDataset:
        """Canonical trips in memory, as a data set whose parts are row slices (the
        trips are used as they are: they were cleaned when read)."""
        trips = check_trips(trips, with_target=True)
        self = cls.__new__(cls)
        self.cleaning = CleaningConfig(max_radius_km=None, drop_duplicates=False)
        self._frame, self._plans, self.files = trips, [], []
        self.name = str(trips.attrs.get("source", "trips in memory"))
        n = len(trips)
        self.parts = [
            TripPart(i, -1, None, start, min(part_rows, n - start))
            for i, start in enumerate(range(0, n, part_rows))
        ]
        self.n_rows = n
        return self

    def split(self, part_rows: int) -> TripDataset:
        """The same data cut into parts of about ``part_rows`` rows (footers only)."""
        if self._frame is not None:
            return TripDataset.from_frame(self._frame, part_rows=part_rows)
        other = copy.copy(self)
        other.parts = []
        for i, plan in enumerate(self._plans):
            other.parts.extend(_file_parts(plan.source, i, len(other.parts), part_rows))
        return other

    def __repr__(self) -> str:
        return f"TripDataset({self.name!r}, {len(self.parts)} parts, {self.n_rows:,} rows)"

    def __getstate__(self):
        # a table in memory does not travel to workers (its parts are read in place)
        state = dict(self.__dict__)
        if state.get("_frame") is not None:
            raise TypeError("a TripDataset of trips in memory is read in its own process")
        return state

    @property
    def in_memory(self) -> bool:
        """True for :meth:`from_frame` data sets (read in the calling process)."""
        return self._frame is not None

    @property
    def tz(self) -> str | None:
        """The zone the first file's local times are read in (None for a table)."""
        return self._plans[0].survey.zone if self._plans else None

    def _plan(self, path: str, schema: str, column_map) -> _FilePlan:
        src, sep = open_source(path, None), None
        if src.kind == "parquet":
            layout = resolve_layout(file_columns(src), schema, column_map, src.name, True)
        else:
            columns, sep = read_csv_header(src)
            layout = resolve_layout(columns, schema, column_map, src.name, True)
        plan = _FilePlan(src, layout, None, sep)
        survey = survey_file(src, layout, self._reading, lambda as_text: _batches(plan, as_text))
        return dataclasses.replace(plan, survey=survey)

    def read(
        self, part: TripPart, *, center: tuple[float, float] | None = None
    ) -> Iterator[tuple[pd.DataFrame, CleaningReport | None]]:
        """The cleaned trips of one part, batch by batch: ``(trips, report)``.

        ``trips`` has the canonical columns and ``row``, the row number of each trip
        in its file (as in cleaning reports: the first data row is 2) or its position
        in a table in memory. ``center`` is where ``max_radius_km`` is measured from;
        None skips that check (the first pass of training, which finds the centre).
        ``report`` is None for a table in memory.
        """
        if self._frame is not None:
            stop = part.start + part.n_rows
            trips = self._frame.iloc[part.start : stop].copy(deep=False)
            trips.insert(0, "row", np.arange(part.start, stop, dtype=np.int64))
            yield trips, None
            return
        plan = self._plans[part.file]
        config = dataclasses.replace(
            self.cleaning,
            max_radius_km=self.cleaning.max_radius_km if center is not None else None,
            center=center,
        )
        yield from clean_batches(
            plan.source,
            plan.layout,
            self._reading,
            plan.survey,
            lambda as_text: _batches(plan, as_text, part),
            config,
            True,
            True,
        )


def _batches(plan: _FilePlan, as_text, part: TripPart | None = None):
    """The raw batches of a file (or of a part of it), as iter_trips reads them."""
    if plan.source.kind == "parquet":
        if part is None:
            return parquet_batches(plan.source, plan.layout)
        rows = (part.skip, part.n_rows)
        return parquet_batches(plan.source, plan.layout, part.row_groups, rows)
    raw_batches = layout_batches(plan.source, plan.sep, plan.layout, as_text, None)
    # a layout whose two time roles share one column is read whole (as iter_trips does)
    return raw_batches if TimeSurvey.can_survey(plan.layout) else joined(raw_batches)


def _expand(roots) -> list[str]:
    """Files of the given paths: files as they are, folders' Parquet files (recursive,
    sorted, hidden and temporary files skipped)."""
    files: list[str] = []
    for root in roots:
        path = Path(root)
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.suffix.lower() in _PARQUET_SUFFIXES
                and p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            if not found:
                raise FileNotFoundError(f"{path}: no Parquet files in this folder")
            files.extend(str(p) for p in found)
        elif path.is_file():
            files.append(str(path))
        else:
            raise FileNotFoundError(f"{path}: no such file or folder")
    return files


def _file_parts(src: Source, file: int, first_index: int, part_rows: int) -> list[TripPart]:
    """Parts of one file: runs of consecutive row groups of about ``part_rows`` rows."""
    if src.kind != "parquet":
        return [TripPart(first_index, file, None, 0, 0)]
    import pyarrow.parquet as pq

    try:
        metadata = pq.ParquetFile(src.handle()).metadata
    except Exception as err:  # pyarrow raises several unrelated types
        raise TripFileError(
            f"{src.name} could not be read as Parquet ({short_error(err)}): {EXPECTED}"
        ) from None
    parts, groups, rows, start = [], [], 0, 0
    for g in range(metadata.num_row_groups):
        size = metadata.row_group(g).num_rows
        if size > part_rows:  # a large row group is cut into parts of whole batches
            if groups:
                parts.append(TripPart(first_index + len(parts), file, tuple(groups), start, rows))
                start, groups, rows = start + rows, [], 0
            step = max(part_rows // PARQUET_BATCH_ROWS, 1) * PARQUET_BATCH_ROWS
            for skip in range(0, size, step):
                take = min(step, size - skip)
                parts.append(TripPart(first_index + len(parts), file, (g,), start, take, skip))
                start += take
            continue
        groups.append(g)
        rows += size
        if rows >= part_rows:
            parts.append(TripPart(first_index + len(parts), file, tuple(groups), start, rows))
            start, groups, rows = start + rows, [], 0
    if groups:
        parts.append(TripPart(first_index + len(parts), file, tuple(groups), start, rows))
    return [p for p in parts if p.n_rows > 0]
