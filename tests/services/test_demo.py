"""The built-in demo: settings from the environment, the first start, once."""

from __future__ import annotations

import shutil

import pytest

from vrvm.services.analyst.demo import demo_settings, ensure_demo_model
from vrvm.trips.home import Home


def test_demo_settings_from_environment():
    default = demo_settings({})
    assert (default.n_trips, default.n_members, default.kernel_widths) == (20_000, 8, "auto")
    small = demo_settings({"VRVM_DEMO_TRIPS": "500", "VRVM_DEMO_MEMBERS": "3"})
    assert (small.n_trips, small.n_members) == (500, 3)
    assert small.model_params()["n_members"] == 3
    with pytest.raises(ValueError, match="VRVM_DEMO_MEMBERS"):
        demo_settings({"VRVM_DEMO_MEMBERS": "many"})
    with pytest.raises(ValueError, match="VRVM_DEMO_TRIPS"):
        demo_settings({"VRVM_DEMO_TRIPS": "5"})


def test_first_start_trains_once_and_records_the_demo(tiny_home):
    store = Home(tiny_home).models
    assert store.active_version() == 1
    info = store.versions()[0].info
    assert info["kind"] == "demo" and info["synthetic"] is True
    assert info["n_trips"] == 3000 and info["metrics"]["crps_s"] > 0
    # a second start finds the model and trains nothing
    version, trained = ensure_demo_model(tiny_home, progress=pytest.fail)
    assert (version, trained) == (1, False)


def test_store_without_active_pointer_gets_latest_activated(tiny_home, tmp_path):
    home = tmp_path / "h"
    shutil.copytree(tiny_home, home)
    (home / "models" / "active.json").unlink()
    assert Home(home).models.active_version() is None
    assert ensure_demo_model(home, progress=pytest.fail) == (1, False)
    assert Home(home).models.active_version() == 1
