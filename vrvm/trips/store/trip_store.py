"""A persistent, append-only store of canonical trips, for analysts who add data over time.

:class:`TripStore` keeps every trip an analyst has accepted (after
:func:`vrvm.read_trips` cleaned it) so that the dashboard's retrain page can train on
the union of all uploads, across restarts.

Layout::

    root/
        .lock                           advisory lock held while adding or clearing
        parts/
            part-<utc stamp>-<token>.parquet

Each *part* is one accepted batch: a Parquet file with the canonical columns, the
start time stored in UTC, and a ``trip_id`` column, in row groups of
:data:`~vrvm.trips.store.trip_table.ROW_GROUP_ROWS` trips with min/max statistics. Its schema
metadata records the batch's source name, the time it was added, the time zone its
trips were read in and whether it is synthetic.

At scale
--------
A store of ten million trips is about 400 MB of Parquet. Adding a batch writes one new
part and reads only the other parts' ``trip_id`` column, one part at a time (nothing is
rewritten); the count, the time range (:meth:`TripStore.summary`) and the batches
(:meth:`TripStore.parts`) come from the parts' footers; the centre from a bounded
sample of row groups (:meth:`TripStore.center`); :meth:`TripStore.table` opens the parts
as a :class:`~vrvm.trips.store.trip_table.TripTable` for other bounded questions. Only
:meth:`TripStore.load` reads every trip (training needs them all).

Guarantees
----------
* **Atomic additions.** A part is written to a temporary file in ``parts/``, flushed
  and fsynced, then renamed onto its final name (``os.replace``); readers only list
  ``part-*.parquet`` files, so they see a batch completely or not at all, and a
  process killed mid-write leaves at most an ignored ``.tmp-*`` file.
* **Duplicates ignored.** A trip's ``trip_id`` is a 64-bit hash of its canonical values
  (coordinates, start instant, travel time); a trip already in the store, or repeated
  within a batch, is not stored again. Distinct trips collide with probability about
  ``n^2 / 2^65`` (below 1e-5 for ten million trips).
* **Serialised writers.** Additions and clearing hold an exclusive ``fcntl`` lock on
  ``root/.lock``, so concurrent dashboard sessions (or processes) cannot both add the
  same new trip.
* **Healed at open.** :meth:`TripStore.heal` (run when a program opens the data home)
  takes the lock, so no writer is running, and removes what killed writers left:
  temporary part files and parts a clear had renamed aside.
* **Nothing executable.** Parts are Parquet read with pyarrow; nothing is unpickled.

Examples
--------
>>> import tempfile
>>> from vrvm.trips.synthetic import synthetic_city
>>> from vrvm.trips.store.trip_store import TripStore
>>> trips = synthetic_city(100, seed=0)
>>> with tempfile.TemporaryDirectory() as tmp:
...     store = TripStore(tmp)
...     first = store.add(trips.iloc[:60], source="january.csv")
...     second = store.add(trips.iloc[40:], source="february.csv")  # 20 already there
...     again = TripStore(tmp)  # a new process sees the same trips
...     n, loaded = len(again), again.load()
>>> first.n_added, second.n_added, second.n_duplicates, n
(60, 40, 20, 100)
>>> loaded.sort_values("start_time").reset_index(drop=True).equals(trips)
True
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from vrvm.trips.places.timezones import tz_name
from vrvm.trips.store._faults import crash_point
from vrvm.trips.store.durable import (
    TMP_PREFIX,
    exclusive_lock,
    fsync_dir,
    remove_temporaries,
)
from vrvm.trips.store.trip_table import TripTable, write_trips
from vrvm.trips.table import CANONICAL_COLUMNS, canonical_utc, trip_ids

__all__ = ["AddResult", "StoreSummary", "TripStore"]

logger = logging.getLogger(__name__)

PARTS_DIR = "parts"
LOCK_FILE = ".lock"
_PART_PREFIX = "part-"
_PART_SUFFIX = ".parquet"
_META_KEY = b"vrvm.tripstore"
CENTRE_SAMPLE = 200_000
"""Trips whose origins give the store's centre (all of them when there are no more)."""


@dataclass(frozen=True)
class AddResult:
    """What :meth:`TripStore.add` did.

    Attributes
    ----------
    n_offered : int
        Trips passed in.
    n_added : int
        New trips stored.
    n_duplicates : int
        Trips skipped because the store (or the batch itself) already had them.
    part : pathlib.Path or None
        The part file written (None when nothing was new).
    """

    n_offered: int
    n_added: int
    n_duplicates: int
    part: Path | None


@dataclass(frozen=True)
class StoreSummary:
    """Size and extent of a :class:`TripStore`.

    Attributes
    ----------
    n_trips, n_parts, size_bytes : int
        Stored trips, batches and bytes on disk.
    start_min, start_max : pandas.Timestamp or None
        Time range of the trips' start times (in the store's time zone).
    tz : str or None
        Time zone the trips are returned in (that of the first batch).
    synthetic : bool
        Whether any batch holds synthetic trips.
    """

    n_trips: int
    n_parts: int
    size_bytes: int
    start_min: pd.Timestamp | None
    start_max: pd.Timestamp | None
    tz: str | None
    synthetic: bool


class TripStore:
    """Append-only store of canonical trips under ``root`` (see the module docs).

    Parameters
    ----------
    root : str or path-like
        Directory of the store; created by the first :meth:`add`.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"TripStore({str(self.root)!r})"

    # ------------------------------------------------------------------ reading
    @property
    def _parts_dir(self) -> Path:
        return self.root / PARTS_DIR

    def _part_files(self) -> list[Path]:
        try:
            names = os.listdir(self._parts_dir)
        except FileNotFoundError:
            return []
        return sorted(
            self._parts_dir / n
            for n in names
            if n.startswith(_PART_PREFIX) and n.endswith(_PART_SUFFIX)
        )

    @staticmethod
    def _part_meta(path: Path) -> dict:
        schema = pq.read_schema(path)
        raw = (schema.metadata or {}).get(_META_KEY)
        meta = json.loads(raw.decode("utf-8")) if raw else {}
        return meta if isinstance(meta, dict) else {}

    def parts(self) -> pd.DataFrame:
        """One row per stored batch: ``part, source, n_trips, added_utc, tz, synthetic``."""
        rows = []
        for path in self._part_files():
            meta = self._part_meta(path)
            rows.append(
                {
                    "part": path.name,
                    "source": meta.get("source", ""),
                    "n_trips": pq.read_metadata(path).num_rows,
                    "added_utc": pd.Timestamp(meta["added_utc"]) if "added_utc" in meta else None,
                    "tz": meta.get("tz"),
                    "synthetic": bool(meta.get("synthetic", False)),
                }
            )
        columns = ["part", "source", "n_trips", "added_utc", "tz", "synthetic"]
        return pd.DataFrame(rows, columns=columns)

    def tz(self) -> str | None:
        """Time zone trips are returned in: that of the first batch (None when empty)."""
        files = self._part_files()
        return self._part_meta(files[0]).get("tz", "UTC") if files else None

    def _stored(self, ids: np.ndarray) -> np.ndarray:
        """Whether each of ``ids`` is already stored: one part's ids in memory at a time.

        Each part's ids are looked up in the sorted distinct ``ids`` (binary search): a
        small batch costs one pass over the stored ids, without sorting them.
        """
        distinct, inverse = np.unique(np.asarray(ids, dtype=np.uint64), return_inverse=True)
        seen = np.zeros(distinct.size, dtype=bool)
        if distinct.size == 0:
            return seen[inverse]
        for path in self._part_files():
            part = pq.read_table(path, columns=["trip_id"])["trip_id"].to_numpy()
            where = np.searchsorted(distinct, part.astype(np.uint64))
            hit = where < distinct.size
            hit[hit] = distinct[where[hit]] == part[hit]
            seen[where[hit]] = True
        return seen[inverse]

    def __len__(self) -> int:
        return sum(pq.read_metadata(f).num_rows for f in self._part_files())

    def table(self) -> TripTable:
        """The stored trips as a :class:`~vrvm.trips.store.trip_table.TripTable` (in the store's
        time zone): counts, time range and bounding box from the parts' footers, and
        reads of some row groups, without loading every trip."""
        return TripTable(self._part_files(), tz=self.tz() or "UTC")

    def load(self, *, added_after: datetime | None = None) -> pd.DataFrame:
        """All stored trips as a canonical table (in the store's time zone).

        Parameters
        ----------
        added_after : datetime, optional
            Only trips from batches added after this instant (e.g. since a model
            version was created).

        Returns
        -------
        pandas.DataFrame
            :data:`~vrvm.trips.CANONICAL_COLUMNS`, in the order they were added, with
            ``attrs`` ``"tz"``, ``"source"`` and ``"synthetic"`` (True if any batch is).
        """
        files = self._part_files()
        tz = self.tz() or "UTC"
        frames, synthetic = [], False
        for path in files:
            meta = self._part_meta(path)
            if added_after is not None and "added_utc" in meta:
                if pd.Timestamp(meta["added_utc"]) <= pd.Timestamp(added_after):
                    continue
            synthetic |= bool(meta.get("synthetic", False))
            frames.append(pq.read_table(path, columns=list(CANONICAL_COLUMNS)).to_pandas())
        if frames:
            trips = pd.concat(frames, ignore_index=True)
        else:
            trips = pd.DataFrame({c: pd.Series(dtype=np.float64) for c in CANONICAL_COLUMNS})
            trips["start_time"] = pd.Series(dtype="datetime64[ns, UTC]")
        trips["start_time"] = pd.to_datetime(trips["start_time"], utc=True).dt.tz_convert(tz)
        trips = trips[list(CANONICAL_COLUMNS)]
        trips.attrs.update({"tz": tz, "schema": "canonical", "source": f"trip store {self.root}"})
        if synthetic:
            trips.attrs["synthetic"] = True
        return trips

    def center(self) -> tuple[float, float] | None:
        """Median origin ``(lat, lon)`` of the stored trips, or None when empty.

        Exact for up to :data:`CENTRE_SAMPLE` trips; beyond, the median of a seeded
        sample of that many, read from whole row groups chosen at random
        (:meth:`TripTable.sample`), so that it costs the same for ten million trips.
        """
        table = self.table()
        if len(table) == 0:
            return None
        origins = table.sample(CENTRE_SAMPLE, seed=0, columns=["origin_lat", "origin_lon"])
        return float(origins["origin_lat"].median()), float(origins["origin_lon"].median())

    def summary(self) -> StoreSummary:
        """Number of trips and batches, bytes on disk and time range (from the footers)."""
        files = self._part_files()
        tz = self.tz()
        synthetic = any(bool(self._part_meta(p).get("synthetic", False)) for p in files)
        table = TripTable(files, tz=tz or "UTC")
        start_min, start_max = table.time_range()
        return StoreSummary(
            n_trips=len(table),
            n_parts=len(files),
            size_bytes=sum(f.stat().st_size for f in files),
            start_min=start_min,
            start_max=start_max,
            tz=tz,
            synthetic=synthetic,
        )

    # ------------------------------------------------------------------ writing
    def _locked(self):
        return exclusive_lock(self.root / LOCK_FILE)

    def add(
        self,
        trips: pd.DataFrame,
        *,
        source: str | None = None,
        synthetic: bool | None = None,
    ) -> AddResult:
        """Store the trips not already present, atomically, as one new batch.

        Parameters
        ----------
        trips : pandas.DataFrame
            Canonical, cleaned trips (as :func:`vrvm.read_trips` returns them) with a
            timezone-aware ``start_time``.
        source : str, optional
            Name of the batch (default ``trips.attrs["source"]``).
        synthetic : bool, optional
            Whether the trips are synthetic (default ``trips.attrs["synthetic"]``).

        Returns
        -------
        AddResult
        """
        frame = canonical_utc(trips)
        ids = trip_ids(frame)
        source = source if source is not None else str(trips.attrs.get("source", ""))
        if synthetic is None:
            synthetic = bool(trips.attrs.get("synthetic", False))
        tz = trips["start_time"].dt.tz
        zone = tz_name(tz)
        with self._locked():
            fresh = ~pd.Series(ids).duplicated().to_numpy()
            fresh &= ~self._stored(ids)
            n_new = int(fresh.sum())
            if n_new == 0:
                return AddResult(len(frame), 0, len(frame), None)
            batch = frame.loc[fresh].reset_index(drop=True)
            batch.insert(0, "trip_id", ids[fresh])
            meta = {
                "source": source,
                "added_utc": datetime.now(UTC).isoformat(timespec="microseconds"),
                "tz": zone,
                "synthetic": bool(synthetic),
            }
            part = self._write_part(batch, meta)
        return AddResult(len(frame), n_new, len(frame) - n_new, part)

    def _write_part(self, batch: pd.DataFrame, meta: dict) -> Path:
        self._parts_dir.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pandas(batch, preserve_index=False)
        table = table.replace_schema_metadata(
            {**(table.schema.metadata or {}), _META_KEY: json.dumps(meta).encode("utf-8")}
        )
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        final = self._parts_dir / f"{_PART_PREFIX}{stamp}-{secrets.token_hex(4)}{_PART_SUFFIX}"
        return write_trips(table, final)

    def clear(self) -> int:
        """Delete every stored trip; returns how many there were.

        The parts directory is first renamed aside (one atomic step: readers see the
        old store or an empty one), then deleted.
        """
        with self._locked():
            n = len(self)
            if self._parts_dir.exists():
                aside = self.root / f"{TMP_PREFIX}cleared-{secrets.token_hex(4)}"
                os.rename(self._parts_dir, aside)
                fsync_dir(self.root)
                crash_point("trip_store.cleared")
                shutil.rmtree(aside, ignore_errors=True)
            return n

    def heal(self) -> list[str]:
        """Remove what killed writers left; returns what was repaired (also logged).

        Under the store's lock (so no writer is running): temporary part files
        (``parts/.tmp-*``) and the parts of an interrupted :meth:`clear`. Stored parts
        are never touched.
        """
        if not self.root.is_dir():
            return []
        with self._locked():
            removed = remove_temporaries(self.root) + remove_temporaries(self._parts_dir)
        repairs = [f"removed {name}, left by an interrupted write" for name in removed]
        for repair in repairs:
            logger.warning("trip store %s: %s", self.root, repair)
        return repairs
