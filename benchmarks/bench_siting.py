"""Benchmark of optimal siting: 300 candidates x 2,000 demand points, k = 5, solved exactly.

Issue 35 asks for 300 candidate sites x 2,000 demand zones, k = 5, solved to optimality
in at most 60 s and under 2 GB on this 2-core machine. Each repeat runs in a fresh
child process (this script with ``--child``), which

1. loads the model and predicts the 600,000 candidate-demand probabilities
   P(T <= 8 min) at one departure (:func:`vrvm.services.planning.siting.siting_probabilities`),
2. solves the MILP (:func:`vrvm.services.planning.siting.solve_siting`) to proven
   optimality, with the greedy answer beside it,

and reports both wall times, the solver's status, bound and HiGHS's MIP gap, and its
peak resident memory (``ru_maxrss``: model, probabilities and solver together).

The model is the dashboard's default demo model (as ``bench_matrix.py``:
:func:`vrvm.services.analyst.demo.ensure_demo_model` with the default settings, trained
once into ``--work``). The candidates are the pick-up points of ``synthetic_city(300,
seed=42)``; the demand points the drop-off points of ``synthetic_city(2000, seed=43)``
(so demand follows the synthetic city's trips), each with weight 1.

Usage, from the repository root::

    python benchmarks/bench_siting.py --repeats 3

Prints a Markdown table (with the machine's cores and 1-minute load) and writes
``benchmarks/results/siting.json``.
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

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "siting.json"
WORK = Path(tempfile.gettempdir()) / "vrvm-bench-siting"
DEPART = "2024-03-12 08:00"  # a Tuesday's rush hour, inside the synthetic trips' weeks
WITHIN_S = 480.0
CANDIDATES, DEMAND, K = 300, 2000, 5
TARGET_S, TARGET_MIB = 60.0, 2048


def demo_model(work: Path) -> Path:
    """The default demo model's directory, trained once into ``work/home``."""
    from vrvm.services.analyst.demo import demo_settings, ensure_demo_model
    from vrvm.trips.home import Home

    home = work / "home"
    version, trained = ensure_demo_model(home, demo_settings({}))
    if trained:
        print(f"trained the demo model into {home}", flush=True)
    return Home(home).models.path(version)


def child(model_dir: str, out: str) -> None:
    """One measured run (in a fresh process)."""
    import pandas as pd

    from vrvm import TravelTimeModel, synthetic_city
    from vrvm.services.planning.siting import siting_probabilities, solve_siting

    def points(n: int, seed: int, end: str) -> pd.DataFrame:
        trips = synthetic_city(n, seed=seed)
        return pd.DataFrame(
            {"id": [f"{end[0]}{i}" for i in range(n)], "lat": trips[f"{end}_lat"],
             "lon": trips[f"{end}_lon"]}
        )  # fmt: skip

    candidates, demand = points(CANDIDATES, 42, "origin"), points(DEMAND, 43, "dest")
    model = TravelTimeModel.load(model_dir)
    started = time.perf_counter()
    prob = siting_probabilities(model, candidates, demand, WITHIN_S, DEPART)
    predict_s = time.perf_counter() - started
    solution = solve_siting(prob, None, K)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    record = {
        "predict_s": round(predict_s, 2),
        "solve_s": round(solution.solve_s, 2),
        "status": solution.status,
        "objective": solution.objective,
        "greedy_objective": solution.greedy_objective,
        "gap": solution.gap,
        "bound_gap": solution.bound_gap,
        "mip_gap": None if solution.mip_gap != solution.mip_gap else solution.mip_gap,
        "rounds": solution.rounds,
        "chosen": candidates["id"].to_numpy()[solution.chosen].tolist(),
        "p_above_0.01": float((prob > 0.01).mean()),
        "peak_rss_mib": round(peak_mib),
    }
    Path(out).write_text(json.dumps(record))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--work", type=Path, default=WORK)
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    args.work.mkdir(parents=True, exist_ok=True)
    model = demo_model(args.work)
    runs = []
    for repeat in range(args.repeats):
        out = args.work / f"run{repeat}.json"
        load = os.getloadavg()[0]
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(model), str(out)],
            capture_output=True, text=True, cwd=REPO,
        )  # fmt: skip
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
        runs.append({**json.loads(out.read_text()), "load_avg_1min": round(load, 2)})
        out.unlink()
    machine = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": machine, "runs": runs}, indent=2) + "\n")
    print(f"{CANDIDATES} candidates x {DEMAND:,} demand points, k = {K}, T = 8 min, "
          f"{machine['cpus']} CPUs")  # fmt: skip
    print()
    print("| run | predict (s) | solve (s) | status | objective | greedy | gap | "
          "HiGHS MIP gap | rounds | peak RSS (MiB) | load (1 min) |")  # fmt: skip
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for i, run in enumerate(runs, start=1):
        mip_gap = "n/a" if run["mip_gap"] is None else f"{run['mip_gap']:.1e}"
        print(
            f"| {i} | {run['predict_s']:.1f} | {run['solve_s']:.1f} | {run['status']} | "
            f"{run['objective']:.6f} | {run['greedy_objective']:.6f} | "
            f"{100 * run['gap']:.3f} % | {mip_gap} | {run['rounds']} | "
            f"{run['peak_rss_mib']:,} | {run['load_avg_1min']:.2f} |"
        )
    worst_s = max(r["solve_s"] for r in runs)
    worst_mib = max(r["peak_rss_mib"] for r in runs)
    print()
    time_met = "met" if worst_s <= TARGET_S else "NOT met"
    memory_met = "met" if worst_mib < TARGET_MIB else "NOT met"
    print(
        f"targets: solve <= {TARGET_S:g} s: {time_met} (worst {worst_s:.1f} s); "
        f"memory < {TARGET_MIB} MiB: {memory_met} (worst {worst_mib:,} MiB)"
    )


if __name__ == "__main__":
    main()
