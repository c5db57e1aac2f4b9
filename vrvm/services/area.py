"""The service area: the map's clickable zones, their labels and the initial map view.

Zones are the H3 cells where the model's training trips start or end, sized for
those trips (:func:`vrvm.trips.trip_zones.trip_zones`), numbered in reading order and
named after boundary polygons when there are some (:mod:`vrvm.services.boundaries`).
The initial view fits the densest cluster of trip ends into the map
(:func:`view_for_bbox`, in deck.gl's Web-Mercator conventions), and the training
trips are indexed by zone once (:class:`vrvm.services.support.TripSupport`) so that
every answer can say how much data stands behind it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import h3
import numpy as np
import pandas as pd

from vrvm.services.boundaries import place_names
from vrvm.services.models import is_synthetic
from vrvm.services.support import TripSupport, build_trip_support
from vrvm.trips.model import TravelTimeModel
from vrvm.trips.synthetic import synthetic_city_geojson
from vrvm.trips.trip_zones import trip_zones
from vrvm.trips.zones import choose_h3_resolution, zone_grid

__all__ = [
    "ServiceArea",
    "ViewState",
    "build_service_area",
    "mercator_x",
    "mercator_y",
    "view_for_bbox",
]


@dataclass(frozen=True)
class ViewState:
    """Initial map view: centre, zoom (deck.gl / Web Mercator, 512-pixel world)."""

    latitude: float
    longitude: float
    zoom: float


_WORLD_PX = 512.0  # deck.gl's world size at zoom 0


def mercator_x(lon) -> np.ndarray:
    """Web-Mercator x of longitudes, in pixels of the 512-pixel world at zoom 0."""
    return (np.asarray(lon, dtype=float) + 180.0) / 360.0 * _WORLD_PX


def mercator_y(lat) -> np.ndarray:
    """Web-Mercator y of latitudes, in pixels of the 512-pixel world at zoom 0."""
    phi = np.radians(np.clip(lat, -85.05112878, 85.05112878))
    return (np.pi - np.log(np.tan(np.pi / 4 + phi / 2))) / (2 * np.pi) * _WORLD_PX


def view_for_bbox(
    lat_min: float,
    lon_min: float,
    lat_max: float,
    lon_max: float,
    *,
    width_px: int = 800,
    height_px: int = 560,
    padding: float = 0.06,
) -> ViewState:
    """Centre and zoom that fit a box into a ``width_px`` x ``height_px`` map.

    Examples
    --------
    >>> v = view_for_bbox(41.6, -87.95, 42.05, -87.5)
    >>> round(v.latitude, 2), round(v.longitude, 3), 9 < v.zoom < 11
    (41.83, -87.725, True)
    """
    x0, x1 = mercator_x(np.array([lon_min, lon_max]))
    y1, y0 = mercator_y(np.array([lat_min, lat_max]))
    span_x = max(x1 - x0, 1e-9)
    span_y = max(y1 - y0, 1e-9)
    usable = 1.0 - 2.0 * padding
    zoom = min(np.log2(width_px * usable / span_x), np.log2(height_px * usable / span_y))
    mid_y = 0.5 * (y0 + y1)
    lat_c = np.degrees(2 * np.arctan(np.exp(np.pi - mid_y / _WORLD_PX * 2 * np.pi)) - np.pi / 2)
    return ViewState(float(lat_c), float(0.5 * (lon_min + lon_max)), float(zoom))


@dataclass(frozen=True)
class ServiceArea:
    """The clickable zones of the map and what is needed to draw them.

    Attributes
    ----------
    grid : pandas.DataFrame
        One row per zone in display order: ``zone`` (H3 id), ``number`` (1, 2, ...
        from north-west to south-east), ``label`` (``"Zone 12 · Downtown"``), ``place``
        (boundary name or ""), ``lat``, ``lon`` (centre), ``boundary``
        (``[[lon, lat], ...]``), ``n_points`` (training trip ends in the zone) and,
        when built from trips, ``cluster`` (0 for the densest cluster of trip ends).
    resolution : int
        H3 resolution of the zones.
    bbox : tuple of float
        ``(lat_min, lon_min, lat_max, lon_max)`` of the zones.
    view : ViewState
        Initial map view: the densest cluster of trip ends (all zones without trips).
    boundaries : dict or None
        GeoJSON drawn under the zones (boundary polygons, river, ...).
    synthetic : bool
        Whether the area is the synthetic city.
    support : TripSupport or None
        The training trips indexed by zone (None when they were not kept).
    median_trip_km : float or None
        Median length of the training trips whose ends differ.
    """

    grid: pd.DataFrame
    resolution: int
    bbox: tuple[float, float, float, float]
    view: ViewState
    boundaries: dict | None = None
    synthetic: bool = False
    support: TripSupport | None = field(default=None, repr=False)
    median_trip_km: float | None = None

    @property
    def zone_index(self) -> dict[str, int]:
        """Zone id -> row position in ``grid``."""
        return {z: i for i, z in enumerate(self.grid["zone"])}

    def zone_row(self, zone: str | None) -> int | None:
        """Row of ``zone`` in ``grid``, or None when it is not one of the zones."""
        matches = np.flatnonzero(self.grid["zone"].to_numpy() == zone)
        return int(matches[0]) if matches.size else None

    @property
    def labels(self) -> list[str]:
        """Zone labels in display order (for a searchable list)."""
        return self.grid["label"].tolist()


def _extent_points(model: TravelTimeModel) -> tuple[np.ndarray, np.ndarray]:
    """Without the training trips: the relevance-vector trips and the training box."""
    rv = model.relevance_trips()
    lat = np.concatenate([rv["origin_lat"].to_numpy(float), rv["dest_lat"].to_numpy(float)])
    lon = np.concatenate([rv["origin_lon"].to_numpy(float), rv["dest_lon"].to_numpy(float)])
    bbox = model.training_summary_.get("bbox")
    if bbox:  # the corners make the filled hull reach the whole training extent
        lat_lo, lon_lo, lat_hi, lon_hi = bbox
        lat = np.concatenate([lat, [lat_lo, lat_lo, lat_hi, lat_hi]])
        lon = np.concatenate([lon, [lon_lo, lon_hi, lon_lo, lon_hi]])
    return lat, lon


def _extent_grid(
    model: TravelTimeModel, resolution: int | None, target_zones: int, max_zones: int
) -> tuple[pd.DataFrame, int]:
    """Zones filling the training extent, when where the trips went is unknown."""
    lat, lon = _extent_points(model)
    if resolution is not None:
        return zone_grid(lat, lon, resolution=resolution, padding_rings=1), int(resolution)
    # coarser while the filled area has too many zones (outlying trips, an airport)
    resolution = choose_h3_resolution(lat, lon, target_zones=target_zones)
    while True:
        try:
            grid = zone_grid(lat, lon, resolution=resolution, padding_rings=1)
        except ValueError:  # far more cells than zone_grid allows
            if resolution == 0:
                raise
            resolution -= 1
            continue
        if len(grid) <= max_zones or resolution == 0:
            return grid, int(resolution)
        resolution -= 1


def build_service_area(
    model: TravelTimeModel,
    *,
    trips: pd.DataFrame | None = None,
    resolution: int | None = None,
    target_zones: int = 600,
    max_zones: int = 2500,
    boundaries: dict | None = None,
) -> ServiceArea:
    """Zones where the model's training trips go, labelled, with an initial view.

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model.
    trips : pandas.DataFrame, optional
        Its training trips (see :func:`load_training_trips`). The zones are the cells
        where they start or end, with a thin ring (:func:`~vrvm.trips.trip_zones.trip_zones`),
        the view opens on their densest cluster, and they are indexed by zone for the
        support counts. Without them (a model whose trips were not kept) the zones fill
        the convex hull of the relevance-vector trips and the training bounding box,
        and no support is counted.
    resolution : int, optional
        H3 resolution of the map zones; default: chosen from the trips (a typical trip
        spans several zones), or, without trips, the one giving about ``target_zones``
        zones over the extent.
    max_zones : int, default=2500
        At most this many zones (coarser zones otherwise).
    boundaries : dict, optional
        GeoJSON FeatureCollection whose polygons name the zones (e.g. community
        areas) and which is drawn under them. Default: the synthetic city's layers
        for a model trained on it.

    Returns
    -------
    ServiceArea
    """
    synthetic = is_synthetic(model)
    if boundaries is None and synthetic:
        boundaries = synthetic_city_geojson()
    focus, median_km = None, None
    if trips is not None and len(trips):
        zones = trip_zones(
            trips["origin_lat"],
            trips["origin_lon"],
            trips["dest_lat"],
            trips["dest_lon"],
            resolution=resolution,
            max_zones=max_zones,
        )
        grid, resolution = zones.grid, zones.resolution
        focus, median_km = zones.focus_bbox, zones.median_trip_km
    else:
        grid, resolution = _extent_grid(model, resolution, target_zones, max_zones)
    # Reading order: north to south in rows of about one zone height, west to east.
    row_height = np.sqrt(h3.average_hexagon_area(resolution, unit="km^2")) / 111.195
    row = np.floor((grid["lat"].max() - grid["lat"]) / row_height).astype(int)
    grid = grid.assign(_row=row).sort_values(["_row", "lon"]).drop(columns="_row")
    # centres to 6 decimals (0.1 m), as places and shared links carry them
    grid["lat"], grid["lon"] = grid["lat"].round(6), grid["lon"].round(6)
    grid = grid.reset_index(drop=True)
    grid.insert(1, "number", np.arange(1, len(grid) + 1))
    places = place_names(grid["lat"].to_numpy(), grid["lon"].to_numpy(), boundaries)
    grid.insert(2, "place", places)
    grid.insert(
        2,
        "label",
        [
            _zone_label(n, p, a, b)
            for n, p, a, b in zip(grid["number"], places, grid["lat"], grid["lon"], strict=True)
        ],
    )
    ring_lon = np.concatenate([np.asarray(b)[:, 0] for b in grid["boundary"]])
    ring_lat = np.concatenate([np.asarray(b)[:, 1] for b in grid["boundary"]])
    bbox = (
        float(ring_lat.min()),
        float(ring_lon.min()),
        float(ring_lat.max()),
        float(ring_lon.max()),
    )
    support = None
    if trips is not None and len(trips):
        support = build_trip_support(grid["zone"], resolution, trips, model.tz_)
    return ServiceArea(
        grid=grid,
        resolution=int(resolution),
        bbox=bbox,
        view=view_for_bbox(*(focus or bbox)),
        boundaries=boundaries,
        synthetic=synthetic,
        support=support,
        median_trip_km=median_km,
    )


def _zone_label(number: int, place: str, lat: float, lon: float) -> str:
    where = place if place else f"{lat:.4f}, {lon:.4f}"
    return f"Zone {number} · {where}"
