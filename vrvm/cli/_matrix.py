"""``vrvm matrix``: every origin-destination pair's travel time, streamed to a file.

Reads the origins and the destinations (CSV or Parquet: ``lat``, ``lon`` and an optional
``name``, or a ``zone`` column of zone ids), predicts every pair at one departure time
in batches (:func:`vrvm.services.answers.matrix.iter_matrix`) and writes them as they come:
Parquet row group by row group through one ``ParquetWriter``, or CSV when ``--out``
ends in ``.csv`` (compressed for ``.csv.gz``, ``.csv.bz2``, ``.csv.xz``), atomically
(a temporary beside the file, then a rename), or CSV on stdout for ``--out -``. Memory
does not grow with the number of pairs. ``vrvm predict`` stays the form for a list of
single trips.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO

import pandas as pd

from vrvm.cli._args import date_time
from vrvm.cli._output import ProgressBar
from vrvm.cli._reading import (
    _CSV_OPENERS,
    PREDICT_PROGRESS_DELAY_S,
    PREDICT_PROGRESS_EVERY_S,
    _write_arrow,
    _write_csv,
    _zones,
    zone_file,
)
from vrvm.services.answers.matrix import iter_matrix, matrix_columns, read_points
from vrvm.services.display.progress import format_seconds
from vrvm.services.map.support import day_kinds_warning, learned_on_clause, thin_day_queries
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.store.durable import atomic_write

__all__ = ["MATRIX_PROGRESS_PAIRS", "add_parser", "cmd_matrix", "write_pairs"]

MATRIX_PROGRESS_PAIRS = 1_000_000
"""Matrices from this many pairs on show their progress when stderr is not a terminal."""


# ------------------------------------------------------------------ argument types
def _levels(text: str) -> list[float]:
    """Comma-separated numbers strictly between 0 and 1 (``--quantiles 0.5,0.9``)."""
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = [math.nan]
    if not values or not all(0 < v < 1 for v in values) or len(set(values)) < len(values):
        raise argparse.ArgumentTypeError(
            f"expected distinct probabilities strictly between 0 and 1 such as 0.5,0.9; "
            f"got {text!r}"
        )
    return values


def _thresholds(text: str) -> list[float]:
    """Comma-separated positive seconds (``--prob-within 600,900``)."""
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = [math.nan]
    if not values or not all(0 < v < math.inf for v in values) or len(set(values)) < len(values):
        raise argparse.ArgumentTypeError(
            f"expected distinct travel times in seconds > 0 such as 600,900; got {text!r}"
        )
    return values


def add_parser(commands, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``vrvm matrix`` on the sub-command parsers ``commands``."""
    matrix = commands.add_parser(
        "matrix",
        parents=[common],
        help="travel times of every origin-destination pair (a matrix, long format)",
        description="Predict every pair of origins and destinations at one departure "
        "time and write one row per pair: origin, destination (the name, zone id or "
        "row number), mean_s, median_s, one q<q>_s per quantile and one p_within_<t>s "
        "(P(T <= t)) per threshold. The origin and destination files (CSV or Parquet) "
        "hold lat and lon (degrees) with an optional name, or a zone column of zone "
        "ids: H3 cells, or with --zones the ids of a GeoJSON zone file. Pairs are "
        "predicted and written in batches: memory does not grow with their number.",
    )
    matrix.add_argument("model", metavar="MODEL", help="model directory")
    matrix.add_argument("--origins", required=True, metavar="FILE", help="origins (CSV or Parquet)")
    matrix.add_argument(
        "--destinations", required=True, metavar="FILE", help="destinations (CSV or Parquet)"
    )
    matrix.add_argument(
        "--depart",
        required=True,
        type=date_time,
        metavar="TIME",
        help="departure time of every pair, e.g. '2016-05-03 08:00' (the model's time "
        "zone unless the time has an offset)",
    )
    matrix.add_argument(
        "--window",
        type=float,
        default=0.0,
        metavar="MIN",
        help="a departure drawn uniformly from --depart to MIN minutes later: each pair's "
        "distribution pools the departures of the window's minutes (default 0: --depart "
        "alone)",
    )
    matrix.add_argument(
        "--quantiles",
        type=_levels,
        default=[],
        metavar="Q1,Q2,...",
        help="quantiles besides the median, e.g. 0.1,0.9 (none)",
    )
    matrix.add_argument(
        "--prob-within",
        type=_thresholds,
        default=[],
        metavar="T1,T2,...",
        help="travel times in seconds whose P(T <= t) to write, e.g. 600 (none)",
    )
    matrix.add_argument(
        "--zones",
        type=_zones,
        default=None,
        metavar="FILE[:ID]",
        help="GeoJSON zone polygons the zone columns name, with the id property "
        "(default: zone columns hold H3 cell ids)",
    )
    matrix.add_argument(
        "--out",
        default="-",
        metavar="FILE",
        help="output Parquet file, CSV when it ends in .csv (.csv.gz, ...); - for CSV "
        "on stdout (default)",
    )
    matrix.set_defaults(handler=cmd_matrix)
    return matrix


# ----------------------------------------------------------------------- the command
def _progress(pairs: int, stream: IO[str]) -> ProgressBar | None:
    """A bar on a terminal (after a moment); elsewhere, lines for large matrices only."""
    if bool(getattr(stream, "isatty", lambda: False)()):
        return ProgressBar(stream, delay_s=PREDICT_PROGRESS_DELAY_S)
    if pairs >= MATRIX_PROGRESS_PAIRS:
        return ProgressBar(stream, every_s=PREDICT_PROGRESS_EVERY_S)
    return None


def _arrow_tables(tables: Iterable[pd.DataFrame], origins, destinations):
    """The batches as Arrow tables of one schema (labels as text or integers, boolean
    columns as booleans, every other column float64): a batch cannot change a type."""
    import pyarrow as pa

    def label_type(points: pd.DataFrame):
        return pa.int64() if points["label"].dtype.kind == "i" else pa.string()

    schema = None
    for table in tables:
        if schema is None:
            fields = [
                pa.field("origin", label_type(origins)),
                pa.field("destination", label_type(destinations)),
                *(
                    pa.field(c, pa.bool_() if table[c].dtype.kind == "b" else pa.float64())
                    for c in table.columns[2:]
                ),
            ]
            schema = pa.schema(fields)
        yield pa.Table.from_pandas(table, schema=schema, preserve_index=False)


def write_pairs(out: str, tables: Iterable[pd.DataFrame], origins, destinations, stdout) -> None:
    """Write a long table of pairs, batch by batch: CSV on ``stdout`` for ``-``, CSV (maybe
    compressed) or else Parquet by ``out``'s name, atomically."""
    if out == "-":
        _write_csv(stdout, tables)
        return
    name = Path(out).name.lower()
    csv = next((s for s in (".csv", *(f".csv{c}" for c in _CSV_OPENERS)) if name.endswith(s)), None)

    def write(tmp: Path) -> None:
        if csv is None:
            _write_arrow(tmp, _arrow_tables(tables, origins, destinations))
            return
        opener = _CSV_OPENERS.get(Path(out).suffix.lower(), open)
        with opener(tmp, "wt", newline="", encoding="utf-8") as handle:
            _write_csv(handle, tables)

    atomic_write(Path(out), write)


def _day_kind_warning(model, departure: pd.Timestamp, window_min: float, pairs: int) -> str:
    """What to say when the pairs leave on a kind of day (weekday or weekend) on which
    the model's training trips hardly departed: at the departure (every pair), else at
    the end of the departure window (the pairs that leave late in it); ``""`` if neither."""
    if thin := thin_day_queries(model, pd.DataFrame({"start_time": [departure]})):
        return day_kinds_warning(model, dict.fromkeys(thin, pairs), pairs, noun="pairs")
    if window_min > 0:
        end = departure + pd.Timedelta(minutes=window_min)
        for kind in thin_day_queries(model, pd.DataFrame({"start_time": [end]})):
            return f"the departure window ends on a {kind} ({end:%a %H:%M}), " + (
                learned_on_clause(model, kind, "the pairs that leave then")
            )
    return ""


def cmd_matrix(args, stdout: IO[str], stderr: IO[str]) -> int:
    """``vrvm matrix``: read the points, predict every pair in batches, write them."""
    matrix_columns(args.quantiles, args.prob_within)  # distinct columns, before any work
    zones = zone_file(args.zones)
    origins = read_points(args.origins, zones=zones)
    destinations = read_points(args.destinations, zones=zones)
    model = TravelTimeModel.load(args.model)
    departure = args.depart
    if departure.tz is None:
        departure = departure.tz_localize(model.tz_, ambiguous=True, nonexistent="shift_forward")
    pairs = len(origins) * len(destinations)
    if not args.quiet:
        stderr.write(
            f"{len(origins):,} origins x {len(destinations):,} destinations = {pairs:,} pairs, "
            f"leaving {departure:%a %Y-%m-%d %H:%M %Z} ({model.tz_})"
            + (f", any time in the next {args.window:g} min" if args.window > 0 else "")
            + "\n"
        )
        stderr.flush()
    bar = None if args.quiet else _progress(pairs, stderr)
    started = time.perf_counter()
    tables = iter_matrix(
        model,
        origins,
        destinations,
        departure,
        quantiles=args.quantiles,
        thresholds_s=args.prob_within,
        window_min=args.window,
        progress=bar,
    )
    try:
        write_pairs(args.out, tables, origins, destinations, stdout)
    finally:
        tables.close()
        if bar is not None:
            bar.close()
    elapsed_s = time.perf_counter() - started
    if warning := _day_kind_warning(model, departure, args.window, pairs):
        stderr.write(f"vrvm: warning: {warning}\n")
    if args.out != "-" and not args.quiet:
        stderr.write(
            f"wrote {pairs:,} pairs to {args.out} in {format_seconds(elapsed_s)} "
            f"({pairs / max(elapsed_s, 1e-9):,.0f} pairs/s)\n"
        )
    return 0
