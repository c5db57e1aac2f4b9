"""Snapped models: valid, loadable, their relevance vectors no longer training trips."""

from __future__ import annotations

import h3
import numpy as np
import pandas as pd
import pytest

from vrvm import TravelTimeModel, synthetic_city
from vrvm.trips.model.snapping import choose_snap_resolution, snap_model


@pytest.fixture(scope="module")
def fitted():
    trips = synthetic_city(1500, seed=4)
    model = TravelTimeModel(
        n_members=2, kernel_widths=[1.5, 3.0], max_basis=60, random_state=0, n_jobs=1
    ).fit(trips)
    return model, trips


def test_a_snapped_model_is_a_valid_model_at_cell_centres(fitted, tmp_path):
    model, trips = fitted
    before = model.relevance_trips()
    snapped = snap_model(model, resolution=9, slot_minutes=30)
    after = snapped.relevance_trips()
    assert model.relevance_trips().equals(before)  # the original is untouched
    assert len(after) == len(before)
    for lat, lon in (("origin_lat", "origin_lon"), ("dest_lat", "dest_lon")):
        cells = [h3.latlng_to_cell(a, b, 9) for a, b in zip(before[lat], before[lon], strict=True)]
        centres = np.array([h3.cell_to_latlng(c) for c in cells])
        np.testing.assert_allclose(after[[lat, lon]].to_numpy(), centres, atol=1e-9)
    local = after["start_time"]
    assert ((local.dt.minute % 30) == 15).all() and (local.dt.second == 0).all()
    assert (local.dt.normalize() >= pd.Timestamp("2001-01-01", tz=local.dt.tz)).all()
    assert (local.dt.dayofweek.to_numpy() == before["start_time"].dt.dayofweek.to_numpy()).all()
    assert (after["travel_time_s"] % 60 == 0).all()
    # the kernel centres are the snapped trips' kernel inputs
    for member, raw in zip(snapped.members_, snapped.relevance_trip_arrays_, strict=True):
        frame = pd.DataFrame(
            raw[:, :4], columns=["origin_lat", "origin_lon", "dest_lat", "dest_lon"]
        )
        frame["start_time"] = pd.to_datetime(raw[:, 4], unit="s", utc=True)
        X, _ = snapped.featurizer_.transform(frame)
        np.testing.assert_allclose(member.relevance_vectors_, X)
        centres = member._predictor.basis.centres
        assert all(np.isclose(X, c).all(axis=1).any() for c in centres)
    # saved and loaded like any model, with the same predictions
    snapped.save(tmp_path / "snapped")
    loaded = TravelTimeModel.load(tmp_path / "snapped")
    np.testing.assert_allclose(loaded.predict(trips.head(40)), snapped.predict(trips.head(40)))
    assert loaded.training_summary_["snapped"] == {"resolution": 9, "slot_minutes": 30}
    ratio = snapped.predict(trips.head(200)) / model.predict(trips.head(200))
    assert np.median(np.abs(ratio - 1)) < 0.05


def test_the_chosen_resolution_is_the_coarsest_within_the_cost(fitted):
    model, trips = fitted
    choice = choose_snap_resolution(model, trips, max_cost=0.02, resolutions=(5, 7, 9, 10))
    costs = choice.costs.set_index("resolution")["cost"]
    assert list(costs.index) == [5, 7, 9, 10]
    within = [r for r in costs.index if costs[r] <= 0.02]
    assert choice.within == bool(within)
    assert choice.resolution == (min(within) if within else 10)
    assert costs[5] > costs[10]  # coarser costs more
    strict = choose_snap_resolution(model, trips, max_cost=0.0, resolutions=(5,))
    assert strict.resolution == 5 and not strict.within


def test_bad_snapping_settings_are_refused(fitted):
    model, _ = fitted
    with pytest.raises(ValueError, match="slot_minutes"):
        snap_model(model, slot_minutes=7)
    with pytest.raises(ValueError, match="resolution"):
        snap_model(model, resolution=16)
