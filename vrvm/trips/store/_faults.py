"""Fault injection for the crash-consistency tests: die at a named point of a write.

The stores call :func:`crash_point` at the moments where a crash is the most
interesting (a version committed but not yet activated, a model directory between its
two renames, ...). Normally this does nothing. When the environment variable
``VRVM_CRASH_AT`` names the point (a comma-separated list of names is allowed), the
process kills itself with ``SIGKILL`` there: no ``finally`` block, no ``atexit``
handler and no buffered write runs, exactly as after ``kill -9`` or a power cut of
the process (not of the disk: what was fsynced stays). Tests start writers as
subprocesses with the variable set, then check that the next open of the store heals
it and that nothing committed was lost.

The points:

``model_store.reserved``, ``model_store.intent``, ``model_store.staged``
    A publish with its version number reserved; with its journal entry written; with
    the model written in its staging folder.
``model_store.committed``, ``model_store.activated``
    The version renamed onto its number but not yet active; active, with its journal
    entry not yet removed.
``model_store.pruning``
    Retention with an old version renamed aside, not yet deleted.
``model_dir.aside``
    A plain model directory's save with the old model renamed aside and the new one
    not yet in place.
``atomic_write.synced``
    Any atomic write with its temporary file written and synced, not yet renamed.
``trip_store.cleared``
    A clear of the trip store with its parts renamed aside, not yet deleted.
``audit.torn``
    An append to the audit log with half of its line written and synced.
"""

from __future__ import annotations

import os
import signal

__all__ = ["CRASH_ENV", "crash_armed", "crash_point"]

CRASH_ENV = "VRVM_CRASH_AT"


def crash_armed(name: str) -> bool:
    """Whether ``$VRVM_CRASH_AT`` names ``name`` (a writer then prepares its crash).

    Examples
    --------
    >>> crash_armed("audit.torn")
    False
    """
    wanted = os.environ.get(CRASH_ENV)
    return bool(wanted) and name in {w.strip() for w in wanted.split(",")}


def crash_point(name: str) -> None:
    """Kill this process with ``SIGKILL`` if ``$VRVM_CRASH_AT`` names ``name``.

    Examples
    --------
    >>> crash_point("model_store.committed")  # VRVM_CRASH_AT unset: nothing happens
    """
    if crash_armed(name):
        os.kill(os.getpid(), signal.SIGKILL)
