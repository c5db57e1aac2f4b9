"""Checks of zone files (private to :mod:`vrvm.trips.places.zone_files`): what a file may hold.

Every refusal is a :class:`ZoneFileError` naming the file, the feature and the problem;
:class:`ZoneFileLimits` bounds the work one file may cost, the nesting depth and the
memory of parsing checked on the raw bytes before any JSON parser sees them
(:func:`read_json`). Also the rules that turn properties into zone ids and names, and
the content fingerprint.

The byte scan (:func:`tally_json`) is our own because no parser at hand bounds what it
builds: :mod:`json`, orjson, GDAL (pyogrio) and GEOS (``shapely.from_geojson``) each
take 980-1,305 MB on 43 MB of empty arrays, which the scan refuses in 43 MB (figures
and the other reasons: :mod:`vrvm.trips.places.zone_files`).
"""

from __future__ import annotations

import hashlib
import json
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely
from shapely.errors import ShapelyError
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
_POLYGON_TYPES = ("Polygon", "MultiPolygon")
# what shapely raises on coordinates of the wrong shape or type
_SHAPE_ERRORS = (ValueError, TypeError, AttributeError, KeyError, IndexError, ShapelyError)


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

    # shown (in tracebacks and doctests) under its public home
    __module__ = "vrvm.trips.places"

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
        Most vertices over all features (the NYC taxi zones have 98,192), counted on the
        raw bytes before parsing (:func:`check_json_cost`: a file far over it is never
        parsed) and exactly on the parsed coordinates before the geometries are built
        (the feature that crosses it is named).
    max_depth : int
        Deepest nesting of JSON arrays and objects, checked on the raw bytes before
        parsing (a GeoJSON MultiPolygon needs 8 levels; property values may add some).
    max_parse_bytes : int
        Most memory parsing the file may take, in bytes (512 MiB), estimated on the raw
        bytes before parsing from the JSON arrays, objects, numbers and strings they
        hold (see :class:`JsonTally`): a small file of many empty arrays or objects
        would otherwise cost 30 times its size.
    max_repair_vertices : int
        Most vertices of invalid polygons repaired with ``shapely.make_valid``, over
        the whole file (checked before any repair). Its cost grows faster than
        quadratically with the crossings: a zig-zag ring of 5,000 vertices takes 1 s,
        20,000 take 18 s, 40,000 three minutes (``benchmarks/bench_geojson.py``).
    max_property_bytes : int
        Largest properties of one feature, as JSON text (64 KiB): names become zone
        labels, copied once per zone, and properties go to the browser with the map.
    """

    max_bytes: int = 50 * 1024 * 1024
    max_features: int = 100_000
    max_vertices: int = 2_000_000
    max_depth: int = 64
    max_parse_bytes: int = 512 * 1024 * 1024
    max_repair_vertices: int = 10_000
    max_property_bytes: int = 64 * 1024


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
            f"{size / 2**20:.1f} MB, larger than zone files may be: at most "
            f"{limits.max_bytes / 2**20:.0f} MB are read",
        )


# ------------------------------------------------------------------ JSON bytes, before parsing

_WHITESPACE = b" \t\n\r"
_SCAN_CHUNK = 1 << 20  # bytes scanned at once: about 30 MB of temporary arrays
_QUOTE, _BACKSLASH, _COMMA, _MINUS, _COLON = 34, 92, 44, 45, 58
_OPEN_ARRAY, _CLOSE_ARRAY, _OPEN_OBJECT, _CLOSE_OBJECT = 91, 93, 123, 125


@dataclass(frozen=True)
class JsonTally:
    """What parsing some JSON bytes would build, counted on the bytes themselves.

    Bytes inside strings (escaped quotes included) do not count. Made by
    :func:`tally_json`; for bytes that are not valid JSON the counts are those of the
    valid-looking parts, still an honest bound on what a parser could build.

    Attributes
    ----------
    depth : int
        Deepest nesting of arrays and objects.
    arrays, objects, strings, numbers : int
        How many of each (object keys count as strings).
    pairs : int
        Arrays whose first item is a number: GeoJSON positions (vertices), and the
        occasional ``bbox``.
    size : int
        Bytes of the text.
    """

    depth: int
    arrays: int
    objects: int
    strings: int
    numbers: int
    pairs: int
    size: int

    @property
    def parse_bytes(self) -> int:
        """Estimated memory of the decoded text and the parsed document, in bytes.

        CPython 3.11 on 64 bits, measured with ``tracemalloc``: a list with its slot in
        its parent about 100 bytes, a dict about 220, a float 32 (small integers are
        shared: an upper bound), a string 64 plus its text; the text itself twice (the
        decoded ``str`` and the strings' content).
        """
        containers = 100 * self.arrays + 220 * self.objects
        return containers + 32 * self.numbers + 64 * self.strings + 2 * self.size


def tally_json(data: bytes) -> JsonTally:
    r"""Count the arrays, objects, strings and numbers of JSON bytes, and their depth.

    Vectorised with numpy over chunks of 1 MiB (temporary memory stays about 30 MB
    whatever the size); whitespace is dropped first (outside strings it means nothing,
    inside them it changes no quote or backslash). A quote after an odd run of
    backslashes is escaped; the others open and close strings, whose bytes are skipped.

    Examples
    --------
    >>> t = tally_json(b'{"a": [[1, -2.5], [3, 4]], "b[": "x\\\\", "c": {}}')
    >>> t.depth, t.arrays, t.objects, t.strings, t.numbers, t.pairs
    (3, 3, 2, 4, 4, 2)
    """
    compact = bytes(data).translate(None, _WHITESPACE)
    n = len(compact)
    depth = deepest = arrays = objects = strings = numbers = pairs = 0
    in_string = 0  # 1 when the previous chunk ended inside a string
    backslashes = 0  # the run of backslashes that ended the previous chunk
    previous = _COMMA  # the previous chunk's last byte (as if a number could start)
    for start in range(0, n, _SCAN_CHUNK):
        end = min(start + _SCAN_CHUNK, n)
        a = np.frombuffer(compact, np.uint8, count=end - start, offset=start)
        if backslashes or compact.find(b"\\", start, end) >= 0:
            # run[i]: backslashes right before byte i (the previous chunk's included)
            position = np.arange(len(a), dtype=np.int32)
            last_other = np.maximum.accumulate(np.where(a == _BACKSLASH, -1, position))
            run = np.empty(len(a), dtype=np.int32)
            run[0] = backslashes
            run[1:] = position[:-1] - last_other[:-1]
            run[1:] += np.where(last_other[:-1] < 0, backslashes, 0).astype(np.int32)
            quote = (a == _QUOTE) & (run % 2 == 0)
            backslashes = len(a) - 1 - int(last_other[-1])
            backslashes += int(run[0]) if last_other[-1] < 0 else 0
        else:  # no backslash: every quote counts (most chunks of most files)
            quote = a == _QUOTE
        if in_string or compact.find(b'"', start, end) >= 0:
            # an opening quote and the bytes after it are inside; a closing quote is not
            inside = ((np.cumsum(quote, dtype=np.int32) + in_string) & 1).astype(bool)
            strings += int(np.count_nonzero(quote & inside))
            in_string = int(inside[-1])
            outside = ~inside
        else:
            outside = np.ones(len(a), dtype=bool)
        open_array = outside & (a == _OPEN_ARRAY)
        open_object = outside & (a == _OPEN_OBJECT)
        close = outside & ((a == _CLOSE_ARRAY) | (a == _CLOSE_OBJECT))
        step = open_array.astype(np.int8) + open_object.astype(np.int8) - close.astype(np.int8)
        level = np.cumsum(step, dtype=np.int64) + depth
        deepest = max(deepest, int(level.max()))
        depth = int(level[-1])
        before = np.empty_like(a)
        before[0] = previous
        before[1:] = a[:-1]
        previous = int(a[-1])
        # a number starts right after "[", "," or ":" (inside a string, the byte after
        # such a byte is inside too)
        number = outside & ((a == _MINUS) | ((a >= 48) & (a <= 57)))
        number &= (before == _OPEN_ARRAY) | (before == _COMMA) | (before == _COLON)
        arrays += int(np.count_nonzero(open_array))
        objects += int(np.count_nonzero(open_object))
        numbers += int(np.count_nonzero(number))
        pairs += int(np.count_nonzero(number & (before == _OPEN_ARRAY)))
    return JsonTally(deepest, arrays, objects, strings, numbers, pairs, len(data))


def check_json_cost(label: str, data: bytes, limits: ZoneFileLimits) -> JsonTally:
    """Refuse JSON bytes nested too deeply, holding too many vertices or too costly to
    parse, before parsing them.

    The vertices are counted on the bytes as the arrays whose first item is a number
    (:attr:`JsonTally.pairs`): every GeoJSON position, and the odd ``bbox`` (at most one
    per object). Only a count that exceeds ``limits.max_vertices`` even without one
    ``bbox`` per object is refused here (parsing a polygon of a million vertices would
    take seconds and hundreds of MB); the exact count, made on the parsed coordinates
    before any geometry is built, refuses the rest and names the feature.
    """
    tally = tally_json(data)
    if tally.depth > limits.max_depth:
        raise ZoneFileError(
            label,
            f"not a GeoJSON file: JSON nested too deeply ({tally.depth:,} levels; at most "
            f"{limits.max_depth} are read)",
        )
    if tally.pairs - tally.objects > limits.max_vertices:
        raise ZoneFileError(
            label,
            f"about {tally.pairs:,} vertices (coordinate arrays), more than the "
            f"{limits.max_vertices:,} read; simplify the polygons (for example with "
            "mapshaper) and upload them again",
        )
    if tally.parse_bytes > limits.max_parse_bytes:
        if tally.pairs > limits.max_vertices:
            problem = f"{tally.pairs:,} coordinate pairs, more than the {limits.max_vertices:,}"
            problem += " vertices read"
        else:
            problem = (
                f"{tally.arrays:,} arrays, {tally.objects:,} objects, {tally.numbers:,} "
                f"numbers and {tally.strings:,} strings"
            )
        raise ZoneFileError(
            label,
            f"the file would take about {tally.parse_bytes / 2**20:,.0f} MB of memory to read "
            f"({problem}; at most {limits.max_parse_bytes / 2**20:,.0f} MB): simplify the "
            "polygons (for example with mapshaper) or drop properties the map does not need",
        )
    return tally


def read_json(label: str, data: bytes, limits: ZoneFileLimits) -> Any:
    """The JSON document of a zone file's bytes: size, depth and cost checked first.

    UTF-8 with or without a byte-order mark; NaN and Infinity are refused.
    """
    check_size(label, len(data), limits)
    check_json_cost(label, data, limits)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ZoneFileError(label, "not JSON text (not UTF-8 encoded)") from None
    try:
        return json.loads(text, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        raise ZoneFileError(label, f"not JSON text ({exc})") from None
    except RecursionError:  # only with a max_depth above Python's recursion limit
        raise ZoneFileError(label, "not a GeoJSON file: JSON nested too deeply") from None
    except ValueError as exc:  # NaN / Infinity, integers of more than 4,300 digits
        raise ZoneFileError(label, f"not JSON text ({str(exc).split(';')[0]})") from None


# ------------------------------------------------------------------ the parsed document


def collection_features(
    label: str, document: Any, limits: ZoneFileLimits
) -> tuple[Mapping[str, Any], list]:
    """The FeatureCollection (a lone Feature wrapped in one) and its features, checked.

    A collection in WGS84 (see :func:`check_crs`) with a non-empty ``features`` list
    of at most ``limits.max_features``; the features themselves are checked one by one
    (:func:`feature_geometry`).
    """
    if isinstance(document, Mapping) and document.get("type") == "Feature":
        document = {"type": "FeatureCollection", "features": [document]}
    if not isinstance(document, Mapping) or document.get("type") != "FeatureCollection":
        found = (
            f"a GeoJSON {short(document.get('type'))} object"
            if isinstance(document, Mapping)
            else f"a JSON {type(document).__name__}"
        )
        raise ZoneFileError(label, f"not a GeoJSON FeatureCollection (found {found})")
    check_crs(label, document.get("crs"))
    features = document.get("features")
    if not isinstance(features, list) or not features:
        raise ZoneFileError(label, "the FeatureCollection has no features")
    if len(features) > limits.max_features:
        raise ZoneFileError(
            label, f"{len(features):,} features; at most {limits.max_features:,} are read"
        )
    return document, features


def _short_repr() -> reprlib.Repr:
    short_repr = reprlib.Repr()
    short_repr.maxlevel, short_repr.maxlist, short_repr.maxdict = 2, 4, 4
    short_repr.maxstring = short_repr.maxother = short_repr.maxlong = 40
    return short_repr


_SHORT_REPR = _short_repr()


def short(value: Any, width: int = 60) -> str:
    """A value from a file for a message: its ``repr`` cut to ``width`` characters.

    Built by :mod:`reprlib` (a few items, two levels), so a huge or deeply nested value
    costs nothing; exceptions give their text.

    Examples
    --------
    >>> short(["-87.7", "41.8"]), short([[[[[1]]]]]), short(list(range(10**6)))
    ("['-87.7', '41.8']", '[[[...]]]', '[0, 1, 2, 3, ...]')
    """
    try:
        text = str(value) if isinstance(value, BaseException) else _SHORT_REPR.repr(value)
    except ValueError:  # an integer of more than 4,300 digits
        text = "a number too long to show"
    return text if len(text) <= width else text[: width - 3] + "..."


def feature_geometry(
    label: str, index: int, feature: Any, non_polygons: str
) -> Mapping[str, Any] | None:
    """The geometry of ``features[index]``: None for a non-polygon that is skipped.

    The feature must be a GeoJSON Feature object whose properties are an object (or
    null) and whose geometry is an object of a GeoJSON type: Polygon or MultiPolygon,
    or, when ``non_polygons`` is ``"skip"``, a point, line or collection of them.
    """
    if not isinstance(feature, Mapping) or feature.get("type") != "Feature":
        raise ZoneFileError(label, "not a GeoJSON Feature object", index)
    geometry = feature.get("geometry")
    if not isinstance(geometry, Mapping) or not geometry:
        raise ZoneFileError(label, "the feature has no geometry", index)
    properties = feature.get("properties")
    if properties is not None and not isinstance(properties, Mapping):
        raise ZoneFileError(label, "the feature's properties are not a JSON object", index)
    kind = geometry.get("type")
    if kind in _POLYGON_TYPES:
        return geometry
    if non_polygons == "skip" and kind in _GEOJSON_TYPES:
        return None
    short_text = isinstance(kind, str) and len(kind) <= 40
    what = f"a {kind} geometry" if short_text else f"a geometry of type {short(kind, 40)}"
    raise ZoneFileError(
        label, f"{what}; a zone file holds Polygon or MultiPolygon features only", index
    )


def check_crs(label: str, crs: Any) -> None:
    """A legacy GeoJSON ``crs`` member must name WGS84 longitude/latitude."""
    if crs is None:
        return
    name = json.dumps(crs, default=str) if not isinstance(crs, str) else crs
    if not _WGS84_CRS.search(name):
        raise ZoneFileError(
            label,
            f"the file declares the coordinate system {name[:120]}; zone files must be in "
            "WGS84 longitude/latitude (EPSG:4326): re-export them so",
        )


def polygons_of(
    label: str, features: list, non_polygons: str, limits: ZoneFileLimits
) -> tuple[list[int], np.ndarray, list[str]]:
    """Feature positions and shapely polygons of the polygon features, in file order.

    Skipped features (points, lines) are built too, counted in the vertices and
    checked to lie on the globe, so that what is kept draws on the map.
    """
    kept: list[int] = []
    geometries: list = []
    batch = _PolygonBatch()
    others: list = []
    other_index: list[int] = []
    skipped: dict[str, int] = {}
    vertices = 0
    for i, feature in enumerate(features):
        geometry = feature_geometry(label, i, feature, non_polygons)
        polygon = geometry is not None
        geometry = geometry if polygon else feature["geometry"]
        kind = geometry["type"]
        member = "coordinates" if kind != "GeometryCollection" else "geometries"
        if not isinstance(geometry.get(member), (list, tuple)):
            raise ZoneFileError(label, f"the {kind} has no {member} array", i)
        if member == "coordinates":  # counted before the geometry is built
            count, coordinates = positions_of(label, i, kind, geometry["coordinates"])
            vertices += count
            _check_vertices(label, i, vertices, limits)
            geometry = {"type": kind, "coordinates": coordinates}
        try:
            if polygon and batch.add(len(geometries), kind, geometry["coordinates"]):
                kept.append(i)
                geometries.append(None)  # built with the others, after the loop
                continue
            built = shape(geometry)
        except RecursionError:  # collections of collections, in a document built in Python
            raise ZoneFileError(label, f"the {kind} is nested too deeply", i) from None
        except _SHAPE_ERRORS as exc:
            raise ZoneFileError(
                label, f"malformed {kind} {member} ({short(exc, 120)})", i
            ) from None
        if member == "geometries":
            vertices += shapely.get_num_coordinates(built)
            _check_vertices(label, i, vertices, limits)
        if not polygon:
            skipped[kind] = skipped.get(kind, 0) + 1
            others.append(built)
            other_index.append(i)
            continue
        if built.is_empty:
            raise ZoneFileError(label, f"the {kind} is empty", i)
        kept.append(i)
        geometries.append(built)
    if others:
        others_2d = shapely.force_2d(np.asarray(others, dtype=object))
        check_coordinates(label, others_2d, other_index)
    notes = [
        f"skipped {count} {kind} feature{'s' * (count > 1)} (not zones)"
        for kind, count in skipped.items()
    ]
    polygons = np.empty(len(geometries), dtype=object)
    polygons[:] = geometries
    batch.build(polygons)
    return kept, shapely.force_2d(polygons), notes


class _PolygonBatch:
    """Polygon and MultiPolygon features built all at once, from their rings' arrays.

    What ``shapely.geometry.shape`` builds (the same coordinates, the same types), with
    three vectorised shapely calls for a whole file instead of several per feature (a
    file of 50,000 small zones: several times faster). Features whose rings are not
    all arrays of positions (empty, or of mixed 2-D and 3-D positions) are left to
    ``shape``. Z coordinates are dropped (zones are 2-D).
    """

    def __init__(self) -> None:
        self.rings: list[np.ndarray] = []
        self.polygon_of_ring: list[int] = []  # each ring's polygon: shell first
        self.slot_of_polygon: list[int] = []  # each polygon's feature (its slot)
        self.multi: list[int] = []  # slots of the MultiPolygon features

    def add(self, slot: int, kind: str, coordinates: Any) -> bool:
        """Take a feature's rings; False (nothing taken) if ``shape`` must build it.

        Raises
        ------
        ValueError
            A ring of fewer than 3 positions (shapely's message).
        """
        polygons = [coordinates] if kind == "Polygon" else coordinates
        if not polygons or not all(
            rings and all(isinstance(ring, np.ndarray) for ring in rings) for rings in polygons
        ):
            return False
        if any(len(ring) < 3 for rings in polygons for ring in rings):
            raise ValueError("A linearring requires at least 4 coordinates.")
        for rings in polygons:
            number = len(self.slot_of_polygon)
            self.rings.extend(ring[:, :2] for ring in rings)
            self.polygon_of_ring.extend([number] * len(rings))
            self.slot_of_polygon.append(slot)
        if kind == "MultiPolygon":
            self.multi.append(slot)
        return True

    def build(self, geometries: np.ndarray) -> None:
        """Put the built geometries in their slots of ``geometries``."""
        if not self.rings:
            return
        sizes = [len(ring) for ring in self.rings]
        ring_index = np.repeat(np.arange(len(sizes)), sizes)
        rings = shapely.linearrings(np.concatenate(self.rings), indices=ring_index)
        polygons = shapely.polygons(rings, indices=self.polygon_of_ring)
        slots = np.asarray(self.slot_of_polygon)
        in_multi = np.isin(slots, self.multi)
        geometries[slots[~in_multi]] = polygons[~in_multi]
        if self.multi:
            # multipolygons numbered 0, 1, ... (shapely's indices may not skip any)
            multi_slots, number = np.unique(slots[in_multi], return_inverse=True)
            geometries[multi_slots] = shapely.multipolygons(polygons[in_multi], indices=number)


def _check_vertices(label: str, index: int, vertices: int, limits: ZoneFileLimits) -> None:
    if vertices > limits.max_vertices:
        raise ZoneFileError(
            label,
            f"more than {limits.max_vertices:,} vertices in all; simplify the polygons "
            "(for example with mapshaper) and upload them again",
            index,
        )


#: How deep each geometry type nests its positions in ``coordinates``.
_POSITION_DEPTH = {
    "Point": 0,
    "MultiPoint": 1,
    "LineString": 1,
    "MultiLineString": 2,
    "Polygon": 2,
    "MultiPolygon": 3,
}


def positions_of(label: str, index: int, kind: str, coordinates: list) -> tuple[int, Any]:
    """Check that ``coordinates`` nest arrays of positions as ``kind`` says.

    A position is an array of 2 or 3 numbers (text that spells a number is refused).
    Each array of positions becomes one numpy array at once; only a bad one is looked
    at item by item, to name its first bad item by its path in ``coordinates``.

    Returns
    -------
    count : int
        The number of positions (vertices).
    coordinates : list or numpy.ndarray
        The coordinates with each array of positions as a float array (so that
        shapely builds the geometry without a Python loop over the vertices).
    """
    depth = _POSITION_DEPTH[kind]
    if depth == 0:
        _, positions = _positions(label, index, kind, "coordinates", [coordinates], point=True)
        return 1, positions[0]
    return _nested_positions(label, index, kind, "coordinates", coordinates, depth)


def _nested_positions(
    label: str, index: int, kind: str, path: str, value: Any, depth: int
) -> tuple[int, Any]:
    """:func:`positions_of` ``depth`` levels above the positions (recursion: 3 at most)."""
    if not isinstance(value, list):
        raise ZoneFileError(
            label, f"malformed {kind} coordinates: {path} is {short(value)}, not an array", index
        )
    if depth == 1:
        return _positions(label, index, kind, path, value)
    count, parts = 0, []
    for j, item in enumerate(value):
        n, part = _nested_positions(label, index, kind, f"{path}[{j}]", item, depth - 1)
        count += n
        parts.append(part)
    return count, parts


def _positions(
    label: str, index: int, kind: str, path: str, positions: list, *, point: bool = False
) -> tuple[int, Any]:
    """An array of positions as a float array, after checking each is 2 or 3 numbers."""
    if not positions:
        return 0, positions
    try:
        array = np.asarray(positions)
        if array.ndim == 2 and array.shape[1] in (2, 3) and array.dtype.kind in "if":
            return len(array), array.astype(float, copy=False)
    except (ValueError, TypeError):  # ragged: positions of different lengths
        pass
    for j, position in enumerate(positions):
        numbers = isinstance(position, list) and len(position) in (2, 3)
        if not numbers or not all(_is_number(v) for v in position):
            where = path if point else f"{path}[{j}]"
            raise ZoneFileError(
                label,
                f"malformed {kind} coordinates: {where} is {short(position)}, not a "
                "[longitude, latitude] position of numbers",
                index,
            )
    return len(positions), positions  # numbers numpy would not take as one array


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
    label: str,
    geometries: np.ndarray,
    kept: list[int],
    repair: bool,
    notes: list[str],
    limits: ZoneFileLimits = DEFAULT_LIMITS,
) -> np.ndarray:
    """Valid polygons: invalid ones repaired (polygonal parts kept) or refused.

    ``shapely.make_valid`` runs only when the invalid polygons have at most
    ``limits.max_repair_vertices`` vertices in all (counted before any repair: its cost
    grows faster than quadratically with the crossings of a ring); beyond, the polygon
    that crosses the budget is refused, naming its vertices and the budget.
    """
    invalid = np.flatnonzero(~shapely.is_valid(geometries))
    if not len(invalid):
        return geometries
    geometries = geometries.copy()
    sizes = shapely.get_num_coordinates(geometries[invalid])
    over = np.flatnonzero(np.cumsum(sizes) > limits.max_repair_vertices)
    if repair and over.size:
        j = invalid[over[0]]
        reason = shapely.is_valid_reason(geometries[j])
        raise ZoneFileError(
            label,
            f"invalid polygon ({reason}) of {int(sizes[over[0]]):,} vertices, beyond what is "
            f"repaired here (at most {limits.max_repair_vertices:,} vertices of invalid "
            "polygons per file): repair it first (mapshaper -clean, or QGIS's Fix "
            "geometries) and upload it again",
            kept[j],
        )
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


def check_properties(label: str, features: list, limits: ZoneFileLimits) -> None:
    """Each feature's properties (points and lines too: their names name places) within
    ``limits.max_property_bytes`` as JSON text."""
    for i, feature in enumerate(features):
        found = feature.get("properties") or {}
        try:
            size = len(json.dumps(found, ensure_ascii=False, default=str))
        except RecursionError:  # a document built in Python: no name, read as such
            continue
        if size > limits.max_property_bytes:
            longest = max(found, key=lambda k: len(str(found[k])), default="")
            raise ZoneFileError(
                label,
                f"its properties take {size:,} characters (the longest, {short(longest, 40)}, "
                f"{len(str(found[longest])):,}); at most {limits.max_property_bytes:,} are "
                "read per feature: drop or shorten what the map does not need",
                i,
            )


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
