"""Boundary files: GeoJSON polygons that name the map's zones and are drawn under them.

A planner uploads the areas they know (community areas, taxi zones, districts);
:func:`parse_geojson` validates the upload, :func:`place_names` names each zone after
the smallest polygon holding its centre (with shapely), and :func:`boundary_layers`
splits the file into what a map draws: areas, lines and points.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import shapely
from shapely.geometry import shape

from vrvm.trips.geo import haversine_km

__all__ = ["boundary_layers", "feature_name", "parse_geojson", "place_names"]


_NAME_KEYS = (
    "name",
    "NAME",
    "Name",
    "community",
    "COMMUNITY",
    "label",
    "title",
    "neighborhood",
    "neighbourhood",
    "district",
    "area_name",
    "zone",
)


def feature_name(properties: Mapping[str, Any] | None) -> str:
    """Display name of a GeoJSON feature from its usual name properties.

    Examples
    --------
    >>> feature_name({"community": "DOUGLAS", "area_numbe": 35})
    'Douglas'
    >>> feature_name({"name": "Downtown Synthetica (synthetic)"})
    'Downtown Synthetica (synthetic)'
    >>> feature_name({"id": 3})
    ''
    """
    properties = properties or {}
    for key in _NAME_KEYS:
        value = properties.get(key)
        if isinstance(value, str) and value.strip():
            name = value.strip()
            return name.title() if name.isupper() else name
    for value in properties.values():
        if isinstance(value, str) and value.strip() and not value.strip().isdigit():
            name = value.strip()
            return name.title() if name.isupper() else name
    return ""


def _polygon(geometry: Mapping[str, Any]):
    """The (valid, prepared) shapely polygon of a GeoJSON geometry, or None."""
    try:
        polygon = shape(geometry)
    except (ValueError, TypeError, AttributeError, KeyError, IndexError):
        return None  # malformed coordinates: the feature names nothing
    if polygon.is_empty:
        return None
    if not polygon.is_valid:
        polygon = shapely.make_valid(polygon)
    shapely.prepare(polygon)
    return polygon


def place_names(
    lat: np.ndarray,
    lon: np.ndarray,
    boundaries: Mapping[str, Any] | None,
    *,
    broad_share: float = 0.6,
    point_radius_km: float = 1.5,
) -> list[str]:
    """Name each point after the smallest boundary polygon containing it.

    Polygons that contain more than ``broad_share`` of the points (city limits) say
    nothing and are skipped; points in no polygon take the name of a point feature
    (an airport) within ``point_radius_km``, else "".

    Examples
    --------
    >>> square = {"type": "Polygon", "coordinates": [[[0, 0], [4, 0], [4, 4], [0, 4], [0, 0]]]}
    >>> small = {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]]}
    >>> doc = {"type": "FeatureCollection", "features": [
    ...     {"type": "Feature", "geometry": square, "properties": {"name": "Town"}},
    ...     {"type": "Feature", "geometry": small, "properties": {"name": "Centre"}}]}
    >>> place_names(np.array([0.5, 3.0, 9.0]), np.array([0.5, 3.0, 9.0]), doc, broad_share=1.0)
    ['Centre', 'Town', '']
    """
    lat = np.asarray(lat, dtype=float)
    lon = np.asarray(lon, dtype=float)
    names = np.full(lat.shape, "", dtype=object)
    if not boundaries:
        return names.tolist()
    best_area = np.full(lat.shape, np.inf)
    for feature in boundaries.get("features") or []:
        geometry = (feature or {}).get("geometry") or {}
        name = feature_name(feature.get("properties"))
        if not name:
            continue
        if geometry.get("type") in ("Polygon", "MultiPolygon"):
            polygon = _polygon(geometry)
            if polygon is None:
                continue
            inside = shapely.contains_xy(polygon, lon, lat)
            if inside.mean() > broad_share:
                continue
            better = inside & (polygon.area < best_area)
            names[better] = name
            best_area[better] = polygon.area
        elif geometry.get("type") == "Point":
            p_lon, p_lat = geometry["coordinates"][:2]
            km = haversine_km(lat, lon, p_lat, p_lon)
            near = (km <= point_radius_km) & ~np.isfinite(best_area)
            names[near] = name
    return names.tolist()


def parse_geojson(data: bytes, *, max_bytes: int = 50 * 1024 * 1024) -> dict:
    """Validate an uploaded boundary file: JSON text holding a GeoJSON FeatureCollection.

    Raises
    ------
    ValueError
        With a message for the user if it is too big, not JSON or not GeoJSON.
    """
    if len(data) > max_bytes:
        raise ValueError(f"the boundary file is larger than {max_bytes // 2**20} MB")
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"the boundary file is not JSON text ({exc})") from None
    if isinstance(document, dict) and document.get("type") == "Feature":
        document = {"type": "FeatureCollection", "features": [document]}
    if not isinstance(document, dict) or document.get("type") != "FeatureCollection":
        raise ValueError("the boundary file is not a GeoJSON FeatureCollection")
    features = document.get("features")
    if not isinstance(features, list) or not features:
        raise ValueError("the GeoJSON FeatureCollection has no features")
    return document


def boundary_layers(boundaries: Mapping[str, Any] | None) -> dict[str, dict]:
    """Split boundary GeoJSON into ``areas`` (polygons), ``lines`` and ``points`` collections."""
    groups: dict[str, list] = {"areas": [], "lines": [], "points": []}
    for feature in (boundaries or {}).get("features") or []:
        kind = ((feature or {}).get("geometry") or {}).get("type", "")
        if kind in ("Polygon", "MultiPolygon"):
            groups["areas"].append(feature)
        elif kind in ("LineString", "MultiLineString"):
            groups["lines"].append(feature)
        elif kind in ("Point", "MultiPoint"):
            groups["points"].append(feature)
    return {k: {"type": "FeatureCollection", "features": v} for k, v in groups.items() if v}
