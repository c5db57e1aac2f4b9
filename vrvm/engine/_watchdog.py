"""Parent-death watchdog: a worker process never outlives the process that trains.

Loky's workers do not notice that their parent died: a busy worker finishes its member
and then blocks for good writing the result into the result pipe (every worker holds its
read end too, so the write never fails; seen in the kernel as ``anon_pipe_write``), the
others wait on that pipe's lock, and an idle one waits for work until its idle timeout
(300 s). Killing the dashboard during training therefore left them, and the resource
trackers that wait for their pipes to close, alive for good (issue 12, "Workers").

:func:`watch_parent` is the executor's worker initializer. It ends the worker when the
parent process ends, in two ways:

* Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` makes the kernel kill the worker at once
  when the *thread* that started it ends. So it is only asked for when that thread is
  the parent's main thread (the CLI); a dashboard trains in a Streamlit script thread,
  which ends after every page run while the reusable workers should stay.
* Everywhere on POSIX: a daemon thread compares :func:`os.getppid` with the parent's
  pid every :data:`POLL_S` seconds. An orphan is re-parented (to init or a subreaper),
  so the pid changes at once and cannot be confused with a recycled pid. (Windows does
  not re-parent: there the thread never fires, and workers are not watched.)

It runs before the worker imports vrvm (issue 32): a worker unpickles its initializer
before its first task, and a reference to :func:`watch_parent` would import the package
(numpy, pandas, scikit-learn: two seconds, twenty on a busy machine) before any watchdog
ran, so a parent killed meanwhile left its workers alive until they had imported
everything. The initializer is therefore pickled as "run this file by path"
(:func:`runpy.run_path`, which imports no package) and takes :func:`watch_parent` from it;
this module must keep to the standard library. What runs before it in a worker is
Python's start-up and joblib's import (about 0.3 s on an idle machine).

The resource trackers need neither: every worker holds the write end of their pipe, so
they see end-of-file when the last worker is gone, remove what was registered with them
(joblib's memmapped arrays in ``/dev/shm``, loky's semaphores) and exit. Killing them
from a watchdog would leak exactly those files.
"""

from __future__ import annotations

import ctypes
import functools
import operator
import os
import runpy
import signal
import sys
import threading
import time
import warnings
from dataclasses import dataclass

__all__ = ["POLL_S", "watch_parent", "watchdog_kwargs", "watched_parallel"]

POLL_S = 0.5
"""Seconds between two checks of the parent in the watchdog thread."""

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_PARENT_GONE_EXIT = 1

# loky ends a worker whose memory grew by more than 300 MB since it started (its guard
# against leaks: a two-stage fit's statistics of 1e7 trips grow that much) once it has
# finished its task, starts another and says so with a UserWarning, although no work is
# lost: nothing a user of the command line or the dashboard can act on.
warnings.filterwarnings(
    "ignore",
    message="A worker stopped while some jobs were given to the executor",
    category=UserWarning,
)


def watchdog_kwargs() -> dict:
    """``initializer`` and ``initargs`` for an executor whose workers die with this process.

    Call it in the parent, in the thread that is about to start the workers, and pass
    the result on: ``joblib.Parallel(..., backend="loky", **watchdog_kwargs())``
    (joblib >= 1.5 hands them to loky's executor). The arguments are the same at every
    call from the same kind of thread, so joblib keeps reusing its executor.
    """
    started_by_main_thread = threading.current_thread() is threading.main_thread()
    return {"initializer": _WorkerStart(os.getpid(), started_by_main_thread), "initargs": ()}


def watched_parallel(n_jobs: int | None, **kwargs):
    """``joblib.Parallel`` on loky whose workers die with this process: the one way vrvm
    starts worker processes (members in :mod:`vrvm.trips.model._ensemble`, kernel-width
    candidates in :class:`~vrvm.engine.regressor.VRVMRegressor`).

    The same arguments at every call from the same kind of thread, so joblib reuses one
    executor for both.
    """
    from joblib import Parallel

    return Parallel(n_jobs=n_jobs, backend="loky", **kwargs, **watchdog_kwargs())


def watch_parent(parent_pid: int, pdeathsig: bool = True) -> None:
    """End this process when its parent ``parent_pid`` ends (a worker initializer).

    Module level, so that workers can import it by name.

    Parameters
    ----------
    parent_pid : int
        The pid of the process that started this one, read in that process.
    pdeathsig : bool, default=True
        Also ask Linux to ``SIGKILL`` this process when the thread that started it
        ends. Only true when that thread lives as long as the parent (its main thread).
    """
    if pdeathsig:
        _set_parent_death_signal(signal.SIGKILL)
    # The parent may have died before the kernel was told: then no signal will come.
    if os.getppid() != parent_pid:
        os._exit(_PARENT_GONE_EXIT)
    threading.Thread(
        target=_poll_parent, args=(parent_pid,), name="vrvm-parent-watchdog", daemon=True
    ).start()


@dataclass(frozen=True)
class _WorkerStart:
    """:func:`watch_parent` for one parent, pickled to run before the worker imports vrvm.

    Equal for equal arguments, so joblib keeps reusing its executor.
    """

    parent_pid: int
    pdeathsig: bool

    def __call__(self) -> None:
        watch_parent(self.parent_pid, self.pdeathsig)

    def __reduce__(self):
        # unpickled as functools.partial(<watch_parent of this file run by path>, ...)
        return functools.partial, (_WatchParentByPath(), self.parent_pid, self.pdeathsig)


class _WatchParentByPath:
    """Unpickles as :func:`watch_parent` of this file run by path (no package import)."""

    def __reduce__(self):
        return operator.itemgetter("watch_parent"), (_ThisFileRun(),)


class _ThisFileRun:
    """Unpickles as the namespace of this file, run by :func:`runpy.run_path`."""

    def __reduce__(self):
        return runpy.run_path, (__file__,)


def _poll_parent(parent_pid: int) -> None:
    # Runs for the worker's whole life, which ends either here or with the worker.
    while os.getppid() == parent_pid:
        time.sleep(POLL_S)
    # os._exit, not sys.exit: nothing in this process (a half-fitted member, queue
    # feeder threads, atexit handlers waiting on the dead parent) is worth waiting for.
    os._exit(_PARENT_GONE_EXIT)


def _set_parent_death_signal(signum: int) -> bool:
    """``prctl(PR_SET_PDEATHSIG, signum)`` on Linux; False where it is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0) == 0
