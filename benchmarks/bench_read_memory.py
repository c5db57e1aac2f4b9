"""Benchmark of what reading a trip file costs: peak resident memory and time.

Issue 12 ("Resource limits for everything that reads a file") asks that the memory of
every reader be bounded and measured. Each case runs in a fresh child process (this
script with ``--child``), which does one read and reports its wall time and its peak
resident memory (``ru_maxrss``, and the kernel's high-water mark ``VmHWM``, which an
exec starts afresh); a child that only imports vrvm gives the baseline beside it (what
the interpreter, pandas and vrvm take before reading anything). The runner itself
never imports vrvm (the inputs are made by a child too): a child's ``ru_maxrss``
counts the memory its parent had when it was forked.

Cases (data generated once into ``--work``, streaming, so the benchmark itself stays
small in memory):

``chicago``
    :func:`vrvm.read_trips` on the Chicago sample
    (``../shared/data/chicago_taxi_trips.csv``, 15,000 rows of 18 columns).
``nyc``, ``sf``
    :func:`vrvm.read_trips` on the NYC sample (``nyc_taxi_2016_sample.csv``) and the
    San Francisco bike-share file whose last line is cut off
    (``sf_bikeshare_2019-02_partial.csv``).
``synthetic``, ``synthetic_gz``, ``synthetic_bz2``, ``synthetic_xz``, ``synthetic_zip``
    :func:`vrvm.read_trips` on 1,000,000 synthetic trips
    (:func:`vrvm.synthetic_city`, ten seeds of 100,000), as CSV, gzip, bz2, xz (preset
    1) and a zip archive holding the CSV.
``bomb_gz``, ``bomb_bz2``
    :func:`vrvm.read_trips` on a valid header and one row repeated: 2 GiB of text in
    6.2 MB of gzip (336-fold) or 0.6 MB of bz2 (3,400-fold), refused by the ratio guard
    (past its first 100 MiB): the time and memory a bomb costs before it is stopped.
``expand_gz``, ``expand_bz2``, ``expand_xz``, ``expand_bomb_gz``, ``expand_bomb_bz2``
    :func:`vrvm.trips.files.reader.check_expansion` (decompression through the expansion
    guard alone, as an upload is checked first) on the synthetic trips and the bombs.
``wide_header``, ``wide_header_gz``
    :func:`vrvm.read_trips` on a header of 1,000,000 columns (2 MB, one row), plain and
    gzipped: refused on the raw header bytes.
``batches_own``, ``batches_pyarrow``, ``batches_pyarrow_exact`` (and ``_wide``)
    Cutting a CSV file into batches and parsing every column, on the synthetic trips
    (and, ``_wide``, on the Chicago sample 60 times: 900,120 rows of 23 columns): the
    reader's own cutter and pandas (``vrvm.trips.files._batches.csv_batches``), against
    pyarrow's streaming reader (:func:`pyarrow.csv.open_csv`, every column read as text)
    typed by pyarrow's casts or (``_exact``) by :func:`pandas.to_numeric`, which gives
    pandas' doubles; ``batches_pyarrow_exact_needed_wide`` converts only the 6 columns a
    layout needs. The comparison behind the docstring of ``_batches``.
``doubles``
    The share of the NYC and SF samples' coordinates that pyarrow's cast from text and
    pandas' C parser read as different doubles.
``upload_rows``
    The dashboard's upload path (:func:`vrvm.services.analyst.uploads.read_upload`) on a gzip
    of about 110 MB that expands to 1.5 GB of valid rows (some 20 million; each
    synthetic row 16 times with a different travel time, so gzip packs it 13-fold,
    under the 100-fold ratio guard and the 2,000 MB expansion cap): refused by the rows
    limit (``VRVM_MAX_UPLOAD_ROWS``, 2,000,000) where the code has one.
``predict``
    ``vrvm predict`` with a small model (2 members, 100 basis functions) on 1,000,000
    queries (76 MB of CSV, travel times included, so the scores are written too).
``inspect``
    ``vrvm inspect`` on a 1 GB CSV (the synthetic trips, 13 times).

``--code DIR`` imports vrvm from ``DIR`` instead (a copy of the code before a change),
``--label`` names the run in the results; the table shows every label measured.

Usage, from the repository root::

    python benchmarks/bench_read_memory.py --label after          # all cases, ~20 min
    python benchmarks/bench_read_memory.py --code /tmp/before --label before
    python benchmarks/bench_read_memory.py --cases chicago,synthetic --quick

Writes ``benchmarks/results/bench_read_memory.json`` (runs are merged by label) and
prints one Markdown table. Timings are wall clock on a machine that may be shared
(the 1-minute load average is recorded with each run); the CPU time of the process
(``cpu_seconds``, all its threads) is recorded too, and varies less with the load.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import lzma
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("VRVM_SHARED_DATA", REPO.parent / "shared" / "data"))
RESULTS = Path(__file__).resolve().parent / "results" / "bench_read_memory.json"
CASES = (
    "baseline",
    "chicago",
    "nyc",
    "sf",
    "synthetic",
    "synthetic_gz",
    "synthetic_bz2",
    "synthetic_xz",
    "synthetic_zip",
    "bomb_gz",
    "bomb_bz2",
    "expand_gz",
    "expand_bz2",
    "expand_xz",
    "expand_bomb_gz",
    "expand_bomb_bz2",
    "wide_header",
    "wide_header_gz",
    "batches_own",
    "batches_pyarrow",
    "batches_pyarrow_exact",
    "batches_own_wide",
    "batches_pyarrow_exact_wide",
    "batches_pyarrow_exact_needed_wide",
    "doubles",
    "upload_rows",
    "predict",
    "inspect",
)
COMPRESSED = ("synthetic_gz", "synthetic_bz2", "synthetic_xz", "synthetic_zip")
REFUSED = ("bomb_gz", "bomb_bz2", "wide_header", "wide_header_gz")
NA_VALUES = [
    *("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND"),
    *("1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"),
]
"""pandas' default missing values, given to pyarrow so that both read the same cells as
missing."""
CHICAGO_ROLES = [
    *("trip_start_timestamp", "trip_seconds", "pickup_latitude", "pickup_longitude"),
    *("dropoff_latitude", "dropoff_longitude"),
]
MIB = 2**20


# ------------------------------------------------------------------------------ data
def _synthetic_lines(n_rows: int, seeds: int):
    """CSV text of ``n_rows`` synthetic trips in ``seeds`` parts (header first)."""
    from vrvm.trips.synthetic import synthetic_city

    per_part = n_rows // seeds
    for seed in range(seeds):
        part = synthetic_city(per_part, seed=seed)
        yield part.to_csv(index=False, header=seed == 0)


def prepare(work: Path, quick: bool) -> dict[str, Path]:
    """Write the inputs (once; kept in ``work`` between runs)."""
    work.mkdir(parents=True, exist_ok=True)
    scale = 10 if quick else 1
    files = {
        "synthetic": work / f"synthetic_{1_000_000 // scale}.csv",
        "synthetic_gz": work / f"synthetic_{1_000_000 // scale}.csv.gz",
        "synthetic_bz2": work / f"synthetic_{1_000_000 // scale}.csv.bz2",
        "synthetic_xz": work / f"synthetic_{1_000_000 // scale}.csv.xz",
        "synthetic_zip": work / f"synthetic_{1_000_000 // scale}.csv.zip",
        "bomb_gz": work / "bomb_2048MB.csv.gz",
        "bomb_bz2": work / "bomb_2048MB.csv.bz2",
        "wide": work / "chicago_x60.csv",
        "wide_header": work / "wide_header_1e6.csv",
        "wide_header_gz": work / "wide_header_1e6.csv.gz",
        "upload_rows": work / f"upload_{1536 // scale}MB.csv.gz",
        "inspect": work / f"inspect_{1024 // scale}MB.csv",
        "model": work / "model",
    }
    if not files["synthetic"].exists():
        with open(files["synthetic"].with_suffix(".tmp"), "w", newline="") as fh:
            for text in _synthetic_lines(1_000_000 // scale, 10):
                fh.write(text)
        files["synthetic"].with_suffix(".tmp").replace(files["synthetic"])
    openers = {
        "synthetic_gz": gzip.open,
        "synthetic_bz2": bz2.open,
        "synthetic_xz": lambda path, mode: lzma.open(path, mode, preset=1),
    }
    for case, opener in openers.items():
        if not files[case].exists():
            with open(files["synthetic"], "rb") as src, opener(files[case], "wb") as dst:
                shutil.copyfileobj(src, dst, 16 * MIB)
    if not files["synthetic_zip"].exists():
        with zipfile.ZipFile(files["synthetic_zip"], "w", zipfile.ZIP_DEFLATED) as archive:
            archive.write(files["synthetic"], "trips.csv")
    if not files["bomb_gz"].exists():
        _write_bomb(files["bomb_gz"], gzip.compress, 2048 * MIB)
    if not files["bomb_bz2"].exists():
        _write_bomb(files["bomb_bz2"], bz2.compress, 2048 * MIB)
    chicago = DATA / "chicago_taxi_trips.csv"
    if not files["wide"].exists() and chicago.is_file():
        _write_repeated(chicago, files["wide"], 60 * chicago.stat().st_size)
    if not files["wide_header"].exists():
        wide = ("a," * 999_999 + "a\n" + "1," * 999_999 + "1\n").encode()
        files["wide_header"].write_bytes(wide)
        files["wide_header_gz"].write_bytes(gzip.compress(wide))
    if not files["upload_rows"].exists():
        _write_upload(files["upload_rows"], (1536 // scale) * MIB)
    if not files["inspect"].exists():
        _write_repeated(files["synthetic"], files["inspect"], (1024 // scale) * MIB)
    if not files["model"].exists():
        from vrvm import TravelTimeModel, synthetic_city

        model = TravelTimeModel(
            n_members=2, kernel_widths=[1.5, 3.0], max_basis=100, n_jobs=1, random_state=0
        )
        model.fit(synthetic_city(2000, seed=1)).save(files["model"])
    return files


def _write_upload(path: Path, n_bytes: int) -> None:
    """A gzip of valid rows: 4,096 synthetic trips, each written 16 times with a
    different travel time, repeated until ``n_bytes`` of text (level 1, ~13-fold)."""
    from vrvm.trips.synthetic import synthetic_city

    pool = synthetic_city(4096, seed=7)
    block = []
    for line in pool.to_csv(index=False, header=False).splitlines():
        head, travel_time = line.rsplit(",", 1)
        block += [f"{head},{float(travel_time) + k:.1f}\n" for k in range(16)]
    data = "".join(block).encode()
    header = (",".join(pool.columns) + "\n").encode()
    with gzip.open(path.with_suffix(".tmp"), "wb", compresslevel=1) as fh:
        fh.write(header)
        for _ in range(n_bytes // len(data) + 1):
            fh.write(data)
    path.with_suffix(".tmp").replace(path)


def _write_bomb(path: Path, compress, n_bytes: int) -> None:
    """A valid trip header, then one row again and again to ``n_bytes`` of text: the
    compressed stream of 1 MiB of rows written again and again (gzip and bz2 files may
    hold several streams, and readers read them all)."""
    header = "trip_start_timestamp,trip_seconds,pickup_latitude,pickup_longitude,"
    header += "dropoff_latitude,dropoff_longitude\n"
    row = "2016-01-01 08:00:00,600,41.88,-87.63,41.90,-87.65\n"
    block = compress((row * (MIB // len(row))).encode())
    with open(path.with_suffix(".tmp"), "wb") as fh:
        fh.write(compress(header.encode()))
        for _ in range(n_bytes // MIB):
            fh.write(block)
    path.with_suffix(".tmp").replace(path)


def _write_repeated(source: Path, path: Path, n_bytes: int) -> None:
    """``source``'s header and its rows again and again, to ``n_bytes``."""
    with open(source, "rb") as fh:
        header = fh.readline()
        body = fh.read()
    with open(path.with_suffix(".tmp"), "wb") as out:
        out.write(header)
        for _ in range(max(1, n_bytes // len(body))):
            out.write(body)
    path.with_suffix(".tmp").replace(path)


# ----------------------------------------------------------------------------- child
def _pyarrow_batches(path: str, exact: bool, only: list[str] | None = None):
    """The batches of a CSV file as pyarrow's streaming reader cuts them (8 MiB blocks),
    every column read as text, then typed: by pyarrow's casts, or (``exact``) by
    :func:`pandas.to_numeric`. A best case for pyarrow: rows it finds invalid are
    skipped, and nothing reads as pandas would (row numbers, short rows, spaces)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = list(pd.read_csv(path, nrows=0).columns)
    reader = pacsv.open_csv(
        path,
        read_options=pacsv.ReadOptions(block_size=8 * MIB, column_names=names, skip_rows=1),
        parse_options=pacsv.ParseOptions(
            newlines_in_values=True, ignore_empty_lines=False, invalid_row_handler=lambda r: "skip"
        ),
        convert_options=pacsv.ConvertOptions(
            column_types=dict.fromkeys(names, pa.string()),
            null_values=NA_VALUES,
            strings_can_be_null=True,
            quoted_strings_can_be_null=True,
            include_columns=only,
        ),
    )
    for batch in reader:
        yield pd.DataFrame({n: _typed(batch.column(n), exact) for n in batch.schema.names})


def _typed(column, exact: bool):
    """A column of text as pandas types it: numbers if every value is one, else text."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        numbers = pc.cast(column, pa.float64())
    except pa.ArrowInvalid:
        return column.to_pandas()
    if exact:
        return pd.to_numeric(column.to_pandas())
    if numbers.null_count == 0 and pc.all(pc.match_substring_regex(column, r"^[+-]?\d+$")).as_py():
        return pc.cast(column, pa.int64()).to_numpy()  # pandas reads whole numbers as int64
    return numbers.to_numpy(zero_copy_only=False)


def _batches_case(case: str, files: dict[str, str]) -> dict[str, Any]:
    path = files["wide" if case.endswith("_wide") else "synthetic"]
    if case.startswith("batches_own"):
        from vrvm.trips.files import _batches, _source

        frames = (f for f, _ in _batches.csv_batches(_source.open_source(path, None), ","))
    else:
        only = CHICAGO_ROLES if "needed" in case else None
        frames = _pyarrow_batches(path, exact="pyarrow_exact" in case, only=only)
    n_rows = n_batches = 0
    for frame in frames:
        n_rows, n_batches = n_rows + len(frame), n_batches + 1
    return {"rows": n_rows, "batches": n_batches}


def _doubles(files: dict[str, str]) -> dict[str, Any]:
    """Coordinates that pyarrow's cast and pandas' C parser read as different doubles."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    found = {}
    for case in ("nyc", "sf"):
        text = pd.read_csv(files[case], dtype=str, keep_default_na=False)
        parsed = pd.read_csv(files[case])
        columns = [c for c in parsed.columns if "lat" in c or "lon" in c]
        differ = total = 0
        for column in columns:
            cells = text[column].to_numpy(dtype=object)
            known = parsed[column].notna().to_numpy()
            arrow = pc.cast(pa.array(cells[known]), pa.float64()).to_numpy()
            differ += int(np.sum(arrow != parsed[column].to_numpy()[known]))
            total += int(known.sum())
        found[case] = f"{differ:,} of {total:,} ({differ / total:.1%})"
    return found


def _high_water_mb() -> float | None:
    """The peak resident memory of this process image (Linux ``VmHWM``), in MiB."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def run_case(case: str, files: dict[str, str]) -> dict[str, Any]:
    """One measurement, in this (fresh) process."""
    import io

    import vrvm
    from vrvm.trips.files.reader import TripFileError, read_trips

    result: dict[str, Any] = {"vrvm": str(Path(vrvm.__file__).parent)}
    start, cpu_start = time.perf_counter(), time.process_time()
    if case in ("chicago", "nyc", "sf", "synthetic", *COMPRESSED):
        trips, report = read_trips(files[case])
        result.update(rows=report.n_input, kept=len(trips))
    elif case in REFUSED:
        try:
            trips, report = read_trips(files[case])
            result.update(ok=True, rows=report.n_input, kept=len(trips))
        except TripFileError as exc:
            result.update(ok=False, error=str(exc)[:200], limit=exc.limit)
    elif case.startswith("batches_"):
        result.update(_batches_case(case, files))
    elif case == "doubles":
        result.update(_doubles(files))
    elif case.startswith("expand_"):
        from vrvm.trips.files.reader import check_expansion

        path = files[case.replace("expand_", "synthetic_").replace("synthetic_bomb_", "bomb_")]
        try:
            result.update(ok=True, expanded_mb=round(check_expansion(path) / MIB, 1))
        except TripFileError as exc:
            result.update(ok=False, error=str(exc)[:200], limit=exc.limit)
    elif case == "upload_rows":
        from vrvm.services.analyst.uploads import read_upload

        data = Path(files[case]).read_bytes()
        result["compressed_mb"] = round(len(data) / MIB, 1)
        # the upload's bytes are in memory already
        start, cpu_start = time.perf_counter(), time.process_time()
        outcome = read_upload(Path(files[case]).name, data)
        result.update(ok=outcome.ok, error=(outcome.error or "")[:200])
        if outcome.ok:
            result.update(rows=outcome.report.n_input, kept=len(outcome.trips))
    elif case in ("predict", "inspect"):
        from vrvm.cli import main

        if case == "predict":
            out = Path(files["work"]) / "predictions.csv"
            argv = ["predict", files["model"], files["synthetic"], "--out", str(out)]
        else:
            argv = ["inspect", files[case]]
        stdout, stderr = io.StringIO(), io.StringIO()
        result["status"] = main(argv, stdout=stdout, stderr=stderr)
        result["stderr"] = stderr.getvalue()[-300:]
    elif case != "baseline":
        raise SystemExit(f"unknown case {case!r}")
    result["seconds"] = round(time.perf_counter() - start, 2)
    result["cpu_seconds"] = round(time.process_time() - cpu_start, 2)  # all threads
    result["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    result["vm_hwm_mb"] = _high_water_mb()
    return result


def measure(case: str, files: dict[str, Path], code: Path | None, timeout: float) -> dict:
    """Run one case in a fresh child process and return what it reported."""
    env = dict(os.environ, PYTHONPATH=str(code or REPO), OMP_NUM_THREADS="1")
    paths = {k: str(v) for k, v in files.items()}
    command = [sys.executable, __file__, "--child", case, "--files", json.dumps(paths)]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timeout_s": timeout}
    if done.returncode != 0:
        return {"failed": done.stderr.strip().splitlines()[-1:], "seconds": None}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_seconds"] = round(time.perf_counter() - started, 2)
    result["load_1min"] = round(os.getloadavg()[0], 2)
    return result


# ------------------------------------------------------------------------------ main
def _peak(result: dict) -> float:
    """Peak resident MiB of a case: VmHWM where the kernel tells it, else ru_maxrss."""
    return result.get("vm_hwm_mb") or result.get("peak_mb") or 0.0


def table(runs: dict[str, dict[str, dict]]) -> str:
    labels = list(runs)
    head = "| case | " + " | ".join(
        f"{lab}: peak MB (above baseline) | {lab}: s (CPU s)" for lab in labels
    )
    lines = [head + " |", "|---|" + "---|---|" * len(labels)]
    for case in CASES:
        cells = []
        for label in labels:
            r = runs[label].get(case, {})
            base = _peak(runs[label].get("baseline", {}))
            if "peak_mb" in r:
                peak = f"{_peak(r):,.0f} ({_peak(r) - base:+,.0f})"
                seconds = f"{r['seconds']:.1f}"
                if "cpu_seconds" in r:
                    seconds += f" ({r['cpu_seconds']:.1f})"
                if r.get("error"):
                    seconds += " (refused)"
            else:
                peak, seconds = "-", ("timeout" if "timeout_s" in r else "-")
            cells += [peak, seconds]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    parser.add_argument("--code", type=Path, help="import vrvm from this folder")
    parser.add_argument("--label", default="current", help="name of this run in the results")
    parser.add_argument("--work", type=Path, default=Path("/tmp/vrvm-bench-read"))
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per case")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--files", help=argparse.SUPPRESS)
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(run_case(args.child, json.loads(args.files))))
        return 0
    if args.prepare:  # in a child, so that the runner stays small
        sys.path.insert(0, str(REPO))  # the inputs are made with this checkout's vrvm
        files = prepare(args.work, args.quick)
        print(json.dumps({k: str(v) for k, v in files.items()}))
        return 0
    wanted = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = set(wanted) - set(CASES)
    if unknown:
        raise SystemExit(f"--cases: unknown {sorted(unknown)}; choose from {CASES}")
    command = [sys.executable, __file__, "--prepare", "--work", str(args.work)]
    made = subprocess.run(command + ["--quick"] * args.quick, capture_output=True, text=True)
    if made.returncode != 0:
        raise SystemExit(f"preparing the inputs failed:\n{made.stderr}")
    files = {k: Path(v) for k, v in json.loads(made.stdout.strip().splitlines()[-1]).items()}
    files["work"] = args.work
    files["chicago"] = DATA / "chicago_taxi_trips.csv"
    files["nyc"] = DATA / "nyc_taxi_2016_sample.csv"
    files["sf"] = DATA / "sf_bikeshare_2019-02_partial.csv"
    for case in ("chicago", "nyc", "sf"):
        if case in wanted and not files[case].is_file():
            print(f"skipping {case}: {files[case]} is not available", file=sys.stderr)
            wanted.remove(case)
    for case in [c for c in wanted if c.endswith("_wide")]:
        if not files["wide"].is_file():
            print(f"skipping {case}: the Chicago sample is not available", file=sys.stderr)
            wanted.remove(case)
    runs = json.loads(args.results.read_text()) if args.results.is_file() else {}
    runs = {k: v for k, v in runs.items() if k != "meta"}
    current = runs.setdefault(args.label, {})
    measure("baseline", files, args.code, args.timeout)  # warm-up: compiles the bytecode
    for case in ["baseline", *[c for c in wanted if c != "baseline"]]:
        current[case] = measure(case, files, args.code, args.timeout)
        print(f"{args.label} {case}: {current[case]}", file=sys.stderr)
    meta = {"python": platform.python_version(), "cpus": os.cpu_count(), "quick": args.quick}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps({**runs, "meta": meta}, indent=2) + "\n")
    print(table(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
