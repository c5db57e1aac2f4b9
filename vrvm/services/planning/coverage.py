"""Reach from an origin: every zone's travel time and chance of being reached within T.

A probability-of-coverage map (Westgate et al. 2013): from one origin at one departure
time, :func:`coverage_grid` gives each zone's median travel time, 80 % interval and
P(T <= threshold), with the training trips behind each answer (from near the origin to
near the zone, :func:`vrvm.services.map.support.origin_support`); :func:`coverage_map`
colours the zones, fades those with thin support and writes their tooltips;
:func:`coverage_csv` and :func:`coverage_geojson` export the table (for a planner's
polygon zones, with their ids, names and polygons).

References
----------
Westgate, Woodard, Matteson & Henderson (2013), "Travel time estimation for ambulances
using Bayesian data augmentation", Annals of Applied Statistics 7(2), 1139-1161.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from vrvm.services.answers.forecast import query_frame
from vrvm.services.answers.indices import RELIABILITY_INDICES, reliability_indices
from vrvm.services.display.colours import (
    PROBABILITY_EDGES,
    PROBABILITY_PALETTE,
    THIN_SWATCH,
    TIME_PALETTE,
    binned_colors,
    faded,
    legend_entries,
    nice_edges,
)
from vrvm.services.display.csv_cells import safe_cells
from vrvm.services.display.formatting import format_number
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import Place
from vrvm.services.map.support import (
    THIN_TRIPS,
    WINDOW_MIN,
    day_note,
    minute_of_day,
    origin_support,
)
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.places.zones import json_scalars, zones_geojson

__all__ = [
    "COVERAGE_METRICS",
    "THIN_LEGEND",
    "THIN_LEGEND_POLYGONS",
    "coverage_colors",
    "coverage_csv",
    "coverage_geojson",
    "coverage_grid",
    "coverage_map",
    "reachable_summary",
    "zone_collection",
]

COVERAGE_METRICS = ("median", "probability")


def coverage_grid(
    model: TravelTimeModel,
    area: ServiceArea,
    origin: Place,
    departure,
    threshold_min: float,
    *,
    indices: bool = False,
) -> pd.DataFrame:
    """Median travel time and P(T <= threshold) from ``origin`` to every zone.

    Returns the area's grid (``zone``, ``number``, ``label``, ``lat``, ``lon``,
    ``boundary``; for polygon zones also ``name`` and ``geometry``, the polygon) with
    ``median_min``, ``lower80_min``, ``upper80_min`` and ``prob_within`` (probability
    of arriving within ``threshold_min``), each zone's answer being that at the
    point it stands for. When the area indexes its training trips, also
    ``support_trips`` (training trips from the origin's zone or a neighbour to the
    zone or a neighbour; for polygons from the origin's polygon to the zone),
    ``support_trips_at_time`` (those within an hour of the departure's time of day)
    and ``thin`` (fewer than :data:`~vrvm.services.map.support.THIN_TRIPS` support trips,
    or than that many training trips at all on the departure's kind of day:
    :func:`~vrvm.services.map.support.thin_days`).
    With ``indices=True``, also each zone's ``free_flow_min``, ``planning_time_index``,
    ``buffer_index`` and ``misery_index`` (:mod:`vrvm.services.answers.indices`).
    """
    grid = area.grid
    queries = query_frame(origin, grid, departure)
    dist = model.predict_dist(queries)
    quantiles = dist.ppf(np.array([[0.1], [0.5], [0.9]])) / 60.0
    out = grid[["zone", "number", "label", "lat", "lon", "boundary"]].copy()
    if "geometry" in grid.columns:  # a planner's polygons: their names and shapes
        out.insert(3, "name", grid["place"].to_numpy())
        out["geometry"] = grid["geometry"].to_numpy()
    out["median_min"] = quantiles[1]
    out["lower80_min"] = quantiles[0]
    out["upper80_min"] = quantiles[2]
    out["prob_within"] = dist.prob_within(60.0 * float(threshold_min))
    if indices:
        table = reliability_indices(model, queries, dist)
        for column in ("free_flow_min", *RELIABILITY_INDICES):
            out[column] = table[column].to_numpy()
    row = area.zone_row(origin.zone)
    if area.support is not None and area.support.n_zones == len(grid) and row is not None:
        counts = origin_support(area.support, row, minute_of_day(departure, model.tz_))
        out["support_trips"] = counts["support_trips"].to_numpy()
        out["support_trips_at_time"] = counts["support_trips_at_time"].to_numpy()
        note = day_note(area.support, departure, model.tz_)
        out["thin"] = (out["support_trips"].to_numpy() < THIN_TRIPS) | bool(note)
        out.attrs["day_note"] = note  # why every zone is thin on this kind of day
    return out


def reachable_summary(grid: pd.DataFrame, confidence: float) -> dict[str, Any]:
    """How many zones are reached within the threshold with at least ``confidence``.

    With support counts in ``grid``, also ``n_thin``: how many zones have thin support
    (fewer than ``thin_trips`` training trips from near the origin), and ``day_note``:
    why every zone is thin when the model learned too little of the departure's kind
    of day (:func:`~vrvm.services.map.support.day_note`; ``""`` otherwise).
    """
    reached = grid["prob_within"].to_numpy() >= confidence
    summary = {
        "n_zones": len(grid),
        "n_reached": int(reached.sum()),
        "share": float(reached.mean()) if len(grid) else 0.0,
        "confidence": float(confidence),
    }
    if "thin" in grid.columns:
        summary["n_thin"] = int(grid["thin"].sum())
        summary["thin_trips"] = THIN_TRIPS
        summary["day_note"] = grid.attrs.get("day_note", "")
    return summary


def coverage_colors(
    grid: pd.DataFrame, metric: str, *, n_bins: int = 6
) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Fill colours of a coverage grid and the legend, by median time or probability."""
    if metric == "median":
        edges = nice_edges(grid["median_min"].to_numpy(), n_bins)
        colours = binned_colors(grid["median_min"].to_numpy(), edges, TIME_PALETTE)
        legend = legend_entries(edges, TIME_PALETTE, lambda v: f"{v:g} min")
        return colours, legend
    if metric == "probability":
        edges = np.asarray(PROBABILITY_EDGES)
        colours = binned_colors(grid["prob_within"].to_numpy(), edges, PROBABILITY_PALETTE)
        legend = legend_entries(edges, PROBABILITY_PALETTE, lambda v: f"{100 * v:g} %")
        return colours, legend
    raise ValueError(f"metric must be one of {COVERAGE_METRICS}, got {metric!r}")


def _export_frame(
    grid: pd.DataFrame, origin: Place, departure, threshold_min: float
) -> pd.DataFrame:
    out = grid.drop(columns=["boundary", "geometry"], errors="ignore").copy()
    out = out.rename(columns={"prob_within": f"p_within_{format_number(threshold_min)}min"})
    out.insert(0, "origin_lat", origin.lat)
    out.insert(1, "origin_lon", origin.lon)
    out.insert(2, "departure", pd.Timestamp(departure).isoformat())
    out.insert(3, "threshold_min", float(threshold_min))
    return out


def coverage_csv(
    grid: pd.DataFrame, origin: Place, departure, threshold_min: float, *, synthetic: bool = False
) -> bytes:
    """The coverage table as CSV (UTF-8), one row per zone."""
    out = _export_frame(grid, origin, departure, threshold_min)
    if synthetic:
        out["data"] = "SYNTHETIC (Synthetica, not a real city)"
    for column in ("median_min", "lower80_min", "upper80_min"):
        out[column] = out[column].round(3)
    return safe_cells(out).to_csv(index=False, float_format="%.6g").encode("utf-8")


def zone_collection(props: pd.DataFrame, grid: pd.DataFrame) -> dict[str, Any]:
    """Zones as a GeoJSON FeatureCollection: ``props`` rows as properties (JSON scalars).

    Row i of ``props`` is the zone in row i of ``grid``: its geometry is the planner's
    polygon (exact, as in the zone file) when ``grid`` has ``geometry``, else its
    hexagon (``boundary``).
    """
    if "geometry" in grid.columns:
        return {
            "type": "FeatureCollection",
            "features": [
                {"type": "Feature", "properties": json_scalars(record), "geometry": geometry}
                for record, geometry in zip(
                    props.to_dict(orient="records"), grid["geometry"], strict=True
                )
            ],
        }
    return zones_geojson(props.assign(boundary=grid["boundary"].to_numpy()))


def coverage_geojson(
    grid: pd.DataFrame, origin: Place, departure, threshold_min: float, *, synthetic: bool = False
) -> bytes:
    """The coverage map as a GeoJSON FeatureCollection of zone polygons.

    Each feature's geometry is the zone: its hexagon, or the planner's polygon (exact,
    as in the zone file) when the grid has ``geometry``.
    """
    document = zone_collection(_export_frame(grid, origin, departure, threshold_min), grid)
    document["origin"] = {"lat": origin.lat, "lon": origin.lon, "label": origin.label}
    document["departure"] = pd.Timestamp(departure).isoformat()
    document["threshold_min"] = float(threshold_min)
    document["synthetic"] = bool(synthetic)
    return json.dumps(document, allow_nan=False).encode("utf-8")


THIN_LEGEND = f"Faded: thin data (fewer than {THIN_TRIPS} training trips from near the origin)"
THIN_LEGEND_DAY = (
    f"Faded: thin data (fewer than {THIN_TRIPS} training trips at all on this kind of day)"
)
THIN_LEGEND_POLYGONS = (
    f"Faded: thin data (fewer than {THIN_TRIPS} training trips from the origin's zone)"
)


def coverage_map(
    grid: pd.DataFrame, metric: str, threshold_min: float, *, near: bool = True
) -> tuple[np.ndarray, list[str], list[tuple[str, str]]]:
    """Fill colours, tooltips (plain text, lines split by "\\n") and the legend of a
    coverage map (the map's tooltip template is the only HTML: Streamlit escapes the
    values put into it, so a tag inside a tooltip would show as text).

    Zones with thin support (``grid["thin"]``, see :func:`coverage_grid`) are faded
    towards grey, say so in their tooltip with the trip counts, and get a legend entry.
    ``near=False`` words them for a planner's polygons: trips from the origin's zone
    to this one, not from and to the neighbouring zones too.
    """
    fill, legend = coverage_colors(grid, metric)
    tips = [
        f"median {m:.1f} min (80 %: {lo:.0f}-{hi:.0f})"
        f"\nP(≤ {threshold_min:g} min) = {100 * p:.0f} %"
        for m, lo, hi, p in zip(
            grid["median_min"],
            grid["lower80_min"],
            grid["upper80_min"],
            grid["prob_within"],
            strict=True,
        )
    ]
    if "planning_time_index" in grid.columns:
        tips = [
            tip + f"\nplanning time index {pti:.2f} · buffer {bi:.2f} · misery {mi:.2f}"
            for tip, pti, bi, mi in zip(
                tips, *(grid[name] for name in RELIABILITY_INDICES), strict=True
            )
        ]
    if "thin" in grid.columns:
        thin = grid["thin"].to_numpy(bool)
        fill = faded(fill, thin)
        hours = f"±{WINDOW_MIN / 60:g} h"
        where = "from near the origin to near here" if near else "from the origin's zone to here"
        tips = [
            tip
            + f"\n{n:,} training trips {where} ({k:,} at {hours})"
            + ("\n⚠ Thin data: treat with caution" if is_thin else "")
            for tip, n, k, is_thin in zip(
                tips, grid["support_trips"], grid["support_trips_at_time"], thin, strict=True
            )
        ]
        if grid.attrs.get("day_note"):  # every zone: the model never saw this kind of day
            legend = [*legend, (THIN_LEGEND_DAY, THIN_SWATCH)]
        elif thin.any():
            legend = [*legend, (THIN_LEGEND if near else THIN_LEGEND_POLYGONS, THIN_SWATCH)]
    return fill, tips, legend
