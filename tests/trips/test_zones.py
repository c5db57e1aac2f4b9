"""Tests for vrvm.trips.places.zones: resolution choice, zone lookup, grids, stratified shards."""

from __future__ import annotations

import json
import math

import h3
import numpy as np
import pandas as pd
import pytest
from h3.api import basic_int as h3_int
from scipy.spatial import ConvexHull

from tests._counting import python_calls
from vrvm.trips.places.geo import EARTH_RADIUS_KM, LocalProjection
from vrvm.trips.places.zones import (
    choose_h3_resolution,
    latlng_to_zone,
    stratified_shards,
    zone_grid,
    zone_of,
    zones_geojson,
)

CHICAGO = (41.8781, -87.6298)


def synthetic_city(side_km: float = 20.0, n: int = 2000, seed: int = 0):
    """Uniform points in a ``side_km`` square around Chicago's centre."""
    rng = np.random.default_rng(seed)
    proj = LocalProjection(*CHICAGO)
    half = side_km / 2
    return proj.inverse(rng.uniform(-half, half, n), rng.uniform(-half, half, n))


def chicago_points(path) -> tuple[np.ndarray, np.ndarray]:
    raw = pd.read_csv(path)
    lat = np.concatenate([raw["pickup_latitude"], raw["dropoff_latitude"]])
    lon = np.concatenate([raw["pickup_longitude"], raw["dropoff_longitude"]])
    keep = np.isfinite(lat) & np.isfinite(lon)
    return lat[keep], lon[keep]


def expected_cells(lat, lon, resolution: int) -> float:
    lat_lo, lat_hi = np.percentile(lat, [1, 99])
    lon_lo, lon_hi = np.percentile(lon, [1, 99])
    area = (
        EARTH_RADIUS_KM**2
        * math.radians(lat_hi - lat_lo)
        * math.radians(lon_hi - lon_lo)
        * math.cos(math.radians((lat_lo + lat_hi) / 2))
    )
    return area / h3.average_hexagon_area(resolution, unit="km^2")


# --------------------------------------------------------- resolution choice


def test_resolution_on_20_km_synthetic_city():
    lat, lon = synthetic_city(20.0)
    res = choose_h3_resolution(lat, lon)
    # 400 km^2 / 200 zones = 2 km^2 per zone, between res 7 (5.2 km^2) and 8 (0.74 km^2).
    assert res in (7, 8)
    misfit = abs(math.log(expected_cells(lat, lon, res) / 200))
    assert misfit <= abs(math.log(expected_cells(lat, lon, res - 1) / 200))
    assert misfit <= abs(math.log(expected_cells(lat, lon, res + 1) / 200))
    assert misfit <= 0.5 * math.log(7) + 0.05  # within a factor ~sqrt(7) of the target


def test_resolution_grows_with_target_and_shrinks_with_extent():
    lat, lon = synthetic_city(20.0)
    chosen = [choose_h3_resolution(lat, lon, target_zones=t) for t in (2, 20, 200, 2000, 20000)]
    assert chosen == sorted(chosen) and chosen[-1] - chosen[0] >= 4
    big_lat, big_lon = synthetic_city(200.0)
    assert choose_h3_resolution(big_lat, big_lon) < choose_h3_resolution(lat, lon)


def test_resolution_ignores_outliers_and_nan():
    lat, lon = synthetic_city(20.0, n=5000)
    base = choose_h3_resolution(lat, lon)
    lat2 = np.concatenate([lat, [0.0, 51.5, np.nan] * 10])  # 0.6 % strays
    lon2 = np.concatenate([lon, [0.0, -0.1, -87.6] * 10])
    assert choose_h3_resolution(lat2, lon2) == base


def test_resolution_on_chicago_sample(shared_data):
    lat, lon = chicago_points(shared_data("chicago_taxi_trips.csv"))
    res = choose_h3_resolution(lat, lon)
    # The robust extent is ~600 km^2: ~116 cells at res 7 (5.2 km^2 each).
    assert res == 7
    assert 200 / math.sqrt(7) < expected_cells(lat, lon, res) < 200 * math.sqrt(7)


def test_resolution_errors():
    with pytest.raises(ValueError, match="span no area"):
        choose_h3_resolution([41.9] * 10, [-87.6] * 10)
    with pytest.raises(ValueError, match="no finite"):
        choose_h3_resolution([np.nan], [np.nan])
    with pytest.raises(ValueError, match="target_zones"):
        choose_h3_resolution([41.9, 42.0], [-87.6, -87.5], target_zones=0)


# ----------------------------------------------------------------- lookups


def test_latlng_to_zone_matches_h3():
    lat, lon = synthetic_city(30.0, n=500, seed=1)
    lat = np.concatenate([lat, lat[:100]])  # duplicates
    lon = np.concatenate([lon, lon[:100]])
    zones = latlng_to_zone(lat, lon, 8)
    assert zones.shape == (600,) and zones.dtype == object
    assert zones.tolist() == [h3.latlng_to_cell(a, b, 8) for a, b in zip(lat, lon, strict=True)]
    assert zone_of(lat[3], lon[3], 8) == zones[3]
    assert latlng_to_zone(pd.Series(lat[:5]), pd.Series(lon[:5]), 8).tolist() == zones[:5].tolist()
    assert latlng_to_zone([], [], 8).shape == (0,)


def test_latlng_to_zone_looks_up_each_distinct_point_once(monkeypatch):
    # what keeps 100,000 rows fast (~0.1 s on one core): H3 is asked once per distinct
    # point, never per row
    rng = np.random.default_rng(2)
    lat = CHICAGO[0] + np.round(rng.uniform(-0.2, 0.2, 100_000), 3)
    lon = CHICAGO[1] + np.round(rng.uniform(-0.2, 0.2, 100_000), 3)
    expected = h3.latlng_to_cell(lat[12345], lon[12345], 9)
    calls = {"cell": 0, "id": 0}
    to_cell, to_id = h3_int.latlng_to_cell, h3.int_to_str

    def counted_cell(*args):
        calls["cell"] += 1
        return to_cell(*args)

    def counted_id(*args):
        calls["id"] += 1
        return to_id(*args)

    monkeypatch.setattr(h3_int, "latlng_to_cell", counted_cell)
    monkeypatch.setattr(h3, "int_to_str", counted_id)
    zones = latlng_to_zone(lat, lon, 9)
    n_points = len(set(zip(lat.tolist(), lon.tolist(), strict=True)))
    assert n_points < 80_000  # the rounded coordinates repeat
    assert calls == {"cell": n_points, "id": n_points}
    assert zones[12345] == expected


def test_lookup_errors():
    with pytest.raises(ValueError, match=r"positions \[1\]"):
        latlng_to_zone([41.9, np.nan], [-87.6, -87.6], 7)
    with pytest.raises(ValueError, match="same length"):
        latlng_to_zone([41.9, 42.0], [-87.6], 7)
    with pytest.raises(ValueError, match="resolution"):
        latlng_to_zone([41.9], [-87.6], 16)
    with pytest.raises(ValueError, match="single point"):
        zone_of([41.9, 42.0], [-87.6, -87.6], 7)
    with pytest.raises(ValueError, match="latitudes"):
        zone_of(100.0, 0.0, 7)


# ------------------------------------------------------------------- grids


def has_no_holes(cells: set[str]) -> bool:
    """True if the cells outside ``cells`` form one connected region (no enclosed gaps)."""
    frame = set().union(*(h3.grid_disk(c, 2) for c in cells))
    outside = frame - cells
    outer = frame - set().union(*(h3.grid_disk(c, 1) for c in cells))
    reached, stack = set(outer), list(outer)
    while stack:
        for nb in h3.grid_disk(stack.pop(), 1):
            if nb in outside and nb not in reached:
                reached.add(nb)
                stack.append(nb)
    return reached == outside


def points_in_hull(lat, lon, n: int, seed: int = 0):
    """Uniform random points inside the convex hull of (lat, lon), by rejection."""
    rng = np.random.default_rng(seed)
    equations = ConvexHull(np.column_stack([lon, lat])).equations  # a.x + b <= 0 inside
    q = np.column_stack(
        [rng.uniform(lon.min(), lon.max(), 3 * n), rng.uniform(lat.min(), lat.max(), 3 * n)]
    )
    inside = np.all(q @ equations[:, :2].T + equations[:, 2] <= 0, axis=1)
    return q[inside, 1][:n], q[inside, 0][:n]


@pytest.mark.parametrize("padding_rings", [0, 1, 2])
def test_zone_grid_covers_points_and_hull_without_holes(padding_rings):
    lat, lon = synthetic_city(20.0, n=300, seed=3)
    grid = zone_grid(lat, lon, resolution=8, padding_rings=padding_rings)
    cells = set(grid["zone"])
    assert len(cells) == len(grid)
    assert set(latlng_to_zone(lat, lon, 8)) <= cells
    q_lat, q_lon = points_in_hull(lat, lon, 3000)
    assert set(latlng_to_zone(q_lat, q_lon, 8)) <= cells
    assert has_no_holes(cells)
    assert grid["n_points"].sum() == len(lat)


def test_zone_grid_covers_long_hull_edges():
    # Three far-apart points: a 150 km triangle whose long edges must still be covered.
    lat = np.array([41.0, 42.2, 41.3])
    lon = np.array([-88.5, -88.0, -86.9])
    grid = zone_grid(lat, lon, resolution=7, padding_rings=0)
    cells = set(grid["zone"])
    q_lat, q_lon = points_in_hull(lat, lon, 20_000, seed=1)
    assert set(latlng_to_zone(q_lat, q_lon, 7)) <= cells
    assert has_no_holes(cells)


def test_zone_grid_padding_adds_rings():
    lat, lon = synthetic_city(10.0, n=200, seed=4)
    g0 = set(zone_grid(lat, lon, resolution=8, padding_rings=0)["zone"])
    g1 = set(zone_grid(lat, lon, resolution=8, padding_rings=1)["zone"])
    assert g0 < g1
    assert g1 == set().union(*(h3.grid_disk(c, 1) for c in g0))


def test_zone_grid_thin_and_tiny_inputs():
    # Collinear points (a corridor) and a single point still give a connected grid
    # covering the segment between them.
    lat = np.linspace(41.80, 41.95, 5)
    lon = np.full(5, -87.65)
    grid = zone_grid(lat, lon, resolution=9, padding_rings=0)
    line_lat = np.linspace(41.80, 41.95, 500)
    assert set(latlng_to_zone(line_lat, np.full(500, -87.65), 9)) <= set(grid["zone"])
    single = zone_grid([41.88], [-87.63], resolution=7, padding_rings=1)
    assert zone_of(41.88, -87.63, 7) in set(single["zone"])
    assert len(single) >= 7


def test_zone_grid_columns_and_geometry():
    lat, lon = synthetic_city(8.0, n=100, seed=5)
    grid = zone_grid(lat, lon, resolution=8)
    assert list(grid.columns) == ["zone", "lat", "lon", "boundary", "n_points"]
    assert grid["zone"].is_monotonic_increasing and grid["zone"].is_unique
    assert grid["n_points"].dtype == np.int64
    for row in grid.head(20).itertuples():
        assert (row.lat, row.lon) == pytest.approx(h3.cell_to_latlng(row.zone))
        ring = row.boundary
        assert ring[0] == ring[-1] and len(ring) == 7  # hexagon, closed
        lons, lats = np.array(ring).T  # [lon, lat] order
        assert np.all(lons < -87) and np.all(lats > 41)
        assert zone_of(row.lat, row.lon, 8) == row.zone
    counts = pd.Series(latlng_to_zone(lat, lon, 8)).value_counts()
    assert grid.set_index("zone")["n_points"].reindex(counts.index).tolist() == counts.tolist()


def test_zone_grid_on_chicago_sample(shared_data):
    lat, lon = chicago_points(shared_data("chicago_taxi_trips.csv"))
    res = choose_h3_resolution(lat, lon)
    grid = zone_grid(lat, lon, resolution=res)
    cells = set(grid["zone"])
    assert set(latlng_to_zone(lat, lon, res)) <= cells
    assert has_no_holes(cells)
    assert grid["n_points"].sum() == len(lat)
    assert 100 < len(grid) < 1000


def test_zone_grid_refuses_huge_fill():
    lat, lon = synthetic_city(10.0, n=50)
    with pytest.raises(ValueError, match="max_cells"):
        zone_grid(np.append(lat, 0.0), np.append(lon, 0.0), resolution=9)
    with pytest.raises(ValueError, match="padding_rings"):
        zone_grid(lat, lon, resolution=8, padding_rings=-1)
    with pytest.raises(ValueError, match="NaN"):
        zone_grid(np.append(lat, np.nan), np.append(lon, 0.0), resolution=8)


def test_zones_geojson():
    lat, lon = synthetic_city(5.0, n=50)
    grid = zone_grid(lat, lon, resolution=8)
    grid["median_s"] = np.linspace(100, 200, len(grid))
    grid.loc[0, "median_s"] = np.nan
    gj = json.loads(json.dumps(zones_geojson(grid), allow_nan=False))
    assert gj["type"] == "FeatureCollection" and len(gj["features"]) == len(grid)
    first = gj["features"][0]
    assert first["geometry"]["type"] == "Polygon"
    assert first["geometry"]["coordinates"][0] == grid["boundary"].iloc[0]
    assert first["properties"]["zone"] == grid["zone"].iloc[0]
    assert first["properties"]["median_s"] is None
    assert isinstance(first["properties"]["n_points"], int)
    with pytest.raises(ValueError, match="boundary"):
        zones_geojson(grid.drop(columns="boundary"))


# ------------------------------------------------------------------ shards


def trip_keys(n: int = 5000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    zones = np.array([f"z{i}" for i in range(12)])
    return pd.DataFrame(
        {
            "origin_zone": zones[rng.integers(0, 12, n)],
            "dest_zone": zones[rng.zipf(1.8, n) % 12],
            "hour": rng.integers(0, 24, n),
        }
    )


def assert_balanced(keys: pd.DataFrame, shards: np.ndarray, n_shards: int) -> None:
    sizes = np.bincount(shards, minlength=n_shards)
    assert sizes.max() - sizes.min() <= 1
    stratum = keys.groupby(list(keys.columns), dropna=False).ngroup()
    per_stratum = pd.crosstab(stratum, shards).reindex(columns=range(n_shards), fill_value=0)
    spread = per_stratum.max(axis=1) - per_stratum.min(axis=1)
    assert spread.max() <= 1


@pytest.mark.parametrize("n_shards", [1, 3, 7, 16])
def test_shards_balanced_per_stratum_and_overall(n_shards):
    keys = trip_keys()
    shards = stratified_shards(keys, n_shards, random_state=0)
    assert shards.shape == (len(keys),) and shards.dtype == np.int64
    assert shards.min() >= 0 and shards.max() < n_shards
    assert_balanced(keys, shards, n_shards)


def test_shards_deterministic_and_seed_dependent():
    keys = trip_keys()
    a = stratified_shards(keys, 5, random_state=42)
    b = stratified_shards(keys, 5, random_state=42)
    c = stratified_shards(keys, 5, random_state=43)
    np.testing.assert_array_equal(a, b)
    assert (a != c).mean() > 0.5  # a fresh deal, not a small perturbation
    g = stratified_shards(keys, 5, random_state=np.random.default_rng(42))
    np.testing.assert_array_equal(g, a)


def test_shards_key_forms_agree():
    keys = trip_keys(1000)
    from_frame = stratified_shards(keys, 4, random_state=1)
    from_list = stratified_shards([keys[c].to_numpy() for c in keys], 4, random_state=1)
    np.testing.assert_array_equal(from_frame, from_list)
    single = stratified_shards(keys["hour"].to_numpy(), 4, random_state=1)
    assert_balanced(keys[["hour"]], single, 4)


def test_shards_start_offsets_are_random():
    # 900 singleton strata: each lands on a random shard, not always on shard 0.
    shards = stratified_shards([np.arange(900)], 3, random_state=0)
    assert np.bincount(shards).tolist() == [300, 300, 300]
    # Strata of size 2 over 4 shards: across seeds, a stratum's two rows land on each
    # of the four cyclic pairs of neighbouring shards.
    pairs = np.repeat(np.arange(50), 2)
    seen = {
        frozenset(stratified_shards([pairs], 4, random_state=seed)[pairs == 7].tolist())
        for seed in range(40)
    }
    assert seen == {frozenset({k, (k + 1) % 4}) for k in range(4)}


def test_shards_missing_keys_form_a_stratum():
    keys = pd.DataFrame({"zone": ["a", None, "a", None, np.nan, "a"], "h": [1] * 6})
    shards = stratified_shards(keys, 3, random_state=0)
    missing = keys["zone"].isna().to_numpy()
    assert sorted(shards[missing]) == [0, 1, 2]


def test_shards_are_vectorised():
    # no per-row Python loop (what keeps 300,000 rows at ~0.15 s on one core): as many
    # Python calls for 300,000 rows as for 3,000
    small, large = trip_keys(3_000, seed=9), trip_keys(300_000, seed=9)
    stratified_shards(small, 10, random_state=0)  # lazy imports and caches
    n_small = python_calls(lambda: stratified_shards(small, 10, random_state=0))
    n_large = python_calls(lambda: stratified_shards(large, 10, random_state=0))
    assert n_large - n_small < (300_000 - 3_000) / 100, (n_small, n_large)


def test_shards_errors():
    with pytest.raises(ValueError, match="n_shards"):
        stratified_shards([np.arange(5)], 0)
    with pytest.raises(ValueError, match="n_shards"):
        stratified_shards([np.arange(5)], 6)
    with pytest.raises(ValueError, match="n_shards"):
        stratified_shards([np.arange(5)], 2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one entry per row"):
        stratified_shards([np.arange(5), np.arange(4)], 2)
    with pytest.raises(ValueError, match="at least one column"):
        stratified_shards([], 2)
