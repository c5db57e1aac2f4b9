"""Can a member's predictive variance term be computed from a truncated eigendecomposition?

Prediction with the 1e7 model spends most of its time in the variance term of every
member, phi^T V phi = ||L^-1 phi||^2 with L L^T = A + G (unit-scaled form, see
:class:`vrvm.engine.predictor.Predictor`): K^2/2 multiply-adds per member and query
(BLAS ``dtrmm``). This script measures whether a low-rank form with a rigorous
per-query bound pays, on a fitted model and on trips like its training trips.

With V = sum_i l_i u_i u_i^T (l_1 >= ... >= l_K, from LAPACK ``eigh`` of the precision
A + G: l_i = 1 / eigenvalue), keeping the r largest terms leaves

    0 <= sum_{i>r} l_i (u_i^T phi)^2 <= l_{r+1} (||phi||^2 - sum_{i<=r} (u_i^T phi)^2),

both sides computable per query at no extra cost. Tolerance ``tau``: the neglected part
is at most ``tau`` times the member's noise variance f'/e' (structured: the term is
(f'/e') phi^T V phi, so neglected quad <= tau; mean-field: it is phi^T V phi / beta_w,
so neglected quad <= tau beta_w f'/e', which is tau too since beta_w = e'/f' at the
fixed point); then every predictive scale is within a relative tau / 2 of the exact
one. For each tolerance the script reports the smallest r with which the bound holds
for every query ("bound"), and the smallest r whose *actual* neglected part is within
the tolerance for every query ("oracle": no certified method can do better). A rank-r
form costs K r multiply-adds per query (a GEMM with U_r), the exact path K^2/2 (a
triangular product at a similar rate), so it pays only for r < K/2.

It also reports the spectrum of the whitened design z = L^-1 phi over the queries,
N E[z z^T] (N = the member's training rows). Over the training rows themselves
sum z z^T = L^-1 G L^-T <= I; when the queries are drawn like the training trips and the
prior A is small beside G it is close to I: every direction carries about 1/N of the
term (whose mean is then about K/N), and a rank-r form, in whatever basis, drops about
(K - r)/N on average, so even an uncertified one needs r >= K - tau N. Last, the time
of one member's :meth:`Predictor.loc_scale` with and without the variance term (one
BLAS thread): the most any shortcut of the term can save.

Queries are a uniform random sample of ``--source`` (seed 0), or with ``--sample
first`` its first rows (the queries of ``bench_predict_scale.py``; a ``vrvm demo-data``
file is in time order, so these are its first hours).

Usage, from the repository root (model and trips as for ``bench_predict_scale.py``)::

    python benchmarks/bench_variance_rank.py --model MODEL --source TRIPS.parquet

Writes ``benchmarks/results/variance_rank.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import linalg

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "variance_rank.json"
TOLERANCES = (1e-6, 1e-4, 1e-3, 1e-2)


def spectrum(chol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues l (descending) and eigenvectors U of V = (L L^T)^-1.

    From the eigendecomposition of the precision L L^T (LAPACK ``syevd``), never an
    inverse: its smallest eigenvalues are V's largest.
    """
    lower = np.tril(chol)
    w, U = linalg.eigh(lower @ lower.T)
    return 1.0 / w, U  # w ascending, so 1/w descending


def noise_unit(pred) -> float:
    """The tolerance's unit on the scale of quad = phi^T V phi (see the module docstring)."""
    return 1.0 if pred.family == "structured" else pred.beta_w * pred.f / pred.e


def truncation(phi: np.ndarray, l: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Neglected part and its bound for every query (rows) and kept rank r = 0..K-1 (columns).

    ``neglected[:, r] = sum_{i>r} l_i (u_i^T phi)^2`` (0-based: keeping directions
    0..r-1) and ``bound[:, r] = l_r (||phi||^2 - sum_{i<r} (u_i^T phi)^2)``.
    """
    p = (phi @ U) ** 2
    contrib = p * l
    neglected = np.cumsum(contrib[:, ::-1], axis=1)[:, ::-1]
    kept = np.concatenate([np.zeros((phi.shape[0], 1)), np.cumsum(p, axis=1)[:, :-1]], axis=1)
    rem = np.maximum(np.einsum("ij,ij->i", phi, phi)[:, None] - kept, 0.0)
    return neglected, l[None, :] * rem


def smallest_rank(values: np.ndarray, limit: float) -> int:
    """The smallest r with ``values[:, r] <= limit`` for every row (K if none)."""
    ok = values.max(axis=0) <= limit
    return int(np.argmax(ok)) if ok.any() else values.shape[1]


def member_timing(pred, X, linear, repeats: int = 3) -> dict[str, float]:
    """µs per query of one member's ``loc_scale`` and of the same without the variance
    term (design and location only), on one BLAS thread."""
    from vrvm.engine._blas import single_threaded_blas

    def best(call) -> float:
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
        return 1e6 * min(times) / X.shape[0]

    def location_only():
        for start in range(0, X.shape[0], 512):
            rows = slice(start, start + 512)
            pred.design(X[rows], linear[rows]) @ pred.mean

    with single_threaded_blas():
        pred.loc_scale(X[:512], linear[:512])  # warm the design plan and L^-1
        full = best(lambda: pred.loc_scale(X, linear))
        return {"loc_scale_us": full, "no_variance_us": best(location_only)}


def member_report(pred, n_rows: int, X, linear, tolerances) -> dict[str, Any]:
    """Everything the module docstring lists, for one member trained on ``n_rows`` rows."""
    phi = pred.design(X, linear)
    l, U = spectrum(pred.chol)
    neglected, bound = truncation(phi, l, U)
    unit = noise_unit(pred)
    quad = neglected[:, 0] / unit  # the whole term, in units of the noise variance
    z = linalg.solve_triangular(np.tril(pred.chol), phi.T, lower=True, check_finite=False)
    white = n_rows * linalg.eigvalsh(z @ z.T / phi.shape[0])
    k = phi.shape[1]
    return {
        "K": k,
        "training_rows": n_rows,
        "variance_term_mean": float(np.mean(quad)),
        "variance_term_median": float(np.median(quad)),
        "variance_term_max": float(quad.max()),
        "K_over_N": k / n_rows,
        "whitened_spectrum_quantiles": np.quantile(white, [0.1, 0.5, 0.9]).tolist(),
        "rank_bound": {f"{t:g}": smallest_rank(bound, t * unit) for t in tolerances},
        "rank_oracle": {f"{t:g}": smallest_rank(neglected, t * unit) for t in tolerances},
        **member_timing(pred, X, linear),
    }


def queries(source: Path, n_rows: int, model, how: str = "random"):
    """Kernel inputs and linear column of ``n_rows`` trips of ``source``: a uniform random
    sample (seed 0; the training distribution) or the first rows (``bench_predict_scale``'s
    queries; a demo-data file is in time order, so these are the first hours)."""
    import pandas as pd
    import pyarrow.parquet as pq

    with pq.ParquetFile(source) as reader:
        if how == "first":
            frame = next(reader.iter_batches(batch_size=n_rows)).to_pandas()
        else:
            total = reader.metadata.num_rows
            rows = np.sort(np.random.default_rng(0).choice(total, size=n_rows, replace=False))
            parts, start = [], 0
            for group in range(reader.metadata.num_row_groups):
                stop = start + reader.metadata.row_group(group).num_rows
                local = rows[(rows >= start) & (rows < stop)] - start
                if local.size:
                    parts.append(reader.read_row_group(group).take(local).to_pandas())
                start = stop
            frame = pd.concat(parts, ignore_index=True)
    X, d = model.featurizer_.transform(frame)
    return X, d[:, None]


def table(result: dict[str, Any]) -> str:
    tols = list(result["members"][0]["rank_bound"])
    head = " | ".join(f"r at {t}: bound / oracle" for t in tols)
    lines = [
        f"| member | K | N | variance term, median / max | N eig(E[zz^T]) 10/50/90 % | {head} |",
        "|---|---:|---:|---|---|" + "---|" * len(tols),
    ]
    for i, m in enumerate(result["members"]):
        ranks = " | ".join(f"{m['rank_bound'][t]} / {m['rank_oracle'][t]}" for t in tols)
        white = " / ".join(f"{v:.2f}" for v in m["whitened_spectrum_quantiles"])
        lines.append(
            f"| {i} | {m['K']} | {m['training_rows']:,} | {m['variance_term_median']:.1e} / "
            f"{m['variance_term_max']:.1e} | {white} | {ranks} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="a model directory")
    parser.add_argument("--source", type=Path, required=True, help="trips to take queries from")
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--sample", choices=("random", "first"), default="random")
    parser.add_argument("--code", type=Path, default=None, help="import vrvm from here")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.code or REPO))
    from vrvm import TravelTimeModel

    model = TravelTimeModel.load(args.model)
    X, linear = queries(args.source, args.queries, model, args.sample)
    members = [
        member_report(member._predictor, int(n), X, linear, TOLERANCES)
        for member, n in zip(model.members_, model.shard_sizes_, strict=True)
    ]
    result = {
        "command": "python benchmarks/bench_variance_rank.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "model": str(args.model),
        "n_queries": int(X.shape[0]),
        "sample": args.sample,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "members": members,
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    timing = [(m["loc_scale_us"], m["no_variance_us"]) for m in members]
    total, rest = (sum(t[i] for t in timing) for i in (0, 1))
    print(f"\nall members, one thread: {total:.1f} µs per query, {rest:.1f} without the variance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
