"""The data home: where stores live, the models' training trips kept by hash, zone files."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vrvm import synthetic_city, trips_sha256
from vrvm.trips.home import Home, data_home
from vrvm.trips.places.zone_files import ZoneFileError


def test_data_home_defaults_to_dot_vrvm(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert data_home({}) == tmp_path / ".vrvm"
    assert data_home({"VRVM_HOME": str(tmp_path / "x")}) == tmp_path / "x"
    assert data_home({"VRVM_HOME": "  "}) == tmp_path / ".vrvm"


def test_training_trips_are_kept_by_content_hash(tmp_path, tiny_model, tiny_home):
    trips = synthetic_city(50, seed=3)
    path = Home(tmp_path).save_training_trips(trips)
    assert path.name == f"{trips_sha256(trips)}.parquet"
    assert Home(tmp_path).save_training_trips(trips) == path  # idempotent
    kept = Home(tiny_home).load_training_trips(tiny_model)
    assert len(kept) == 3000
    assert str(kept["start_time"].dt.tz) == "UTC"
    with pytest.raises(ValueError):
        Home(tmp_path).training_trips_path("../../etc/passwd")


# ---------------------------------------------------------------------- zone files


def _squares(*names: str) -> bytes:
    features = [
        {
            "type": "Feature",
            "properties": {"zone_id": i + 1, "name": name},
            "geometry": {
                "type": "Polygon",
                "coordinates": [[[i, 0], [i + 1, 0], [i + 1, 1], [i, 1], [i, 0]]],
            },
        }
        for i, name in enumerate(names)
    ]
    return json.dumps({"type": "FeatureCollection", "features": features}).encode()


def _run(code: str, home) -> subprocess.CompletedProcess:
    """Run ``code`` in a new Python process (a restart) with ``home`` as its argument."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), str(home)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )


def test_zone_files_persist_across_processes(tmp_path, shared_data):
    data = shared_data("nyc_taxi_zones.geojson").read_bytes()
    entry, zones = Home(tmp_path).zones.add("nyc-taxi", data, file_name="taxi_zones.geojson")
    assert (entry.id_property, entry.name_property, entry.n_zones) == ("LocationID", "zone", 263)
    assert entry.fingerprint == zones.fingerprint
    assert Home(tmp_path).zones.path("nyc-taxi").read_bytes() == data  # kept as given
    done = _run(
        """
        import sys
        from vrvm.trips.home import Home
        [entry] = Home(sys.argv[1]).zones.entries()
        zones = Home(sys.argv[1]).zones.load(entry.name)
        lat, lon = zones.representative_points([132])  # JFK Airport
        print(entry.name, entry.file_name, zones.fingerprint, zones.zone_of(lat, lon)[0])
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["nyc-taxi", "taxi_zones.geojson", zones.fingerprint, "132"]


def test_zone_files_add_list_load_remove(tmp_path):
    assert Home(tmp_path).zones.entries() == [] and Home(tmp_path).zones.map_choice() is None
    first, _ = Home(tmp_path).zones.add("districts", _squares("North", "South"))
    Home(tmp_path).zones.add("areas", _squares("A"), name_property="name")
    assert [e.name for e in Home(tmp_path).zones.entries()] in (
        ["districts", "areas"],
        ["areas", "districts"],  # added within one second: ordered by name
    )
    assert Home(tmp_path).zones.entry("districts") == first
    assert Home(tmp_path).zones.load("districts").names.tolist() == ["North", "South"]
    # same name again: replaced
    again, _ = Home(tmp_path).zones.add("districts", _squares("North", "South", "East"))
    assert again.n_zones == 3 and len(Home(tmp_path).zones.load("districts")) == 3
    Home(tmp_path).zones.choose_map("districts")
    assert Home(tmp_path).zones.map_choice() == "districts"
    with pytest.raises(KeyError):
        Home(tmp_path).zones.choose_map("nothing")
    assert Home(tmp_path).zones.remove("districts")
    assert not Home(tmp_path).zones.remove("districts")
    assert Home(tmp_path).zones.map_choice() is None
    with pytest.raises(KeyError):
        Home(tmp_path).zones.path("districts")
    assert [p.name.split(".")[0] for p in (tmp_path / "zones").glob("*.geojson")] == ["areas"]
    assert [e.name for e in Home(tmp_path).zones.entries()] == ["areas"]
    with pytest.raises(KeyError):
        Home(tmp_path).zones.load("districts")


def test_a_bad_zone_file_is_not_kept(tmp_path):
    with pytest.raises(ZoneFileError, match=r"^bad\.geojson: not JSON"):
        Home(tmp_path).zones.add("bad", b"{oops", file_name="bad.geojson")
    assert Home(tmp_path).zones.entries() == []
    assert not any(tmp_path.rglob("*.geojson"))


@pytest.mark.parametrize(
    "name", ["../escape", "a/b", "..", ".hidden", "", "x" * 65, "a\\b", "con\x00", "a b"]
)
def test_zone_file_names_cannot_leave_the_folder(tmp_path, name):
    with pytest.raises(ValueError, match="not a valid zone file name"):
        Home(tmp_path).zones.add(name, _squares("A"))
    with pytest.raises(ValueError, match="not a valid zone file name"):
        Home(tmp_path).zones.path(name)
    assert not any(tmp_path.rglob("*.geojson"))


def test_a_changed_zone_file_is_refused_on_load(tmp_path):
    Home(tmp_path).zones.add("districts", _squares("North", "South"))
    Home(tmp_path).zones.path("districts").write_bytes(_squares("North", "Elsewhere"))
    with pytest.raises(ZoneFileError, match="changed since it was added"):
        Home(tmp_path).zones.load("districts")


@pytest.mark.parametrize("target", ["index.json", ".geojson"])
def test_a_crash_mid_write_leaves_the_previous_zone_files_intact(tmp_path, target):
    before, _ = Home(tmp_path).zones.add("districts", _squares("North", "South"))
    index_before = (tmp_path / "zones" / "index.json").read_bytes()
    # a new process dies (no clean-up, no exception handlers) just before the rename of
    # the new index or of the replaced file: the power cut or kill -9 of a real crash
    done = _run(
        f"""
        import os, sys
        import vrvm.trips.store.durable as durable
        real_replace = os.replace
        def dying_replace(src, dst):
            if str(dst).endswith({target!r}):
                os._exit(9)
            real_replace(src, dst)
        durable.os.replace = dying_replace
        from vrvm.trips.home import Home
        Home(sys.argv[1]).zones.add("districts", {_squares("One", "Two", "Three")!r})
        """,
        tmp_path,
    )
    assert done.returncode == 9, done.stderr
    assert (tmp_path / "zones" / "index.json").read_bytes() == index_before
    assert Home(tmp_path).zones.entries() == [before]
    zones = Home(tmp_path).zones.load("districts")
    assert zones.names.tolist() == ["North", "South"] and zones.fingerprint == before.fingerprint
    # the next write recovers: it replaces what the crash left
    after, _ = Home(tmp_path).zones.add("districts", _squares("One", "Two", "Three"))
    assert [e.n_zones for e in Home(tmp_path).zones.entries()] == [3] and after.n_zones == 3
    kept = sorted(p.name for p in (tmp_path / "zones").glob("*.geojson"))
    assert kept == [after.file]
