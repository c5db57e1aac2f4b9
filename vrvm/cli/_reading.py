"""How the command line reads trip files: the shared options and ``vrvm inspect``.

Every command that reads trips (``train``, ``update``, ``evaluate``, ``predict``,
``inspect``) takes the same options, with the roles and formats of
:func:`vrvm.read_trips`: ``--map ROLE=COLUMN`` (repeatable), ``--date-format``,
``--clock-format``, ``--weekday-format``, ``--tz``, ``--schema`` and
``--zones FILE.geojson[:ID_PROPERTY]``.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import IO, Any

import pandas as pd

from vrvm.cli._args import time_zone
from vrvm.trips.formats import CLOCK_FORMATS, WEEKDAY_FORMATS, check_date_format
from vrvm.trips.layouts import ROLE_LABELS, ROLES, SCHEMAS
from vrvm.trips.reader import read_layout, read_trips

__all__ = ["MIN_TRAINING_TRIPS", "cmd_inspect", "reading_options", "reading_parser"]

MIN_TRAINING_TRIPS = 24
"""Fewest kept trips ``vrvm inspect`` calls trainable: 3 for each of the 8 default members."""

_N_SHOWN = 10


def _role_column(text: str) -> tuple[str, str]:
    role, sep, column = text.partition("=")
    role, column = role.strip(), column.strip()
    if not sep or not column:
        raise argparse.ArgumentTypeError(
            f"expected ROLE=COLUMN such as start_date=day, got {text!r}"
        )
    if role not in ROLES:
        raise argparse.ArgumentTypeError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
    return role, column


def _date_format(text: str) -> str:
    try:
        return check_date_format(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _zones(text: str) -> tuple[str, str | None]:
    """``FILE`` or ``FILE:ID_PROPERTY`` (a colon that is part of an existing path stays)."""
    if os.path.exists(text) or ":" not in text:
        return text, None
    path, _, prop = text.rpartition(":")
    return path, prop or None


def reading_parser() -> argparse.ArgumentParser:
    """The parent parser of the reading options."""
    reading = argparse.ArgumentParser(add_help=False)
    group = reading.add_argument_group("reading trip files (see docs/data.md)")
    group.add_argument(
        "--schema",
        choices=("auto", *SCHEMAS),
        default="auto",
        help="column layout of the input (default: detected from the header)",
    )
    group.add_argument(
        "--map",
        type=_role_column,
        action="append",
        default=[],
        metavar="ROLE=COLUMN",
        help="say which column holds a role (repeatable): " + ", ".join(ROLES),
    )
    group.add_argument(
        "--date-format",
        type=_date_format,
        default=None,
        metavar="FMT",
        help="auto, iso, dayfirst, monthfirst, unix_s, unix_ms or a strftime pattern "
        "such as %%d-%%m-%%Y (default: detected; ambiguous day/month order is an error)",
    )
    group.add_argument(
        "--clock-format",
        choices=CLOCK_FORMATS,
        default=None,
        help="how start_clock is written (default: detected)",
    )
    group.add_argument(
        "--weekday-format",
        choices=WEEKDAY_FORMATS,
        default=None,
        help="how weekday is written: names, iso (Monday=1), sunday1, monday0",
    )
    group.add_argument(
        "--tz", type=time_zone, default=None, help="IANA zone of times without an offset"
    )
    group.add_argument(
        "--zones",
        type=_zones,
        default=None,
        metavar="FILE[:ID]",
        help="GeoJSON zone polygons for trips given by zone ids, with the id property",
    )
    return reading


def reading_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of :func:`vrvm.read_trips` from the parsed options."""
    column_map = dict(args.map)
    if len(column_map) < len(args.map):
        roles = [role for role, _ in args.map]
        twice = sorted({r for r in roles if roles.count(r) > 1})
        raise ValueError(f"--map names {', '.join(twice)} more than once")
    zones = None
    if args.zones is not None:
        from vrvm.trips.zone_files import ZoneFile  # shapely loads only when needed

        path, id_property = args.zones
        zones = ZoneFile.read(path, id_property=id_property)
    return {
        "schema": args.schema,
        "tz": args.tz,
        "column_map": column_map or None,
        "date_format": args.date_format,
        "clock_format": args.clock_format,
        "weekday_format": args.weekday_format,
        "zones": zones,
    }


def _zone_origin(report, options: dict[str, Any]) -> str:
    if options["tz"]:
        return "given with --tz"
    if report.tz_inferred:
        return "the zone where the trips are"
    return "the layout's city" if report.tz != "UTC" else "no zone known: UTC"


def cmd_inspect(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """``vrvm inspect FILE``: layout, roles, ten parsed rows, the report; 0 if trainable."""
    options = reading_options(args)
    layout, columns = read_layout(
        args.trips, schema=options["schema"], column_map=options["column_map"]
    )
    trips, report = read_trips(args.trips, row_numbers=True, **options)
    used = {column: role for role, column in layout.mapping.items()}
    width = max(len(str(c)) for c in columns)
    lines = [
        f"file: {args.trips}",
        f"layout: {layout.schema}" + (f" ({layout.label})" if layout.label else ""),
        "columns and their roles:",
    ]
    for column in columns:
        role = used.get(column)
        label = re.sub(r"^\.\.\. (or |and )?", "", ROLE_LABELS[role]) if role else ""
        meaning = f"{role}: {label}" if role else "(not used)"
        lines.append(f"  {column:<{width}}  {meaning}")
    lines.append(f"time zone: {report.tz} ({_zone_origin(report, options)})")
    lines.append("")
    lines.append("cleaning: " + report.summary())
    lines.append("")
    shown = trips.head(_N_SHOWN)
    if report.dateless:  # the reference week's dates mean nothing: say weekday and clock
        shown = shown.assign(start_time=shown["start_time"].dt.strftime("%a %H:%M"))
    if len(shown):
        lines.append(f"first {len(shown)} trips as read (start in local time, travel time in s):")
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            lines.append(shown.to_string(index=False))
        lines.append("")
    if report.n_kept >= MIN_TRAINING_TRIPS:
        lines.append(f"can be trained on: {report.n_kept:,} trips kept")
        status = 0
    else:
        lines.append(
            f"cannot be trained on: {report.n_kept:,} trips kept after cleaning, at least "
            f"{MIN_TRAINING_TRIPS} needed"
        )
        status = 1
    stdout.write("\n".join(lines) + "\n")
    return status
