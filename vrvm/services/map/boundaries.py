"""Boundary files: GeoJSON polygons that name the map's zones, drawn under them, kept in the home.

A planner uploads the areas they know (community areas, taxi zones, districts):
:func:`save_boundaries` checks the upload (as a zone file,
:class:`vrvm.trips.places.zone_files.ZoneFile`, with its roads and landmarks allowed
beside the polygons), keeps it in the data home (``$VRVM_HOME/zones``) and shows it on
the map, where it stays across restarts until :func:`remove_boundaries`.
:func:`place_names` names each map zone after the smallest polygon holding its centre
(an ``STRtree`` query), and :func:`boundary_layers` splits a file into what a map draws:
areas, lines and points.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vrvm.services.access.policy import Access, record
from vrvm.trips.home import Home
from vrvm.trips.places.geo import haversine_km
from vrvm.trips.places.zone_files import (
    ZoneFile,
    ZoneFileError,
    ZoneFileLimits,
    feature_name,
    read_feature_collection,
)
from vrvm.trips.store.kept_zones import ZoneFileEntry

__all__ = [
    "BOUNDARY_LIMITS",
    "MAX_BOUNDARY_BYTES",
    "MAX_BOUNDARY_FEATURES",
    "MAX_BOUNDARY_VERTICES",
    "boundary_file_name",
    "boundary_layers",
    "boundary_limits",
    "boundary_zones",
    "describe_boundaries",
    "feature_name",
    "load_boundaries",
    "parse_geojson",
    "place_names",
    "remove_boundaries",
    "save_boundaries",
    "saved_boundaries",
    "show_boundaries",
    "shown_boundaries",
]

MAX_BOUNDARY_BYTES = 50 * 1024 * 1024
MAX_BOUNDARY_FEATURES = 20_000
"""Features of a boundary file: every page draws them all (each simplified for the map)
and names its zones after them, so the whole file must build in seconds; a city's
census tracts are a few thousand."""
MAX_BOUNDARY_VERTICES = 500_000
"""Vertices of a boundary file, over all its features: the NYC taxi zones have 98,192
(7,814 in the largest zone), Chicago's 77 community areas 52,641. Counted on the
uploaded bytes before they are parsed, so a polygon of a million vertices is refused
at once (it took 13.7 s and 830 MB to build under the zone files' 2,000,000)."""
BOUNDARY_LIMITS = ZoneFileLimits(
    max_bytes=MAX_BOUNDARY_BYTES,
    max_features=MAX_BOUNDARY_FEATURES,
    max_vertices=MAX_BOUNDARY_VERTICES,
)
"""What a boundary file may hold, checked when it is saved and again each time the map
reads it (:func:`load_boundaries`): the map builds exactly what was checked."""


def boundary_limits(max_bytes: int = MAX_BOUNDARY_BYTES) -> ZoneFileLimits:
    """:data:`BOUNDARY_LIMITS` with another largest file."""
    return dataclasses.replace(BOUNDARY_LIMITS, max_bytes=max_bytes)


def boundary_zones(
    boundaries: Mapping[str, Any] | ZoneFile | None,
    *,
    label: str = "boundary file",
    limits: ZoneFileLimits | None = None,
) -> ZoneFile | None:
    """The polygons of a boundary file as zones; None when it has none.

    Point and line features (an airport, roads) are skipped; zones without a distinct
    id property are numbered in file order; the file is read within ``limits``
    (default :data:`BOUNDARY_LIMITS`).

    Raises
    ------
    ZoneFileError
        A feature that cannot be read (see :meth:`ZoneFile.from_geojson`), named by
        its position in the file; ``label`` names the file.
    """
    if boundaries is None or isinstance(boundaries, ZoneFile):
        return boundaries
    features = boundaries.get("features")
    if not isinstance(features, list) or not any(map(_is_polygon_feature, features)):
        return None
    limits = limits or BOUNDARY_LIMITS
    # the map reads a kept file (load_boundaries) and then names its zones after the
    # same document: its polygons are built once (a polygon of a million vertices takes
    # seconds); documents are never changed once read
    key = (id(boundaries), limits)
    with _BUILT_LOCK:
        built = _BUILT.get(key)
    if built is not None and built[0] is boundaries:
        return built[1]
    document = {**boundaries, "type": "FeatureCollection"}
    zones = ZoneFile.from_geojson(
        document, non_polygons="skip", ids_from_order=True, limits=limits, label=label
    )
    with _BUILT_LOCK:
        _BUILT[key] = (boundaries, zones)
        while len(_BUILT) > _BUILT_KEPT:
            _BUILT.pop(next(iter(_BUILT)))
    return zones


_BUILT: dict[tuple[int, ZoneFileLimits], tuple[Mapping[str, Any], ZoneFile]] = {}
_BUILT_KEPT = 2  # the file shown on the map, and one being replaced
_BUILT_LOCK = threading.Lock()


def _geometry(feature: Any) -> Mapping[str, Any]:
    """A feature's geometry object, or an empty one (whatever the feature holds)."""
    geometry = feature.get("geometry") if isinstance(feature, Mapping) else None
    return geometry if isinstance(geometry, Mapping) else {}


def _is_polygon_feature(feature: Any) -> bool:
    return _geometry(feature).get("type") in ("Polygon", "MultiPolygon")


def _properties(feature: Mapping[str, Any]) -> Mapping[str, Any]:
    properties = feature.get("properties")
    return properties if isinstance(properties, Mapping) else {}


def _named_points(features: Any) -> list[tuple[str, float, float]]:
    """``(name, lat, lon)`` of the named Point features with a position on the globe."""
    points = []
    for feature in features if isinstance(features, list) else []:
        geometry = _geometry(feature)
        position = geometry.get("coordinates")
        if geometry.get("type") != "Point" or not isinstance(position, list):
            continue
        if len(position) < 2 or not all(_is_number(v) for v in position[:2]):
            continue
        lon, lat = float(position[0]), float(position[1])
        name = feature_name(_properties(feature))
        if name and abs(lon) <= 180 and abs(lat) <= 90:
            points.append((name, lat, lon))
    return points


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def place_names(
    lat: np.ndarray,
    lon: np.ndarray,
    boundaries: Mapping[str, Any] | ZoneFile | None,
    *,
    broad_share: float = 0.6,
    point_radius_km: float = 1.5,
) -> list[str]:
    """Name each point after the smallest boundary polygon containing it.

    Polygons that contain more than ``broad_share`` of the points (city limits) say
    nothing and are skipped, and so are polygons without a name; points in no polygon
    take the name of a point feature (an airport) within ``point_radius_km``, else "".

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
    if not boundaries or not len(lat):
        return names.tolist()
    zones = boundary_zones(boundaries)
    if zones is not None:
        zone_names = np.array([feature_name(p) for p in zones.properties], dtype=object)
        _, zone_index = zones.covering(lat, lon)
        share = np.bincount(zone_index, minlength=len(zones)) / lat.size
        where = zones.zone_index(lat, lon, ignore=(zone_names == "") | (share > broad_share))
        names[where >= 0] = zone_names[where[where >= 0]]
    in_polygon = names != ""
    features = [] if isinstance(boundaries, ZoneFile) else boundaries.get("features")
    for name, p_lat, p_lon in _named_points(features):
        near = (haversine_km(lat, lon, p_lat, p_lon) <= point_radius_km) & ~in_polygon
        names[near] = name
    return names.tolist()


def parse_geojson(
    data: bytes, *, max_bytes: int = MAX_BOUNDARY_BYTES, label: str = "boundary file"
) -> dict:
    """Validate an uploaded boundary file: JSON text holding a GeoJSON FeatureCollection.

    A single Feature is wrapped in a collection; NaN and Infinity are refused. The
    checks of :meth:`ZoneFile.read` up to the features' geometries: size, nesting depth
    and parsing cost (on the bytes, before parsing), JSON, the collection, its CRS and
    number of features, and each feature's structure (an object of type Feature, with
    an object of properties and a geometry of a GeoJSON type). The coordinates are
    checked when the file is kept (:func:`save_boundaries`).

    Parameters
    ----------
    data : bytes
        The file's content.
    max_bytes : int
        Largest file read.
    label : str
        The file's name in messages.

    Raises
    ------
    ZoneFileError
        A ValueError with a message for the user naming the file, the feature when
        one is to blame, and the problem: the first one :func:`save_boundaries` would
        find too.
    """
    limits = boundary_limits(max_bytes)
    return read_feature_collection(data, limits=limits, label=label, non_polygons="skip")


def boundary_layers(boundaries: Mapping[str, Any] | None) -> dict[str, dict]:
    """Split boundary GeoJSON into ``areas`` (polygons), ``lines`` and ``points`` collections.

    Anything but a feature with a geometry of one of these types is left out, and
    properties that are not an object are dropped.
    """
    groups: dict[str, list] = {"areas": [], "lines": [], "points": []}
    features = (boundaries or {}).get("features")
    for feature in features if isinstance(features, list) else []:
        kind = _geometry(feature).get("type")
        group = _LAYER_OF.get(kind) if isinstance(kind, str) else None
        if group is not None:
            groups[group].append({**feature, "properties": dict(_properties(feature))})
    return {k: {"type": "FeatureCollection", "features": v} for k, v in groups.items() if v}


_LAYER_OF = {
    "Polygon": "areas",
    "MultiPolygon": "areas",
    "LineString": "lines",
    "MultiLineString": "lines",
    "Point": "points",
    "MultiPoint": "points",
}


# ------------------------------------------------------------- kept in the data home


def boundary_file_name(file_name: str) -> str:
    """The name an uploaded file is kept under in the home: its stem, made safe.

    Examples
    --------
    >>> boundary_file_name("Boundaries - Community Areas (current).geojson")
    'Boundaries-Community-Areas-current'
    >>> boundary_file_name("../../etc/passwd")
    'passwd'
    >>> boundary_file_name(".geojson")
    'boundaries'
    """
    stem = Path(str(file_name).replace("\\", "/")).name
    stem = re.sub(r"\.(geo)?json$", "", stem, flags=re.IGNORECASE)
    safe = re.sub(r"[^A-Za-z0-9_.]+", "-", stem.replace("-", " ")).strip("-._")
    safe = re.sub(r"\.{2,}", ".", safe)[:64].strip("-._")
    return safe or "boundaries"


def save_boundaries(
    home: str | os.PathLike[str],
    data: bytes,
    file_name: str,
    *,
    max_bytes: int = MAX_BOUNDARY_BYTES,
    by: Access | None = None,
) -> ZoneFileEntry:
    """Check an uploaded boundary file, keep it in ``home`` and show it on the map.

    Kept under :func:`boundary_file_name` of ``file_name`` (replacing a file of that
    name), so it is still there after a restart. Checked within :data:`BOUNDARY_LIMITS`
    (features, vertices, the vertices repaired, each feature's properties) before it is
    kept: what the map builds from it on every page is what was checked here.

    Raises
    ------
    ZoneFileError
        A ValueError with a message for the user naming the file, and the feature
        when one is to blame (too large, not JSON, not GeoJSON, no polygons, a
        polygon that cannot be read); nothing is kept then.
    """
    if by is not None:
        by.require("zones")
    name = boundary_file_name(file_name)
    entry, _ = Home(home).zones.add(
        name,
        data,
        file_name=file_name,
        non_polygons="skip",
        ids_from_order=True,
        limits=boundary_limits(max_bytes),
    )
    Home(home).zones.choose_map(name)
    record(home, by, "zones", what="added", name=name, file=entry.file_name, zones=entry.n_zones)
    return entry


def saved_boundaries(home: str | os.PathLike[str]) -> list[ZoneFileEntry]:
    """Every zone file kept in ``home`` (each can be drawn on the map), oldest first."""
    return Home(home).zones.entries()


def shown_boundaries(home: str | os.PathLike[str]) -> ZoneFileEntry | None:
    """The kept zone file shown on the map, if any."""
    name = Home(home).zones.map_choice()
    return Home(home).zones.entry(name) if name else None


def show_boundaries(
    home: str | os.PathLike[str], name: str | None, *, by: Access | None = None
) -> None:
    """Show the kept zone file ``name`` on the map (None: no boundaries)."""
    if by is not None:
        by.require("zones")
    Home(home).zones.choose_map(name)
    record(home, by, "zones", what="drawn on the map", name=name)


def remove_boundaries(home: str | os.PathLike[str], name: str, *, by: Access | None = None) -> bool:
    """Delete the kept zone file ``name`` from the home (and from the map)."""
    if by is not None:
        by.require("zones")
    removed = Home(home).zones.remove(name)
    if removed:
        record(home, by, "zones", what="removed", name=name)
    return removed


def load_boundaries(home: str | os.PathLike[str], name: str) -> dict:
    """The GeoJSON document of the kept zone file ``name``, for the map and place names.

    Its polygons are read again (:func:`boundary_zones`, within :data:`BOUNDARY_LIMITS`),
    so that a kept file that no longer reads (changed on disk, or kept by an older
    version with looser checks: 100,000 features) is refused here, where the sidebar
    says so and the map is drawn without it, and not when the map names its zones.

    Raises
    ------
    KeyError
        No zone file of that name.
    ZoneFileError
        A ValueError: the kept file no longer reads.
    """
    entry = Home(home).zones.entry(name)
    if entry is None:
        raise KeyError(f"no zone file named {name!r}")
    try:
        data = Home(home).zones.path(name).read_bytes()
    except OSError as exc:
        raise ZoneFileError(entry.file_name, f"the kept file cannot be read ({exc})") from None
    max_bytes = max(len(data), MAX_BOUNDARY_BYTES)
    document = parse_geojson(data, max_bytes=max_bytes, label=entry.file_name)
    boundary_zones(document, label=entry.file_name, limits=boundary_limits(max_bytes))
    return document


def describe_boundaries(entry: ZoneFileEntry) -> str:
    """One line about a kept zone file, for a caption.

    Examples
    --------
    >>> entry = ZoneFileEntry(
    ...     name="taxi", file_name="taxi_zones.geojson", file="taxi.0123abcd.geojson",
    ...     id_property="LocationID", name_property="zone", non_polygons="error",
    ...     fingerprint="ab" * 32, n_zones=263, added_at="2024-05-01T12:00:00+00:00")
    >>> describe_boundaries(entry)
    'taxi_zones.geojson: 263 zones, ids LocationID, names zone (added 2024-05-01)'
    """
    ids = f"ids {entry.id_property}" if entry.id_property else "numbered in file order"
    names = f", names {entry.name_property}" if entry.name_property else ""
    plural = "s" * (entry.n_zones != 1)
    return (
        f"{entry.file_name}: {entry.n_zones} zone{plural}, {ids}{names} "
        f"(added {entry.added_at[:10]})"
    )
