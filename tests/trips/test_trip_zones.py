"""Zones where trips are: cells, size, clusters and the focus (vrvm.trips.places.trip_zones)."""

from __future__ import annotations

import h3
import numpy as np
import pandas as pd
import pytest

from vrvm import read_trips
from vrvm.trips.places.geo import LocalProjection
from vrvm.trips.places.trip_zones import (
    EDGE_RINGS,
    FILL_RINGS,
    trip_polygons,
    trip_zones,
    zone_neighbours,
)
from vrvm.trips.places.zone_files import ZoneFile
from vrvm.trips.places.zones import latlng_to_zone
from vrvm.trips.synthetic import synthetic_city

# The three bike-share systems of the SF file, by longitude (the bay lies between).
SF_SYSTEMS = {
    "San Francisco": (-122.53, -122.35),
    "East Bay": (-122.35, -122.1),
    "San Jose": (-122.0, -121.7),
}


def zones_of(trips: pd.DataFrame, **kwargs):
    return trip_zones(
        trips["origin_lat"], trips["origin_lon"], trips["dest_lat"], trips["dest_lon"], **kwargs
    )


def town_trips(centres_km, n: int, seed: int = 0, spread_km: float = 2.0) -> pd.DataFrame:
    """Trips within each of a few towns (positions in km east/north of Chicago's centre)."""
    rng = np.random.default_rng(seed)
    proj = LocalProjection(41.88, -87.63)
    frames = []
    for x0, y0 in centres_km:
        o = rng.normal([x0, y0], spread_km, (n, 2))
        d = rng.normal([x0, y0], spread_km, (n, 2))
        o_lat, o_lon = proj.inverse(o[:, 0], o[:, 1])
        d_lat, d_lon = proj.inverse(d[:, 0], d[:, 1])
        frames.append(
            pd.DataFrame(
                {"origin_lat": o_lat, "origin_lon": o_lon, "dest_lat": d_lat, "dest_lon": d_lon}
            )
        )
    return pd.concat(frames, ignore_index=True)


def assert_every_empty_zone_is_near_a_trip(grid: pd.DataFrame) -> None:
    """No zone without trip ends except the documented ring (closing and edge ring)."""
    occupied = set(grid.loc[grid["n_points"] > 0, "zone"])
    reach = max(FILL_RINGS, EDGE_RINGS)
    for zone in grid.loc[grid["n_points"] == 0, "zone"]:
        assert occupied & set(h3.grid_disk(zone, reach)), zone


def test_zone_neighbours_match_h3_distances():
    cell = h3.latlng_to_cell(41.88, -87.63, 8)
    zones = sorted(h3.grid_disk(cell, 2))
    matrix = zone_neighbours(zones).toarray()
    brute = np.array([[h3.grid_distance(a, b) <= 1 for b in zones] for a in zones])
    np.testing.assert_array_equal(matrix, brute)


def test_closing_fills_holes_but_does_not_grow_outwards():
    centre = h3.latlng_to_cell(41.88, -87.63, 8)
    ring = sorted(h3.grid_ring(centre, 2))  # trips on a ring around an empty middle
    lat, lon = np.array([h3.cell_to_latlng(c) for c in ring]).T
    tz = trip_zones(lat, lon, np.roll(lat, 5), np.roll(lon, 5), resolution=8, edge_rings=0)
    zones = set(tz.grid["zone"])
    assert centre in zones and set(h3.grid_disk(centre, 2)) == zones  # holes closed, no more
    assert tz.grid.loc[tz.grid["zone"] == centre, "n_points"].item() == 0


def test_separate_towns_are_separate_clusters_unless_trips_join_them():
    towns = town_trips([(0, 0), (40, 0)], n=1500)
    tz = zones_of(towns)
    assert tz.grid["cluster"].nunique() == 2
    # a few odd trips between the towns do not join them ...
    odd = towns.iloc[:2].assign(
        dest_lat=towns["dest_lat"].iloc[-2:].to_numpy(),
        dest_lon=towns["dest_lon"].iloc[-2:].to_numpy(),
    )
    tz_odd = zones_of(pd.concat([towns, odd], ignore_index=True))
    assert tz_odd.grid["cluster"].nunique() == 2
    # ... but a real flow does (an airport and its city)
    flow = towns.iloc[:200].assign(
        dest_lat=towns["dest_lat"].iloc[-200:].to_numpy(),
        dest_lon=towns["dest_lon"].iloc[-200:].to_numpy(),
    )
    joined = zones_of(pd.concat([towns, flow], ignore_index=True))
    assert joined.grid["cluster"].nunique() == 1
    # the zones between the towns stay empty either way
    middle = latlng_to_zone(*LocalProjection(41.88, -87.63).inverse(20.0, 0.0), joined.resolution)
    assert middle[0] not in set(joined.grid["zone"])


def test_densest_cluster_is_first_and_the_focus():
    towns = pd.concat(
        [town_trips([(0, 0)], n=3000), town_trips([(60, 0)], n=300, seed=1)], ignore_index=True
    )
    tz = zones_of(towns)
    big = tz.grid.loc[tz.grid["cluster"] == 0]
    assert big["n_points"].sum() > 0.85 * tz.grid["n_points"].sum()
    lat_lo, lon_lo, lat_hi, lon_hi = tz.focus_bbox
    assert lat_lo < 41.88 < lat_hi and lon_lo < -87.63 < lon_hi
    assert lon_hi < -87.2  # the small town, 60 km east, is not in view


def test_size_follows_the_trips():
    short = town_trips([(0, 0)], n=3000, spread_km=1.0)
    long = town_trips([(0, 0)], n=3000, spread_km=6.0)
    r_short, r_long = zones_of(short).resolution, zones_of(long).resolution
    assert r_short > r_long
    for trips, r in ((short, r_short), (long, r_long)):
        median = zones_of(trips).median_trip_km
        assert h3.average_hexagon_edge_length(r, unit="km") <= median / 3


def test_max_zones_is_respected():
    towns = town_trips([(0, 0)], n=5000, spread_km=8.0)
    free = zones_of(towns)
    capped = zones_of(towns, max_zones=len(free.grid) // 3)
    assert len(capped.grid) <= len(free.grid) // 3
    assert capped.covered_share >= 0.99


def test_errors_and_nan_trips():
    with pytest.raises(ValueError, match="one entry per trip"):
        trip_zones([41.0], [-87.0], [41.0, 41.1], [-87.0, -87.1])
    with pytest.raises(ValueError, match="at least one trip"):
        trip_zones([np.nan], [-87.0], [41.0], [-87.0])
    tz = trip_zones([41.88, np.nan], [-87.63, -87.6], [41.9, 41.9], [-87.6, -87.6])
    assert tz.grid["n_points"].sum() == 2  # the trip with a NaN is left out


def test_synthetic_city_keeps_its_fine_zones_and_airport():
    trips = synthetic_city(20_000, seed=0)
    tz = zones_of(trips)
    grid = tz.grid
    assert tz.resolution == 8 and 450 <= len(grid) <= 900
    assert grid["cluster"].nunique() == 1  # the airport's trips join it to the city
    assert tz.covered_share == 1.0
    assert_every_empty_zone_is_near_a_trip(grid)
    lat_lo, lon_lo, lat_hi, lon_hi = tz.focus_bbox
    airport = (-40.0 - 9 / 111.195, -30.0 + 16 / (111.195 * np.cos(np.radians(40))))
    assert lat_lo < airport[0] < lat_hi and lon_lo < airport[1] < lon_hi


def test_sf_bikeshare_three_systems(shared_data):
    """Real data: SF, the East Bay and San Jose each get zones; the focus is SF."""
    trips, _ = read_trips(shared_data("sf_bikeshare_2019-02_partial.csv"))
    tz = zones_of(trips)
    grid = tz.grid
    assert tz.covered_share >= 0.99
    edge_km = h3.average_hexagon_edge_length(tz.resolution, unit="km")
    assert edge_km < tz.median_trip_km / 3  # a typical trip crosses several zones
    assert len(grid) <= 2500
    clusters = {}
    for name, (lo, hi) in SF_SYSTEMS.items():
        part = grid.loc[grid["lon"].between(lo, hi) & (grid["n_points"] > 0)]
        assert len(part) >= 30, name  # each system has zones to pick from
        clusters[name] = part["cluster"].value_counts().index[0]
    assert len(set(clusters.values())) == 3  # three clusters, no trips between them
    assert clusters["San Francisco"] == 0
    assert_every_empty_zone_is_near_a_trip(grid)
    # nothing in the bay between SF and Oakland, nor between SF and San Jose
    bay = latlng_to_zone([37.80, 37.55], [-122.33, -122.20], tz.resolution)
    assert not set(bay) & set(grid["zone"])
    lat_lo, lon_lo, lat_hi, lon_hi = tz.focus_bbox
    centre_lat, centre_lon = (lat_lo + lat_hi) / 2, (lon_lo + lon_hi) / 2
    assert 37.72 < centre_lat < 37.81 and -122.47 < centre_lon < -122.38
    assert lon_hi < -122.35  # the view does not reach across the bay


def test_chicago_zones(shared_data):
    trips, _ = read_trips(shared_data("chicago_taxi_trips.csv"))
    tz = zones_of(trips)
    grid = tz.grid
    assert tz.covered_share >= 0.99 and 300 <= len(grid) <= 2500
    assert h3.average_hexagon_edge_length(tz.resolution, unit="km") < tz.median_trip_km / 3
    assert_every_empty_zone_is_near_a_trip(grid)
    assert (grid["n_points"] > 0).sum() >= 150
    loop, ohare = latlng_to_zone([41.8837, 41.9803], [-87.6325, -87.9090], tz.resolution)
    zones = grid.set_index("zone")
    assert zones.loc[loop, "n_points"] > 0 and zones.loc[loop, "cluster"] == 0
    assert ohare in zones.index
    lat_lo, lon_lo, lat_hi, lon_hi = tz.focus_bbox
    assert lat_lo < 41.8837 < lat_hi and lon_lo < -87.6325 < lon_hi
    assert lon_hi < -87.5  # not out over Lake Michigan


def test_trip_polygons_match_a_point_by_point_lookup(shared_data):
    """Chicago trips in community areas: counts and rows as zone_of finds them one by one."""
    trips, _ = read_trips(shared_data("chicago_taxi_trips.csv"))
    trips = trips.iloc[:2000].copy()
    trips.loc[trips.index[0], "origin_lat"] = np.nan  # in no polygon
    zones = ZoneFile.read(shared_data("chicago_community_areas.geojson"), id_property="area_numbe")
    found = trip_polygons(
        zones, trips["origin_lat"], trips["origin_lon"], trips["dest_lat"], trips["dest_lon"]
    )
    ids = np.append(zones.ids[found.positions], None)  # row -1: outside
    for lat, lon, rows in (
        ("origin_lat", "origin_lon", found.origin_row),
        ("dest_lat", "dest_lon", found.dest_row),
    ):
        points = zip(trips[lat], trips[lon], strict=True)
        one_by_one = [zones.zone_of([a], [b])[0] for a, b in points]
        assert ids[rows].tolist() == one_by_one
    assert found.origin_row[0] == -1
    ends = np.concatenate([ids[found.origin_row], ids[found.dest_row]])
    counts = pd.Series(ends).dropna().value_counts()
    assert dict(zip(ids[:-1], found.n_points.tolist(), strict=True)) == counts.to_dict()
    assert np.all(np.diff(found.positions) > 0) and found.n_points.min() >= 1
    assert 0.99 < found.covered_share <= 1.0
