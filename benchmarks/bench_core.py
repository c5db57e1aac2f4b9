"""Benchmark of the VRVM core: fit time, peak memory and sparsity versus N.

Fits ``VRVMRegressor(max_basis=1000, random_state=0)`` (default settings: automatic
stacked widths chosen by the evidence on a 2,000-row subsample, candidates scored in
turn) to synthetic 6-D data at each N, each in a fresh subprocess so that the peak
resident memory is that fit's own and worker start-up (``--n-jobs``) is counted.
The "floor" is the time of one BLAS Phi^T Phi (dsyrk) of the same N x M size, measured
on up to 50,000 rows and scaled linearly in N (syrk's cost is linear in the row count).

Usage::

    python benchmarks/bench_core.py                 # N = 1e3, 1e4, 1e5, 1e6
    python benchmarks/bench_core.py --sizes 1000 10000
    python benchmarks/bench_core.py --sizes 100000 --n-jobs 2   # candidates in 2 processes

Prints a Markdown table to paste into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time

import numpy as np


def make_data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(n, 6))
    f = np.sin(2 * np.pi * X[:, 0]) + np.cos(3 * X[:, 1] * X[:, 2]) + 0.5 * X[:, 3] ** 2
    return X, f + rng.normal(0, 0.2, n)


def floor_seconds(n: int, m: int) -> float:
    """Seconds for one Phi^T Phi of size n x m by dsyrk (measured on <= 50k rows)."""
    from scipy.linalg.blas import dsyrk

    rows = min(n, 50_000)
    chunk = max(256, (64 * 2**20) // (8 * m))
    rng = np.random.default_rng(0)
    block = rng.random((chunk, m))
    G = np.zeros((m, m), order="F")
    dsyrk(1.0, block.T, beta=1.0, c=G, trans=0, overwrite_c=1)  # warm up
    start = time.perf_counter()
    done = 0
    while done < rows:
        G = dsyrk(1.0, block.T, beta=1.0, c=G, trans=0, overwrite_c=1)
        done += chunk
    return (time.perf_counter() - start) * n / done


def run_one(n: int, n_jobs: int | None = None) -> dict:
    from vrvm import VRVMRegressor

    X, y = make_data(n)
    start = time.perf_counter()
    model = VRVMRegressor(max_basis=1000, n_jobs=n_jobs, random_state=0).fit(X, y)
    fit_s = time.perf_counter() - start
    X_test, y_test = make_data(20_000, seed=1)
    rmse = float(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    m = 1 + len(model.kernel_widths_) * model.centre_indices_.size
    return {
        "n": n,
        "fit_s": fit_s,
        "peak_mb": peak_mb,
        "n_relevance": model.n_relevance_,
        "n_active": int(model.active_.size),
        "n_columns": m,
        "iters": model.n_iter_,
        "widths": [round(float(w), 3) for w in model.kernel_widths_],
        "test_rmse": rmse,
        "floor_s": floor_seconds(n, m),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--n-jobs", type=int, default=None, help="VRVMRegressor n_jobs")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one, args.n_jobs)))
        return
    print(
        f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, "
        f"python {platform.python_version()}, numpy {np.__version__}, n_jobs={args.n_jobs}"
    )
    print(
        "| N | fit (s) | floor Phi^T Phi (s) | fit / floor | peak RSS (MB) | columns M | "
        "active | relevance vectors | widths | test RMSE (noise 0.2) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(n)]
            + ([] if args.n_jobs is None else ["--n-jobs", str(args.n_jobs)]),
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"| {r['n']:,} | {r['fit_s']:.2f} | {r['floor_s']:.2f} | "
            f"{r['fit_s'] / r['floor_s']:.2f} | {r['peak_mb']:.0f} | {r['n_columns']} | "
            f"{r['n_active']} | {r['n_relevance']} | {r['widths']} | {r['test_rmse']:.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
