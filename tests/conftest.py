"""Shared test fixtures.

Real data sets live in ``../shared/data`` beside the repository (never copied into it).
A test that needs one asks for the ``shared_data`` fixture: it is skipped with a clear
reason when the folder is absent, and fails instead when ``VRVM_REQUIRE_SHARED_DATA=1``
(as CI sets it), so a missing data folder can never turn CI green silently.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("VRVM_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def _require(name: str) -> Path:
    path = SHARED_DATA / name
    if path.is_file():
        return path
    message = (
        f"shared data file {path} is not available (tests read real data from "
        "../shared/data beside the repository)"
    )
    if os.environ.get("VRVM_REQUIRE_SHARED_DATA") == "1":
        pytest.fail(message + " and VRVM_REQUIRE_SHARED_DATA=1 demands it")
    pytest.skip(message)


@pytest.fixture
def shared_data():
    """Return a function ``name -> Path`` for a file in ``../shared/data``."""
    return _require


# ----------------------------------------------------------------------------------
#: Settings of a model for tests of places, zones and the services over them on the real
#: files: they read the model's time zone, zones and answers, not how sharp the location
#: stage and the own-duration regimes make them (which take the SF file's fit from two
#: minutes to two seconds).
PLACES_ONLY = {
    "location_stage": False,
    "pair_durations": False,
    "round_trips": False,
    "random_state": 0,
}

# ----------------------------------------------------------------------------------
# Dashboard fixtures: a tiny demo model trained once per session into a model store.
# ----------------------------------------------------------------------------------

TINY_DEMO_ENV = {
    "VRVM_DEMO_TRIPS": "3000",
    "VRVM_DEMO_MEMBERS": "2",
    "VRVM_DEMO_MAX_BASIS": "150",
    "VRVM_DEMO_WIDTHS": "1.5, 3",
    "VRVM_N_JOBS": "1",
}


@pytest.fixture(scope="session")
def tiny_home(tmp_path_factory):
    """A ``VRVM_HOME`` holding a tiny trained demo model (read-only: copy it to change it).

    synthetic_city(3000), two members, at most 150 basis functions, explicit widths:
    about two seconds to train.
    """
    from vrvm.services.analyst.demo import demo_settings, ensure_demo_model

    home = tmp_path_factory.mktemp("vrvm-home")
    ensure_demo_model(home, demo_settings(TINY_DEMO_ENV))
    return home


@pytest.fixture(scope="session")
def tiny_model(tiny_home):
    """The tiny demo model, loaded from its store."""
    from vrvm import TravelTimeModel
    from vrvm.trips.home import Home

    return TravelTimeModel.load(Home(tiny_home).models.active_path())


@pytest.fixture(scope="session")
def tiny_area(tiny_home, tiny_model):
    """The tiny model's service area (zones over its training trips)."""
    from vrvm.services.map.area import build_service_area
    from vrvm.trips.home import Home

    trips = Home(tiny_home).load_training_trips(tiny_model)
    return build_service_area(tiny_model, trips=trips)


@pytest.fixture
def vrvm_home(tiny_home, tmp_path, monkeypatch):
    """A writable copy of the tiny home, set as ``$VRVM_HOME`` for the app under test."""
    import shutil

    home = tmp_path / "home"
    shutil.copytree(tiny_home, home)
    monkeypatch.setenv("VRVM_HOME", str(home))
    for name, value in TINY_DEMO_ENV.items():
        monkeypatch.setenv(name, value)
    return home


# ----------------------------------------------------------------------------------
# Real data: a small model of the Chicago taxi sample, published in a data home.
# ----------------------------------------------------------------------------------

CHICAGO_TRIPS = 3000


@pytest.fixture(scope="session")
def chicago_home_built(tmp_path_factory):
    """A data home whose active model was trained on 3,000 trips of the Chicago sample
    (two members, at most 100 basis functions: a few seconds), its training trips kept.
    Read-only: use ``chicago_home``."""
    from vrvm import TravelTimeModel, read_trips
    from vrvm.services.versions.models import publish_model

    trips, _ = read_trips(_require("chicago_taxi_trips.csv"))
    trips = trips.sample(n=CHICAGO_TRIPS, random_state=0).sort_values("start_time")
    trips = trips.reset_index(drop=True)
    model = TravelTimeModel(
        name="Chicago taxi trips",
        n_members=2,
        kernel_widths=[1.5, 3.0],
        max_basis=100,
        random_state=0,
        n_jobs=1,
    ).fit(trips)
    home = tmp_path_factory.mktemp("chicago-home")
    info = {"kind": "train", "data": "chicago_taxi_trips.csv", "n_trips": len(trips)}
    publish_model(home, model, metrics=None, info=info, training_trips=trips)
    return home


@pytest.fixture
def chicago_home(chicago_home_built, tmp_path, monkeypatch):
    """A writable copy of the Chicago home, set as ``$VRVM_HOME``."""
    import shutil

    home = tmp_path / "chicago"
    shutil.copytree(chicago_home_built, home)
    monkeypatch.setenv("VRVM_HOME", str(home))
    return home


# ----------------------------------------------------------------------------------
# A model whose out-of-shard PITs are skewed: it predicts through a PIT map.
# ----------------------------------------------------------------------------------


def skewed_trips(n: int, seed: int):
    """Synthetica's trips with skewed delays on top (a Gumbel factor on each travel
    time): a symmetric spread cannot follow them, so the model fits a PIT map."""
    import numpy as np

    from vrvm import synthetic_city

    trips = synthetic_city(n, seed=seed)
    rng = np.random.default_rng(seed)
    trips["travel_time_s"] = trips["travel_time_s"] * np.exp(rng.gumbel(0.0, 0.35, n))
    return trips


@pytest.fixture(scope="session")
def skewed_model():
    """Four members on 3,000 skewed trips, without the location stage (a few seconds)."""
    from vrvm import TravelTimeModel

    return TravelTimeModel(n_members=4, max_basis=60, location_stage=False, random_state=0).fit(
        skewed_trips(3000, seed=1)
    )
