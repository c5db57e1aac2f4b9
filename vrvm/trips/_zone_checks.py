"""Checks of zone files (private to :mod:`vrvm.trips.zone_files`): what a file may hold.

Every refusal is a :class:`ZoneFileError` naming the file, the feature and the problem;
:class:`ZoneFileLimits` bounds the work one file may cost. Also the rules that turn
properties into zone ids and names, and the content fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely
from shapely.geometry import shape

#: Property names taken as a zone's id, best first (compared case-insensitively).
ID_PROPERTY_HINTS = (
    "LocationID",
    "location_id",
    "zone_id",
    "zoneid",
    "area_numbe",
    "area_number",
    "area_num_1",
    "id",
    "zone",
    "code",
    "GEOID",
    "OBJECTID",
    "FID",
)

#: Property names taken as a zone's display name, best first.
NAME_PROPERTY_HINTS = (
    "name",
    "zone",
    "community",
    "label",
    "title",
    "neighborhood",
    "neighbourhood",
    "district",
    "area_name",
    "zone_name",
    "borough",
)

_WGS84_CRS = re.compile(r"CRS84|EPSG:*4326|WGS ?84", re.IGNORECASE)
NUMBER_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_GEOJSON_TYPES = ("Point", "MultiPoint", "LineString", "MultiLineString", "GeometryCollection")


class ZoneFileError(ValueError):
    """A zone file that cannot be used, with the file, the feature and the problem.

    Attributes
    ----------
    source : str
        The file's name (or ``"<GeoJSON>"`` for a document given in memory).
    feature : int or None
        Index of the offending feature in ``features`` (0-based), if one is to blame.
    problem : str
        What is wrong, for a user.
    """

    def __init__(self, source: str, problem: str, feature: int | None = None) -> None:
        self.source, self.problem, self.feature = source, problem, feature
        where = f"{source}: features[{feature}]" if feature is not None else source
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class ZoneFileLimits:
    """Bounds on the work one zone file may cost (a hostile or mistaken upload).

    Parameters
    ----------
    max_bytes : int
        Largest file read, in bytes (50 MiB: the NYC taxi zones take 4 MB).
    max_features : int
        Most features (zones) in a file.
    max_vertices : int
        Most polygon vertices over all features (the NYC taxi zones have 98,192).
    """

    max_bytes: int = 50 * 1024 * 1024
    max_features: int = 100_000
    max_vertices: int = 2_000_000


DEFAULT_LIMITS = ZoneFileLimits()


def display_name(value: Any) -> str:
    name = str(value).strip()
    return name.title() if name.isupper() else name


def id_key(value: Any) -> str | None:
    """The comparison key of one zone id (see :func:`zone_id_keys`), None when missing."""
    if value is None or isinstance(value, bool):
        return None if value is None else str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            return None
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if NUMBER_TEXT.fullmatch(text):
            if text.lstrip("+-").isdigit():
                return str(int(text))  # exact for ids longer than a float's 15 digits
            return id_key(float(text))
        return text
    return None  # lists, objects: not an id


def refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def check_size(label: str, size: int, limits: ZoneFileLimits) -> None:
    if size > limits.max_bytes:
        raise ZoneFileError(
            label,
            f"{size / 2**20:.1f} MB; zone files of at most {limits.max_bytes / 2**20:.0f} MB "
            "are read",
        )


def check_crs(label: str, crs: Any) -> None:
    """A legacy GeoJSON ``crs`` member must name WGS84 longitude/latitude."""
    if crs is None:
        return
    name = json.dumps(crs) if not isinstance(crs, str) else crs
    if not _WGS84_CRS.search(name):
        raise ZoneFileError(
            label,
            f"the file declares the coordinate system {name[:120]}; zone files must be in "
            "WGS84 longitude/latitude (EPSG:4326): re-export them so",
        )


def polygons_of(
    label: str, features: list, non_polygons: str, limits: ZoneFileLimits
) -> tuple[list[int], np.ndarray, list[str]]:
    """Feature positions and shapely polygons of the polygon features, in file order."""
    kept: list[int] = []
    geometries: list = []
    skipped: dict[str, int] = {}
    vertices = 0
    for i, feature in enumerate(features):
        if not isinstance(feature, Mapping) or feature.get("type") != "Feature":
            raise ZoneFileError(label, "not a GeoJSON Feature object", i)
        geometry = feature.get("geometry")
        if not isinstance(geometry, Mapping) or not geometry:
            raise ZoneFileError(label, "the feature has no geometry", i)
        properties = feature.get("properties")
        if properties is not None and not isinstance(properties, Mapping):
            raise ZoneFileError(label, "the feature's properties are not a JSON object", i)
        kind = geometry.get("type")
        if kind not in ("Polygon", "MultiPolygon"):
            if non_polygons == "skip" and kind in _GEOJSON_TYPES:
                skipped[kind] = skipped.get(kind, 0) + 1
                continue
            raise ZoneFileError(
                label,
                f"a {kind!s} geometry; a zone file holds Polygon or MultiPolygon features only",
                i,
            )
        if not isinstance(geometry.get("coordinates"), (list, tuple)):
            raise ZoneFileError(label, f"the {kind} has no coordinates array", i)
        try:
            polygon = shape(geometry)
        except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
            raise ZoneFileError(label, f"malformed {kind} coordinates ({exc})", i) from None
        if polygon.is_empty:
            raise ZoneFileError(label, f"the {kind} is empty", i)
        vertices += shapely.get_num_coordinates(polygon)
        if vertices > limits.max_vertices:
            raise ZoneFileError(
                label,
                f"more than {limits.max_vertices:,} vertices in all; simplify the polygons "
                "(for example with mapshaper) and upload them again",
                i,
            )
        kept.append(i)
        geometries.append(shapely.force_2d(polygon))
    notes = [
        f"skipped {count} {kind} feature{'s' * (count > 1)} (not zones)"
        for kind, count in skipped.items()
    ]
    return kept, np.asarray(geometries, dtype=object), notes


def check_coordinates(label: str, geometries: np.ndarray, kept: list[int]) -> None:
    """Longitudes in [-180, 180] and latitudes in [-90, 90]: degrees, not metres."""
    coords, owner = shapely.get_coordinates(geometries, return_index=True)
    lon, lat = coords[:, 0], coords[:, 1]
    bad = ~(np.isfinite(lon) & np.isfinite(lat) & (np.abs(lon) <= 180) & (np.abs(lat) <= 90))
    if not bad.any():
        return
    first = int(np.flatnonzero(bad)[0])
    x, y = float(lon[first]), float(lat[first])
    problem = f"coordinate ({x:g}, {y:g}) is not a longitude/latitude in degrees"
    if np.isfinite([x, y]).all() and max(abs(x), abs(y)) > 1000:
        problem += (
            "; the file looks projected (metres or feet): export it in WGS84 "
            "longitude/latitude (EPSG:4326)"
        )
    elif abs(x) <= 90 and abs(y) <= 180:
        problem += "; are longitude and latitude swapped? GeoJSON puts longitude first"
    raise ZoneFileError(label, problem, kept[int(owner[first])])


def repaired(
    label: str, geometries: np.ndarray, kept: list[int], repair: bool, notes: list[str]
) -> np.ndarray:
    """Valid polygons: invalid ones repaired (polygonal parts kept) or refused."""
    invalid = np.flatnonzero(~shapely.is_valid(geometries))
    if not len(invalid):
        return geometries
    geometries = geometries.copy()
    for j in invalid:
        reason = shapely.is_valid_reason(geometries[j])
        if not repair:
            raise ZoneFileError(label, f"invalid polygon ({reason})", kept[j])
        fixed = shapely.make_valid(geometries[j])
        parts = [p for p in shapely.get_parts(fixed) if p.geom_type in ("Polygon", "MultiPolygon")]
        polygon = shapely.union_all(parts) if parts else None
        if polygon is None or polygon.is_empty or polygon.area == 0:
            raise ZoneFileError(label, f"invalid polygon ({reason}) with no area to keep", kept[j])
        geometries[j] = polygon
        notes.append(
            f"features[{kept[j]}]: invalid polygon ({reason}) repaired with shapely.make_valid"
        )
    return geometries


def _is_key_column(values: list[Any]) -> bool:
    """Whether a property can be an id: present on every feature, integers or text."""
    keys = [id_key(v) for v in values]
    return all(k is not None for k in keys) and len(set(keys)) == len(keys)


def zone_ids_of(
    label: str,
    properties: list[Mapping[str, Any]],
    kept: list[int],
    id_property: str | None,
    ids_from_order: bool,
) -> tuple[str | None, list[Any]]:
    """The id property (named or detected) and each zone's id."""
    if id_property is not None:
        if all(id_property not in p for p in properties):
            names = sorted({k for p in properties for k in p})
            raise ZoneFileError(
                label,
                f"no feature has the id property {id_property!r} (properties: "
                f"{', '.join(names[:20]) or 'none'})",
            )
        values = [p.get(id_property) for p in properties]
        seen: dict[str, int] = {}
        for j, value in enumerate(values):
            key = id_key(value)
            if key is None:
                raise ZoneFileError(label, f"no {id_property!r} id (found {value!r})", kept[j])
            if key in seen:
                raise ZoneFileError(
                    label,
                    f"duplicate id {id_property}={key!r}, also on features[{kept[seen[key]]}]; "
                    "a zone is one feature (merge its parts into one MultiPolygon)",
                    kept[j],
                )
            seen[key] = j
        return id_property, values
    columns: dict[str, list[Any]] = {}
    for key in properties[0]:
        if all(key in p for p in properties):
            columns[key] = [p[key] for p in properties]
    lower = {k.lower(): k for k in columns}
    for hint in ID_PROPERTY_HINTS:
        key = lower.get(hint.lower())
        if key is not None and _is_key_column(columns[key]):
            return key, columns[key]
    for key, values in columns.items():  # any property of distinct integers or text
        if _is_key_column(values) and all("." not in id_key(v) for v in values):
            return key, values
    if ids_from_order:
        return None, list(range(1, len(properties) + 1))
    raise ZoneFileError(
        label,
        "no property holds a distinct id on every feature; name the id property "
        f"(properties: {', '.join(list(columns)[:20]) or 'none'})",
    )


def name_property_of(
    label: str, properties: list[Mapping[str, Any]], name_property: str | None
) -> str | None:
    """The named name property (checked) or the detected one (None if none)."""
    if name_property is not None:
        if all(name_property not in p for p in properties):
            raise ZoneFileError(label, f"no feature has the name property {name_property!r}")
        return name_property

    def texts(key: str) -> int:
        return sum(isinstance(p.get(key), str) and bool(p[key].strip()) for p in properties)

    keys = list(dict.fromkeys(k for p in properties[:50] for k in p))
    lower = {k.lower(): k for k in keys}
    for hint in NAME_PROPERTY_HINTS:
        key = lower.get(hint.lower())
        if key is not None and texts(key) * 2 >= len(properties):
            return key
    for key in keys:
        values = [p.get(key) for p in properties[:50]]
        if all(
            isinstance(v, str) and v.strip() and not NUMBER_TEXT.fullmatch(v.strip())
            for v in values
        ):
            return key
    return None


def geometry_digest(geometries) -> str:
    """SHA-256 of polygons, normalised (``shapely.normalize``: ring start, orientation).

    Taken before repair, so it depends on the file's coordinates only, not on the GEOS
    version that repairs them; other whitespace or another ring start give the same.
    """
    digest = hashlib.sha256()
    for wkb in shapely.to_wkb(shapely.normalize(np.asarray(geometries, dtype=object))):
        digest.update(len(wkb).to_bytes(8, "little") + wkb)
    return digest.hexdigest()


def fingerprint_of(geometry_sha256: str, ids, names, id_property, name_property) -> str:
    """SHA-256 of a zone file's normalised content: polygons, ids, names, properties used.

    Properties other than the id and the name, and their order, do not count.
    """
    meta = [geometry_sha256, id_property, name_property, list(ids), [str(n) for n in names]]
    return hashlib.sha256(json.dumps(meta, ensure_ascii=False).encode()).hexdigest()
