"""What a viewer's relevance table holds, and what it costs to build (issue 32, item 6).

On the Chicago taxi sample, a model is trained as the test fixture does (3,000 trips
drawn with seed 0, two members, kernel widths 1.5 and 3, at most 100 basis functions);
then the viewer's table (:func:`vrvm.services.map.privacy.private_relevance_table`) and
arcs (:func:`vrvm.services.map.privacy.relevance_arcs`) are built for k = 2 and 5, and the
rows a viewer received before (one per relevance vector) are counted. To see the cost
on models with many more relevance vectors, the same is timed on tables of 3,000 and
30,000 distinct training trips used as relevance vectors (wall time, and peak Python
memory under ``tracemalloc``).

Usage::

    python benchmarks/bench_private_relevance.py [--data PATH]

Prints a Markdown table for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

from vrvm import TravelTimeModel, read_trips
from vrvm.services.analyst.relevance import relevance_table
from vrvm.services.map import privacy
from vrvm.services.map.area import build_service_area

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "chicago_taxi_trips.csv"


def _measure(table: pd.DataFrame, area, k: int) -> dict:
    tracemalloc.start()
    started = time.perf_counter()
    shown = privacy.private_relevance_table(table, area, min_trips=k)
    arcs = privacy.relevance_arcs(table, area, min_trips=k)
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "vectors": len(table),
        "k": k,
        "rows": len(shown),
        "smallest": int(shown["trips"].min()) if len(shown) else 0,
        "arcs": len(arcs),
        "s": seconds,
        "mb": peak / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    args = parser.parse_args()
    trips, _ = read_trips(args.data)
    sample = trips.sample(n=3000, random_state=0).sort_values("start_time")
    sample = sample.reset_index(drop=True)
    model = TravelTimeModel(
        n_members=2, kernel_widths=[1.5, 3.0], max_basis=100, random_state=0, n_jobs=1
    ).fit(sample)
    area = build_service_area(model, trips=sample)
    vectors = relevance_table(model)
    rows = [_measure(vectors, area, k) for k in (2, 5)]
    rng = np.random.default_rng(0)
    for n in (3000, 30000):
        chosen = trips.iloc[rng.choice(len(trips), size=min(n, len(trips)), replace=False)]
        if n > len(trips):  # more vectors than trips: distinct copies a minute apart
            copies = [chosen] + [
                trips.assign(start_time=trips["start_time"] + pd.Timedelta(minutes=i))
                for i in range(1, -(-n // len(trips)))
            ]
            chosen = pd.concat(copies, ignore_index=True).iloc[:n]
        table = chosen.assign(
            member=0,
            hour=chosen["start_time"].dt.hour,
            weight=rng.random(len(chosen)),
            width=1.5,
        )
        rows.append(_measure(table, area, 5))
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    print("| relevance vectors | k | viewer rows before | viewer rows after (smallest) |", end="")
    print(" arcs | time | peak memory |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['vectors']:,} | {row['k']} | {row['vectors']:,} | {row['rows']} "
            f"({row['smallest']}) | {row['arcs']} | {row['s']:.2f} s | {row['mb']:.1f} MB |"
        )


if __name__ == "__main__":
    main()
