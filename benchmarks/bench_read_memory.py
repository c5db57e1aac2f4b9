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
``synthetic``, ``synthetic_gz``
    :func:`vrvm.read_trips` on 1,000,000 synthetic trips
    (:func:`vrvm.synthetic_city`, ten seeds of 100,000), as CSV and as gzip.
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

    python benchmarks/bench_read_memory.py --label after          # all cases, ~10 min
    python benchmarks/bench_read_memory.py --code /tmp/before --label before
    python benchmarks/bench_read_memory.py --cases chicago,synthetic --quick

Writes ``benchmarks/results/bench_read_memory.json`` (runs are merged by label) and
prints one Markdown table. Timings are wall clock on a machine that may be shared
(the 1-minute load average is recorded with each run).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("VRVM_SHARED_DATA", REPO.parent / "shared" / "data"))
RESULTS = Path(__file__).resolve().parent / "results" / "bench_read_memory.json"
CASES = ("baseline", "chicago", "synthetic", "synthetic_gz", "upload_rows", "predict", "inspect")
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
        "upload_rows": work / f"upload_{1536 // scale}MB.csv.gz",
        "inspect": work / f"inspect_{1024 // scale}MB.csv",
        "model": work / "model",
    }
    if not files["synthetic"].exists():
        with open(files["synthetic"].with_suffix(".tmp"), "w", newline="") as fh:
            for text in _synthetic_lines(1_000_000 // scale, 10):
                fh.write(text)
        files["synthetic"].with_suffix(".tmp").replace(files["synthetic"])
    if not files["synthetic_gz"].exists():
        with open(files["synthetic"], "rb") as src, gzip.open(files["synthetic_gz"], "wb") as dst:
            shutil.copyfileobj(src, dst, 16 * MIB)
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
    from vrvm.trips.files.reader import read_trips

    result: dict[str, Any] = {"vrvm": str(Path(vrvm.__file__).parent)}
    start = time.perf_counter()
    if case == "chicago":
        trips, report = read_trips(files["chicago"])
        result.update(rows=report.n_input, kept=len(trips))
    elif case in ("synthetic", "synthetic_gz"):
        trips, report = read_trips(files[case])
        result.update(rows=report.n_input, kept=len(trips))
    elif case == "upload_rows":
        from vrvm.services.analyst.uploads import read_upload

        data = Path(files[case]).read_bytes()
        result["compressed_mb"] = round(len(data) / MIB, 1)
        start = time.perf_counter()  # the upload's bytes are in memory already
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
    head = "| case | " + " | ".join(f"{lab}: peak MB (above baseline) | {lab}: s" for lab in labels)
    lines = [head + " |", "|---|" + "---|---|" * len(labels)]
    for case in CASES:
        cells = []
        for label in labels:
            r = runs[label].get(case, {})
            base = _peak(runs[label].get("baseline", {}))
            if "peak_mb" in r:
                peak = f"{_peak(r):,.0f} ({_peak(r) - base:+,.0f})"
                seconds = f"{r['seconds']:.1f}"
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
    if "chicago" in wanted and not files["chicago"].is_file():
        print(f"skipping chicago: {files['chicago']} is not available", file=sys.stderr)
        wanted.remove("chicago")
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
