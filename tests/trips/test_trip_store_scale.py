"""The trip store at scale: additions append, summaries come from footers, reads are bounded."""

from __future__ import annotations

import os

import numpy as np
import pyarrow.parquet as pq
import pytest

from vrvm.trips.store import trip_store as store_module
from vrvm.trips.store.trip_store import TripStore
from vrvm.trips.store.trip_table import TripTable
from vrvm.trips.synthetic import synthetic_city


@pytest.fixture(scope="module")
def trips():
    return synthetic_city(3000, seed=11)


def _files(store: TripStore) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in store._part_files()}


def test_adding_appends_a_part_and_rewrites_none(tmp_path, trips):
    store = TripStore(tmp_path)
    store.add(trips.iloc[:1000], source="a.csv")
    store.add(trips.iloc[1000:2000], source="b.csv")
    before = _files(store)
    result = store.add(trips.iloc[1500:], source="c.csv")
    after = _files(store)
    assert result.n_added == 1000 and result.n_duplicates == 500
    assert {k: v for k, v in after.items() if k in before} == before  # untouched
    assert len(after) == 3 and result.part.name in after


def test_parts_are_written_in_row_groups_with_statistics(tmp_path, trips, monkeypatch):
    monkeypatch.setattr(store_module, "write_trips", _small_groups(store_module.write_trips))
    store = TripStore(tmp_path)
    part = store.add(trips, source="a.csv").part
    meta = pq.read_metadata(part)
    assert meta.num_row_groups == 6  # 3000 trips in groups of 500
    stats = meta.row_group(0).column(meta.schema.names.index("start_time")).statistics
    assert stats.has_min_max


def _small_groups(write):
    return lambda table, path, **kw: write(table, path, row_group_rows=500)


def test_the_summary_matches_the_trips_without_reading_them(tmp_path, trips, monkeypatch):
    store = TripStore(tmp_path)
    store.add(trips.iloc[:1200], source="a.csv", synthetic=True)
    store.add(trips.iloc[1200:], source="b.csv")
    reads = []
    real = pq.read_table
    monkeypatch.setattr(pq, "read_table", lambda *a, **k: reads.append(a) or real(*a, **k))
    summary = store.summary()
    assert not reads  # counts and the time range come from the footers
    assert summary.n_trips == 3000 and summary.n_parts == 2 and summary.synthetic
    assert summary.start_min == trips["start_time"].min()
    assert summary.start_max == trips["start_time"].max()
    assert summary.tz == str(trips["start_time"].dt.tz)
    assert summary.size_bytes == sum(os.path.getsize(p) for p in store._part_files())


def test_the_centre_is_exact_when_small_and_a_bounded_sample_when_large(
    tmp_path, trips, monkeypatch
):
    store = TripStore(tmp_path)
    monkeypatch.setattr(store_module, "write_trips", _small_groups(store_module.write_trips))
    store.add(trips, source="a.csv")
    exact = (float(trips["origin_lat"].median()), float(trips["origin_lon"].median()))
    assert store.center() == exact
    monkeypatch.setattr(store_module, "CENTRE_SAMPLE", 400)
    read = []
    real = TripTable.read_arrow

    def counting(self, columns=None, *, groups=None):
        read.append(len(groups))
        return real(self, columns, groups=groups)

    monkeypatch.setattr(TripTable, "read_arrow", counting)
    lat, lon = store.center()
    assert sum(read) <= 2 < 6  # 2 x 400 rows: at most two groups of 500 of the six
    assert abs(lat - exact[0]) < 0.02 and abs(lon - exact[1]) < 0.02


def test_the_table_of_the_store_answers_bounded_questions(tmp_path, trips):
    store = TripStore(tmp_path)
    store.add(trips.iloc[:2000], source="a.csv")
    store.add(trips.iloc[2000:], source="b.csv")
    table = store.table()
    assert len(table) == 3000 and table.tz == str(trips["start_time"].dt.tz)
    assert table.time_range() == (trips["start_time"].min(), trips["start_time"].max())
    lat = np.concatenate([trips["origin_lat"], trips["dest_lat"]])
    assert table.bbox()[0] == lat.min() and table.bbox()[2] == lat.max()


def test_an_empty_store(tmp_path):
    store = TripStore(tmp_path / "never-written")
    summary = store.summary()
    assert (summary.n_trips, summary.n_parts, summary.start_min, summary.tz) == (0, 0, None, None)
    assert store.center() is None
    assert len(store.table()) == 0
    assert store.load().empty
