"""``vrvm compare``: what changed between two models, pair by pair, streamed to a file.

Reads the origins and the destinations as ``vrvm matrix`` does
(:func:`vrvm.services.answers.matrix.read_points`), checks that the two models can be
compared there (:func:`vrvm.services.planning.compare.check_comparable`: one time zone,
every point inside both training areas), compares every pair at one departure time in
batches (:func:`vrvm.services.planning.compare.iter_compare_matrix`) and writes them as
they come: Parquet row group by row group, or CSV when ``--out`` ends in ``.csv``
(``.csv.gz``, ``.csv.bz2``, ``.csv.xz``), atomically, or CSV on stdout for ``--out -``.
The summary (pairs, the share slower under B with P(slower) > 0.9, the median change of
the median) goes to stdout, or to stderr when the table does.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from typing import IO

import pandas as pd

from vrvm.cli._args import date_time, travel_time_s
from vrvm.cli._matrix import _progress, write_pairs
from vrvm.cli._reading import _zones, zone_file
from vrvm.services.answers.matrix import read_points
from vrvm.services.display.progress import format_seconds
from vrvm.services.planning.compare import (
    CONFIDENT,
    CompareTally,
    compare_columns,
    iter_compare_matrix,
)
from vrvm.services.versions.models import model_name
from vrvm.trips.model.travel_time import TravelTimeModel

__all__ = ["add_parser", "cmd_compare", "summary_lines"]


def add_parser(commands, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``vrvm compare`` on the sub-command parsers ``commands``."""
    compare = commands.add_parser(
        "compare",
        parents=[common],
        help="what changed between two models (two periods or versions), pair by pair",
        description="Compare two models (e.g. trained on two date ranges of the same "
        "trips, before and after a closure, or two versions of a store) for every pair "
        "of origins and destinations at one departure time. Writes one row per pair: "
        "origin, destination, median_a_s, median_b_s, p_slower (P(T_B > T_A), the two "
        "predictives taken as independent), each side's 90 % interval, the change of "
        "the median with its 90 % interval from the members' spread, "
        "within_uncertainty (that interval holds 0) and the 90 % interval of "
        "T_B - T_A; with --within LIMIT also P(T <= LIMIT) under each and its change. The "
        "models must share a time zone and every point must lie in both training "
        "areas. Points files as for vrvm matrix (lat, lon, optional name; or zone).",
    )
    compare.add_argument("model_a", metavar="MODEL_A", help="model directory of A (before)")
    compare.add_argument("model_b", metavar="MODEL_B", help="model directory of B (after)")
    compare.add_argument(
        "--origins", required=True, metavar="FILE", help="origins (CSV or Parquet)"
    )
    compare.add_argument(
        "--destinations", required=True, metavar="FILE", help="destinations (CSV or Parquet)"
    )
    compare.add_argument(
        "--depart",
        required=True,
        type=date_time,
        metavar="TIME",
        help="departure time of every pair, e.g. '2016-05-03 08:00' (the models' time "
        "zone unless the time has an offset)",
    )
    compare.add_argument(
        "--within",
        type=travel_time_s,
        default=None,
        metavar="T",
        help="also P(T <= T) under each model and its change, with a unit: 600s, 10min, 1h (none)",
    )
    compare.add_argument(
        "--zones",
        type=_zones,
        default=None,
        metavar="FILE[:ID]",
        help="GeoJSON zone polygons the zone columns name, with the id property "
        "(default: zone columns hold H3 cell ids)",
    )
    compare.add_argument(
        "--out",
        default="-",
        metavar="FILE",
        help="output Parquet file, CSV when it ends in .csv (.csv.gz, ...); - for CSV "
        "on stdout (default)",
    )
    compare.set_defaults(handler=cmd_compare)
    return compare


# ----------------------------------------------------------------------- the command
def _counted(tables: Iterator[pd.DataFrame], tally: CompareTally) -> Iterator[pd.DataFrame]:
    for table in tables:
        tally.add(table)
        yield table


def _minutes(seconds: float) -> str:
    return f"{seconds:+,.0f} s ({seconds / 60:+.1f} min)"


def _pairs(n: int, share: float) -> str:
    return f"{n:,} pair{'' if n == 1 else 's'} ({100 * share:.1f} %)"


def summary_lines(summary: dict, name_a: str, name_b: str) -> list[str]:
    """The printed summary of a comparison (:meth:`CompareTally.summary`).

    Examples
    --------
    >>> from vrvm.services.planning.compare import compare_summary
    >>> table = pd.DataFrame({"p_slower": [0.95, 0.5], "median_change_s": [90.0, 30.0],
    ...                       "within_uncertainty": [False, True]})
    >>> print("\\n".join(summary_lines(compare_summary(table), "2013-2014", "2015-2016")))
    compared 2 pairs: A = “2013-2014”, B = “2015-2016”
    slower under B (P(slower) > 0.9): 1 pair (50.0 %); faster (P(slower) < 0.1): 0 pairs (0.0 %)
    median change of the median (B - A): +60 s (+1.0 min)
    change within the models' own uncertainty: 1 pair (50.0 %)
    """
    confident = summary["confident"]
    return [
        f"compared {summary['n_pairs']:,} pairs: A = “{name_a}”, B = “{name_b}”",
        f"slower under B (P(slower) > {confident:g}): "
        f"{_pairs(summary['n_slower'], summary['share_slower'])}; faster (P(slower) < "
        f"{1 - confident:g}): {_pairs(summary['n_faster'], summary['share_faster'])}",
        f"median change of the median (B - A): {_minutes(summary['median_change_s'])}",
        "change within the models' own uncertainty: "
        + _pairs(summary["n_within_uncertainty"], summary["share_within_uncertainty"]),
    ]


def cmd_compare(args, stdout: IO[str], stderr: IO[str]) -> int:
    """``vrvm compare``: read the points, compare every pair in batches, write them."""
    compare_columns(args.within)  # a bad threshold fails before any work
    zones = zone_file(args.zones)
    origins = read_points(args.origins, zones=zones)
    destinations = read_points(args.destinations, zones=zones)
    model_a = TravelTimeModel.load(args.model_a)
    model_b = TravelTimeModel.load(args.model_b)
    pairs = len(origins) * len(destinations)
    bar = None if args.quiet else _progress(pairs, stderr)
    started = time.perf_counter()
    tally = CompareTally(confident=CONFIDENT)
    tables = iter_compare_matrix(  # checks the models and the points before any work
        model_a, model_b, origins, destinations, args.depart, threshold_s=args.within, progress=bar
    )
    departure = args.depart
    if departure.tz is None:
        departure = departure.tz_localize(model_a.tz_, ambiguous=True, nonexistent="shift_forward")
    if not args.quiet:
        stderr.write(
            f"{len(origins):,} origins x {len(destinations):,} destinations = {pairs:,} pairs, "
            f"leaving {departure:%a %Y-%m-%d %H:%M %Z} ({model_a.tz_})\n"
        )
        stderr.flush()
    try:
        write_pairs(args.out, _counted(tables, tally), origins, destinations, stdout)
    finally:
        tables.close()
        if bar is not None:
            bar.close()
    elapsed_s = time.perf_counter() - started
    report = stderr if args.out == "-" else stdout
    if args.out != "-" and not args.quiet:
        stderr.write(f"wrote {pairs:,} pairs to {args.out} in {format_seconds(elapsed_s)}\n")
    lines = summary_lines(tally.summary(), model_name(model_a), model_name(model_b))
    report.write("\n".join(lines) + "\n")
    return 0
