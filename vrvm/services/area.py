"""The service area: the map's clickable zones, their labels and the initial map view.

Zones are H3 cells covering the model's training extent (:func:`build_service_area`),
numbered in reading order and named after boundary polygons when there are some
(:mod:`vrvm.services.boundaries`). The initial view fits them into the map
(:func:`view_for_bbox`, in deck.gl's Web-Mercator conventions).
"""

from __future__ import annotations

from dataclasses import dataclass

import h3
import numpy as np
import pandas as pd

from vrvm.services.boundaries import place_names
from vrvm.services.models import is_synthetic
from vrvm.trips.model import TravelTimeModel
from vrvm.trips.synthetic import synthetic_city_geojson
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
        (``[[lon, lat], ...]``), ``n_points`` (training trip ends in the zone).
    resolution : int
        H3 resolution of the zones.
    bbox : tuple of float
        ``(lat_min, lon_min, lat_max, lon_max)`` of the zones.
    view : ViewState
        Initial map view fitting the zones.
    boundaries : dict or None
        GeoJSON drawn under the zones (boundary polygons, river, ...).
    synthetic : bool
        Whether the area is the synthetic city.
    """

    grid: pd.DataFrame
    resolution: int
    bbox: tuple[float, float, float, float]
    view: ViewState
    boundaries: dict | None = None
    synthetic: bool = False

    @property
    def zone_index(self) -> dict[str, int]:
        """Zone id -> row position in ``grid``."""
        return {z: i for i, z in enumerate(self.grid["zone"])}

    @property
    def labels(self) -> list[str]:
        """Zone labels in display order (for a searchable list)."""
        return self.grid["label"].tolist()


def _service_points(model: TravelTimeModel, trips: pd.DataFrame | None) -> tuple[np.ndarray, ...]:
    """Trip ends describing the service area: the training trips, else what the model kept."""
    if trips is not None and len(trips):
        lat = np.concatenate(
            [trips["origin_lat"].to_numpy(float), trips["dest_lat"].to_numpy(float)]
        )
        lon = np.concatenate(
            [trips["origin_lon"].to_numpy(float), trips["dest_lon"].to_numpy(float)]
        )
        return lat, lon
    rv = model.relevance_trips()
    lat = np.concatenate([rv["origin_lat"].to_numpy(float), rv["dest_lat"].to_numpy(float)])
    lon = np.concatenate([rv["origin_lon"].to_numpy(float), rv["dest_lon"].to_numpy(float)])
    bbox = model.training_summary_.get("bbox")
    if bbox:  # the corners make the filled hull reach the whole training extent
        lat_lo, lon_lo, lat_hi, lon_hi = bbox
        lat = np.concatenate([lat, [lat_lo, lat_lo, lat_hi, lat_hi]])
        lon = np.concatenate([lon, [lon_lo, lon_hi, lon_lo, lon_hi]])
    return lat, lon


def build_service_area(
    model: TravelTimeModel,
    *,
    trips: pd.DataFrame | None = None,
    resolution: int | None = None,
    target_zones: int = 600,
    max_zones: int = 2000,
    boundaries: dict | None = None,
) -> ServiceArea:
    """Zones covering the model's training extent, labelled, with an initial view.

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model.
    trips : pandas.DataFrame, optional
        Its training trips (see :func:`load_training_trips`); without them the
        extent is taken from the relevance-vector trips and the training bounding box.
    resolution : int, optional
        H3 resolution of the map zones; default: the one giving about
        ``target_zones`` zones, made coarser while the filled area would exceed
        ``max_zones``.
    boundaries : dict, optional
        GeoJSON FeatureCollection whose polygons name the zones (e.g. community
        areas) and which is drawn under them. Default: the synthetic city's layers
        for a model trained on it.

    Returns
    -------
    ServiceArea
    """
    lat, lon = _service_points(model, trips)
    synthetic = is_synthetic(model)
    if boundaries is None and synthetic:
        boundaries = synthetic_city_geojson()
    if resolution is None:
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
                break
            resolution -= 1
    else:
        grid = zone_grid(lat, lon, resolution=resolution, padding_rings=1)
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
    return ServiceArea(
        grid=grid,
        resolution=int(resolution),
        bbox=bbox,
        view=view_for_bbox(*bbox),
        boundaries=boundaries,
        synthetic=synthetic,
    )


def _zone_label(number: int, place: str, lat: float, lon: float) -> str:
    where = place if place else f"{lat:.4f}, {lon:.4f}"
    return f"Zone {number} · {where}"
