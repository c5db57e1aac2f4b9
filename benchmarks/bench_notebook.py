"""Benchmark of ``vrvm.travel_time_matrix`` against ``vrvm matrix`` on a 1,000 x 1,000 matrix.

Issue 36 asks the notebook function to stream large inputs in batches and to compute a
1,000 x 1,000 matrix in the same time as ``vrvm matrix``. Both run on the dashboard's
default demo model and the points of :mod:`bench_matrix` (``synthetic_city(1000,
seed=42)``'s pick-up and drop-off points), each in a fresh child process that reports
its wall time, its CPU time (all threads) and its peak resident memory (``VmHWM``):

* ``vrvm matrix MODEL --origins O.csv --destinations D.csv --depart "2024-03-12 08:00"
  --quantiles 0.9 --prob-within 600 --out M.parquet``;
* ``vrvm.travel_time_matrix(model, O, D, departure="2024-03-12 08:00",
  percentiles=(50, 90), within_min=10)`` on the same points read as DataFrames of
  ``id``, ``lat``, ``lon`` (the time includes loading the model and reading the CSVs,
  as the command's does), then written to Parquet.

The two are alternated ``--repeats`` times, and their answers compared (largest
difference of the median, 90th percentile and P(T <= 10 min); they are one computation).

Usage, from the repository root::

    python benchmarks/bench_notebook.py --repeats 3

Writes ``benchmarks/results/notebook.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench_matrix import DEPART, WORK, demo_model, point_files, run_case
from bench_predict_scale import _vm_hwm_mib, machine

RESULTS = Path(__file__).resolve().parent / "results" / "notebook.json"


def notebook_child(model: str, origins: str, destinations: str, out: str, result: str) -> int:
    """Load the model, read the points and write ``vrvm.travel_time_matrix`` to Parquet."""
    import pandas as pd

    import vrvm

    started = time.perf_counter()
    cpu = time.process_time()
    fitted = vrvm.TravelTimeModel.load(model)
    o = pd.read_csv(origins).rename(columns={"name": "id"})
    d = pd.read_csv(destinations).rename(columns={"name": "id"})
    table = vrvm.travel_time_matrix(
        fitted, o, d, departure=DEPART, percentiles=(50, 90), within_min=10
    )
    table.to_parquet(out, index=False)
    report = {
        "wall_s": time.perf_counter() - started,
        "cpu_s": time.process_time() - cpu,
        "peak_rss_mib": _vm_hwm_mib(),
        "rows": len(table),
    }
    Path(result).write_text(json.dumps(report))
    return 0


def run_notebook(model: Path, origins: Path, destinations: Path, out: Path) -> dict:
    result = out.with_suffix(".json")
    load = os.getloadavg()[0]
    cmd = [sys.executable, __file__, "--child", *map(str, (model, origins, destinations, out))]
    proc = subprocess.run([*cmd, str(result)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    measured = json.loads(result.read_text())
    result.unlink()
    return {
        "pairs": measured["rows"],
        "wall_s": round(measured["wall_s"], 2),
        "cpu_s": round(measured["cpu_s"], 1),
        "peak_rss_mib": round(measured["peak_rss_mib"]),
        "load_avg_1min": round(load, 2),
    }


def largest_difference(cli: Path, notebook: Path) -> float:
    """The largest difference between the two answers (minutes and probabilities)."""
    import numpy as np
    import pandas as pd

    a, b = pd.read_parquet(cli), pd.read_parquet(notebook)
    return float(
        max(
            np.abs(a["median_s"] / 60 - b["travel_time_p50"]).max(),
            np.abs(a["q0.9_s"] / 60 - b["travel_time_p90"]).max(),
            np.abs(a["p_within_600s"] - b["p_within_10min"]).max(),
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=WORK, help=f"model and files ({WORK})")
    parser.add_argument("--size", type=int, default=1000, help="origins = destinations (1000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    model = demo_model(args.work)
    origins, destinations = point_files(args.work, args.size)
    runs: dict[str, list[dict]] = {"vrvm matrix": [], "vrvm.travel_time_matrix": []}
    cli_out, nb_out = args.work / "cli.parquet", args.work / "notebook.parquet"
    for _ in range(args.repeats):
        case = run_case(model, origins, destinations, cli_out, args.size)
        kept = ("pairs", "wall_s", "cpu_s", "peak_rss_mib", "load_avg_1min")
        runs["vrvm matrix"].append({k: case[k] for k in kept})
        print("vrvm matrix", json.dumps(runs["vrvm matrix"][-1]), flush=True)
        runs["vrvm.travel_time_matrix"].append(run_notebook(model, origins, destinations, nb_out))
        print("notebook", json.dumps(runs["vrvm.travel_time_matrix"][-1]), flush=True)
    # one more CLI run kept on disk for the comparison of the answers
    subprocess.run(
        [sys.executable, "-m", "vrvm", "matrix", str(model), "--origins", str(origins),
         "--destinations", str(destinations), "--depart", DEPART, "--quantiles", "0.9",
         "--prob-within", "600", "--out", str(cli_out), "--quiet"],
        check=True,
    )  # fmt: skip
    difference = largest_difference(cli_out, nb_out)
    results = {
        "machine": machine(),
        "command": "python benchmarks/bench_notebook.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "runs": runs,
        "largest_difference": difference,
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    print("| way | pairs | wall (s) | CPU (s) | peak RSS (MiB) | load (1 min) |")
    print("|---|---:|---:|---:|---:|---:|")
    for way, cases in runs.items():
        for case in cases:
            print(
                f"| {way} | {case['pairs']:,} | {case['wall_s']:.1f} | {case['cpu_s']:.1f} | "
                f"{case['peak_rss_mib']:,} | {case['load_avg_1min']:.2f} |"
            )
    print(f"largest difference of the answers: {difference:.3g}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "--child":
        sys.exit(notebook_child(*sys.argv[2:]))
    sys.exit(main())
