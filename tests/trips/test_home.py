"""The data home: where stores live, and the models' training trips kept by hash."""

from __future__ import annotations

import pytest

from vrvm import synthetic_city, trips_sha256
from vrvm.trips.home import data_home, load_training_trips, save_training_trips, training_trips_path


def test_data_home_defaults_to_dot_vrvm(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert data_home({}) == tmp_path / ".vrvm"
    assert data_home({"VRVM_HOME": str(tmp_path / "x")}) == tmp_path / "x"
    assert data_home({"VRVM_HOME": "  "}) == tmp_path / ".vrvm"


def test_training_trips_are_kept_by_content_hash(tmp_path, tiny_model, tiny_home):
    trips = synthetic_city(50, seed=3)
    path = save_training_trips(tmp_path, trips)
    assert path.name == f"{trips_sha256(trips)}.parquet"
    assert save_training_trips(tmp_path, trips) == path  # idempotent
    kept = load_training_trips(tiny_home, tiny_model)
    assert len(kept) == 3000
    assert str(kept["start_time"].dt.tz) == "UTC"
    with pytest.raises(ValueError):
        training_trips_path(tmp_path, "../../etc/passwd")
