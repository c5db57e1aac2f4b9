"""Reliability of the model store under concurrent writers and kill -9, measured.

Three experiments on a data home holding one small trained model (synthetic city):

* ``concurrent updates`` -- four processes each run ``vrvm update <store> few.csv``
  five times at once; counts the updates that report success and those in the active
  version's lineage (a forked update is lost: its child is never active);
* ``thread publishes`` -- four threads publish ten versions each with
  ``ModelStore.add``; reports the active and the latest version (they differ when
  activation is last-writer-wins);
* ``random kills`` -- ``vrvm update`` killed with SIGKILL at a random moment, N times;
  after each kill the home is opened as the dashboard opens it (healed, when the code
  can) and checked: every version committed before is byte-identical (data lost),
  staging leftovers, and whether the active version is the newest committed one
  (an orphan: a complete update left inactive, which the next update skips).

Runs against any checkout (``--src``), so the same script measures the code before
and after a change; version records are read from their JSON (parents from the
record or, in older stores, from its ``info``). Usage::

    python benchmarks/bench_store_reliability.py [--src DIR] [--kills 20] [--seed 0]

Prints a Markdown table and writes benchmarks/results/bench_store_reliability.json
(or ``--out``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

_SETUP = """
import sys
from vrvm.services.analyst.demo import demo_settings, ensure_demo_model
ensure_demo_model(sys.argv[1], demo_settings({"VRVM_DEMO_TRIPS": "3000",
    "VRVM_DEMO_MEMBERS": "2", "VRVM_DEMO_MAX_BASIS": "150", "VRVM_DEMO_WIDTHS": "1.5, 3",
    "VRVM_N_JOBS": "1"}))
from vrvm import synthetic_city
synthetic_city(5, seed=99).to_csv(sys.argv[2], index=False)
"""

_UPDATES = """
import io, sys
from vrvm.cli import main
codes = [main(["update", sys.argv[1], sys.argv[2], "--quiet"], stdout=io.StringIO())
         for _ in range(5)]
print(sum(c == 0 for c in codes))
"""

_THREADS = """
import sys, threading
import numpy as np
from vrvm.trips.store.model_dir import save_model_dir
from vrvm.trips.store.model_store import ModelStore
def write(d):
    save_model_dir(d, metadata={}, arrays={"w": np.zeros(3)}, format_name="x", format_version=1)
def publish():
    for _ in range(10):
        ModelStore(sys.argv[1]).add(write)
threads = [threading.Thread(target=publish) for _ in range(4)]
[t.start() for t in threads]; [t.join() for t in threads]
s = ModelStore(sys.argv[1])
print(s.active_version(), s.latest_version())
"""

_HEAL = """
import sys
try:
    from vrvm.trips.home import Home
except ImportError:  # code without healing: nothing repairs the home
    sys.exit(0)
Home(sys.argv[1]).heal()
"""


def _run(src: Path, args: list[str], **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [sys.executable, *args],
        env=env,
        cwd=tempfile.gettempdir(),  # not this checkout: -c puts the working folder first
        capture_output=True,
        text=True,
        timeout=600,
        **kwargs,
    )


def _records(store: Path) -> dict[int, dict]:
    records = {}
    for path in sorted((store / "versions").glob("v*/version.json")):
        record = json.loads(path.read_text())
        parent = record.get("parent", record["info"].get("parent"))
        records[record["version"]] = {"parent": parent, "dir": path.parent}
    return records


def _active(store: Path) -> int | None:
    try:
        return json.loads((store / "active.json").read_text())["version"]
    except FileNotFoundError:
        return None


def _lineage(records: dict[int, dict], version: int | None) -> list[int]:
    chain = []
    while version is not None and version in records and version not in chain:
        chain.append(version)
        version = records[version]["parent"]
    return chain


def _digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return digest.hexdigest()


def _leftovers(home: Path) -> int:
    store = home / "models"
    found = list(home.rglob(".tmp-*")) + list(home.rglob(".old-*"))
    found += [p for p in (store / "versions").glob("v*") if not (p / "version.json").exists()]
    found += list((store / "journal").glob("*")) if (store / "journal").is_dir() else []
    return len(found)


def concurrent_updates(src: Path, home: Path, trips: Path) -> dict:
    store = home / "models"
    env = {**os.environ, "PYTHONPATH": str(src)}
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _UPDATES, str(store), str(trips)],
            env=env,
            cwd=tempfile.gettempdir(),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(4)
    ]
    succeeded = sum(int(p.communicate(timeout=900)[0].strip() or 0) for p in procs)
    records = _records(store)
    chain = _lineage(records, _active(store))
    return {
        "updates": 20,
        "reported_success": succeeded,
        "in_active_lineage": len(chain) - 1,  # minus the trained version 1
        "seconds": round(time.perf_counter() - started, 1),
    }


def thread_publishes(src: Path, folder: Path) -> dict:
    out = _run(src, ["-c", _THREADS, str(folder)]).stdout.split()
    return {"active": int(out[0]), "latest": int(out[1])}


def random_kills(src: Path, home: Path, trips: Path, kills: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    store = home / "models"
    env = {**os.environ, "PYTHONPATH": str(src)}
    lost = orphans = leftovers = 0
    for _ in range(kills):
        before = {v: _digest(r["dir"]) for v, r in _records(store).items()}
        proc = subprocess.Popen(
            [sys.executable, "-m", "vrvm", "update", str(store), str(trips), "--quiet"],
            env=env,
            cwd=tempfile.gettempdir(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(float(rng.uniform(0.3, 3.5)))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        _run(src, ["-c", _HEAL, str(home)])  # the next open
        after = _records(store)
        lost += sum(v not in after or _digest(after[v]["dir"]) != d for v, d in before.items())
        newest = max(after) if after else None
        orphans += int(newest is not None and _active(store) != newest)
        leftovers += _leftovers(home)
    return {"kills": kills, "data_lost": lost, "orphans": orphans, "leftovers": leftovers}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", type=Path, default=ROOT, help="checkout to measure")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_store_reliability.json"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = tmp / "base"
        trips = tmp / "few.csv"
        setup = _run(args.src, ["-c", _SETUP, str(base), str(trips)])
        if setup.returncode:
            raise SystemExit(setup.stderr)
        results = {}
        shutil.copytree(base, tmp / "a")
        results["concurrent_updates"] = concurrent_updates(args.src, tmp / "a", trips)
        results["thread_publishes"] = thread_publishes(args.src, tmp / "threads")
        shutil.copytree(base, tmp / "b")
        results["random_kills"] = random_kills(args.src, tmp / "b", trips, args.kills, args.seed)
    results["machine"] = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    results["src"] = str(args.src)
    c, t, k = results["concurrent_updates"], results["thread_publishes"], results["random_kills"]
    print("| experiment | result |\n|---|---|")
    print(
        f"| 4 processes x 5 `vrvm update` | {c['reported_success']} of 20 report success, "
        f"{c['in_active_lineage']} in the active lineage ({c['seconds']} s) |"
    )
    print(f"| 4 threads x 10 `ModelStore.add` | active {t['active']}, latest {t['latest']} |")
    print(
        f"| {k['kills']} random kill -9 of `vrvm update` | data lost {k['data_lost']}, "
        f"orphaned versions {k['orphans']}, leftovers {k['leftovers']} |"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
