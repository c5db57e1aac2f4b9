"""Store locks: vrvm's own ``flock`` lock against a ``filelock`` wrapper, measured side by side.

``own`` is :func:`vrvm.trips.store.durable.exclusive_lock` as it is in the tree (``--src``
picks another checkout); ``filelock`` is :func:`filelock_exclusive_lock` below, the swap
candidate written to keep every guarantee of the own lock: a
:class:`~vrvm.trips.store.errors.StoreBusyError` naming the holder after ``timeout``
seconds, re-entrant per path and thread (``is_singleton`` and the default thread-local
holds), the lock file kept (``preserve_lock_file``), no soft-lock fallback (a marker
file would outlive a killed holder), the write refusal of read-only homes checked
first. Experiments, each on a fresh temporary folder:

* ``uncontended``: one acquire and release of a free lock (the file exists), us;
* ``re-entrant``: a nested acquire and release inside a held lock, us;
* ``hand-over``: a holder releases while a waiter (another process, or another thread
  of the same process) is waiting; the delay between the release and the waiter
  holding the lock, ms (median and 95th percentile of ``--handovers``), for a wait
  without a timeout (``timeout=None``: the trip store, the audit log, the zones) and
  with one (``timeout=60``: the model store);
* ``two writers``: two processes each take the lock ``--rounds`` times and add one to a
  counter file under it (read, write in place: no fsync nor truncation, which would
  measure the disk);
  acquisitions per second, and whether the counter ends right (mutual exclusion held);
* ``killed holder``: the holder is killed with SIGKILL while holding; the delay until
  a waiting process holds the lock, ms (no stale lock either way: ``flock`` dies with
  its holder);
* ``busy``: a waiter with ``timeout=0.3`` against a holder: the seconds it waited and
  the message;
* ``import``: the seconds and the resident memory ``import`` of the implementation adds
  to a fresh interpreter (``import vrvm.trips.store.durable`` alone, then plus
  ``filelock``).

Usage::

    python benchmarks/bench_locks.py [--impl own filelock filelock@0.005] [--n 20000] \\
        [--handovers 100] [--rounds 500] [--label after] [--src DIR]

``--src DIR`` measures the vrvm of another checkout (``own`` only: the candidate uses
this tree's holder record).

Prints a Markdown table and writes benchmarks/results/bench_locks.json (or ``--out``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import multiprocessing as mp
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- the filelock candidate
def _read_holder(path: Path) -> str:
    from vrvm.trips.store.durable import _holder_text

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return ""
    try:
        return _holder_text(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def filelock_exclusive_lock(path, *, timeout=None, poll_interval_s=0.05):
    """:func:`vrvm.trips.store.durable.exclusive_lock` on ``filelock.FileLock``.

    ``poll_interval_s`` is the pause between attempts while another holder keeps the
    lock (filelock's default, 0.05 s, is the own lock's ``LOCK_POLL_S``).
    """
    import filelock

    from vrvm.trips.store.durable import _check_writable, _name_holder
    from vrvm.trips.store.errors import StoreBusyError, storage_error

    path = Path(path)
    _check_writable(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise storage_error(exc, path) from exc
    lock = filelock.FileLock(
        path,
        is_singleton=True,  # re-entrant across calls of one thread, exclusive between threads
        preserve_lock_file=True,
        fallback_to_soft=False,
        on_acquired=_name_holder,  # the same record as the own lock's, written the same way
    )
    started = time.monotonic()
    try:
        lock.acquire(
            timeout=-1 if timeout is None else max(0.0, float(timeout)),
            poll_interval=poll_interval_s,
        )
    except filelock.Timeout:  # a TimeoutError, so an OSError: caught first
        raise StoreBusyError(path.parent, _read_holder(path), time.monotonic() - started) from None
    except OSError as exc:
        raise storage_error(exc, path) from exc
    try:
        yield
    finally:
        lock.release()


def _impl(name: str):
    """``own``, ``filelock`` or ``filelock@<poll interval in s>`` (``filelock@0.005``)."""
    if name == "own":
        from vrvm.trips.store.durable import exclusive_lock

        return exclusive_lock
    if "@" in name:
        return functools.partial(filelock_exclusive_lock, poll_interval_s=float(name[9:]))
    return filelock_exclusive_lock


# ------------------------------------------------------------------------- experiments
def _per_call_us(impl, folder: Path, n: int, nested: bool) -> float:
    lock = _impl(impl)
    path = folder / f".lock-{impl}-{nested}"
    with lock(path):
        pass
    best = float("inf")
    for _ in range(5):
        outer = lock(path) if nested else contextlib.nullcontext()
        with outer:
            started = time.perf_counter()
            for _ in range(n):
                with lock(path, timeout=60):
                    pass
            best = min(best, time.perf_counter() - started)
    return best / n * 1e6


def _hold_then_release(impl, path, timeout, events, released_at, rounds) -> None:
    lock = _impl(impl)
    held, waiting, taken = events
    for _ in range(rounds):
        with lock(path, timeout=timeout):
            held.set()
            waiting.wait()
            time.sleep(0.02)  # the waiter is inside its acquire by now
            waiting.clear()
            held.clear()
            released_at.value = time.monotonic()
        taken.wait()  # the waiter took the lock and let it go
        taken.clear()


def _wait_for_lock(impl, path, timeout, events, released_at, delays) -> None:
    lock = _impl(impl)
    held, waiting, taken = events
    held.wait()
    waiting.set()
    with lock(path, timeout=timeout):
        delays.append((time.monotonic() - released_at.value) * 1e3)
    taken.set()


def _handover_ms(impl, folder: Path, rounds: int, timeout, across: str) -> list[float]:
    path = folder / f".lock-handover-{impl}-{across}-{timeout}"
    if across == "process":
        ctx = mp.get_context("spawn")
        events, released_at = (ctx.Event(), ctx.Event(), ctx.Event()), ctx.Value("d", 0.0)
        holder = ctx.Process(
            target=_hold_then_release, args=(impl, path, timeout, events, released_at, rounds)
        )
        holder.start()
        delays: list[float] = []
        for _ in range(rounds):
            _wait_for_lock(impl, path, timeout, events, released_at, delays)
        holder.join()
        return delays
    events = (threading.Event(), threading.Event(), threading.Event())

    class _Value:
        value = 0.0

    released_at = _Value()
    holder = threading.Thread(
        target=_hold_then_release, args=(impl, path, timeout, events, released_at, rounds)
    )
    holder.start()
    delays = []
    for _ in range(rounds):
        _wait_for_lock(impl, path, timeout, events, released_at, delays)
    holder.join()
    return delays


def _count_under_lock(impl, path, counter, rounds, timeout) -> None:
    lock = _impl(impl)
    fd = os.open(counter, os.O_RDWR)
    try:
        for _ in range(rounds):
            with lock(path, timeout=timeout):
                value = int(os.pread(fd, 32, 0).strip() or 0)
                os.pwrite(fd, str(value + 1).ljust(31).encode() + b"\n", 0)
    finally:
        os.close(fd)


def _two_writers(impl, folder: Path, rounds: int, timeout) -> tuple[float, bool]:
    path = folder / f".lock-writers-{impl}-{timeout}"
    counter = folder / f"counter-{impl}-{timeout}"
    counter.write_text("0")
    ctx = mp.get_context("spawn")
    workers = [
        ctx.Process(target=_count_under_lock, args=(impl, path, counter, rounds, timeout))
        for _ in range(2)
    ]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    return 2 * rounds / elapsed, int(counter.read_text()) == 2 * rounds


def _hold_forever(impl, path, held) -> None:
    with _impl(impl)(path):
        held.set()
        time.sleep(3600)


def _killed_holder_ms(impl, folder: Path, repeats: int = 10) -> tuple[float, bool]:
    ctx = mp.get_context("spawn")
    delays, left_lock_file = [], True
    for i in range(repeats):
        path = folder / f".lock-killed-{impl}-{i}"
        held = ctx.Event()
        holder = ctx.Process(target=_hold_forever, args=(impl, path, held))
        holder.start()
        held.wait()
        killer = threading.Timer(0.05, lambda pid=holder.pid: os.kill(pid, signal.SIGKILL))
        killer.start()
        killed_at = time.monotonic() + 0.05
        with _impl(impl)(path, timeout=None):
            delays.append((time.monotonic() - killed_at) * 1e3)
        holder.join()
        left_lock_file = left_lock_file and path.exists()
    return statistics.median(delays), left_lock_file


def _busy(impl, folder: Path) -> tuple[float, str]:
    from vrvm.trips.store.errors import StoreBusyError

    path = folder / f".lock-busy-{impl}"
    ctx = mp.get_context("spawn")
    held = ctx.Event()
    holder = ctx.Process(target=_hold_forever, args=(impl, path, held))
    holder.start()
    held.wait()
    started = time.monotonic()
    try:
        with _impl(impl)(path, timeout=0.3):
            message = "acquired (wrong)"
    except StoreBusyError as exc:
        message = str(exc)
    waited = time.monotonic() - started
    holder.kill()
    holder.join()
    return waited, message.replace(str(folder), "<tmp>")


def _import_cost(impl: str) -> tuple[float, float]:
    """Seconds and MiB of resident memory ``impl``'s import adds to a fresh interpreter."""
    code = (
        "import os, sys, time\n"
        "import vrvm.trips.store.durable\n"
        "page = os.sysconf('SC_PAGE_SIZE')\n"
        "def rss(): return int(open('/proc/self/statm').read().split()[1]) * page\n"
        "before = rss()\n"
        "started = time.perf_counter()\n"
        "if sys.argv[1].startswith('filelock'):\n"
        "    import filelock; filelock.FileLock\n"
        "took = time.perf_counter() - started\n"
        "print(took, (rss() - before) / 2**20)\n"
    )
    runs = []
    for _ in range(5):
        out = subprocess.run(
            [sys.executable, "-c", code, impl], capture_output=True, text=True, check=True
        )
        runs.append(tuple(float(x) for x in out.stdout.split()))
    return min(r[0] for r in runs), statistics.median(r[1] for r in runs)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(impl: str, n: int, handovers: int, rounds: int) -> dict:
    result: dict = {"impl": impl}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        result["uncontended_us"] = _per_call_us(impl, folder, n, nested=False)
        result["reentrant_us"] = _per_call_us(impl, folder, n, nested=True)
        for across in ("process", "thread"):
            for timeout in (None, 60):
                delays = _handover_ms(impl, folder, handovers, timeout, across)
                key = f"handover_{across}_{'none' if timeout is None else timeout}"
                result[key + "_median_ms"] = statistics.median(delays)
                result[key + "_p95_ms"] = _quantile(delays, 0.95)
        for timeout in (None, 60):
            rate, exact = _two_writers(impl, folder, rounds, timeout)
            key = f"two_writers_{'none' if timeout is None else timeout}"
            result[key + "_per_s"], result[key + "_exact"] = rate, exact
        result["killed_holder_ms"], result["lock_file_kept"] = _killed_holder_ms(impl, folder)
        result["busy_waited_s"], result["busy_message"] = _busy(impl, folder)
    result["import_s"], result["import_mib"] = _import_cost(impl)
    return result


def _table(results: list[dict]) -> str:
    rows = [
        ("acquire + release, free lock (us)", "uncontended_us", ".1f"),
        ("nested acquire + release, re-entrant (us)", "reentrant_us", ".1f"),
        ("hand-over to a process, no timeout, median / p95 (ms)", "handover_process_none", "ms"),
        ("hand-over to a process, timeout 60 s, median / p95 (ms)", "handover_process_60", "ms"),
        ("hand-over to a thread, no timeout, median / p95 (ms)", "handover_thread_none", "ms"),
        ("hand-over to a thread, timeout 60 s, median / p95 (ms)", "handover_thread_60", "ms"),
        ("two writer processes, no timeout (locked writes/s)", "two_writers_none_per_s", ".0f"),
        ("two writer processes, timeout 60 s (locked writes/s)", "two_writers_60_per_s", ".0f"),
        ("counter exact (mutual exclusion)", "two_writers_none_exact", "bool"),
        ("holder killed -> waiter holds, median (ms)", "killed_holder_ms", ".1f"),
        ("busy after timeout=0.3 (s waited)", "busy_waited_s", ".2f"),
        ("import (ms)", "import_s", "import"),
        ("import, resident memory (MiB)", "import_mib", ".1f"),
    ]
    lines = [
        "| " + " | ".join(["measure", *(r["impl"] for r in results)]) + " |",
        "|" + "---|" * (1 + len(results)),
    ]
    for label, key, fmt in rows:
        cells = []
        for r in results:
            if fmt == "ms":
                cells.append(f"{r[key + '_median_ms']:.2f} / {r[key + '_p95_ms']:.2f}")
            elif fmt == "bool":
                cells.append("yes" if r[key] and r["two_writers_60_exact"] else "NO")
            elif fmt == "import":
                cells.append(f"{r[key] * 1e3:.1f}")
            else:
                cells.append(format(r[key], fmt))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    messages = "\n".join(f"- {r['impl']}: {r['busy_message']}" for r in results)
    return "\n".join(lines) + "\n\nBusy messages:\n" + messages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--impl", nargs="+", default=["own", "filelock"])
    parser.add_argument("--n", type=int, default=20000, help="calls per uncontended run")
    parser.add_argument("--handovers", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=500, help="locked writes per process")
    parser.add_argument("--src", default=str(ROOT), help="checkout whose vrvm to measure")
    parser.add_argument("--label", default="", help="added to the column names: own (before)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/bench_locks.json"))
    args = parser.parse_args(argv)
    sys.path.insert(0, args.src)
    os.environ["PYTHONPATH"] = os.pathsep.join([args.src, os.environ.get("PYTHONPATH", "")])
    results = [measure(impl, args.n, args.handovers, args.rounds) for impl in args.impl]
    for result in results:
        result["impl"] += f" ({args.label})" if args.label else ""
    print(_table(results))
    meta = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
    }
    with contextlib.suppress(ImportError):
        import filelock

        meta["filelock"] = filelock.__version__
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
