"""The service area: zones over the training trips, labels, the initial view."""

from __future__ import annotations

import h3
import numpy as np

from tests.conftest import PLACES_ONLY
from tools.browser import lnglat_to_pixel
from vrvm import TravelTimeModel, read_trips
from vrvm.services.map.area import build_service_area
from vrvm.services.map.boundaries import parse_geojson
from vrvm.services.versions.models import is_synthetic
from vrvm.trips.home import Home
from vrvm.trips.places.zones import latlng_to_zone


def test_zones_cover_every_training_trip_end(tiny_area, tiny_home, tiny_model):
    trips = Home(tiny_home).load_training_trips(tiny_model)
    zones = set(tiny_area.grid["zone"])
    for lat, lon in (("origin_lat", "origin_lon"), ("dest_lat", "dest_lon")):
        cells = latlng_to_zone(trips[lat], trips[lon], tiny_area.resolution)
        assert set(cells) <= zones
    # the zones are where trips start or end, at most a few thousand
    assert 300 < len(tiny_area.grid) <= 2000 and (tiny_area.grid["n_points"] > 0).all()
    assert tiny_area.grid["number"].tolist() == list(range(1, len(tiny_area.grid) + 1))
    assert tiny_area.grid["label"].is_unique
    assert tiny_area.synthetic and tiny_area.boundaries["synthetic"] is True


def test_zone_labels_name_places_from_boundaries(tiny_area):
    labels = tiny_area.grid["label"]
    assert labels.str.contains("Downtown Synthetica").sum() > 5
    assert labels.str.contains("Airport").sum() >= 1
    # the city limits contain most zones and name none of them
    assert not labels.str.contains("city limits").any()
    first = tiny_area.grid.iloc[0]
    assert first["label"].startswith("Zone 1 · ")


def test_zones_run_north_west_to_south_east(tiny_area):
    grid = tiny_area.grid
    assert grid["lat"].iloc[0] > grid["lat"].iloc[-1]


def test_service_area_without_kept_trips_uses_relevance_vectors_and_bbox(tiny_model):
    area = build_service_area(tiny_model)
    lat_lo, lon_lo, lat_hi, lon_hi = tiny_model.training_summary_["bbox"]
    corners = latlng_to_zone([lat_lo, lat_hi], [lon_lo, lon_hi], area.resolution)
    assert set(corners) <= set(area.grid["zone"])


def test_service_area_is_coarsened_to_at_most_max_zones(tiny_model):
    area = build_service_area(tiny_model, target_zones=5000, max_zones=800)
    assert len(area.grid) <= 800


def test_view_fits_the_area_and_projects_back(tiny_area):
    lat_lo, lon_lo, lat_hi, lon_hi = tiny_area.bbox
    x, y = lnglat_to_pixel(
        tiny_area.view, [lat_lo, lat_hi], [lon_lo, lon_hi], width_px=800, height_px=560
    )
    assert np.all((x >= 0) & (x <= 800) & (y >= 0) & (y <= 560))
    # north is up, east is right
    assert y[1] < y[0] and x[1] > x[0]
    cx, cy = lnglat_to_pixel(
        tiny_area.view,
        tiny_area.view.latitude,
        tiny_area.view.longitude,
        width_px=600,
        height_px=400,
    )
    assert (float(cx), float(cy)) == (300.0, 200.0)


def test_chicago_trips_and_community_areas(shared_data):
    """Real data: the Chicago sample's zones are named after its community areas."""

    trips, _ = read_trips(shared_data("chicago_taxi_trips.csv"))
    boundaries = parse_geojson(shared_data("chicago_community_areas.geojson").read_bytes())
    model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=80, **PLACES_ONLY)
    model.fit(trips)
    assert model.tz_ == "America/Chicago" and not is_synthetic(model)
    area = build_service_area(model, trips=trips, boundaries=boundaries)
    assert 150 < len(area.grid) <= 2000 and not area.synthetic
    places = set(area.grid["place"])
    assert {"Loop", "Near North Side", "Ohare"} <= places
    cells = latlng_to_zone(trips["origin_lat"], trips["origin_lon"], area.resolution)
    assert set(cells) <= set(area.grid["zone"])
    loop = area.grid.loc[area.grid["place"] == "Loop"].iloc[0]
    assert loop["label"] == f"Zone {loop['number']} · Loop"


def test_sf_bikeshare_area_opens_on_san_francisco(shared_data):
    """Real data: zones only where the bikes go, the map opens on SF, trips indexed."""
    trips, _ = read_trips(shared_data("sf_bikeshare_2019-02_partial.csv"))
    model = TravelTimeModel(n_members=2, kernel_widths=[1.5, 3.0], max_basis=60, **PLACES_ONLY)
    model.fit(trips)
    area = build_service_area(model, trips=trips)
    grid = area.grid
    assert len(grid) <= 2500 and (grid["n_points"] > 0).sum() >= 200
    assert h3.average_hexagon_edge_length(area.resolution, unit="km") < area.median_trip_km
    # the view is centred on San Francisco's streets, not on the bay, and zoomed in
    assert 37.72 < area.view.latitude < 37.81 and -122.47 < area.view.longitude < -122.38
    assert area.view.zoom >= 11.5
    x, y = lnglat_to_pixel(
        area.view, [37.7955, 37.3352], [-122.3937, -121.8863], width_px=800, height_px=560
    )
    assert 0 <= x[0] <= 800 and 0 <= y[0] <= 560  # the Ferry Building is in view ...
    assert not (0 <= y[1] <= 560 and 0 <= x[1] <= 800)  # ... San Jose is not
    # every training trip starting in a zone is indexed for the support counts
    starts = latlng_to_zone(trips["origin_lat"], trips["origin_lon"], area.resolution)
    assert area.support.dest.size == np.isin(starts, grid["zone"]).sum() == len(trips)


def test_synthetic_view_still_shows_the_whole_city(tiny_area):
    grid = tiny_area.grid
    x, y = lnglat_to_pixel(tiny_area.view, grid["lat"], grid["lon"], width_px=800, height_px=560)
    assert np.all((x >= 0) & (x <= 800) & (y >= 0) & (y <= 560))
    assert tiny_area.resolution == 8 and tiny_area.support is not None
