"""Fitting the ensemble's members in parallel: seeds, loky processes or a Dask cluster.

:class:`Seeds` spawns every random stream of a fit from one seed, so that a fixed
``random_state`` gives the same model whatever the backend and the number of jobs;
:func:`fit_members` fits one :class:`~vrvm.engine.regressor.VRVMRegressor` per shard,
in local processes (joblib's loky) or as Dask tasks, reporting each as it completes.
"""

from __future__ import annotations

import contextlib
import logging
import time

import numpy as np

from vrvm.engine._watchdog import watched_parallel
from vrvm.engine.regressor import VRVMRegressor

__all__ = ["Seeds", "dask_client", "fit_members"]

logger = logging.getLogger(__name__)


class Seeds:
    """Independent seeds for sharding, width selection, each member and the scale model.

    Spawned from one :class:`numpy.random.SeedSequence`, so a fixed ``random_state``
    reproduces everything whatever the number of jobs or the backend.
    """

    def __init__(self, random_state, n_members: int):
        if isinstance(random_state, np.random.Generator):
            random_state = int(random_state.integers(2**63))
        # spawned children do not depend on how many are spawned: adding the last one
        # (the scale model's subsample) left the earlier seeds unchanged
        children = np.random.SeedSequence(random_state).spawn(3 + n_members)
        self.shards = self._int(children[0])
        self.selection = self._int(children[1])
        self.members = [self._int(m) for m in children[2 : 2 + n_members]]
        self.noise_scale = self._int(children[2 + n_members])

    @staticmethod
    def _int(seq: np.random.SeedSequence) -> int:
        return int(seq.generate_state(1, dtype=np.uint32)[0])


def _fit_member(index: int, X, y, d, params: dict) -> tuple[int, VRVMRegressor]:
    """Fit one member on its shard (module level, so joblib and Dask workers can import it)."""
    return index, VRVMRegressor(**params).fit(X, y, linear=d)


def _run_dask(client, tasks, on_done) -> None:
    """Fit the members as Dask tasks, calling ``on_done`` as each one completes."""
    from distributed import as_completed

    futures = []
    try:
        for index, X, y, d, params in tasks:
            # scatter the shard first: large arrays inside a task graph are slow
            data = client.scatter([X, y, d])
            futures.append(client.submit(_fit_member, index, *data, params, pure=False))
        for future in as_completed(futures):
            on_done(*future.result())
    except BaseException:
        client.cancel(futures)
        raise


def fit_members(tasks, progress, started: float, client, n_jobs) -> list[VRVMRegressor]:
    """Fit one member per task, on the Dask ``client`` or in ``n_jobs`` loky processes.

    ``tasks`` holds ``(index, X, y, d, params)``; ``progress(done, total, elapsed_s)``
    is called in this process as each member completes (in any order).
    """
    members: list[VRVMRegressor | None] = [None] * len(tasks)
    done = 0

    def on_done(index: int, member: VRVMRegressor) -> None:
        nonlocal done
        members[index] = member
        done += 1
        elapsed = time.perf_counter() - started
        logger.info(
            "member %d/%d done (%d relevance vectors, %.1f s)",
            done,
            len(tasks),
            member.n_relevance_,
            elapsed,
        )
        if progress is not None:
            progress(done, len(tasks), elapsed)

    if client is not None:
        _run_dask(client, tasks, on_done)
    else:
        _run_loky(tasks, on_done, n_jobs)
    return members  # type: ignore[return-value]


def _run_loky(tasks, on_done, n_jobs) -> None:
    """Fit the members in ``n_jobs`` loky processes, calling ``on_done`` as each completes.

    Every worker runs a parent-death watchdog (:mod:`vrvm.engine._watchdog`): killing
    the trainer (the dashboard, the CLI) mid-fit or while its reusable workers idle
    leaves no process behind.
    """
    from joblib import delayed

    n_jobs = n_jobs if n_jobs is not None else 1
    parallel = watched_parallel(n_jobs, return_as="generator_unordered")
    for index, member in parallel(delayed(_fit_member)(*task) for task in tasks):
        on_done(index, member)


@contextlib.contextmanager
def dask_client(backend: str, client):
    """The Dask client to fit with (None for loky); closes a client it opened.

    ``client``: a ``dask.distributed.Client``, a scheduler address, or None for the
    current default client.
    """
    if backend != "dask":
        yield None
        return
    try:
        from distributed import Client, get_client
    except ImportError:
        raise ImportError(
            "backend='dask' needs dask.distributed, which is not installed; "
            "install it with: pip install 'vrvm[dask]'"
        ) from None
    if client is None:
        try:
            client = get_client()
        except ValueError:
            raise ValueError(
                "backend='dask' needs a cluster: pass client=dask.distributed.Client(...) "
                "or a scheduler address such as client='tcp://127.0.0.1:8786'"
            ) from None
        yield client
    elif isinstance(client, str):
        try:
            client = Client(client, set_as_default=False)
        except OSError as exc:
            raise OSError(f"cannot connect to the Dask scheduler at {client}: {exc}") from None
        with client:
            yield client
    else:
        yield client
