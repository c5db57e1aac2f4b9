"""A model exported from the home: snapped at a measured cost, a loadable zip, recorded."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from vrvm import TravelTimeModel, synthetic_city
from vrvm.services.access.policy import VIEWER, Access, AccessDenied
from vrvm.services.versions.model_export import export_model
from vrvm.trips.home import Home


def test_the_zip_holds_a_model_that_loads_and_predicts(vrvm_home, tmp_path):
    result, data = export_model(vrvm_home)
    assert result.snapped and result.choice is not None and result.version == 1
    assert result.choice.n_trips == 2000  # a bounded sample of the kept training trips
    assert result.resolution == result.choice.resolution
    assert f"resolution {result.resolution}" in result.sentence()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert sorted(archive.namelist()) == ["arrays.npz", "model.json"]
        archive.extractall(tmp_path / "model")
    shared = TravelTimeModel.load(tmp_path / "model")
    original = TravelTimeModel.load(Home(vrvm_home).models.active_path())
    queries = synthetic_city(200, seed=21)
    assert np.median(np.abs(shared.predict(queries) / original.predict(queries) - 1)) < 0.05
    assert shared.training_summary_["snapped"]["resolution"] == result.resolution
    entry = Home(vrvm_home).audit.entries()[-1]
    assert entry["action"] == "export" and entry["resolution"] == result.resolution


def test_a_viewer_cannot_export_and_a_missing_version_is_named(vrvm_home):
    with pytest.raises(AccessDenied):
        export_model(vrvm_home, by=Access(VIEWER, who="", how="none"))
    with pytest.raises(ValueError, match="no version 7"):
        export_model(vrvm_home, version=7)
    raw, _ = export_model(vrvm_home, snap=False)
    assert not raw.snapped and "exported raw" in raw.sentence()
