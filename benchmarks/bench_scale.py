"""Benchmark of training at city scale: fit time, memory, and quality of the two-stage fit.

Issue 13 ("City scale") asks, on a 2-core, 24 GB machine: 1e7 synthetic trips from one
Parquet file trained in at most 3 minutes with peak resident memory at most 3 GB (all
processes together), 1e6 in at most 30 s, the same 1e7 fit on a two-worker cluster
within 1.3x of the local time, how time and memory grow from 1e5 to 1e7, and that the
two-stage fit is no worse than the full fit (held-out CRPS, NLL and 90 % coverage, same
seeds) on the synthetic city at 1e6 and on the Chicago sample, with the subsample size
at which the chosen basis stops changing.

Three commands, each merging its results into ``benchmarks/results/scale.json``:

``fit``
    For each size N, ``vrvm demo-data --n N --seed 0`` once (kept in ``--work``), then
    ``vrvm train TRIPS.parquet --out DIR --members 8 --seed 0 --n-jobs 2`` in a fresh
    process. Wall time from the command's start to its exit (imports included), the
    end of each phase as the command reports it on stderr (reading = pass 1, the
    sample; members = the first stage; statistics = pass 2; the rest is the second
    stage and saving), and the peak over the run of the summed resident memory of
    every process involved (the command, its loky workers; with ``--dask`` also the
    scheduler and the two ``dask worker`` processes started for the run, each with
    ``--nthreads 1``), sampled every 0.2 s. Summed RSS counts pages the processes
    share (libraries) once per process, so it overstates the total a little.
``quality``
    Held-out scores of the full (one-stage) fit and the two-stage fit with the same
    seed: the synthetic city, trained on ``synthetic_city(1e6, seed=0)`` and scored on
    ``synthetic_city(50_000, seed=1)`` (another draw of the same city); and the Chicago
    sample (``../shared/data``, the random 80/20 split of ``bench_trips.py``), where
    the two-stage fit is forced with a subsample of 500 and 1,000 trips per member
    (8,000 trips is below the default 8 x 20,000). Both fits are in-process
    ``TravelTimeModel(n_jobs=2, random_state=0)``.
``stability``
    The two-stage fit of the 1e6 synthetic trips with subsample sizes 5,000 to 80,000
    per member: relevance vectors per member, held-out scores, and how much the
    predictions move from one size to the next (median relative change of the
    predictive median and of the 90 % interval's width on the 50,000 held-out trips).
    The chosen centres are trips of each subsample, so they cannot be compared one by
    one; what the basis does is compared instead.

``evidence``
    Two-stage fits of the ``fit`` command's N synthetic trips (``--n``, read part by
    part in-process) with each first-stage evidence of ``--settings`` (``sample``,
    numbers: the bound on the trips a sampled trip counts for, ``all``): fit time,
    functions per member and held-out scores on ``synthetic_city(50_000, seed=1)``.

``plot`` draws ``benchmarks/results/scale.png`` (fit time and peak memory against N)
from the results (it needs matplotlib: ``pip install 'vrvm[bench]'``), and prints the
fit table and the projected times on a cluster (:func:`projection`).

Usage, from the repository root, on an otherwise idle machine::

    python benchmarks/bench_scale.py fit --sizes 100000,1000000,10000000
    python benchmarks/bench_scale.py fit --sizes 10000000 --dask
    python benchmarks/bench_scale.py quality
    python benchmarks/bench_scale.py stability
    python benchmarks/bench_scale.py evidence --n 1000000
    python benchmarks/bench_scale.py evidence --n 10000000 --settings sample,3,4,all
    python benchmarks/bench_scale.py plot
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tools/, when run as a script
from bench_predict_scale import machine, model_summary

from tools.processes import TOKEN_ENV, tagged

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "scale.json"
PLOT = RESULTS.with_name("scale.png")
CHICAGO = REPO.parent / "shared" / "data" / "chicago_taxi_trips.csv"
SIZES = (100_000, 1_000_000, 10_000_000)
SUBSAMPLES = (5_000, 10_000, 20_000, 40_000, 80_000)
MIB = 2**20
PHASE = re.compile(r"^(\w+): ([\d,]+)/([\d,]+) done")


# ------------------------------------------------------------------------------ data
def trip_file(work: Path, n: int) -> Path:
    """``vrvm demo-data --n n --seed 0`` as Parquet in ``work``, made once."""
    path = work / f"trips_{n}.parquet"
    if not path.exists():
        work.mkdir(parents=True, exist_ok=True)
        vrvm = [sys.executable, "-m", "vrvm"]
        subprocess.run(
            [*vrvm, "demo-data", "--n", str(n), "--seed", "0", "--out", str(path)], check=True
        )
    return path


# ------------------------------------------------------------------------ measuring
class MemoryWatch:
    """The peak of the summed RSS of every process tagged with ``token``, every 0.2 s."""

    def __init__(self, token: str):
        self.token = token
        self.peak = 0
        self.processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            total, alive = 0, 0
            for proc in tagged(self.token, exclude=os.getpid()):
                try:
                    total += proc.memory_info().rss
                    alive += 1
                except Exception:  # gone between the listing and the reading
                    continue
            if total > self.peak:
                self.peak, self.processes = total, alive


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A ``dask scheduler`` and two ``dask worker --nthreads 1`` processes."""

    def __init__(self, env: dict[str, str]):
        port = _free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        dask = shutil.which("dask")
        base = [dask] if dask else [sys.executable, "-m", "dask"]
        start = dict(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs = [
            subprocess.Popen(
                [*base, "scheduler", "--host", "127.0.0.1", "--port", str(port)],
                start_new_session=True,
                **start,
            )
        ]
        for _ in range(2):
            self.procs.append(
                subprocess.Popen(
                    [*base, "worker", self.address, "--nthreads", "1", "--no-dashboard"],
                    start_new_session=True,
                    **start,
                )
            )

    def __enter__(self):
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        return self

    def __exit__(self, *exc):
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def fit_case(trips: Path, out: Path, dask: bool) -> dict[str, Any]:
    """``vrvm train`` in a fresh process: wall time, phase ends and peak memory."""
    token = f"bench-scale-{os.getpid()}-{time.time_ns()}"
    env = {**os.environ, TOKEN_ENV: token}
    argv = [sys.executable, "-m", "vrvm", "train", str(trips), "--out", str(out)]
    argv += ["--members", "8", "--seed", "0", "--n-jobs", "2", "--name", "bench"]
    shutil.rmtree(out, ignore_errors=True)
    cluster = Cluster(env) if dask else None
    phases: dict[str, float] = {}
    load = os.getloadavg()[0]
    with MemoryWatch(token) as memory:
        if cluster is not None:
            cluster.__enter__()
            argv += ["--backend", "dask", "--scheduler", cluster.address]
        try:
            started = time.perf_counter()
            proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
            tail = []
            for line in proc.stderr:  # one line per report on a pipe
                tail = ([*tail, line])[-20:]
                match = PHASE.match(line)
                if match and match.group(2) == match.group(3):
                    phases[match.group(1)] = round(time.perf_counter() - started, 1)
            status = proc.wait()
            wall = time.perf_counter() - started
        finally:
            if cluster is not None:
                cluster.__exit__()
    if status != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{''.join(tail)}")
    meta = json.loads((out / "model.json").read_text())["metadata"]
    summary = meta["training_summary"]
    members = model_summary(out)
    return {
        "n_trips": summary["n_trips"],
        "backend": "dask, 2 workers" if dask else "local, loky 2",
        "wall_s": round(wall, 1),
        "fit_s": round(meta["fit_time_s"], 1),  # the fit alone: no imports, no saving
        "phase_end_s": phases,
        "peak_rss_mib": round(memory.peak / MIB),
        "processes_at_peak": memory.processes,
        "relevance_vectors": members["relevance_vectors"],
        "two_stage": summary.get("two_stage"),
        "load_avg_1min": round(load, 2),
    }


# -------------------------------------------------------------------------- quality
def _scores(model, test) -> dict[str, float]:
    metrics = model.evaluate(test, levels=(0.9,))
    return {
        "crps_s": round(metrics["crps_s"], 2),
        "nll": round(metrics["nll"], 4),
        "coverage_90": round(metrics["intervals"][0]["coverage"], 4),
        "relevance_vectors": [int(m.n_relevance_) for m in model.members_],
    }


def _per_trip(model, test) -> dict[str, np.ndarray]:
    """Each held-out trip's CRPS (s) and negative log density (the paired comparison)."""
    dist = model.predict_dist(test)
    y = test["travel_time_s"].to_numpy(float)
    return {"crps_s": dist.crps(y), "nll": -dist.logpdf(y)}


def _paired(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, float]:
    """Mean of b - a per trip and its standard error, for CRPS and NLL: differences
    within about two standard errors of 0 are not distinguishable on these trips."""
    out = {}
    for key in ("crps_s", "nll"):
        d = b[key] - a[key]
        out[f"{key}_diff"] = round(float(d.mean()), 4)
        out[f"{key}_diff_se"] = round(float(d.std(ddof=1) / np.sqrt(d.size)), 4)
    return out


def _fit(train, *, subsample_size: int, **params):
    from vrvm import TravelTimeModel

    model = TravelTimeModel(n_jobs=2, random_state=0, subsample_size=subsample_size, **params)
    started = time.perf_counter()
    model.fit(train)
    return model, round(time.perf_counter() - started, 1)


def quality(n: int, skip_full: bool = False) -> dict[str, Any]:
    """The full fit and the two-stage fit, scored on the same held-out trips.

    ``skip_full`` keeps the full fits of the results file (they do not depend on the
    two-stage code) and refits only the two-stage ones.
    """
    from bench_trips import make_splits

    from vrvm.trips import read_trips
    from vrvm.trips.synthetic import synthetic_city

    before = json.loads(RESULTS.read_text()).get("quality", {}) if RESULTS.exists() else {}

    def run(city: str, train, test, cases: dict[str, dict]) -> dict[str, Any]:
        kept = before.get(city, {}).get("fits", {})
        out = {"n_train": len(train), "n_test": len(test), "fits": {}}
        full_trips = None
        for name, params in cases.items():
            if skip_full and name == "full" and name in kept:
                out["fits"][name] = kept[name]
                continue
            model, seconds = _fit(train, **params)
            out["fits"][name] = {"fit_s": seconds, **_scores(model, test)}
            trips = _per_trip(model, test)
            if name == "full":
                full_trips = trips
            elif full_trips is not None:  # paired with the full fit, trip by trip
                out["fits"][name]["vs_full"] = _paired(full_trips, trips)
            print(city, name, out["fits"][name], flush=True)
        return out

    train, test = synthetic_city(n, seed=0), synthetic_city(50_000, seed=1)
    cases = {
        "full": {"subsample_size": n},
        "two stages, each sampled trip counted as at most 3 (default)": {"subsample_size": 20_000},
        "two stages, evidence of all trips": {
            "subsample_size": 20_000,
            "stage_one_evidence": "all",
        },
        "two stages, evidence of the sample": {
            "subsample_size": 20_000,
            "stage_one_evidence": "sample",
        },
    }
    results = {"synthetic": run("synthetic", train, test, cases)}
    if not CHICAGO.exists():
        print(f"{CHICAGO} not found: Chicago skipped")
        return results
    trips, _ = read_trips(CHICAGO)
    split = next(s for s in make_splits(trips) if s.name == "random")
    cases = {
        "full": {"subsample_size": len(split.train)},
        # each sampled trip stands for 1.5 and 3 trips: the default bound of 3 is
        # the evidence of all trips
        "two stages, 1,000, evidence of all trips (default)": {"subsample_size": 1000},
        "two stages, 1,000, evidence of the sample": {
            "subsample_size": 1000,
            "stage_one_evidence": "sample",
        },
        "two stages, 500, evidence of all trips (default)": {"subsample_size": 500},
    }
    results["chicago"] = run("chicago", split.train, split.test, cases)
    return results


def stability(n: int, sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    """Two-stage fits with growing subsamples: scores and how far predictions move."""
    from vrvm.trips.synthetic import synthetic_city

    train, test = synthetic_city(n, seed=0), synthetic_city(50_000, seed=1)
    rows, previous = [], None
    for size in sizes:
        model, seconds = _fit(train, subsample_size=size)
        dist = model.predict_dist(test)
        median = dist.median()
        low, high = dist.interval(0.9)
        width = high - low
        row = {"subsample": size, "fit_s": seconds, **_scores(model, test)}
        if previous is not None:
            row["median_change"] = round(float(np.median(np.abs(median / previous[0] - 1))), 4)
            row["width_change"] = round(float(np.median(np.abs(width / previous[1] - 1))), 4)
        previous = (median, width)
        rows.append(row)
        print(row, flush=True)
    return rows


def evidence(n: int, settings: list[str], work: Path) -> dict[str, Any]:
    """Two-stage fits of ``n`` synthetic trips (the ``fit`` command's file, read part by
    part in this process) with each first-stage evidence: fit time, functions per
    member, held-out scores. The functions set the cost of every prediction (K^2 per
    member and query), so this is the trade the default bound makes."""
    from vrvm import TravelTimeModel
    from vrvm.trips.files.dataset import TripDataset
    from vrvm.trips.model.training import fit_dataset
    from vrvm.trips.synthetic import synthetic_city

    trips, test = trip_file(work, n), synthetic_city(50_000, seed=1)
    rows = []
    for setting in settings:
        value = setting if setting in ("all", "sample") else float(setting)
        model = TravelTimeModel(n_members=8, n_jobs=2, random_state=0, stage_one_evidence=value)
        started = time.perf_counter()
        fit_dataset(model, TripDataset(trips))
        seconds = round(time.perf_counter() - started, 1)
        weight = model.training_summary_["two_stage"]["stage_one_weight"]
        rows.append(
            {
                "evidence": setting,
                "weight": round(weight, 2),
                "fit_s": seconds,
                **_scores(model, test),
                "load_avg_1min": round(os.getloadavg()[0], 2),
            }
        )
        print(rows[-1], flush=True)
    return {"n_train": n, "rows": rows}


# --------------------------------------------------------------------------- report
def merge(key: str, value: Any) -> None:
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results["machine"] = machine()
    if key == "fit":
        runs = results.setdefault("fit", [])
        done = {(r["n_trips"], r["backend"]) for r in value}
        runs[:] = [r for r in runs if (r["n_trips"], r["backend"]) not in done] + value
    else:
        results[key] = value
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1))


def fit_table(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| trips | backend | wall (s) | pass 1 / stage 1 / pass 2 / pass 3 ends (s) "
        "| peak RSS, all processes (MiB) | relevance vectors per member |",
        "|---:|---|---:|---|---:|---|",
    ]
    for r in sorted(runs, key=lambda r: (r["n_trips"], r["backend"])):
        p = r["phase_end_s"]
        phases = ("reading", "members", "statistics", "offsets")
        ends = " / ".join(str(p.get(k, "-")) for k in phases)
        rv = r["relevance_vectors"]
        lines.append(
            f"| {r['n_trips']:,} | {r['backend']} | {r['wall_s']} | {ends} "
            f"| {r['peak_rss_mib']:,} | {min(rv)}-{max(rv)} (mean {np.mean(rv):.0f}) |"
        )
    return "\n".join(lines)


def projection(runs: list[dict[str, Any]], workers=(8, 32, 128), sizes=(10**8, 10**9)) -> str:
    """Projected fit times on a cluster from the largest local run's phases.

    Per worker (one core), rows per second of pass 1 (reading, cleaning, sampling) and
    pass 2 (features, chosen columns, statistics) are the run's rows over the phase's
    wall time times its two workers; the first stage is fixed in N (its members run in
    parallel, min(W, members) at once); the rest (imports, the second stage, saving)
    is fixed too. Assumes storage that serves W workers at their rate.
    """
    run = max((r for r in runs if r["backend"].startswith("local")), key=lambda r: r["n_trips"])
    n, p = run["n_trips"], run["phase_end_s"]
    pass1 = n / (2 * p["reading"])
    pass2 = n / (2 * (p["statistics"] - p["members"]))
    stage1 = (p["members"] - p["reading"]) * 2  # core-seconds of the 8 members' fits
    # pass 3 reads every row (at pass 1's rate) and sums at most OFFSET_TRIPS of them
    from vrvm.trips.model.training import OFFSET_TRIPS

    end2 = p.get("offsets", p["statistics"])
    summed = min(n, OFFSET_TRIPS)
    pass3 = summed / max(2 * (end2 - p["statistics"]) - n / pass1, 1e-9)
    fixed = run["wall_s"] - end2
    lines = [
        f"Per worker: pass 1 {pass1:,.0f} rows/s, pass 2 {pass2:,.0f} rows/s, pass 3 "
        f"{pass3:,.0f} summed rows/s besides reading (from {n:,} trips); first stage "
        f"{stage1:.0f} core-s; the rest {fixed:.0f} s.",
        "",
        "| trips | " + " | ".join(f"{w} workers" for w in workers) + " |",
        "|---:|" + "---:|" * len(workers),
    ]
    for size in sizes:
        cells = []
        for w in workers:
            t = 2 * size / (w * pass1) + stage1 / min(w, 8) + size / (w * pass2) + fixed
            t += min(size, OFFSET_TRIPS) / (w * pass3)
            cells.append(f"{t / 60:.1f} min" if t < 5400 else f"{t / 3600:.1f} h")
        lines.append(f"| {size:.0e} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(results: dict[str, Any]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    for backend in sorted({r["backend"] for r in results["fit"]}):
        runs = sorted(
            (r for r in results["fit"] if r["backend"] == backend), key=lambda r: r["n_trips"]
        )
        n = [r["n_trips"] for r in runs]
        style = dict(marker="o", label=backend)
        left.plot(n, [r["wall_s"] for r in runs], **style)
        right.plot(n, [r["peak_rss_mib"] / 1024 for r in runs], **style)
    left.axhline(180, color="grey", ls=":", label="target at 1e7 (180 s)")
    right.axhline(3, color="grey", ls=":", label="target (3 GB)")
    for ax, label in ((left, "fit wall time (s)"), (right, "peak RSS, all processes (GiB)")):
        ax.set_xscale("log")
        ax.set_xlabel("training trips")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    left.set_yscale("log")
    fig.suptitle("vrvm train, 8 members, 2 cores", fontsize=10)
    fig.tight_layout()
    fig.savefig(PLOT, dpi=110)
    return PLOT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fit = commands.add_parser("fit", help="fit time and memory")
    fit.add_argument("--sizes", default=",".join(map(str, SIZES)))
    fit.add_argument("--dask", action="store_true", help="on a two-worker Dask cluster")
    fit.add_argument("--work", type=Path, default=Path("/tmp/vrvm_bench_scale"))
    qual = commands.add_parser("quality", help="full vs two-stage fit")
    qual.add_argument("--n", type=int, default=1_000_000)
    qual.add_argument("--skip-full", action="store_true", help="keep the stored full fits")
    stab = commands.add_parser("stability", help="subsample sizes")
    stab.add_argument("--n", type=int, default=1_000_000)
    stab.add_argument("--subsamples", default=",".join(map(str, SUBSAMPLES)))
    evid = commands.add_parser("evidence", help="the first stage's evidence, its bound")
    evid.add_argument("--n", type=int, default=1_000_000)
    evid.add_argument("--settings", default="sample,2,3,4,5,all")
    evid.add_argument("--work", type=Path, default=Path("/tmp/vrvm_bench_scale"))
    commands.add_parser("plot", help="plot, table and cluster projection of the fits")
    args = parser.parse_args(argv)

    if args.command == "fit":
        runs = []
        for n in (int(s) for s in args.sizes.split(",")):
            runs.append(fit_case(trip_file(args.work, n), args.work / f"model_{n}", args.dask))
            print(json.dumps(runs[-1]), flush=True)
        merge("fit", runs)
        print(fit_table(json.loads(RESULTS.read_text())["fit"]))
    elif args.command == "quality":
        merge("quality", quality(args.n, args.skip_full))
    elif args.command == "evidence":
        results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        sweeps = results.get("evidence", {})
        sweeps[str(args.n)] = evidence(args.n, args.settings.split(","), args.work)
        merge("evidence", sweeps)
    elif args.command == "stability":
        sizes = tuple(int(s) for s in args.subsamples.split(","))
        merge("stability", {"n_train": args.n, "rows": stability(args.n, sizes)})
    else:
        results = json.loads(RESULTS.read_text())
        print(fit_table(results["fit"]), projection(results["fit"]), sep="\n\n")
        print(f"wrote {plot(results)}")
    print(f"results in {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
