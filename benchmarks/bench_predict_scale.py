"""Benchmark of ``vrvm predict`` at scale: queries per second and peak resident memory.

Issue 13 ("City scale") asks that ``vrvm predict`` stream its queries in batches from
Parquet/CSV to Parquet with constant memory, and that 1e7 queries be predicted in at
most 5 minutes on a 2-core machine, memory flat in N. Each case runs ``vrvm predict
MODEL QUERIES --out OUT.parquet --quiet`` in a fresh child process (this script with
``--child``), which reports the command's wall time and its peak resident memory (the
kernel's high-water mark ``VmHWM``, which an exec starts afresh, so the runner's own
memory never counts).

Queries are the first N rows of a trip file made by ``vrvm demo-data`` (default
``/work/scale/trips10m.parquet``: ``vrvm demo-data --n 10000000 --out ...``), written
once into ``--work`` as Parquet, with their travel times (so every row is scored too:
log density, PIT and CRPS) and without them (``travel_time_s`` dropped), streaming
row group by row group.

``--code DIR`` imports vrvm from ``DIR`` instead (a copy of the code before a change),
``--label`` names the run in the results; runs are merged by label.

Usage, from the repository root (the model: ``vrvm demo-data --n 1000000 --out
trips1m.parquet --seed 0`` then ``vrvm train trips1m.parquet --out model1m --members 8
--seed 0 --n-jobs 2``)::

    python benchmarks/bench_predict_scale.py --model model1m --label after
    python benchmarks/bench_predict_scale.py --model model1m --sizes 100000,1000000 \\
        --code /tmp/before --label before

Writes ``benchmarks/results/predict_scale.json`` and prints a Markdown table. Timings
are wall clock on a machine that may be shared (the 1-minute load average before each
case is recorded with it), beside the CPU time of all the command's threads, which
other jobs on the machine do not inflate.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "predict_scale.json"
SOURCE = Path("/work/scale/trips10m.parquet")
SIZES = (100_000, 1_000_000, 10_000_000)
MIB = 2**20


# ------------------------------------------------------------------------------ data
def query_file(source: Path, work: Path, n_rows: int, scored: bool) -> Path:
    """The first ``n_rows`` of ``source`` as Parquet, with or without travel times."""
    import pyarrow.parquet as pq

    path = work / f"queries_{n_rows}{'_scored' if scored else ''}.parquet"
    if path.exists():
        return path
    work.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    with pq.ParquetFile(source) as reader:
        if reader.metadata.num_rows < n_rows:
            raise SystemExit(f"{source} holds {reader.metadata.num_rows:,} rows, not {n_rows:,}")
        writer, left = None, n_rows
        for batch in reader.iter_batches(batch_size=min(n_rows, 1 << 20)):
            table = batch.slice(0, left)
            if not scored and "travel_time_s" in table.schema.names:
                table = table.drop_columns(["travel_time_s"])
            writer = writer or pq.ParquetWriter(part, table.schema)
            writer.write_batch(table)
            left -= table.num_rows
            if left == 0:
                break
        writer.close()
    os.replace(part, path)
    return path


# ------------------------------------------------------------------------ measuring
def _vm_hwm_mib() -> float:
    """The peak resident memory of this process image (Linux ``VmHWM``), in MiB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _vm_rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(argv: list[str], result: str) -> int:
    """Run ``vrvm`` with ``argv`` in this process; write its wall time and peak memory,
    and the resident memory sampled every half second (flat in time means flat in N)."""
    import threading

    import vrvm
    from vrvm.cli import main

    samples: list[tuple[float, float]] = []
    stop = threading.Event()
    started = time.perf_counter()

    def sample() -> None:
        while not stop.wait(0.5):
            samples.append((time.perf_counter() - started, _vm_rss_mib()))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu = time.process_time()
    status = main(argv)
    wall_s = time.perf_counter() - started
    cpu_s = time.process_time() - cpu
    stop.set()
    sampler.join()
    out = {"status": status, "wall_s": wall_s, "cpu_s": cpu_s, "peak_rss_mib": _vm_hwm_mib()}
    # resident memory at each tenth of the run: a plateau, not a slope
    out["rss_mib_by_tenth"] = [
        round(max((rss for t, rss in samples if t <= wall_s * k / 10), default=0.0))
        for k in range(1, 11)
    ]
    out["vrvm"] = str(Path(vrvm.__file__).parent)
    Path(result).write_text(json.dumps(out))
    return status


def run_case(
    model: Path, queries: Path, out: Path, code: Path | None, n_rows: int
) -> dict[str, Any]:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH")]))
    result = out.with_suffix(".json")
    load = os.getloadavg()[0]
    started = time.perf_counter()
    argv = ["predict", str(model), str(queries), "--out", str(out), "--quiet"]
    cmd = [sys.executable, __file__, "--child", str(result), "--", *argv]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    total_s = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    measured = json.loads(result.read_text())
    result.unlink()
    out.unlink(missing_ok=True)
    return {
        "n_queries": n_rows,
        "wall_s": round(measured["wall_s"], 2),
        "process_s": round(total_s, 2),  # with the interpreter's start and imports
        "queries_per_s": round(n_rows / measured["wall_s"]),
        # CPU time of every thread: on an idle machine wall ~ cpu / cores used
        "cpu_s": round(measured["cpu_s"], 1),
        "cpu_us_per_query": round(1e6 * measured["cpu_s"] / n_rows, 1),
        "us_per_query": round(1e6 * measured["wall_s"] / n_rows, 1),
        "peak_rss_mib": round(measured["peak_rss_mib"]),
        "rss_mib_by_tenth": measured["rss_mib_by_tenth"],
        "load_avg_1min": round(load, 2),
        "vrvm": measured["vrvm"],
    }


def model_summary(model: Path) -> dict[str, Any]:
    """Members and relevance vectors of the model (read from its saved form)."""
    code = (
        "import json, sys; from vrvm import TravelTimeModel; "
        "m = TravelTimeModel.load(sys.argv[1]); "
        "print(json.dumps({'members': len(m.members_), "
        "'relevance_vectors': [int(p.n_relevance_) for p in m.members_]}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(model)], capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout)


def blas_kernels() -> str:
    """The BLAS libraries and the kernels they run here (threadpoolctl), and whether
    ``OPENBLAS_CORETYPE`` chose them (see BENCHMARKS.md, "Training at city scale": the
    kernels set the rate of pass 2 and of predictions). The processes a benchmark starts
    inherit the same environment."""
    import numpy  # noqa: F401 (loads OpenBLAS)
    import scipy.linalg  # noqa: F401 (loads SciPy's copy)
    from threadpoolctl import threadpool_info

    kernels = sorted(
        {f"{i.get('internal_api')} {i.get('architecture')}" for i in threadpool_info()}
    )
    chosen = os.environ.get("OPENBLAS_CORETYPE")
    how = f"OPENBLAS_CORETYPE={chosen}" if chosen else "OpenBLAS's own choice"
    return f"{', '.join(kernels)} ({how})"


def machine() -> dict[str, Any]:
    with open("/proc/meminfo", encoding="ascii") as info:
        total_kib = int(next(line for line in info if line.startswith("MemTotal")).split()[1])
    with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
        cpu = next((line.split(":", 1)[1].strip() for line in info if "model name" in line), "")
    return {
        "cpus": len(os.sched_getaffinity(0)),
        "cpu": cpu,
        "blas": blas_kernels(),
        "memory_gib": round(total_kib / 2**20, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


# --------------------------------------------------------------------------- report
def table(results: dict[str, Any]) -> str:
    lines = [
        "| run | queries | travel times | wall (s) | queries/s | CPU µs/query | peak RSS (MiB) |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for label, run in results.get("runs", {}).items():
        for case in run["cases"]:
            lines.append(
                f"| {label} | {case['n_queries']:,} | {'yes' if case['scored'] else 'no'} "
                f"| {case['wall_s']:.1f} | {case['queries_per_s']:,} "
                f"| {case.get('cpu_us_per_query', float('nan')):.1f} | {case['peak_rss_mib']:,} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a model directory (vrvm train --out)")
    parser.add_argument("--source", type=Path, default=SOURCE, help="trips to take queries from")
    parser.add_argument("--work", type=Path, default=Path("/work/scale_pred/bench"))
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument(
        "--scores", choices=("both", "with", "without"), default="both", help="travel times"
    )
    parser.add_argument("--code", type=Path, default=None, help="import vrvm from here")
    parser.add_argument("--label", default="after")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.model is None:
        parser.error("--model is required")
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    scored = {"both": (False, True), "with": (True,), "without": (False,)}[args.scores]
    cases = []
    for n_rows in sizes:
        for with_times in scored:
            queries = query_file(args.source, args.work, n_rows, with_times)
            out = args.work / f"predictions_{n_rows}.parquet"
            case = run_case(args.model, queries, out, args.code, n_rows)
            case["scored"] = with_times
            cases.append(case)
            print(json.dumps(case), flush=True)
    results = json.loads(args.results.read_text()) if args.results.exists() else {}
    results["machine"] = machine()
    command = "python benchmarks/bench_predict_scale.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    results.setdefault("runs", {})[args.label] = {
        "command": command,
        "model": str(args.model),
        **model_summary(args.model),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cases": cases,
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        rest = sys.argv[3:]
        sys.exit(child(rest[1:] if rest[:1] == ["--"] else rest, sys.argv[2]))
    sys.exit(main())
