"""Tests for vrvm.trips.places.geo: the great-circle distance and the local projection."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vrvm.trips.places.geo import EARTH_RADIUS_KM, LocalProjection, haversine_km

CHICAGO = (41.8781, -87.6298)

# ---------------------------------------------------------------- haversine


def test_haversine_quarter_meridian():
    # pi R / 2 on the mean-radius sphere: 10,007.557 km.
    assert haversine_km(0.0, 0.0, 90.0, 0.0) == pytest.approx(10_007.557, abs=1e-3)
    assert haversine_km(0.0, 0.0, 90.0, 0.0) == pytest.approx(math.pi * EARTH_RADIUS_KM / 2)


def test_haversine_one_degree_of_latitude_and_longitude():
    one_degree = EARTH_RADIUS_KM * math.pi / 180  # 111.195 km
    assert haversine_km(41.0, -87.6, 42.0, -87.6) == pytest.approx(one_degree, rel=1e-12)
    assert haversine_km(0.0, 10.0, 0.0, 11.0) == pytest.approx(one_degree, rel=1e-12)
    assert one_degree == pytest.approx(111.195, abs=1e-3)


def test_haversine_rosetta_code_reference():
    # Rosetta Code "Haversine formula": Nashville BNA (36.12, -86.67) to LAX
    # (33.94, -118.40) is 2887.2599506 km on a sphere of radius 6372.8 km.
    d = haversine_km(36.12, -86.67, 33.94, -118.40)
    assert d * 6372.8 / EARTH_RADIUS_KM == pytest.approx(2887.2599506, abs=1e-6)


def test_haversine_edge_cases_and_broadcasting():
    assert haversine_km(41.9, -87.6, 41.9, -87.6) == 0.0
    assert haversine_km(0.0, 0.0, 0.0, 180.0) == pytest.approx(math.pi * EARTH_RADIUS_KM)
    d = haversine_km(41.9, -87.6, np.array([41.9, 42.0, np.nan]), np.array([-87.5, -87.6, 0.0]))
    assert d.shape == (3,)
    assert np.isnan(d[2]) and np.all(d[:2] > 0)
    a = haversine_km(41.9, -87.6, 42.3, -87.1)
    b = haversine_km(42.3, -87.1, 41.9, -87.6)
    assert a == pytest.approx(b, rel=1e-14)


# --------------------------------------------------------------- projection


@pytest.mark.parametrize("centre", [CHICAGO, (60.17, 24.94), (-33.87, 151.21), (0.0, 0.0)])
def test_projection_distances_match_haversine_over_50_km(centre):
    rng = np.random.default_rng(1)
    proj = LocalProjection(*centre)
    # Points in a disc of radius 25 km (a 50 km wide city) around the centre.
    r = 25.0 * np.sqrt(rng.uniform(0, 1, 400))
    theta = rng.uniform(0, 2 * np.pi, 400)
    lat, lon = proj.inverse(r * np.cos(theta), r * np.sin(theta))
    x, y = proj.forward(lat, lon)
    i, j = np.triu_indices(len(lat), k=1)
    planar = np.hypot(x[i] - x[j], y[i] - y[j])
    sphere = haversine_km(lat[i], lon[i], lat[j], lon[j])
    keep = sphere > 0.1
    rel = np.abs(planar[keep] - sphere[keep]) / sphere[keep]
    assert rel.max() < 0.005  # required accuracy
    assert rel.max() < 1e-4  # what the azimuthal equidistant projection actually gives


def test_projection_exact_from_centre_and_axes():
    proj = LocalProjection(*CHICAGO)
    x, y = proj.forward(CHICAGO[0], CHICAGO[1])
    assert abs(x) < 1e-12 and abs(y) < 1e-12
    x, y = proj.forward(CHICAGO[0] + 0.3, CHICAGO[1])  # due north
    assert x == pytest.approx(0.0, abs=1e-9)
    assert y == pytest.approx(haversine_km(*CHICAGO, CHICAGO[0] + 0.3, CHICAGO[1]), rel=1e-12)
    x, y = proj.forward(CHICAGO[0], CHICAGO[1] + 0.3)  # east along the parallel
    assert x > 0
    assert np.hypot(x, y) == pytest.approx(
        haversine_km(*CHICAGO, CHICAGO[0], CHICAGO[1] + 0.3), rel=1e-12
    )


def test_projection_inverse_round_trip():
    rng = np.random.default_rng(2)
    proj = LocalProjection(*CHICAGO)
    lat = CHICAGO[0] + rng.uniform(-0.5, 0.5, 100)
    lon = CHICAGO[1] + rng.uniform(-0.5, 0.5, 100)
    back_lat, back_lon = proj.inverse(*proj.forward(lat, lon))
    np.testing.assert_allclose(back_lat, lat, atol=1e-10)
    np.testing.assert_allclose(back_lon, lon, atol=1e-10)


def test_projection_is_frozen_and_validated():
    proj = LocalProjection(41.9, -87.6)
    with pytest.raises(AttributeError):
        proj.lat0 = 0.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="lat0"):
        LocalProjection(91.0, 0.0)
    with pytest.raises(ValueError, match="lon0"):
        LocalProjection(0.0, float("nan"))
