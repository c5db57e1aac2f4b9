"""Fleet files: bases and demand read from CSV, coverage, bases and candidates written out.

A bases file has one row per base with columns ``name`` (optional) and ``lat``, ``lon``
(degrees; ``latitude``, ``longitude``, ``lng`` are read too) or ``zone`` (a zone id of
the map); a demand file has ``demand`` (a non-negative number) and ``zone`` or ``lat``,
``lon`` (demand at points is summed per zone). Every problem is one ValueError naming
the file, the line (the header is line 1), the column and what was expected. The
downloads are CSV (UTF-8) and GeoJSON: per zone (the zones' polygons), the bases
(points) and the ranked candidate zones, each saying the departure, the threshold and
how the probabilities are defined (:mod:`vrvm.services.planning.fleet`).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from vrvm.services.analyst.uploads import check_upload
from vrvm.services.display.csv_cells import safe_cells
from vrvm.services.display.formatting import format_number
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import place_from_latlon
from vrvm.services.planning.coverage import zone_collection
from vrvm.services.planning.fleet import (
    MAX_BASES,
    FleetCoverage,
    bases_at_points,
    clean_name,
)
from vrvm.trips.files.reader import ReadLimits
from vrvm.trips.files.small_csv import read_small_csv
from vrvm.trips.places.zones import json_scalars

__all__ = [
    "DEFINITIONS",
    "EXAMPLE_BASES_CSV",
    "FLEET_LIMITS",
    "MAX_FILE_MB",
    "MAX_READ_SECONDS",
    "bases_csv",
    "bases_geojson",
    "candidates_csv",
    "candidates_geojson",
    "fleet_csv",
    "fleet_geojson",
    "read_bases_csv",
    "read_demand_csv",
]

MAX_FILE_MB = 5.0
"""Largest bases or demand file (MB). Anyone who sees the Plan page (viewers included)
may upload one, so its bounds are far tighter than an analyst's trip upload
(:data:`vrvm.services.analyst.uploads.MAX_UPLOAD_MB`, 1,000 columns): 5 MB hold 150,000
demand points."""
FLEET_LIMITS = ReadLimits(max_columns=100, header_bytes=64 * 2**10, max_data_rows=200_000)
"""Bounds of a bases or demand file: 100 columns in a header of at most 64 KiB (counted
on the raw bytes before pandas parses anything), 200,000 data rows."""
MAX_READ_SECONDS = 10.0
"""Parsing a bases or demand file stops after this long (checked per block of rows);
within the other bounds it takes well under a second."""
EXAMPLE_BASES_CSV = "name,lat,lon\nNorth station,-39.95,-30.02\nHarbour,-40.03,-29.97\n"
DEFINITIONS = {
    "p_best": "P(best base within T): the probability that the base dispatch would send "
    "(the highest P(T <= T) for the zone) arrives within T",
    "p_any": "P(any base within T): the probability that at least one base arrives within "
    "T if all set off at once; members of the ensemble are equally likely scenarios, the "
    "bases' travel times independent given the scenario: (1/M) sum_m [1 - prod_b (1 - "
    "F_mb(T))]",
}
_ALIASES = {
    "lat": ("lat", "latitude"),
    "lon": ("lon", "lng", "long", "longitude"),
    "name": ("name",),
    "zone": ("zone", "zone_id"),
    "demand": ("demand",),
}
_SYNTHETIC = "SYNTHETIC (Synthetica, not a real city)"


# ------------------------------------------------------------------------- reading


def _read_table(data: bytes, source: str) -> pd.DataFrame:
    """Every cell as text, columns renamed to their roles (lat, lon, name, zone, demand).

    Read by the bounded reader of small tables (:func:`vrvm.trips.files.small_csv.read_small_csv`)
    under :data:`FLEET_LIMITS`: the header's columns are counted on the raw bytes before
    pandas parses anything.
    """
    check_upload(source, data, max_mb=MAX_FILE_MB)
    frame = read_small_csv(
        data,
        source=source,
        limits=FLEET_LIMITS,
        max_bytes=int(MAX_FILE_MB * 2**20),
        max_seconds=MAX_READ_SECONDS,
        expected="a bases or demand file has a few (name, lat, lon, zone, demand)",
    )
    roles: dict[str, str] = {}
    for column in frame.columns:
        key = str(column).strip().lower()
        role = next((r for r, names in _ALIASES.items() if key in names), None)
        if role is None:
            continue
        if role in roles:
            raise ValueError(
                f"{source}: columns {roles[role]!r} and {column!r} both give the {role}"
            )
        roles[role] = column
    frame = frame[list(roles.values())].rename(columns={v: k for k, v in roles.items()})
    if frame.empty:
        raise ValueError(f"{source} has no rows under its header")
    return frame


def _line(i: int) -> int:
    return i + 2  # the header is line 1


def _shown(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:37] + "...")


def _numbers(frame: pd.DataFrame, column: str, source: str, low: float, high: float) -> np.ndarray:
    """The column as floats in [low, high]; the first bad cell names its line."""
    text = frame[column].str.strip()
    values = pd.to_numeric(text, errors="coerce").to_numpy(np.float64)
    bad = ~(np.isfinite(values) & (values >= low) & (values <= high))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "a number" if not np.isfinite(values[i]) else f"a number from {low:g} to {high:g}"
        raise ValueError(
            f"{source}, line {_line(i)}, column {column!r}: {_shown(text.iloc[i])} is not "
            f"{what}" + (f" ({int(bad.sum())} such rows)" if bad.sum() > 1 else "")
        )
    return values


def _where(frame: pd.DataFrame, source: str) -> str:
    """``"latlon"`` or ``"zone"``: how the rows say where they are."""
    if {"lat", "lon"} <= set(frame.columns):
        return "latlon"
    if "zone" in frame.columns:
        return "zone"
    raise ValueError(
        f"{source} needs columns 'lat' and 'lon' (degrees) or 'zone' (a zone id of the map); "
        f"it has {list(frame.columns) or 'none of them'}"
    )


def _zone_rows(frame: pd.DataFrame, area: ServiceArea, source: str) -> np.ndarray:
    index = area.zone_index
    zones = frame["zone"].str.strip()
    rows = np.array([index.get(z, -1) for z in zones], dtype=np.int64)
    if (rows < 0).any():
        i = int(np.flatnonzero(rows < 0)[0])
        raise ValueError(
            f"{source}, line {_line(i)}, column 'zone': {_shown(zones.iloc[i])} is not a zone "
            "of the map (zone ids are in the coverage download)"
        )
    return rows


def read_bases_csv(
    data: bytes, area: ServiceArea, *, source: str = "the bases file"
) -> pd.DataFrame:
    """Bases from a CSV file: ``name`` (optional), and ``lat``, ``lon`` or ``zone``.

    Each base must lie in a zone of the area; empty names become ``"Base <row>"``;
    names must differ; at most :data:`~vrvm.services.planning.fleet.MAX_BASES` rows. Returns a
    bases table (:data:`~vrvm.services.planning.fleet.BASE_COLUMNS`).

    Examples
    --------
    >>> import pandas as pd
    >>> from vrvm.services.map.area import ServiceArea, ViewState
    >>> grid = pd.DataFrame({"zone": ["a"], "label": ["Zone 1"], "lat": [0.0], "lon": [0.0]})
    >>> area = ServiceArea(grid, 8, (0, 0, 0, 0), ViewState(0, 0, 10))
    >>> read_bases_csv(b"name,lat,lon\\nDepot,north,0\\n", area, source="b.csv")
    Traceback (most recent call last):
    ...
    ValueError: b.csv, line 2, column 'lat': 'north' is not a number
    """
    frame = _read_table(data, source)
    if len(frame) > MAX_BASES:
        raise ValueError(f"{source} has {len(frame)} bases; at most {MAX_BASES} can be placed")
    if _where(frame, source) == "latlon":
        lat = _numbers(frame, "lat", source, -90.0, 90.0)
        lon = _numbers(frame, "lon", source, -180.0, 180.0)
    else:
        rows = _zone_rows(frame, area, source)
        lat = area.grid["lat"].to_numpy(float)[rows]
        lon = area.grid["lon"].to_numpy(float)[rows]
    names = frame["name"] if "name" in frame.columns else pd.Series([""] * len(frame))
    for i, (name, a, b) in enumerate(zip(names, lat, lon, strict=True)):
        try:  # the same checks as bases_at_points, said with the file's line and column
            clean_name(name, "")
        except ValueError as exc:
            raise ValueError(f"{source}, line {_line(i)}, column 'name': {exc}") from None
        try:
            place_from_latlon(area, a, b)
        except ValueError as exc:
            raise ValueError(f"{source}, line {_line(i)}: {exc}") from None
    fallback = [n if clean_name(n, "") else f"Base {i + 1}" for i, n in enumerate(names)]
    try:
        return bases_at_points(area, fallback, lat, lon)
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None


def read_demand_csv(
    data: bytes, area: ServiceArea, *, source: str = "the demand file"
) -> np.ndarray:
    """Demand per zone (grid order) from a CSV file: ``demand`` and ``zone`` or ``lat``, ``lon``.

    Rows naming the same zone, or points in the same zone, are summed; zones without a
    row get 0. Every point must lie in a zone of the area.

    Examples
    --------
    >>> import pandas as pd
    >>> from vrvm.services.map.area import ServiceArea, ViewState
    >>> grid = pd.DataFrame({"zone": ["a", "b"], "label": ["Zone 1", "Zone 2"],
    ...                      "lat": [0.0, 0.1], "lon": [0.0, 0.0]})
    >>> area = ServiceArea(grid, 8, (0, 0, 0.1, 0), ViewState(0, 0, 10))
    >>> read_demand_csv(b"zone,demand\\nb,2\\nb,1.5\\n", area).tolist()
    [0.0, 3.5]
    """
    frame = _read_table(data, source)
    if "demand" not in frame.columns:
        raise ValueError(f"{source} needs a column 'demand' (a non-negative number per row)")
    demand = _numbers(frame, "demand", source, 0.0, np.inf)
    if _where(frame, source) == "latlon":
        lat = _numbers(frame, "lat", source, -90.0, 90.0)
        lon = _numbers(frame, "lon", source, -180.0, 180.0)
        rows = area.zone_rows(lat, lon)
        outside = np.flatnonzero(rows < 0)
        if outside.size:
            lines = ", ".join(str(_line(int(i))) for i in outside[:5])
            raise ValueError(
                f"{source}: {outside.size} point(s) lie in no zone of the map (line(s) {lines}"
                f"{', ...' if outside.size > 5 else ''}); remove them or give zone ids"
            )
    else:
        rows = _zone_rows(frame, area, source)
    weights = np.bincount(rows, weights=demand, minlength=len(area.grid)).astype(np.float64)
    if weights.sum() <= 0:
        raise ValueError(f"{source}: the demand is zero everywhere")
    return weights


# ------------------------------------------------------------------------- writing


def _stamp(coverage: FleetCoverage) -> dict[str, Any]:
    return {
        "departure": coverage.departure.isoformat(),
        "threshold_min": float(coverage.threshold_min),
    }


def _csv(frame: pd.DataFrame) -> bytes:
    return safe_cells(frame).to_csv(index=False, float_format="%.6g").encode("utf-8")


def _zone_frame(coverage: FleetCoverage, demand, synthetic: bool) -> pd.DataFrame:
    grid = coverage.grid
    t = format_number(coverage.threshold_min)
    out = grid.drop(columns=["boundary", "geometry"], errors="ignore").copy()
    out["demand"] = np.asarray(demand, dtype=np.float64)
    out = out.rename(
        columns={"p_best": f"p_best_base_within_{t}min", "p_any": f"p_any_base_within_{t}min"}
    )
    for i, (name, value) in enumerate(_stamp(coverage).items()):
        out.insert(i, name, value)
    if synthetic:
        out["data"] = _SYNTHETIC
    return out


def fleet_csv(coverage: FleetCoverage, demand, *, synthetic: bool = False) -> bytes:
    """Per zone: both probabilities, the best base and the demand (CSV, UTF-8)."""
    return _csv(_zone_frame(coverage, demand, synthetic))


def _base_records(coverage: FleetCoverage, demand) -> list[dict[str, Any]]:
    table = coverage.base_table(demand).rename(columns={"label": "zone_label"})
    return table.to_dict(orient="records")


def _document(features: list | dict, coverage: FleetCoverage, synthetic: bool) -> bytes:
    """A FeatureCollection (or ``features`` as one) with the departure, threshold, definitions."""
    if not isinstance(features, dict):
        features = {"type": "FeatureCollection", "features": features}
    document = {**features, **_stamp(coverage), "definitions": DEFINITIONS}
    document["synthetic"] = bool(synthetic)
    return json.dumps(document, allow_nan=False).encode("utf-8")


def _point_features(coverage: FleetCoverage, demand) -> list[dict[str, Any]]:
    """Each base as a GeoJSON point with what it serves (NaN written as null)."""
    features = []
    for record in _base_records(coverage, demand):
        props = json_scalars(record)
        point = {"type": "Point", "coordinates": [props["lon"], props["lat"]]}
        features.append({"type": "Feature", "properties": props, "geometry": point})
    return features


def fleet_geojson(coverage: FleetCoverage, demand, *, synthetic: bool = False) -> bytes:
    """The zones (hexagons or the planner's polygons) with the CSV's columns, and the bases."""
    props = _zone_frame(coverage, demand, synthetic).drop(columns=["departure", "threshold_min"])
    document = zone_collection(props, coverage.grid)
    document["bases"] = {
        "type": "FeatureCollection",
        "features": _point_features(coverage, demand),
    }
    return _document(document, coverage, synthetic)


def bases_csv(coverage: FleetCoverage, demand, *, synthetic: bool = False) -> bytes:
    """The bases: name, point, zone and what each serves (see ``FleetCoverage.base_table``)."""
    out = pd.DataFrame(_base_records(coverage, demand))
    if out.empty:
        out = coverage.base_table(demand).rename(columns={"label": "zone_label"})
    for i, (name, value) in enumerate(_stamp(coverage).items()):
        out.insert(i, name, value)
    if synthetic:
        out["data"] = _SYNTHETIC
    return _csv(out)


def bases_geojson(coverage: FleetCoverage, demand, *, synthetic: bool = False) -> bytes:
    """The bases as GeoJSON points with what each serves."""
    return _document(_point_features(coverage, demand), coverage, synthetic)


def _candidate_frame(
    ranking: pd.DataFrame, coverage: FleetCoverage, objective: str
) -> pd.DataFrame:
    out = ranking.copy()
    for i, (name, value) in enumerate(_stamp(coverage).items()):
        out.insert(i, name, value)
    out.insert(2, "ranked_by", f"{objective}_gain")
    return out


def candidates_csv(
    ranking: pd.DataFrame, coverage: FleetCoverage, objective: str, *, synthetic: bool = False
) -> bytes:
    """The ranked candidate zones with the demand-weighted coverage before and after."""
    out = _candidate_frame(ranking, coverage, objective)
    if synthetic:
        out["data"] = _SYNTHETIC
    return _csv(out)


def candidates_geojson(
    ranking: pd.DataFrame,
    coverage: FleetCoverage,
    objective: str,
    area: ServiceArea,
    *,
    synthetic: bool = False,
) -> bytes:
    """The ranked candidate zones as polygons with the CSV's columns."""
    props = _candidate_frame(ranking, coverage, objective).drop(
        columns=["departure", "threshold_min"]
    )
    rows = [area.zone_index[z] for z in ranking["zone"]]
    return _document(zone_collection(props, area.grid.iloc[rows]), coverage, synthetic)
