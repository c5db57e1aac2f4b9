"""``vrvm site``: where k bases should stand, or the fewest bases that reach enough demand.

Reads the candidate sites, the demand points (CSV or Parquet: ``lat``, ``lon`` and an
optional ``name``, or a ``zone`` column of zone ids, as ``vrvm matrix`` reads its points;
the demand may carry a numeric ``demand`` or ``weight`` column) and optionally the
existing bases to keep (``--fixed``), predicts every candidate-demand pair's
P(T <= --within) at each ``--depart`` time and solves the exact siting programme of
:mod:`vrvm.services.planning.siting`: with ``--bases K`` the K bases that maximise the
demand-weighted P(best base within T); with ``--min-probability P [--share Q]`` the
fewest bases that reach a share Q of the demand within T with probability at least P.
The chosen sites go to ``--out`` (CSV, written atomically); the objective, the greedy
answer's objective and the gap between them are printed.
"""

from __future__ import annotations

import argparse
import io
import math
import os
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from vrvm.cli._args import UsageError, date_time, positive_int, travel_time_s
from vrvm.cli._reading import _zones, zone_file
from vrvm.services.answers.matrix import read_points
from vrvm.services.display.csv_cells import safe_cells
from vrvm.services.planning.siting import fewest_bases, site_bases
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.store.durable import atomic_write

__all__ = ["add_parser", "cmd_site", "demand_weights"]

_WEIGHT_COLUMNS = ("demand", "weight")


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a probability in (0, 1], got {text!r}")
    return value


def add_parser(commands, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``vrvm site`` on the sub-command parsers ``commands``."""
    site = commands.add_parser(
        "site",
        parents=[common],
        help="where k bases should stand (exact MILP), or the fewest bases reaching demand",
        description="Choose bases among candidate sites. With --bases K: the K sites (the "
        "--fixed bases included) that maximise the demand-weighted probability that the "
        "best base reaches each demand point within --within, averaged over the --depart "
        "times; solved exactly (HiGHS), with the greedy answer and the gap beside it. With "
        "--min-probability P: the fewest sites such that demand points holding a share "
        "--share of the demand (default all) are reached within --within with probability "
        "at least P. Point files (CSV or Parquet) hold lat and lon (degrees) with an "
        "optional name, or a zone column of zone ids (H3 cells, or with --zones the ids "
        "of a GeoJSON zone file); the demand file may hold a demand or weight column "
        "(default: every point alike).",
    )
    site.add_argument("model", metavar="MODEL", help="model directory")
    site.add_argument("--candidates", required=True, metavar="FILE", help="candidate sites")
    site.add_argument("--demand", required=True, metavar="FILE", help="demand points")
    goal = site.add_mutually_exclusive_group(required=True)
    goal.add_argument(
        "--bases", type=positive_int, metavar="K", help="number of bases, fixed ones included"
    )
    goal.add_argument(
        "--min-probability",
        type=_probability,
        metavar="P",
        help="instead of --bases: the fewest bases reaching the demand with probability >= P",
    )
    site.add_argument(
        "--share",
        type=_probability,
        default=None,
        metavar="Q",
        help="with --min-probability: the share of the demand to reach (default 1: all)",
    )
    site.add_argument(
        "--within",
        required=True,
        type=travel_time_s,
        metavar="T",
        help="the time limit with its unit: 8min, 480s or 0.5h",
    )
    site.add_argument(
        "--depart",
        required=True,
        action="append",
        type=date_time,
        metavar="TIME",
        help="departure time, e.g. '2016-05-03 08:00' (the model's time zone unless the "
        "time has an offset); repeat it to average over several",
    )
    site.add_argument("--fixed", metavar="FILE", help="existing bases to keep (points)")
    site.add_argument(
        "--zones",
        type=_zones,
        default=None,
        metavar="FILE[:ID]",
        help="GeoJSON zone polygons the zone columns name (default: H3 cell ids)",
    )
    site.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop the solver after this long and report the best sites found and the "
        "proven bound (default: solve to optimality)",
    )
    site.add_argument("--out", required=True, metavar="FILE", help="the chosen sites (CSV)")
    site.add_argument(
        "--assignments",
        metavar="FILE",
        help="also write each demand point's site and probability (CSV)",
    )
    site.set_defaults(handler=cmd_site)
    return site


# ----------------------------------------------------------------------- the command
def _raw_table(path: str) -> pd.DataFrame:
    """The file as text cells (CSV) or as stored (Parquet); read_points has checked it."""
    with open(path, "rb") as handle:
        data = handle.read()
    if data[:4] == b"PAR1":
        return pd.read_parquet(io.BytesIO(data))
    return pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, skipinitialspace=True)


def demand_weights(path: str) -> np.ndarray | None:
    """The ``demand`` or ``weight`` column of a demand file (None without one).

    Raises ValueError naming the file, the column and the first bad rows (file lines,
    header = line 1) for a cell that is not a finite non-negative number.
    """
    frame = _raw_table(path)
    found = [c for c in frame.columns if str(c).strip().lower() in _WEIGHT_COLUMNS]
    if not found:
        return None
    if len(found) > 1:
        raise ValueError(f"{path}: both {found[0]!r} and {found[1]!r}: give one weight column")
    column = found[0]
    raw = frame[column]
    text = raw if pd.api.types.is_numeric_dtype(raw) else raw.astype("string").str.strip()
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.flatnonzero(~(np.isfinite(values) & (values >= 0)))
    if bad.size:
        shown = ", ".join(f"row {i + 2} ({raw.iloc[i]!r})" for i in bad[:5])
        more = f" and {bad.size - 5:,} more" if bad.size > 5 else ""
        raise ValueError(
            f"{path}: column {column!r}: {shown}{more}: expected a non-negative number"
        )
    return values


def _write_csv(path: str, table: pd.DataFrame) -> None:
    atomic_write(Path(path), lambda tmp: safe_cells(table).to_csv(tmp, index=False))


def cmd_site(args, stdout: IO[str], stderr: IO[str]) -> int:
    """``vrvm site``: read the points, predict the probabilities, solve, write the sites."""
    if args.share is not None and args.min_probability is None:
        raise UsageError("--share needs --min-probability (it is the fewest-bases question)")
    zones = zone_file(args.zones)
    candidates = read_points(args.candidates, zones=zones)
    demand = read_points(args.demand, zones=zones)
    weights = demand_weights(args.demand)
    fixed = read_points(args.fixed, zones=zones) if args.fixed is not None else None
    model = TravelTimeModel.load(args.model)
    if not args.quiet:
        stderr.write(
            f"{len(candidates):,} candidates x {len(demand):,} demand points, "
            f"{len(args.depart)} departure time(s), T = {args.within / 60:g} min\n"
        )
        stderr.flush()
    options = {"fixed": fixed, "weights": weights, "time_limit_s": args.time_limit}
    if args.min_probability is None:
        result = site_bases(
            model, candidates, demand, args.bases, args.within, args.depart, **options
        )
    else:
        result = fewest_bases(
            model,
            candidates,
            demand,
            args.within,
            args.depart,
            args.min_probability,
            share=1.0 if args.share is None else args.share,
            **options,
        )
    _write_csv(args.out, result.sites)
    if args.assignments is not None:
        _write_csv(args.assignments, result.demand_table())
    t = f"{args.within / 60:g} min"
    if result.problem == "coverage":
        lines = [
            f"sites: {len(result.sites)} ({int(result.sites['fixed'].sum())} fixed)",
            f"objective: demand-weighted P(best base within {t}) = {result.objective:.6f}",
            f"greedy objective: {result.greedy_objective:.6f}",
            f"gap: {100 * result.gap:.4f} % ((optimum - greedy) / optimum)",
        ]
    else:
        lines = [
            f"sites: {len(result.sites)} ({int(result.sites['fixed'].sum())} fixed)",
            f"share covered: {100 * result.covered_share:.2f} % of the demand reached within "
            f"{t} with probability >= {result.min_probability:g} (asked: "
            f"{100 * result.share:g} %)",
            f"greedy sites: {result.greedy_objective:.0f}",
            f"gap: {100 * result.gap:.4f} % ((greedy - optimum) / optimum)",
        ]
    mip_gap = "n/a" if math.isnan(result.mip_gap) else f"{result.mip_gap:.2e}"
    lines.append(
        f"solver: {result.status} (proven bound {result.bound:.6g}; HiGHS MIP gap {mip_gap}); "
        f"predicted in {result.predict_s:.1f} s, solved in {result.solve_s:.1f} s"
    )
    stdout.write("\n".join(lines) + "\n")
    if not args.quiet:
        stderr.write(f"wrote {len(result.sites)} sites to {os.fspath(args.out)}\n")
    return 0
