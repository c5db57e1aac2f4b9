"""What the checks of formats, units and date range cost a read (issue 31).

Every read now checks that its formats fit their columns
(:func:`vrvm.trips.files.parsing.check_formats`: at most 1 % of a time column unreadable, a
stated date order not contradicted), that the travel-time unit gives plausible speeds
(median over up to 100,000 rows) and drops departures outside 1970-2100
(``out_of_range_time``). This script writes a CSV of ``--rows`` trips
(``numpy.random.default_rng(0)``) to a temporary folder, in one of three ``--layout`` s:

* ``date-hours`` (default): the layout of the issue, day-first ``date`` (``16-3-2016``),
  decimal-hour ``Time``, coordinates, ``trip_duration``;
* ``date-clock``: the same with a text clock ``Time`` (``14:39:07``, up to 86,400
  distinct values);
* ``datetime-12h``: one ``start`` column as the Chicago portal writes it, month-first
  with a 12-hour clock (``03/16/2016 02:39:07 PM``), nearly every value distinct: the
  worst case for the date and clock parsers, which work per distinct value;

and reads it with :func:`vrvm.read_trips` and every role mapped, ``--repeat`` times each:

* ``checked``: as shipped;
* ``unchecked``: with :func:`check_formats` and the unit check replaced by no-ops (the
  per-column records are still built; they are the rest of the cost), for the
  difference;
* ``refused``: the same file with ``date_format="monthfirst"``, the time to the
  refusal (the failing values are tried with the other formats only then);
* ``parts``: the checks alone on the parsed file (best of ``--repeat``), next to its
  parse: :func:`check_formats`, the unit check and the per-column records
  (:meth:`ColumnCheck.of`), which a loaded machine measures far more steadily than the
  difference of two whole reads;
* ``parsers``: the date and clock parsers of :mod:`vrvm.trips.files.formats` alone on the
  raw columns (best of ``--repeat``).

Peak memory is ``tracemalloc``'s peak over one read (Python and NumPy allocations).

Run from the repository root::

    python benchmarks/bench_format_checks.py [--rows 1000000] [--repeat 3] [--layout date-hours]

Results: see "Checks of formats" in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

import vrvm.trips.files.cleaning as cleaning
from vrvm.trips.files.formats import (
    FormatMismatchError,
    TimeFormats,
    parse_clock_s,
    parse_date_text,
)
from vrvm.trips.files.layouts import resolve_layout
from vrvm.trips.files.parsing import ColumnCheck, parse_columns
from vrvm.trips.files.reader import read_trips

PLACES = {
    "travel_time_s": "trip_duration",
    "origin_lat": "pickup_latitude",
    "origin_lon": "pickup_longitude",
    "dest_lat": "dropoff_latitude",
    "dest_lon": "dropoff_longitude",
}
SPLIT = {"start_date": "date", "start_clock": "Time", **PLACES}
ROLES = {
    "date-hours": SPLIT,
    "date-clock": SPLIT,
    "datetime-12h": {"start_time": "start", **PLACES},
}
WRONG_ORDER = {"date-hours": "monthfirst", "date-clock": "monthfirst", "datetime-12h": "dayfirst"}


def write_file(path: Path, n: int, layout: str = "date-hours") -> None:
    rng = np.random.default_rng(0)
    day = pd.Timestamp("2016-01-01") + pd.to_timedelta(rng.integers(0, 366, n), unit="D")
    hours = rng.uniform(0, 24, n)
    lat, lon = 40.75 + rng.normal(0, 0.02, n), -73.98 + rng.normal(0, 0.02, n)
    if layout == "datetime-12h":
        start = pd.Series(day + pd.to_timedelta(np.floor(hours * 3600), unit="s"))
        when = {"start": start.dt.strftime("%m/%d/%Y %I:%M:%S %p")}
    else:
        dates = day.day.astype(str) + "-" + day.month.astype(str) + "-" + day.year.astype(str)
        clocks = np.round(hours, 4)
        if layout == "date-clock":
            clocks = pd.Series(pd.to_timedelta(np.floor(hours * 3600), unit="s"))
            clocks = clocks.astype(str).str[-8:]  # "0 days 14:39:07" -> "14:39:07"
        when = {"date": dates, "Time": clocks}
    frame = pd.DataFrame(
        {
            **when,
            "pickup_latitude": lat,
            "pickup_longitude": lon,
            "dropoff_latitude": lat + rng.normal(0, 0.02, n),
            "dropoff_longitude": lon + rng.normal(0, 0.02, n),
            "trip_duration": np.round(rng.uniform(300, 1800, n)),
        }
    )
    frame.to_csv(path, index=False)


def timed(read, repeat: int) -> tuple[float, float]:
    """Best wall time of ``repeat`` reads (s) and the tracemalloc peak of one (MiB)."""
    best = np.inf
    for _ in range(repeat):
        started = time.perf_counter()
        read()
        best = min(best, time.perf_counter() - started)
    tracemalloc.start()
    read()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return best, peak


def best_ms(run, repeat: int) -> float:
    best = np.inf
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return 1e3 * best


def parts(path: Path, repeat: int, roles: dict[str, str]) -> None:
    raw = pd.read_csv(path)
    layout = resolve_layout(list(raw.columns), "auto", roles, path.name)
    parsed = None

    def parse():
        nonlocal parsed
        parsed = parse_columns(raw, layout, "America/New_York", TimeFormats())

    parse_ms = best_ms(parse, repeat)
    rows = np.arange(len(raw)) + 2
    formats_ms = best_ms(lambda: cleaning.check_formats(parsed, rows, path.name), repeat)
    unit_ms = best_ms(lambda: cleaning.check_duration_unit(parsed, path.name), repeat)
    read = np.ones(len(raw), dtype=bool)

    time_roles = [role for role in ("start_time", "start_date", "start_clock") if role in roles]

    def records():
        for role in time_roles:
            column = roles[role]
            ColumnCheck.of(role, column, "date_format", "auto", False, raw[column], read)

    records_ms = best_ms(records, repeat)
    print(
        f"     parts: parse {parse_ms:,.0f} ms; check_formats {formats_ms:.1f} ms, unit "
        f"check {unit_ms:.1f} ms, the {len(time_roles)} column records {records_ms:.1f} ms"
    )
    timings = []
    for role in time_roles:
        values = raw[roles[role]]
        if role == "start_clock":
            run = lambda values=values: parse_clock_s(values)  # noqa: E731
        else:
            run = lambda values=values: parse_date_text(values)  # noqa: E731
        distinct = values.nunique()
        timings.append(f"{role} {best_ms(run, repeat):,.0f} ms ({distinct:,} distinct)")
    print(f"   parsers: {'; '.join(timings)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--layout", choices=sorted(ROLES), default="date-hours")
    args = parser.parse_args()
    roles = ROLES[args.layout]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trips.csv"
        write_file(path, args.rows, args.layout)

        def read():
            return read_trips(path, column_map=roles, tz="America/New_York")

        def refused():
            try:
                read_trips(
                    path,
                    column_map=roles,
                    tz="America/New_York",
                    date_format=WRONG_ORDER[args.layout],
                )
            except FormatMismatchError:
                return
            raise AssertionError("the wrong order was not refused")

        print(
            f"{platform.processor() or platform.machine()}, {args.rows:,} rows, "
            f"layout {args.layout}"
        )
        checked = timed(read, args.repeat)
        real = cleaning.check_formats, cleaning.check_duration_unit
        cleaning.check_formats = cleaning.check_duration_unit = lambda *a, **k: None
        try:
            unchecked = timed(read, args.repeat)
        finally:
            cleaning.check_formats, cleaning.check_duration_unit = real
        refusal = timed(refused, args.repeat)
        for name, (seconds, peak) in (
            ("checked", checked),
            ("unchecked", unchecked),
            ("refused", refusal),
        ):
            print(f"{name:>10}: {seconds:6.2f} s, peak {peak:7.1f} MiB")
        parts(path, args.repeat, roles)


if __name__ == "__main__":
    main()
