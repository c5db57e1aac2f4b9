"""``vrvm stops``: the total time of a trip through ordered stops, leg by leg.

Reads the stops in order from a CSV or Parquet file (``lat``, ``lon``, an optional
``name`` and dwell columns ``dwell_min``, or ``dwell_median_min`` with
``dwell_p90_min`` for a log-normal dwell; or a ``zone`` column of zone ids;
:func:`vrvm.services.planning.stops.read_stops`), computes the distribution of the
total time with each leg leaving when the previous one arrives
(:func:`vrvm.services.planning.stops.trip_with_stops`) and prints each leg (from -> to,
when it leaves, its median and 90 % interval, when it arrives) and the total (median,
90 % interval, mean, P(within T) with ``--within``). ``--out`` writes the quantiles at
the levels 0.01 .. 0.99 of the total and of each leg as CSV (``.csv``), or the whole
answer with the per-leg table as JSON (``.json``), atomically.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import IO

import pandas as pd

from vrvm.cli._args import date_time, travel_time_s
from vrvm.cli._reading import _zones, zone_file
from vrvm.services.display.csv_cells import safe_cells
from vrvm.services.planning.stops import StopsTrip, read_stops, trip_with_stops
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.store.durable import atomic_write

__all__ = ["add_parser", "cmd_stops", "format_trip"]

_FORMATS = (".csv", ".json")


def _out_file(text: str) -> str:
    """``--out``: a file ending in .csv or .json."""
    if not text.lower().endswith(_FORMATS):
        raise argparse.ArgumentTypeError(
            f"expected a file ending in .csv (quantiles) or .json (the whole answer); got {text!r}"
        )
    return text


def add_parser(commands, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``vrvm stops`` on the sub-command parsers ``commands``."""
    stops = commands.add_parser(
        "stops",
        parents=[common],
        help="the total time of a trip through ordered stops (base -> scene -> hospital)",
        description="The distribution of the total time of a trip through ordered stops, "
        "each leg leaving when the previous one arrives (after the dwell at that stop), "
        "so that a leg's predictive depends on when the earlier legs end. STOPS is a CSV "
        "or Parquet file, one stop per row in order: lat and lon (degrees) with an "
        "optional name, or a zone column of zone ids; and optional dwell columns: "
        "dwell_min (minutes), or dwell_median_min with dwell_p90_min (a log-normal "
        "dwell by its median and 90th percentile). Legs are taken as independent given "
        "when each leaves, and dwells as independent of the travel times.",
    )
    stops.add_argument("model", metavar="MODEL", help="model directory")
    stops.add_argument(
        "--stops", required=True, metavar="FILE", help="the stops in order (CSV or Parquet)"
    )
    stops.add_argument(
        "--depart",
        required=True,
        type=date_time,
        metavar="TIME",
        help="departure from the first stop, e.g. '2016-05-03 08:00' (the model's time "
        "zone unless the time has an offset)",
    )
    stops.add_argument(
        "--within",
        type=travel_time_s,
        default=None,
        metavar="T",
        help="also P(total <= T), with a unit: 1800s, 30min or 1h",
    )
    stops.add_argument(
        "--zones",
        type=_zones,
        default=None,
        metavar="FILE[:ID]",
        help="GeoJSON zone polygons a zone column names, with the id property "
        "(default: zone columns hold H3 cell ids)",
    )
    stops.add_argument(
        "--out",
        type=_out_file,
        default=None,
        metavar="FILE",
        help="also write the quantiles (levels 0.01 .. 0.99) of the total and of each leg "
        "as CSV (.csv), or the whole answer with the per-leg table as JSON (.json)",
    )
    stops.set_defaults(handler=cmd_stops)
    return stops


# ------------------------------------------------------------------------- the command
def _clock(stamp: pd.Timestamp, first: pd.Timestamp) -> str:
    """``HH:MM``, with the date when it is not the departure's day."""
    if pd.isna(stamp):
        return "never"
    return f"{stamp:%H:%M}" if stamp.date() == first.date() else f"{stamp:%a %H:%M}"


def _span(lo: pd.Timestamp, hi: pd.Timestamp, first: pd.Timestamp) -> str:
    return f"{_clock(lo, first)}-{_clock(hi, first)}"


def format_trip(trip: StopsTrip, within_s: float | None = None) -> str:
    """The legs and the total as text (minutes, clock times in the departure's zone)."""
    first = trip.departure
    legs = trip.legs(0.9)
    names = [f"{row['from']} -> {row['to']}" for _, row in legs.iterrows()]
    width = max(len("from -> to"), *(len(n) for n in names))
    lines = [
        f"{' -> '.join(s.name for s in trip.stops)}, leaving {first:%a %Y-%m-%d %H:%M %Z}",
        "",
        f"leg  {'from -> to':<{width}}  {'leaves (90 %)':<19}  {'minutes (90 %)':<20}  "
        "arrives (90 %)",
    ]
    for name, (_, row) in zip(names, legs.iterrows(), strict=True):
        leaves = _clock(row["depart"], first)
        if row["leg"] > 1:
            leaves += f" ({_span(row['depart_lo'], row['depart_hi'], first)})"
        minutes = f"{row['median_s'] / 60:.1f} ({row['lo_s'] / 60:.1f}-{row['hi_s'] / 60:.1f})"
        arrives = (
            f"{_clock(row['arrive'], first)} ({_span(row['arrive_lo'], row['arrive_hi'], first)})"
        )
        lines.append(f"{row['leg']:>3}  {name:<{width}}  {leaves:<19}  {minutes:<20}  {arrives}")
        if row["leg"] < len(legs) and row["dwell_median_s"] > 0:
            lines.append(f"     {'':<{width}}  dwell at {row['to']}: {row['dwell']}")
    lo, hi = trip.interval(0.9)
    arrive = trip.arrival([0.5, 0.05, 0.95])
    lines += [
        "",
        f"total: median {trip.median() / 60:.1f} min, 90 % interval {lo / 60:.1f}-"
        f"{hi / 60:.1f} min, mean {trip.mean() / 60:.1f} min",
        f"arrives at {trip.stops[-1].name} {_clock(arrive[0], first)} "
        f"({_span(arrive[1], arrive[2], first)})",
    ]
    if within_s is not None:
        p = float(trip.prob_within(within_s))
        lines.append(f"P(total within {within_s / 60:g} min) = {100 * p:.1f} %")
    if trip.unresolved_probability > 1e-6:
        lines.append(
            f"note: {100 * trip.unresolved_probability:.4f} % of the probability lies beyond "
            "the times resolved (heavy tails): P(within) is understated by at most that"
        )
    lines.append("(legs independent given when each leaves; dwells independent of travel times)")
    return "\n".join(lines) + "\n"


def _quantile_csv(trip: StopsTrip) -> pd.DataFrame:
    table = trip.quantiles()
    table["arrive"] = [t.isoformat() if not pd.isna(t) else "" for t in table["arrive"]]
    return safe_cells(table)


def _write(out: str, trip: StopsTrip, within_s: float | None) -> None:
    if out.lower().endswith(".json"):
        document = trip.to_dict(within_s=within_s)
        text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        atomic_write(Path(out), lambda tmp: tmp.write_text(text, encoding="utf-8"))
        return
    table = _quantile_csv(trip)
    atomic_write(Path(out), lambda tmp: table.to_csv(tmp, index=False))


def cmd_stops(args, stdout: IO[str], stderr: IO[str]) -> int:
    """``vrvm stops``: read the stops, compute the trip, print it, write ``--out``."""
    zones = zone_file(args.zones)
    stops = read_stops(args.stops, zones=zones)
    model = TravelTimeModel.load(args.model)
    trip = trip_with_stops(model, stops, args.depart)
    stdout.write(format_trip(trip, args.within))
    if args.out is not None:
        _write(args.out, trip, args.within)
        if not args.quiet:
            stderr.write(f"wrote {args.out}\n")
    return 0
