"""``vrvm gaps``: where more training trips would sharpen the model's answers most.

For every zone of the service area (or for the trips from one origin to every zone),
splits the predictive spread on the log-seconds scale into the model's own uncertainty
and trip-to-trip variation, with the training trips behind each zone and a ranking of
where more trips would help most (:mod:`vrvm.services.planning.data_gaps`), and writes
the table as CSV or GeoJSON: per-zone aggregates only, never a trip.

The zones are those of the model's training trips: given with ``--trips`` (a trip file)
or found in a data home (``--home``, where the trips were kept when the model was
published), they are also counted per zone. Without either, the zones fill the area of
the model's relevance vectors and no support is counted. ``--zones`` makes a planner's
polygons the zones.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import IO

from vrvm.cli._args import date_time, positive_int
from vrvm.cli._reading import _zones, zone_file
from vrvm.cli._schedule import latlon
from vrvm.services.map.area import build_service_area
from vrvm.services.map.places import place_from_latlon
from vrvm.services.planning.data_gaps import (
    MAX_DESTINATIONS,
    MORE_TRIPS,
    gaps_csv,
    gaps_geojson,
    gaps_summary,
    origin_gaps,
    zone_gaps,
)
from vrvm.services.versions.models import is_synthetic
from vrvm.trips.files.reader import read_trips
from vrvm.trips.home import Home
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.store.durable import atomic_write
from vrvm.trips.table import trips_sha256

__all__ = ["add_parser", "cmd_gaps"]

_FORMATS = {".csv": "csv", ".geojson": "geojson", ".json": "geojson"}


def _out_file(text: str) -> str:
    """argparse type: a file name ending in .csv or .geojson (.json)."""
    if Path(text).suffix.lower() not in _FORMATS:
        raise argparse.ArgumentTypeError(
            f"expected a file ending in .csv or .geojson, got {text!r}"
        )
    return text


def add_parser(commands, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``vrvm gaps`` on the sub-command parsers ``commands``."""
    gaps = commands.add_parser(
        "gaps",
        parents=[common],
        help="where data is missing: the model's own uncertainty per zone",
        description="For every zone (or, with --origin, for the trip from there to every "
        "zone), split the predictive spread on the log-seconds scale into the model's "
        "own uncertainty (members disagreeing, uncertain weights) and trip-to-trip "
        "variation, count the training trips starting or ending in each zone, and rank "
        "the zones by how much more trips there would sharpen the answers "
        "(demand-weighted). Writes one row (CSV) or feature (GeoJSON) per zone: "
        "per-zone aggregates only, never a trip.",
    )
    gaps.add_argument("model", metavar="MODEL", help="model directory")
    gaps.add_argument(
        "--depart",
        required=True,
        action="append",
        type=date_time,
        metavar="TIME",
        help="departure time, e.g. '2016-05-03 08:00' (the model's time zone unless the "
        "time has an offset); repeat it to average over several",
    )
    gaps.add_argument(
        "--origin",
        type=latlon,
        default=None,
        metavar="LAT,LON",
        help="the trips from this point to every zone, instead of every zone's trips",
    )
    gaps.add_argument(
        "--zones",
        type=_zones,
        default=None,
        metavar="FILE[:ID]",
        help="GeoJSON zone polygons to use as the zones, with the id property "
        "(default: H3 hexagons where the trips go)",
    )
    source = gaps.add_mutually_exclusive_group()
    source.add_argument(
        "--trips",
        default=None,
        metavar="FILE",
        help="the model's training trips (CSV or Parquet): the zones and their support",
    )
    source.add_argument(
        "--home",
        default=None,
        metavar="DIR",
        help="a data home that kept the model's training trips",
    )
    gaps.add_argument(
        "--destinations",
        type=positive_int,
        default=MAX_DESTINATIONS,
        metavar="N",
        help="representative destinations: every zone if there are at most N, else the "
        f"N busiest ({MAX_DESTINATIONS})",
    )
    gaps.add_argument(
        "--out", required=True, type=_out_file, metavar="FILE", help="output .csv or .geojson"
    )
    gaps.set_defaults(handler=cmd_gaps)
    return gaps


def _training_trips(args, model: TravelTimeModel, stderr: IO[str]):
    """The trips the zones and their support come from (None: the model's extent)."""
    if args.trips is not None:
        trips, _ = read_trips(args.trips, tz=model.tz_)
        if len(trips) == 0:
            raise ValueError(f"{args.trips}: no trips left after cleaning")
        if trips_sha256(trips) != model.training_summary_.get("sha256"):
            stderr.write(
                f"vrvm: warning: {args.trips} are not the trips {args.model} was trained on: "
                "the support counts are of these trips\n"
            )
        return trips
    if args.home is not None:
        home = Path(args.home)
        if not home.is_dir():
            raise ValueError(f"{args.home}: no such data home")
        table = Home(home).training_trip_table(model)
        if table is None:
            raise ValueError(
                f"{args.home} keeps no training trips of {args.model} (they are kept when a "
                "model is published with them): give them with --trips"
            )
        return table
    if not args.quiet:
        stderr.write(
            "no --trips or --home: zones over the model's relevance vectors, no support counts\n"
        )
    return None


def cmd_gaps(args, stdout: IO[str], stderr: IO[str]) -> int:
    """``vrvm gaps``: the service area, the split per zone, the file and a summary."""
    model = TravelTimeModel.load(args.model)
    zones = zone_file(args.zones)
    area = build_service_area(model, trips=_training_trips(args, model, stderr), zones=zones)
    departures = list(args.depart)  # naive: the model's wall clock (the service's reading)
    if args.origin is None:
        table = zone_gaps(model, area, departures, max_destinations=args.destinations)
    else:
        origin = place_from_latlon(area, *args.origin)
        table = origin_gaps(model, area, origin, departures)
    synthetic = is_synthetic(model)
    kind = _FORMATS[Path(args.out).suffix.lower()]
    data = (gaps_csv if kind == "csv" else gaps_geojson)(table, synthetic=synthetic)
    atomic_write(Path(args.out), lambda tmp: tmp.write_bytes(data))
    summary = gaps_summary(table)
    scale = table.attrs["scale"]
    stdout.write(
        f"{len(table):,} zones; the model's own uncertainty is "
        f"{100 * summary['epistemic_share']:.1f} % of the predictive variance "
        f"({scale}, demand-weighted: {table.attrs['demand']})\n"
        f"where {MORE_TRIPS} more trips would sharpen the answers most (the share of the "
        "variance they would remove):\n"
    )
    for rank, (label, share, support) in enumerate(summary["top"], 1):
        trips = "" if support is None else f", {support:,} training trips"
        stdout.write(f"  {rank}. {label}: {100 * share:.2f} % of the variance{trips}\n")
    if not args.quiet:
        stderr.write(f"wrote {len(table):,} zones to {args.out}\n")
    return 0
