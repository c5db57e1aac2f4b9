"""Benchmark of worker processes left behind when a training parent is killed.

Issue 12 ("Workers"): killing the dashboard (``kill -9``) during first-start training
(loky, 2 jobs) left orphaned loky workers and resource trackers behind. This measures
it: ``--kills`` times, a fresh parent process trains and is killed with ``SIGKILL``
(``--signal TERM`` for a plain ``kill``) at a random moment, uniform in
``[0, --span-s]`` after its first loky worker appears; then every process that
inherited the parent's environment (a random token in ``VRVM_LEAK_TOKEN``, so orphans
are found whoever adopted them) is watched for ``--settle-s`` seconds.

Parents (``--parent``):

``dashboard`` (default)
    What the dashboard runs on first start:
    :func:`vrvm.services.analyst.demo.ensure_demo_model` on an empty home with the default
    demo settings (20,000 synthetic trips, 8 members, ``VRVM_N_JOBS`` = 2), in a
    thread that then ends (Streamlit runs pages in script threads; ``--main-thread``
    to train in the main thread), then it stays up like the server does (so kills
    after training hit the idle, reusable workers too).
``cli``
    ``python -m vrvm demo --out DIR --n-jobs 2`` (which exits when done).

Per kill: when it happened (seconds after the first worker; ``training`` or ``idle``),
the processes alive at the kill by kind (loky worker, loky resource tracker,
multiprocessing resource tracker), the survivors after ``--settle-s`` and their
resident memory (RSS, MB, summed: shared pages counted once per process, like ``ps``),
the seconds until the last one ended, and the ``/dev/shm`` entries the parent created
(joblib memmap folders, loky semaphores) still there at the end: the resource trackers
remove them when they see their pipe close, so a tracker killed by force leaks them.

Survivors are then ended by pid (workers first, so the trackers still clean up), and
the leftover ``/dev/shm`` entries of that parent removed.

Usage::

    python benchmarks/bench_worker_leak.py --label before     # 20 kills, ~12 min
    python benchmarks/bench_worker_leak.py --kills 3 --span-s 5 --label smoke
    python benchmarks/bench_worker_leak.py --parent cli --signal TERM
    python benchmarks/bench_worker_leak.py --kills 10 --span-s 2 --hog 2 --label busy

``--hog N`` keeps N busy-looping processes running for the whole run (a busy machine:
workers then take several times longer to start and import), and ends them after.

Prints a Markdown table (one row per kill and a summary) and writes raw JSON under the
label to ``benchmarks/results/bench_worker_leak.json`` (other labels are kept).
Linux only (it reads ``/dev/shm`` and relies on ``psutil``, installed with dask).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tools.processes import TOKEN_ENV, tagged  # noqa: E402 (the checkout's tools/)

RESULTS = Path(__file__).resolve().parent / "results"
POLL_S = 0.1
START_TIMEOUT_S = 120.0  # imports + data generation before the first worker, loaded machine

# The dashboard's first start (app_ui/context.py calls ensure_demo_model) in a thread
# that then ends, as Streamlit runs every page in a script thread; then the server
# stays up. A marker file says when training is over. --main-thread trains in the
# main thread instead (where the workers also get Linux's parent-death signal).
DASHBOARD_PARENT = """
import sys, threading, time
from pathlib import Path
from vrvm.services.analyst import demo
home = Path(sys.argv[1])

def first_start():
    demo.ensure_demo_model(home, demo.demo_settings())
    (home / "trained").write_text("1")

if sys.argv[2] == "main":
    first_start()
else:
    thread = threading.Thread(target=first_start, name="ScriptRunner.scriptThread")
    thread.start()
    thread.join()
time.sleep(3600)
"""


@dataclass
class Kill:
    """One kill and what it left behind."""

    delay_s: float
    phase: str = "?"
    at_kill: dict[str, int] = field(default_factory=dict)
    survivors: dict[str, int] = field(default_factory=dict)
    rss_mb: float = 0.0
    gone_after_s: float | None = None
    shm_left: int = 0
    note: str = ""


def kind(proc: psutil.Process) -> str:
    """The kind of a process the parent started, from its command line."""
    try:
        cmd = " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return "gone"
    if "loky.backend.popen_loky_posix" in cmd:
        return "loky worker"
    if "loky.backend.resource_tracker" in cmd:
        return "loky resource tracker"
    if "multiprocessing.resource_tracker" in cmd:
        return "mp resource tracker"
    return "other"


def count_kinds(procs: list[psutil.Process]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for proc in procs:
        counts[kind(proc)] = counts.get(kind(proc), 0) + 1
    return counts


def rss_mb(procs: list[psutil.Process]) -> float:
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total / 2**20


def shm_entries(parent_pid: int) -> list[Path]:
    """``/dev/shm`` entries named after the parent: memmap folders and loky semaphores."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        return []
    return [
        p
        for p in shm.iterdir()
        if p.name.startswith(f"joblib_memmapping_folder_{parent_pid}_")
        or p.name.startswith(f"sem.loky-{parent_pid}-")
    ]


def end_survivors(token: str, parent_pid: int) -> None:
    """End what a kill left (workers first, so the trackers see EOF and clean up)."""
    for group in (("loky worker", "other"), ("loky resource tracker", "mp resource tracker")):
        for proc in tagged(token, exclude=parent_pid):
            if kind(proc) in group:
                try:
                    os.kill(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and any(
            kind(p) in group for p in tagged(token, exclude=parent_pid)
        ):
            time.sleep(POLL_S)
    for path in shm_entries(parent_pid):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def start_parent(args, home: Path, env: dict[str, str]) -> subprocess.Popen:
    if args.parent == "dashboard":
        thread = "main" if args.main_thread else "script"
        cmd = [sys.executable, "-c", DASHBOARD_PARENT, str(home), thread]
    else:
        cmd = [sys.executable, "-m", "vrvm", "demo", "--out", str(home / "model"), "-q"]
        cmd += ["--n-jobs", env["VRVM_N_JOBS"]]
    # stdout/stderr to files, not pipes: an orphan holding a pipe would block a reader
    with open(home / "parent.log", "wb") as log:
        return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)


def last_line(log: Path) -> str:
    """``": <the last line of the parent's output>"``, to say why it ended early."""
    lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
    return f": {lines[-1][:200]}" if lines else ""


def one_kill(args, delay_s: float) -> Kill:
    """Start a parent, kill it ``delay_s`` after its first worker, watch what is left."""
    record = Kill(delay_s=round(delay_s, 2))
    token = uuid.uuid4().hex
    tmp = Path(tempfile.mkdtemp(prefix="vrvm-leak-"))
    home = tmp / "home"
    home.mkdir()
    env = {**os.environ, TOKEN_ENV: token, "VRVM_HOME": str(home)}
    env["VRVM_N_JOBS"] = str(args.n_jobs)
    parent = start_parent(args, home, env)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and parent.poll() is None:
            if count_kinds(tagged(token, exclude=parent.pid)).get("loky worker", 0) > 0:
                break
            time.sleep(POLL_S)
        else:
            record.note = "no worker appeared" if parent.poll() is None else "parent exited"
            record.note += last_line(home / "parent.log")
            return record
        time.sleep(delay_s)
        if parent.poll() is not None:
            record.note = "parent exited before the kill" + last_line(home / "parent.log")
            return record
        record.phase = "idle" if (home / "trained").exists() else "training"
        record.at_kill = count_kinds(tagged(token, exclude=parent.pid))
        os.kill(parent.pid, getattr(signal, f"SIG{args.signal}"))
        parent.wait(timeout=30)
        killed = time.monotonic()
        left = tagged(token, exclude=parent.pid)
        while left and time.monotonic() - killed < args.settle_s:
            time.sleep(POLL_S)
            left = tagged(token, exclude=parent.pid)
        if not left:
            record.gone_after_s = round(time.monotonic() - killed, 2)
            # the trackers remove /dev/shm entries as they exit: give the last one a moment
            time.sleep(0.5)
        record.survivors = count_kinds(left)
        record.rss_mb = round(rss_mb(left), 1)
        record.shm_left = len(shm_entries(parent.pid))
        return record
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(timeout=30)
        end_survivors(token, parent.pid)
        shutil.rmtree(tmp, ignore_errors=True)


def fmt_kinds(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--parent", choices=("dashboard", "cli"), default="dashboard")
    parser.add_argument("--signal", choices=("KILL", "TERM"), default="KILL")
    parser.add_argument(
        "--main-thread", action="store_true", help="dashboard parent: train in the main thread"
    )
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument(
        "--span-s", type=float, default=40.0, help="kill uniformly in [0, span] after a worker"
    )
    parser.add_argument("--settle-s", type=float, default=10.0, help="watch survivors this long")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default="run", help="key of this run in the JSON file")
    parser.add_argument(
        "--hog", type=int, default=0, help="busy-looping processes to run meanwhile"
    )
    args = parser.parse_args()
    if not sys.platform.startswith("linux"):
        sys.exit("bench_worker_leak.py needs Linux (/dev/shm, /proc via psutil)")

    rng = random.Random(args.seed)
    load_start = os.getloadavg()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hog)]
    kills = []
    try:
        for i in range(args.kills):
            record = one_kill(args, rng.uniform(0.0, args.span_s))
            kills.append(record)
            print(f"kill {i + 1}/{args.kills}: {asdict(record)}", file=sys.stderr, flush=True)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()

    tried = [k for k in kills if not k.note]
    leaky = [k for k in tried if k.survivors]
    summary = {
        "kills_tried": len(tried),
        "kills_leaving_processes": len(leaky),
        "processes_left": sum(sum(k.survivors.values()) for k in tried),
        "rss_left_mb": round(sum(k.rss_mb for k in tried), 1),
        "shm_entries_left": sum(k.shm_left for k in tried),
        # over the kills that left nothing (None when every kill left something)
        "max_gone_after_s": max(
            (k.gone_after_s for k in tried if k.gone_after_s is not None), default=None
        ),
    }
    print(
        f"\n{args.parent} parent{' (main thread)' if args.main_thread else ''}, "
        f"SIG{args.signal}, {args.n_jobs} jobs, "
        f"settle {args.settle_s:g} s ({args.label})\n"
    )
    print(
        "| # | delay (s) | phase | at kill | left after settle | RSS left (MB) | gone after (s) "
        "| /dev/shm left |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for i, k in enumerate(kills, 1):
        if k.note:
            print(f"| {i} | {k.delay_s} | {k.note} | | | | | |")
            continue
        gone = "-" if k.gone_after_s is None else f"{k.gone_after_s:.2f}"
        print(
            f"| {i} | {k.delay_s} | {k.phase} | {fmt_kinds(k.at_kill)} | "
            f"{fmt_kinds(k.survivors)} | {k.rss_mb:,.0f} | {gone} | {k.shm_left} |"
        )
    print(
        f"\nkills tried {summary['kills_tried']}, leaving processes "
        f"{summary['kills_leaving_processes']}, processes left {summary['processes_left']}, "
        f"RSS left {summary['rss_left_mb']:,.0f} MB, /dev/shm entries left "
        f"{summary['shm_entries_left']}"
    )

    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "bench_worker_leak.json"
    runs = json.loads(out.read_text()) if out.exists() else {}
    runs[args.label] = {
        "meta": {
            "args": vars(args),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "load_avg_start": list(load_start),
            "load_avg_end": list(os.getloadavg()),
        },
        "summary": summary,
        "kills": [asdict(k) for k in kills],
    }
    out.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
