"""Zone files: a planner's own polygons (taxi zones, community areas) read, checked and queried.

A zone file is a GeoJSON FeatureCollection of Polygon/MultiPolygon features in WGS84
longitude/latitude, one feature per zone, each with an id (``LocationID`` of the NYC
taxi zones, ``area_numbe`` of the Chicago community areas) and usually a name.
:class:`ZoneFile` reads one (bytes or a path; JSON is parsed, never evaluated or
unpickled), refuses what it cannot trust with a :class:`ZoneFileError` naming the file,
the feature and the problem, and answers vectorised questions with shapely 2 and an
``STRtree``: which zone holds each point (:meth:`ZoneFile.zone_of`), a point inside each
zone (:meth:`ZoneFile.representative_points`), areas, the polygons for a map, and a
fingerprint of the content. The trips' H3 zones are :mod:`vrvm.trips.places.zones`; where zone
files are kept is :mod:`vrvm.trips.home`.

The bytes are parsed by :mod:`json` after a byte scan of our own (``read_json`` in
``_zone_checks.py``: depth, vertices and parsing cost counted before any parser runs),
not read by pyogrio or ``shapely.from_geojson``, because every library builds the whole
document before a limit can apply (``python benchmarks/bench_geojson.py --parsers``, 2
cores, CPU seconds, peak resident growth). 15 million empty arrays in 43 MB: the scan
refuses them in 0.42 s and 43 MB; :mod:`json` takes 7.1 s and 1,077 MB, orjson 6.9 s and
1,305 MB, GEOS 2.4 s and 986 MB, GDAL 1.3 s and 980 MB before it gives up ("too
complex"). A polygon of a million vertices: refused on the bytes in 0.17 s and 36 MB,
against 1.8 s and 185 MB for json, 1.5 s and 512 MB for GDAL. Depth: json stops only at
Python's recursion limit (about 1,000 levels; 64 are read, so that writing a document
back to JSON for the map stays clear of it), orjson parses 100,000 levels. GDAL also
reads without an error 36 of 50 files the hostile corpus of the tests refuses (its four
largest not tried): features that are numbers or have no geometry, malformed or
out-of-range coordinates, NaN, another CRS, Latin-1 text are dropped, nulled or kept; it
never names the feature at fault, and gives typed columns where the map needs each
feature's properties as JSON. It parses the NYC taxi zones faster (0.11 s against 0.29 s
for the scan and json; the scan's share 0.05 s and about 40 MB of temporary arrays) but
the checks would still need the JSON document: a second parse.

The polygons are built from the parsed rings in three vectorised shapely calls rather
than by ``shapely.from_geojson`` of each geometry's text (same script): the NYC zones
0.04 s against 0.27 s, a polygon of 500,000 vertices 0.22 s against 1.07 s, slower only
for 50,000 triangles (1.04 s against 0.60 s, beyond a boundary file's 20,000 features);
the coordinates checked on the way name the bad position.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import shapely

from vrvm.trips.places._zone_checks import (
    DEFAULT_LIMITS,
    NAME_PROPERTY_HINTS,
    NUMBER_TEXT,
    ZoneFileError,
    ZoneFileLimits,
    check_coordinates,
    check_properties,
    check_size,
    collection_features,
    display_name,
    feature_geometry,
    fingerprint_of,
    geometry_digest,
    id_key,
    name_property_of,
    polygons_of,
    read_json,
    repaired,
    zone_ids_of,
)

__all__ = [
    "DEFAULT_LIMITS",
    "ZoneFile",
    "ZoneFileError",
    "ZoneFileLimits",
    "feature_name",
    "read_feature_collection",
    "zone_id_keys",
]


def feature_name(properties: Mapping[str, Any] | None) -> str:
    """Display name of a GeoJSON feature from its usual name properties.

    The first of :data:`NAME_PROPERTY_HINTS` (in any case: ``NAME``, ``Name``) holding
    text, else the first text property that is not a number; all-capital names are
    title-cased.

    Examples
    --------
    >>> feature_name({"community": "DOUGLAS", "area_numbe": 35})
    'Douglas'
    >>> feature_name({"name": "Downtown Synthetica (synthetic)"})
    'Downtown Synthetica (synthetic)'
    >>> feature_name({"NAME": "LOGAN SQUARE", "id": 3}), feature_name({"id": 3})
    ('Logan Square', '')
    """
    properties = properties or {}
    by_lower: dict[str, Any] = {}
    for key, value in properties.items():
        by_lower.setdefault(str(key).lower(), value)
    for key in NAME_PROPERTY_HINTS:
        value = by_lower.get(key)
        if isinstance(value, str) and value.strip():
            return display_name(value)
    for value in properties.values():
        if isinstance(value, str) and value.strip() and not NUMBER_TEXT.fullmatch(value.strip()):
            return display_name(value)
    return ""


def read_feature_collection(
    data: bytes,
    *,
    limits: ZoneFileLimits = DEFAULT_LIMITS,
    label: str = "<GeoJSON>",
    non_polygons: Literal["error", "skip"] = "error",
) -> dict:
    """The GeoJSON FeatureCollection of a zone file's bytes, checked up to the geometries.

    The checks :meth:`ZoneFile.read` makes before it builds any polygon, with the same
    messages: size, nesting depth and parsing cost (on the bytes), UTF-8 JSON, a
    FeatureCollection (a lone Feature is wrapped in one) in WGS84 with at most
    ``limits.max_features`` features, each an object of type Feature with an object of
    properties and a geometry of a GeoJSON type (see ``non_polygons`` in
    :meth:`ZoneFile.from_geojson`). Coordinates are not looked at.

    Raises
    ------
    ZoneFileError
        Naming the file, the feature when one is to blame, and the problem.

    Examples
    --------
    >>> doc = read_feature_collection(b'{"type": "Feature", "properties": null,'
    ...     b' "geometry": {"type": "Point", "coordinates": [1, 2]}}', non_polygons="skip")
    >>> doc["type"], len(doc["features"])
    ('FeatureCollection', 1)
    >>> read_feature_collection(b'{"type": "FeatureCollection", "features": [7]}')
    Traceback (most recent call last):
    ...
    vrvm.trips.places.ZoneFileError: <GeoJSON>: features[0]: not a GeoJSON Feature object
    """
    document, features = collection_features(label, read_json(label, data, limits), limits)
    for i, feature in enumerate(features):
        feature_geometry(label, i, feature, non_polygons)
    return dict(document)


def zone_id_keys(values: Sequence[Any] | np.ndarray | pd.Series) -> np.ndarray:
    """Comparison keys of zone ids: numbers compared as numbers, text as stripped text.

    An id that is a number, or text spelling a decimal number, becomes that number
    written plainly (``1``, ``1.0``, ``"1"``, ``" 001 "`` all give ``"1"``; ``2.5`` gives
    ``"2.5"``), so ids read from a CSV column (integers, floats when a value is missing,
    or text) match the numbers of a GeoJSON file. Other text is compared stripped and
    case-sensitive (``"MN19"``). Missing values (None, NaN, empty text) give None.

    Parameters
    ----------
    values : array-like
        Zone ids of any mix of numbers and text.

    Returns
    -------
    numpy.ndarray of object
        One key (str) or None per value. Each distinct value is normalised once.

    Examples
    --------
    >>> zone_id_keys([1, 1.0, "001", " 7 ", "MN19 ", 2.5, None, float("nan"), ""]).tolist()
    ['1', '1', '1', '7', 'MN19', '2.5', None, None, None]
    """
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    keys = np.array([id_key(v) for v in uniques] + [None], dtype=object)
    return keys[codes]  # code -1 (missing) takes the trailing None


class ZoneFile:
    """The zones of a planner's polygon file, with vectorised point and id lookups.

    Build one with :meth:`read` (bytes or a path) or :meth:`from_geojson` (a parsed
    document); the constructor takes already checked parts.

    Parameters
    ----------
    geometries : array-like of shapely (Multi)Polygon
        One valid, non-empty polygon per zone, in WGS84 longitude/latitude.
    ids : sequence
        One distinct id per zone (compared by :func:`zone_id_keys`).
    names : sequence of str
        Display names ("" when a zone has none); names may repeat.
    id_property, name_property : str or None
        The properties the ids and names came from (None: ids are the feature order,
        or the zones have no names).
    source : str
        The file's name, for messages.
    properties : sequence of dict, optional
        Every zone's original properties.
    fingerprint : str, optional
        SHA-256 of the normalised content; computed from the parts when omitted.
    notes : sequence of str
        What reading changed (repaired polygons, skipped features), for the user.

    Attributes
    ----------
    ids : numpy.ndarray of object
        The zones' id keys (str), in file order.
    names : numpy.ndarray of object
        The zones' display names.
    geometries : numpy.ndarray of shapely geometries
        The zones' polygons.

    Notes
    -----
    A zone's representative point is ``shapely.point_on_surface`` (the semantics of
    ``Polygon.representative_point``): a point guaranteed inside the polygon. The
    centroid is not, for concave zones (a crescent along a river, an L-shaped
    district) or zones of several islands, where it can fall in a neighbouring zone
    or the water. Points are assigned with an ``STRtree`` query (``covered_by``), so
    a point on a shared edge belongs to a zone; where zones overlap, the smallest
    one holding the point wins.

    Examples
    --------
    >>> doc = {"type": "FeatureCollection", "features": [
    ...     {"type": "Feature", "properties": {"LocationID": 1, "zone": "West"},
    ...      "geometry": {"type": "Polygon",
    ...                   "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]]}},
    ...     {"type": "Feature", "properties": {"LocationID": 2, "zone": "East"},
    ...      "geometry": {"type": "Polygon",
    ...                   "coordinates": [[[1, 0], [2, 0], [2, 1], [1, 1], [1, 0]]]}}]}
    >>> zones = ZoneFile.from_geojson(doc)
    >>> zones.id_property, zones.name_property, zones.names.tolist()
    ('LocationID', 'zone', ['West', 'East'])
    >>> zones.zone_of([0.5, 0.5, 5.0], [0.5, 1.5, 5.0]).tolist()
    ['1', '2', None]
    >>> lat, lon = zones.representative_points(["2", 1.0, 99])
    >>> lat.round(2).tolist(), lon.round(2).tolist()
    ([0.5, 0.5, nan], [1.5, 0.5, nan])
    """

    def __init__(
        self,
        geometries,
        ids,
        names,
        *,
        id_property: str | None,
        name_property: str | None,
        source: str = "<GeoJSON>",
        properties: Sequence[Mapping[str, Any]] | None = None,
        fingerprint: str | None = None,
        notes: Sequence[str] = (),
    ) -> None:
        self.geometries = np.asarray(geometries, dtype=object)
        self.ids = zone_id_keys(ids)
        self.names = np.array([str(n) for n in names], dtype=object)
        n = len(self.geometries)
        if not (len(self.ids) == len(self.names) == n) or n == 0:
            raise ValueError("geometries, ids and names must be non-empty and of one length")
        if any(k is None for k in self.ids) or len(set(self.ids)) != n:
            raise ValueError("zone ids must be present and distinct")
        self.id_property = id_property
        self.name_property = name_property
        self.source = source
        self.properties = tuple(dict(p or {}) for p in (properties or [{}] * n))
        self.notes = tuple(notes)
        self.fingerprint = fingerprint or fingerprint_of(
            geometry_digest(self.geometries), self.ids, self.names, id_property, name_property
        )
        shapely.prepare(self.geometries)
        self._tree = shapely.STRtree(self.geometries)
        self._position = pd.Index(self.ids)
        # degrees² suffice to rank the zones holding one point by size
        self._rank_area = shapely.area(self.geometries)
        rep = shapely.point_on_surface(self.geometries)
        self._rep_lon, self._rep_lat = shapely.get_x(rep), shapely.get_y(rep)

    # ------------------------------------------------------------------ construction

    @classmethod
    def read(
        cls,
        source: bytes | bytearray | str | os.PathLike[str],
        *,
        id_property: str | None = None,
        name_property: str | None = None,
        non_polygons: Literal["error", "skip"] = "error",
        ids_from_order: bool = False,
        repair: bool = True,
        limits: ZoneFileLimits = DEFAULT_LIMITS,
        label: str | None = None,
    ) -> ZoneFile:
        """Read a zone file from its bytes or its path.

        Parameters
        ----------
        source : bytes or path-like
            The file's content (bytes) or its path (str or path-like). UTF-8 JSON,
            with or without a byte-order mark.
        label : str, optional
            Name of the file in messages (default: the path's name, or
            ``"<GeoJSON>"`` for bytes).
        id_property, name_property, non_polygons, ids_from_order, repair, limits
            See :meth:`from_geojson`; ``limits.max_bytes`` bounds the file's size.

        Raises
        ------
        ZoneFileError
            Too large, nested too deeply or too costly to parse (``limits.max_depth``,
            ``limits.max_parse_bytes``: both checked on the bytes before parsing), not
            UTF-8 JSON (NaN and Infinity are refused too), or any problem
            :meth:`from_geojson` finds.
        """
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = bytes(source)
            label = label or "<GeoJSON>"
        else:
            path = Path(source)
            label = label or path.name
            try:
                size = path.stat().st_size
            except OSError as exc:
                raise ZoneFileError(label, f"cannot be read ({exc.strerror})") from None
            check_size(label, size, limits)
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise ZoneFileError(label, f"cannot be read ({exc.strerror})") from None
        document = read_json(label, data, limits)
        return cls.from_geojson(
            document,
            id_property=id_property,
            name_property=name_property,
            non_polygons=non_polygons,
            ids_from_order=ids_from_order,
            repair=repair,
            limits=limits,
            label=label,
        )

    @classmethod
    def from_geojson(
        cls,
        document: Mapping[str, Any],
        *,
        id_property: str | None = None,
        name_property: str | None = None,
        non_polygons: Literal["error", "skip"] = "error",
        ids_from_order: bool = False,
        repair: bool = True,
        limits: ZoneFileLimits = DEFAULT_LIMITS,
        label: str = "<GeoJSON>",
    ) -> ZoneFile:
        """Check a parsed GeoJSON document and build its zones.

        Parameters
        ----------
        document : dict
            A FeatureCollection (or a single Feature) in WGS84 longitude/latitude; a
            ``crs`` member, if any, must name WGS84 (CRS84 or EPSG:4326).
        id_property : str, optional
            The property holding each zone's id; it must be present on every feature
            and distinct. Default: detected, the first of :data:`ID_PROPERTY_HINTS`
            (then any property of integers or text) that is distinct on every feature.
        name_property : str, optional
            The property holding each zone's name. Default: detected from
            :data:`NAME_PROPERTY_HINTS`, else the first text property; zones without
            one are named "".
        non_polygons : {"error", "skip"}
            Features with other geometries (points, lines: a boundary file's roads and
            airports) are an error, or skipped and counted in :attr:`notes`.
        ids_from_order : bool
            When no id property is named or detected, number the zones 1, 2, ... in
            file order instead of refusing the file (boundary files drawn on a map).
        repair : bool
            Repair invalid polygons (self-intersections, bow-ties) with
            ``shapely.make_valid``, keeping the polygonal parts and saying so in
            :attr:`notes`, within ``limits.max_repair_vertices``; False refuses them.
        limits : ZoneFileLimits
            Bounds on features, vertices (counted before each geometry is built), the
            vertices repaired and each feature's properties.
        label : str
            The file's name in messages.

        Raises
        ------
        ZoneFileError
            Naming the feature and the problem: not a FeatureCollection, no features,
            too many features or vertices, properties too large, an invalid polygon
            beyond the repair budget, another CRS, a feature without geometry, a
            non-polygon geometry, malformed or empty coordinates, coordinates out of
            range or projected, an unrepairable polygon, an id missing on a feature,
            duplicate ids, an id property found on no feature, or a document built in
            Python nested deeper than Python's recursion limit.
        """
        try:
            document, features = collection_features(label, document, limits)
            kept, geometries, notes = polygons_of(label, features, non_polygons, limits)
            if not kept:
                raise ZoneFileError(label, "no Polygon or MultiPolygon features")
            check_coordinates(label, geometries, kept)
            geometry_sha256 = geometry_digest(geometries)  # before repair
            check_properties(label, features, limits)
            geometries = repaired(label, geometries, kept, repair, notes, limits)
            properties = [features[i].get("properties") or {} for i in kept]
            id_property, ids = zone_ids_of(label, properties, kept, id_property, ids_from_order)
            name_property = name_property_of(label, properties, name_property)
            names = [
                display_name(p[name_property]) if p.get(name_property) is not None else ""
                for p in properties
            ]
        except RecursionError:  # a document built in Python, which no byte scan has seen
            raise ZoneFileError(label, "not a GeoJSON file: nested too deeply") from None
        ids = zone_id_keys(ids)
        return cls(
            geometries,
            ids,
            names,
            id_property=id_property,
            name_property=name_property,
            source=label,
            properties=properties,
            fingerprint=fingerprint_of(geometry_sha256, ids, names, id_property, name_property),
            notes=notes,
        )

    # ------------------------------------------------------------------ queries

    def __len__(self) -> int:
        return len(self.geometries)

    def __repr__(self) -> str:
        return (
            f"ZoneFile({self.source!r}, {len(self)} zones, id_property={self.id_property!r}, "
            f"name_property={self.name_property!r})"
        )

    def positions(self, ids) -> np.ndarray:
        """Position of each zone id in :attr:`ids`, -1 for an unknown or missing id."""
        return self._position.get_indexer(zone_id_keys(ids))

    def representative_points(self, ids) -> tuple[np.ndarray, np.ndarray]:
        """A point inside each given zone: ``(lat, lon)`` arrays in degrees.

        Parameters
        ----------
        ids : array-like
            Zone ids, compared by :func:`zone_id_keys` (``1``, ``1.0`` and ``"1"`` are
            one zone).

        Returns
        -------
        lat, lon : numpy.ndarray of float
            NaN where the id is unknown or missing, so a reader can count them.
        """
        where = self.positions(ids)
        known = where >= 0
        lat = np.full(where.shape, np.nan)
        lon = np.full(where.shape, np.nan)
        lat[known], lon[known] = self._rep_lat[where[known]], self._rep_lon[where[known]]
        return lat, lon

    def covering(self, lat, lon) -> tuple[np.ndarray, np.ndarray]:
        """Every (point, zone) pair where the zone covers the point (edges included).

        Returns
        -------
        point_index, zone_index : numpy.ndarray of int
            Positions into the points and into :attr:`ids`; points with a NaN
            coordinate are in no pair.
        """
        lat = np.asarray(lat, dtype=float).ravel()
        lon = np.asarray(lon, dtype=float).ravel()
        finite = np.flatnonzero(np.isfinite(lat) & np.isfinite(lon))
        x, y = lon[finite], lat[finite]
        # candidates by bounding box, then each candidate zone's prepared polygon (its
        # own index of edges) tested at the point: a query with predicate="covered_by"
        # would prepare the points instead and walk every vertex of the polygon for
        # each point (40 s for 2,500 points in a polygon of a million vertices)
        point_index, zone_index = self._tree.query(shapely.points(x, y))
        # a point intersects a polygon when the polygon covers it (edges included)
        inside = shapely.intersects_xy(self.geometries[zone_index], x[point_index], y[point_index])
        return finite[point_index[inside]], zone_index[inside]

    def zone_index(self, lat, lon, *, ignore: np.ndarray | None = None) -> np.ndarray:
        """Position of the zone holding each point, -1 for a point in no zone.

        Parameters
        ----------
        lat, lon : array-like of float
            Points in degrees (NaN: in no zone).
        ignore : numpy.ndarray of bool, optional
            Zones (one flag per zone) that hold no point.

        Returns
        -------
        numpy.ndarray of int
            Where zones overlap, the smallest one holding the point (then the first in
            the file).
        """
        shape_ = np.shape(lat)
        point_index, zone_index = self.covering(lat, lon)
        if ignore is not None:
            keep = ~np.asarray(ignore, dtype=bool)[zone_index]
            point_index, zone_index = point_index[keep], zone_index[keep]
        order = np.lexsort((zone_index, self._rank_area[zone_index], point_index))
        first = np.unique(point_index[order], return_index=True)[1]
        result = np.full(int(np.prod(shape_)), -1, dtype=np.int64)
        result[point_index[order][first]] = zone_index[order][first]
        return result.reshape(shape_)

    def zone_of(self, lat, lon) -> np.ndarray:
        """The id of the zone holding each point (point-in-polygon), None outside all.

        Returns
        -------
        numpy.ndarray of object
            Zone id keys (str) or None.
        """
        where = self.zone_index(lat, lon)
        ids = np.append(self.ids, None)  # position -1 takes the trailing None
        return ids[where]

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """``(lat_min, lon_min, lat_max, lon_max)`` of all zones, in degrees."""
        lon_lo, lat_lo, lon_hi, lat_hi = shapely.total_bounds(self.geometries)
        return float(lat_lo), float(lon_lo), float(lat_hi), float(lon_hi)

    @cached_property
    def area_km2(self) -> np.ndarray:
        """Each zone's area in km², on the WGS84 ellipsoid.

        Computed with geopandas in a Lambert azimuthal equal-area projection centred on
        the zones (exact areas up to the projection's numerical error).
        """
        frame = self._geo_series()
        lat_lo, lon_lo, lat_hi, lon_hi = self.bounds
        laea = (
            f"+proj=laea +lat_0={(lat_lo + lat_hi) / 2} +lon_0={(lon_lo + lon_hi) / 2} "
            "+datum=WGS84 +units=m +no_defs"
        )
        return frame.to_crs(laea).area.to_numpy() / 1e6

    def _geo_series(self):
        import geopandas  # imported on use: its import costs about a second

        return geopandas.GeoSeries(self.geometries, crs="EPSG:4326")

    def to_frame(self):
        """The zones as a ``geopandas.GeoDataFrame`` (id, name, representative point, area).

        Columns ``id``, ``name``, ``rep_lat``, ``rep_lon``, ``area_km2`` and
        ``geometry`` (EPSG:4326).
        """
        import geopandas

        return geopandas.GeoDataFrame(
            {
                "id": self.ids,
                "name": self.names,
                "rep_lat": self._rep_lat,
                "rep_lon": self._rep_lon,
                "area_km2": self.area_km2,
            },
            geometry=self._geo_series(),
        )

    def to_geojson(self) -> dict:
        """The zones as a GeoJSON FeatureCollection for drawing.

        Each feature carries the (repaired) polygon, ``id`` (the id key) and the zone's
        ``name`` and original properties (``id`` and ``name`` take precedence).
        """
        return {
            "type": "FeatureCollection",
            "features": [
                {
                    "type": "Feature",
                    "id": zone_id,
                    "properties": {**props, "id": zone_id, "name": name},
                    "geometry": json.loads(geometry),
                }
                for zone_id, name, props, geometry in zip(
                    self.ids,
                    self.names,
                    self.properties,
                    shapely.to_geojson(self.geometries),
                    strict=True,
                )
            ],
        }
