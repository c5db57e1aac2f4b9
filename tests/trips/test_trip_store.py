"""The persistent trip store (vrvm/tripstore.py): dedup, persistence, atomicity."""

from __future__ import annotations

import os
import threading

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from vrvm import synthetic_city
from vrvm.trips.store.trip_store import TripStore, trip_ids


@pytest.fixture
def trips():
    return synthetic_city(300, seed=5)


def test_round_trip_keeps_values_and_time_zone(tmp_path, trips):
    store = TripStore(tmp_path / "store")
    assert len(store) == 0 and store.tz() is None and store.load().empty
    result = store.add(trips, source="a.csv")
    assert (result.n_offered, result.n_added, result.n_duplicates) == (300, 300, 0)
    assert result.part.name.startswith("part-") and result.part.suffix == ".parquet"
    loaded = store.load()
    pd.testing.assert_frame_equal(loaded, trips, check_like=False)
    assert loaded.attrs["tz"] == "UTC" and loaded.attrs["synthetic"] is True


def test_duplicates_across_and_within_batches_are_ignored(tmp_path, trips):
    store = TripStore(tmp_path)
    store.add(trips.iloc[:200])
    doubled = pd.concat([trips.iloc[150:], trips.iloc[250:]], ignore_index=True)
    result = store.add(doubled)
    assert (result.n_offered, result.n_added, result.n_duplicates) == (200, 100, 100)
    again = store.add(trips)
    assert (again.n_added, again.part) == (0, None)
    loaded = store.load()
    assert len(loaded) == 300 and not loaded.duplicated().any()


def test_the_same_trip_in_another_time_zone_is_a_duplicate(tmp_path, trips):
    store = TripStore(tmp_path)
    store.add(trips)
    chicago = trips.assign(start_time=trips["start_time"].dt.tz_convert("America/Chicago"))
    assert (trip_ids(chicago) == trip_ids(trips)).all()
    assert store.add(chicago).n_added == 0


def test_store_survives_a_restart_and_reports_its_extent(tmp_path, trips):
    TripStore(tmp_path).add(trips.iloc[:100], source="jan.csv", synthetic=False)
    TripStore(tmp_path).add(trips.iloc[100:], source="feb.csv")
    store = TripStore(tmp_path)  # a fresh object, as after a restart
    summary = store.summary()
    assert (summary.n_trips, summary.n_parts, summary.tz) == (300, 2, "UTC")
    assert summary.start_min == trips["start_time"].min()
    assert summary.start_max == trips["start_time"].max()
    assert summary.size_bytes == sum(p.stat().st_size for p in (tmp_path / "parts").iterdir())
    assert summary.synthetic  # the second batch is
    parts = store.parts()
    assert parts["source"].tolist() == ["jan.csv", "feb.csv"]
    assert parts["n_trips"].tolist() == [100, 200]
    assert parts["synthetic"].tolist() == [False, True]
    assert parts["added_utc"].is_monotonic_increasing


def test_center_is_the_median_origin(tmp_path, trips):
    store = TripStore(tmp_path)
    assert store.center() is None
    store.add(trips)
    lat, lon = store.center()
    assert lat == pytest.approx(trips["origin_lat"].median())
    assert lon == pytest.approx(trips["origin_lon"].median())


def test_load_only_batches_added_after_an_instant(tmp_path, trips):
    store = TripStore(tmp_path)
    store.add(trips.iloc[:100])
    cut = store.parts()["added_utc"].iloc[0]
    store.add(trips.iloc[100:])
    newer = store.load(added_after=cut.to_pydatetime())
    assert len(newer) == 200
    assert trip_ids(newer).tolist() == trip_ids(trips.iloc[100:]).tolist()


def test_trips_come_back_in_the_first_batch_time_zone(tmp_path, trips):
    store = TripStore(tmp_path)
    local = trips.assign(start_time=trips["start_time"].dt.tz_convert("America/Chicago"))
    store.add(local.iloc[:10])
    store.add(trips.iloc[10:20])
    loaded = store.load()
    assert str(loaded["start_time"].dt.tz) == "America/Chicago"
    assert (loaded["start_time"] == trips["start_time"].iloc[:20].to_numpy()).all()


def test_clear_deletes_everything(tmp_path, trips):
    store = TripStore(tmp_path)
    store.add(trips)
    assert store.clear() == 300
    assert len(store) == 0 and store.summary().n_parts == 0
    assert store.add(trips).n_added == 300  # usable again
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_a_failed_write_leaves_no_part(tmp_path, trips, monkeypatch):
    store = TripStore(tmp_path)
    store.add(trips.iloc[:50])

    def broken(table, where, **kwargs):
        with open(where, "wb") as half:
            half.write(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(OSError, match="disk full"):
        store.add(trips.iloc[50:])
    monkeypatch.undo()
    assert len(store) == 50
    assert sorted(os.listdir(tmp_path / "parts")) == [p.name for p in store._part_files()]
    # the trips that failed can be added again
    assert store.add(trips.iloc[50:]).n_added == 250


def test_readers_ignore_leftover_temporary_files(tmp_path, trips):
    store = TripStore(tmp_path)
    store.add(trips.iloc[:10])
    (tmp_path / "parts" / ".tmp-part-crashed.parquet").write_bytes(b"PAR1 garbage")
    assert len(store) == 10 and len(store.load()) == 10 and store.summary().n_parts == 1


def test_concurrent_additions_store_each_trip_once(tmp_path, trips):
    store = TripStore(tmp_path)
    errors = []

    def add():
        try:
            TripStore(tmp_path).add(trips)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=add) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store) == 300 and store.summary().n_parts == 1


def test_bad_input_is_refused(tmp_path, trips):
    store = TripStore(tmp_path)
    with pytest.raises(ValueError, match="missing canonical column"):
        store.add(trips.drop(columns="travel_time_s"))
    naive = trips.assign(start_time=trips["start_time"].dt.tz_localize(None))
    with pytest.raises(ValueError, match="timezone-aware"):
        store.add(naive)
    assert len(store) == 0


def test_trip_ids_ignore_index_and_extra_columns(trips):
    shuffled = trips.sample(frac=1.0, random_state=0)
    shuffled["fare"] = 1.0
    ids = dict(zip(trip_ids(shuffled).tolist(), shuffled.index, strict=True))
    assert [ids[i] for i in trip_ids(trips).tolist()] == list(trips.index)
    changed = trips.copy()
    changed.loc[0, "travel_time_s"] += 1
    assert trip_ids(changed)[0] != trip_ids(trips)[0]
    assert np.array_equal(trip_ids(changed)[1:], trip_ids(trips)[1:])
