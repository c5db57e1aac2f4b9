"""A data home written by vrvm 0.1.0 before the architecture change still loads and works.

``tests/data/home-0.1.0`` was written by commit 37e2f6e (the flat package): a model
store with one published version (2 members on 300 synthetic trips), the training trips
the dashboard keeps beside it, and a trip store with one batch of 120 synthetic trips.
The expected predictions below were computed by that commit.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from vrvm import TravelTimeModel, synthetic_city
from vrvm.services.versions.models import versions_table
from vrvm.trips.home import Home

OLD_HOME = Path(__file__).resolve().parents[1] / "data" / "home-0.1.0"
# TravelTimeModel.load(...).predict_dist(synthetic_city(300, seed=2).head(3)) at 37e2f6e
OLD_MEDIANS = [758.653145149068, 1887.028105897274, 542.9126688003963]
OLD_MEANS = [788.0389043778003, 1945.0850222742588, 560.4522009728192]


@pytest.fixture
def home(tmp_path):
    copy = tmp_path / "home"
    shutil.copytree(OLD_HOME, copy)
    return copy


def test_an_old_model_version_loads_and_predicts_as_before(home):
    store = Home(home).models
    assert store.active_version() == 1
    model = TravelTimeModel.load(store.active_path())
    dist = model.predict_dist(synthetic_city(300, seed=2).head(3))
    np.testing.assert_allclose(dist.median(), OLD_MEDIANS, rtol=1e-10)
    np.testing.assert_allclose(dist.mean(), OLD_MEANS, rtol=1e-10)
    assert len(Home(home).load_training_trips(model)) == 300
    table = versions_table(home)
    assert table["version"].tolist() == [1] and bool(table["active"].iloc[0])
    assert table["published by"].tolist() == [""]  # not recorded before issue 17


def test_an_old_home_takes_audit_entries_and_new_versions_with_their_publisher(home):
    from vrvm.services.access.policy import ANALYST, Access
    from vrvm.services.versions.models import activate_version, publish_model

    assert not (home / "audit.jsonl").exists()
    model = TravelTimeModel.load(Home(home).models.active_path())
    ana = Access(ANALYST, who="Ana", how="passphrase")
    version = publish_model(home, model, metrics=None, info={"kind": "copy"}, by=ana)
    activate_version(home, 1, by=ana)
    table = versions_table(home).set_index("version")
    assert table.loc[version, "published by"] == "Ana (passphrase)"
    assert table.loc[1, "published by"] == ""
    assert [e["action"] for e in Home(home).audit.entries()] == ["publish", "activate"]


def test_an_old_trip_store_reads_and_takes_new_trips(home):
    store = Home(home).trips
    assert len(store) == 120 and store.summary().n_parts == 1
    assert store.parts()["source"].tolist() == ["old.csv"]
    old = store.load()
    assert old.attrs["tz"] == str(old["start_time"].dt.tz)
    added = store.add(synthetic_city(300, seed=2))  # the first 120 are already there
    assert (added.n_added, added.n_duplicates) == (180, 120)
    assert len(store) == 300
