"""Processes a test or a benchmark started, found by a token in their environment.

A started process gets ``TOKEN_ENV=<token>`` in its environment and every process it
starts inherits it, whatever the process tree becomes: orphans are re-parented to init
(or a subreaper), so a walk of the parent's children would miss exactly the processes
a leak test looks for. Used by ``tests/trips/test_worker_leak.py``,
``tests/app/test_dashboard_kill.py`` and ``benchmarks/bench_worker_leak.py``; nothing
here is used by vrvm.
"""

from __future__ import annotations

import psutil

TOKEN_ENV = "VRVM_TEST_PROCESS_TOKEN"


def tagged(token: str, *, exclude: int | None = None) -> list[psutil.Process]:
    """Live (non-zombie) processes whose environment holds ``token``, but ``exclude``."""
    found = []
    for proc in psutil.process_iter():
        if proc.pid == exclude:
            continue
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if proc.environ().get(TOKEN_ENV) == token:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found
