"""What a viewer's fleet CSV upload (bases, demand) costs: time and peak memory, read or refused.

The Plan page's bases and demand files can be uploaded by anyone who can see the page
(anonymous viewers included), so each must be cheap to refuse. Each case runs
:func:`vrvm.services.planning.fleet_files.read_demand_csv` (the bases reader takes the same
path) in a fresh child process on the bytes of one file. Cases:

``demand_10k``
    A good demand file: 10,000 rows of ``zone,demand`` (the work a real upload costs).
``columns_200k``
    A 1.9 MB file whose header has 200,000 columns (``c000001,...``) and one row.
``columns_1e6``
    A header of 1,000,000 columns (``a,a,a,...``: 2 MB) and one row.
``wide_row``
    A two-column header, then one row of 1,000,000 fields.

Run from the repository root::

    python benchmarks/bench_uploads.py [--cases columns_200k,columns_1e6] [--json FILE]
    python benchmarks/bench_uploads.py --pyarrow   # the parse by pyarrow instead

``--pyarrow`` times what pyarrow's CSV reader (:func:`pyarrow.csv.read_csv`, every column
as text, a row wider than the header refused by its ``invalid_row_handler``) takes on the
same bytes, in place of :func:`~vrvm.trips.files.small_csv.read_small_csv`'s pandas parse
and its count of fields on the raw bytes: the comparison behind that module's docstring.

Prints a Markdown table: outcome, seconds, and the child's peak resident size
(``ru_maxrss``) and its growth over the size just before the read.

Results (2026-11-27, 2 cores shared, load average about 11): before issue 32 the
200,000-column header took 95.8 s and 523 MB to be refused after parsing, and the
million-column header and the million-field row were still running after 240 s; now
the headers are refused in 1 ms on the raw bytes and the wide row in 0.65 s (31 MB);
a good 10,000-row demand file reads in 0.12 s. Details: ``BENCHMARKS.md``, "Issue 32:
bounded uploads".
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # vrvm is imported in the child, from this checkout
TIMEOUT_S = 240.0
"""A case still running after this long is stopped and reported as such."""
CASES = ("demand_10k", "columns_200k", "columns_1e6", "wide_row")


def upload(case: str) -> bytes:
    """The bytes of a case."""
    if case == "demand_10k":
        rows = "".join(f"z{k % 4},{k % 7 + 1}\n" for k in range(10_000))
        return ("zone,demand\n" + rows).encode()
    if case == "columns_200k":
        header = ",".join(f"c{k:07d}" for k in range(200_000))  # 9.5 bytes a column
        return (header + "\n" + ",".join("1" for _ in range(2)) + "\n").encode()
    if case == "columns_1e6":
        return ("a," * 999_999 + "a\n1,2\n").encode()
    if case == "wide_row":
        return ("zone,demand\n" + "1," * 999_999 + "1\n").encode()
    raise ValueError(f"unknown case {case!r}")


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _area():
    import pandas as pd

    from vrvm.services.map.area import ServiceArea, ViewState

    grid = pd.DataFrame(
        {
            "zone": [f"z{k}" for k in range(4)],
            "label": [f"Zone {k + 1}" for k in range(4)],
            "lat": [0.0, 0.1, 0.2, 0.3],
            "lon": [0.0, 0.0, 0.0, 0.0],
        }
    )
    return ServiceArea(grid, 8, (0, 0, 0.3, 0), ViewState(0, 0, 10))


def _pyarrow_parse(data: bytes) -> None:
    """Every cell as text by pyarrow's CSV reader; a row wider than the header refused
    (an ``ArrowInvalid``, a ``ValueError``)."""
    import io

    import pyarrow as pa
    import pyarrow.csv as pacsv

    def refuse(row):  # pyarrow then raises its own error, naming the fields
        return "error" if row.actual_columns > row.expected_columns else "skip"

    names = pacsv.read_csv(io.BytesIO(data.split(b"\n", 1)[0] + b"\n")).column_names
    pacsv.read_csv(
        io.BytesIO(data),
        parse_options=pacsv.ParseOptions(invalid_row_handler=refuse),
        convert_options=pacsv.ConvertOptions(
            column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False
        ),
    )


def child(case: str, path: Path, pyarrow: bool = False) -> dict:
    """One case in this (fresh) process."""
    from vrvm.services.planning import fleet_files

    area = _area()
    data = path.read_bytes()
    rss_before = _rss_mb()
    started = time.perf_counter()
    try:
        if pyarrow:
            _pyarrow_parse(data)
        else:
            fleet_files.read_demand_csv(data, area, source=f"{case}.csv")
        outcome, message = "read", ""
    except ValueError as error:
        outcome, message = "refused", str(error)
    seconds = time.perf_counter() - started
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "case": case,
        "file_mb": len(data) / 2**20,
        "outcome": outcome,
        "message": message,
        "seconds": seconds,
        "max_rss_mb": max_rss,
        "rss_growth_mb": max_rss - rss_before,
    }


def run(case: str, pyarrow: bool = False) -> dict:
    data = upload(case)
    with tempfile.NamedTemporaryFile(suffix=".csv", delete=False) as file:
        file.write(data)
    try:
        command = [sys.executable, __file__, "--child", case, file.name]
        command += ["--pyarrow"] * pyarrow
        started = time.perf_counter()
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, check=True, timeout=TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            seconds = time.perf_counter() - started
            return {
                "case": case,
                "file_mb": len(data) / 2**20,
                "outcome": "timeout",
                "seconds": seconds,
            }
    finally:
        os.unlink(file.name)
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(results: list[dict]) -> str:
    rows = ["| case | file MB | outcome | s | RSS growth MB | max RSS MB |", "|" + "---|" * 6]
    for r in results:
        if r["outcome"] == "timeout":
            rows.append(
                f"| {r['case']} | {r['file_mb']:.1f} | still running after "
                f"{r['seconds']:.0f} s | | | |"
            )
            continue
        rows.append(
            f"| {r['case']} | {r['file_mb']:.1f} | {r['outcome']} | {r['seconds']:.3f} "
            f"| {r['rss_growth_mb']:.0f} | {r['max_rss_mb']:.0f} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--pyarrow", action="store_true", help="parse with pyarrow instead")
    parser.add_argument("--child", nargs=2, metavar=("CASE", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]), args.pyarrow)))
        return 0
    results = []
    for case in args.cases.split(","):
        result = run(case.strip(), args.pyarrow)
        results.append(result)
        print(f"{case}: {result['seconds']:.1f} s", file=sys.stderr)
    print(table(results))
    for r in results:
        if r.get("message"):
            print(f"\n{r['case']}: {r['message']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
