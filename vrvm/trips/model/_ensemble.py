"""Fitting the ensemble's members in parallel (seeds, loky processes or a Dask cluster),
and their predictions side by side.

:class:`Seeds` spawns every random stream of a fit from one seed, so that a fixed
``random_state`` gives the same model whatever the backend and the number of jobs;
:func:`fit_members` fits one :class:`~vrvm.engine.regressor.VRVMRegressor` per shard,
in local processes (joblib's loky) or as Dask tasks, reporting each as it completes.
"""

from __future__ import annotations

import contextlib
import logging
import operator
import time

import numpy as np
import pandas as pd

from vrvm.engine import heap_for_numerics, in_threads, single_threaded_blas, watched_parallel
from vrvm.engine.regressor import VRVMRegressor

# The columns of a member's ``relevance_trip_arrays_`` row, in order (also how a saved
# model's arrays are read back, vrvm.trips.model.model_format).
RELEVANCE_TRIP_COLUMNS = (
    "origin_lat",
    "origin_lon",
    "dest_lat",
    "dest_lon",
    "start_s",
    "travel_time_s",
)

__all__ = [
    "Seeds",
    "choose_widths",
    "dask_client",
    "degrees_of_freedom",
    "fit_members",
    "map_parts",
    "member_loc",
    "member_loc_scale",
    "pairwise_sum",
    "reduce_parts",
    "refit_members",
    "wild_members",
]

logger = logging.getLogger(__name__)

# Query rows per block of member_loc_scale: small enough for a block of the design matrix
# (rows x relevance vectors) to stay in cache, large enough for efficient BLAS calls.
PREDICT_CHUNK = 1024


def degrees_of_freedom(predictives) -> np.ndarray | None:
    """Student-t degrees of freedom 2e' of each member (structured), None for Gaussians."""
    if predictives[0].family != "structured":
        return None
    return np.array([2.0 * member.e for member in predictives])


def wild_members(members, X, y, d, limit: int = 20_000) -> list[int]:
    """The members whose predictions of (at most ``limit`` of) the rows leave the range of
    the targets widened by its own width on each side: a fit that extrapolates wildly
    where its shard has few trips (seen with ``shard_weight=3`` on the Chicago sample: a
    member predicted e^26 s at O'Hare)."""
    rows = np.linspace(0, y.size - 1, min(limit, y.size)).astype(np.intp)
    loc = member_loc([m.predictor_ for m in members], X[rows], d[rows])
    span = float(np.ptp(y))
    low, high = float(y.min()) - span, float(y.max()) + span
    return np.flatnonzero(((loc < low) | (loc > high)).any(axis=1)).tolist()


def member_loc_scale(predictives, X, d) -> tuple[np.ndarray, np.ndarray]:
    """Every member's predictive location and scale, (M, n) each, block by block."""
    loc = np.empty((len(predictives), X.shape[0]))
    scale = np.empty_like(loc)
    with single_threaded_blas():
        for start in range(0, X.shape[0], PREDICT_CHUNK):
            rows = slice(start, start + PREDICT_CHUNK)
            for m, member in enumerate(predictives):
                loc[m, rows], scale[m, rows] = member.loc_scale(X[rows], d[rows, None])
    return loc, scale


def member_loc(predictives, X, d) -> np.ndarray:
    """Every member's predictive location alone, (M, n): no quadratic forms."""
    loc = np.empty((len(predictives), X.shape[0]))
    with single_threaded_blas():
        for m, member in enumerate(predictives):
            loc[m] = member.loc(X, d[:, None])
    return loc


class Seeds:
    """Independent seeds for sharding, width selection, each member, the scale model,
    the two-stage deal and the location stage.

    Spawned from one :class:`numpy.random.SeedSequence`, so a fixed ``random_state``
    reproduces everything whatever the number of jobs or the backend.
    """

    def __init__(self, random_state, n_members: int):
        if isinstance(random_state, np.random.Generator):
            random_state = int(random_state.integers(2**63))
        # spawned children do not depend on how many are spawned: adding the last one
        # (the scale model's subsample) left the earlier seeds unchanged
        children = np.random.SeedSequence(random_state).spawn(5 + n_members)
        self.shards = self._int(children[0])
        self.selection = self._int(children[1])
        self.members = [self._int(m) for m in children[2 : 2 + n_members]]
        self.noise_scale = self._int(children[2 + n_members])
        # which trips a two-stage fit samples, holds out and deals to which member
        self.rows = self._int(children[3 + n_members])
        # the location stage's folds and early-stopping slices
        self.location = self._int(children[4 + n_members])

    @staticmethod
    def _int(seq: np.random.SeedSequence) -> int:
        return int(seq.generate_state(1, dtype=np.uint32)[0])


def _fit_member(index: int, X, y, d, params: dict, weight=None) -> tuple[int, VRVMRegressor]:
    """Fit one member on its shard (module level, so joblib and Dask workers can import it);
    ``weight``: the rows' ``sample_weight`` (``shard_weight``, or a two-stage fit's first
    stage's N / n)."""
    return index, VRVMRegressor(**params).fit(X, y, linear=d, sample_weight=weight)


def _run_dask(client, tasks, on_done) -> None:
    """Fit the members as Dask tasks, calling ``on_done`` as each one completes."""
    from distributed import as_completed

    futures = []
    try:
        for index, X, y, d, params, weight in tasks:
            # scatter the shard first: large arrays inside a task graph are slow
            data = client.scatter([X, y, d])
            # one BLAS thread per task, as loky's workers have (else each worker's
            # BLAS starts a thread per core: measured 37 s instead of 21 s on 2 workers)
            futures.append(
                client.submit(_pinned, _fit_member, index, *data, params, weight, pure=False)
            )
        # the client's own loop: with a client that is not the default one (a scheduler
        # address), as_completed would look for a default client and find none
        for future in as_completed(futures, loop=client.loop):
            on_done(*future.result())
    except BaseException:
        client.cancel(futures)
        raise


def map_parts(func, dataset, parts, plan, *, client, n_jobs, on_done=None):
    """``func(dataset, part, plan)`` for every part, results yielded in part order.

    Parts of a data set in memory are read in this process; others in ``n_jobs``
    loky processes or as Dask tasks, which are sent the data set's description and
    ``plan`` once (:func:`_shared`), and a part each: paths and row groups, never
    rows. ``on_done(done, total)`` is called as parts complete.
    """
    if client is not None:
        futures = _submit_parts(client, func, dataset, parts, plan)
        try:
            _report(client, futures, on_done)
            for future in futures:
                yield future.result()
        except BaseException:
            client.cancel(futures)
            raise
        return
    if n_jobs in (None, 1) or len(parts) < 2:
        results = (func(dataset, part, plan) for part in parts)
    elif dataset.in_memory:
        # a table in memory: threads, not processes (NumPy and BLAS release the GIL,
        # and the table is not copied)
        from joblib import effective_n_jobs

        results = in_threads(
            lambda part: func(dataset, part, plan), parts, threads=effective_n_jobs(n_jobs)
        )
    else:
        from joblib import delayed

        parallel = watched_parallel(n_jobs, return_as="generator")
        results = parallel(delayed(func)(dataset, part, plan) for part in parts)
    for done, result in enumerate(results, 1):
        if on_done is not None:
            on_done(done, len(parts))
        yield result


def reduce_parts(func, dataset, parts, plan, *, client, n_jobs, on_done=None):
    """The sum of ``func(dataset, part, plan)`` over the parts, paired in part order
    by :func:`pairwise_sum` (the same rounding everywhere).

    On Dask the sums are tasks too, so only the total comes back to the client.
    """
    if client is None:
        return pairwise_sum(
            map_parts(func, dataset, parts, plan, client=None, n_jobs=n_jobs, on_done=on_done)
        )
    futures = _submit_parts(client, func, dataset, parts, plan)
    try:
        total = pairwise_sum(futures, lambda a, b: client.submit(operator.add, a, b, pure=False))
        _report(client, futures, on_done)
        futures = [total]  # the parts' results are released as their sums complete
        return total.result()
    except BaseException:
        client.cancel(futures)
        raise


def _identity(value):
    return value


def _shared(client, *values):
    """Futures of values every part task needs, made by tasks rather than scattered:
    a task has lineage, so a worker that dies holding the value costs a recomputation
    (scattered data would be lost with it). Each worker fetches it once."""
    return [client.submit(_identity, value, pure=False) for value in values]


def _pinned(func, *args):
    """``func(*args)`` with BLAS on one thread: a Dask worker runs one task per thread,
    and each would otherwise start as many BLAS threads as there are cores; and with
    the heap reused for large temporaries, which a Dask worker's environment turns off
    (:mod:`vrvm.engine._malloc`: member fits 35 % slower)."""
    with single_threaded_blas(), heap_for_numerics():
        return func(*args)


def _submit_parts(client, func, dataset, parts, plan) -> list:
    """One Dask task per part, sharing the data set's description and ``plan``."""
    import dask

    # the plan of the second pass holds the members (about 10 MB for 8 members of ~500
    # functions) and goes into the graph once, on purpose (lineage): no warning for it
    with dask.config.set({"distributed.admin.large-graph-warning-threshold": "1GiB"}):
        dataset_f, plan_f = _shared(client, dataset, plan)
    return [client.submit(_pinned, func, dataset_f, part, plan_f, pure=False) for part in parts]


def _report(client, futures, on_done) -> None:
    """Call ``on_done(done, total)`` as the futures complete (on the client's own loop:
    with a client that is not the default one, as_completed would find none)."""
    if on_done is None:
        return
    from distributed import as_completed

    for done, _ in enumerate(as_completed(futures, loop=client.loop), 1):
        on_done(done, len(futures))


def phase_progress(progress, started: float, phase: str):
    """``progress(done, total, elapsed_s, phase)`` as a ``report(done, total)`` for one
    phase of a fit that started at ``started`` (``time.perf_counter()``); None without
    ``progress``."""
    if progress is None:
        return None
    return lambda done, total: progress(done, total, time.perf_counter() - started, phase)


def fit_members(tasks, progress, started: float, client, n_jobs) -> list[VRVMRegressor]:
    """Fit one member per task, on the Dask ``client`` or in ``n_jobs`` loky processes.

    ``tasks`` holds ``(index, X, y, d, params, weight)``; ``progress(done, total, elapsed_s,
    "members")`` is called in this process once before the first member starts (``done``
    0) and as each member completes (in any order).
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
            progress(done, len(tasks), elapsed, "members")

    if progress is not None:  # the phase's clock starts now, not with the fit
        progress(0, len(tasks), time.perf_counter() - started, "members")
    if client is not None:
        _run_dask(client, tasks, on_done)
    else:
        _run_loky(tasks, on_done, n_jobs)
    return members  # type: ignore[return-value]


def _refit_member(member: VRVMRegressor, stats, prune: bool) -> VRVMRegressor:
    return member.refit_statistics(stats, prune=prune)


def refit_members(members, stats, *, prune: bool, n_jobs) -> list[VRVMRegressor]:
    """The second stage: every member refitted on its statistics, ``n_jobs`` at once
    (loky processes; each solver is sequential, on one BLAS thread)."""
    if n_jobs in (None, 1) or len(members) < 2:
        return [_refit_member(m, s, prune) for m, s in zip(members, stats, strict=True)]
    from joblib import delayed

    parallel = watched_parallel(n_jobs, return_as="list")
    return parallel(
        delayed(_refit_member)(m, s, prune) for m, s in zip(members, stats, strict=True)
    )


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


def relevance_table(members, arrays, tz: str) -> pd.DataFrame:
    """The training trips behind the members' relevance vectors, one row per (member,
    trip) (see :meth:`vrvm.trips.model.travel_time.TravelTimeModel.relevance_trips`)."""
    frames = []
    for m, (member, raw) in enumerate(zip(members, arrays, strict=True)):
        idx = member.relevance_indices_
        weight = np.zeros(idx.size)
        width = np.full(idx.size, np.nan)
        n_widths = np.zeros(idx.size, dtype=int)
        best = np.zeros(idx.size)
        pos = np.searchsorted(idx, member.basis_centre_index_)
        for col, (centre, p) in enumerate(zip(member.basis_centre_index_, pos, strict=True)):
            if centre < 0:
                continue
            w = abs(member.coef_[col])
            weight[p] += w
            n_widths[p] += 1
            if w >= best[p]:
                best[p], width[p] = w, member.basis_width_[col]
        frame = pd.DataFrame(raw, columns=list(RELEVANCE_TRIP_COLUMNS))
        frame.insert(0, "member", m)
        frame["start_time"] = pd.to_datetime(
            frame.pop("start_s"), unit="s", utc=True
        ).dt.tz_convert(tz)
        frame["hour"] = frame["start_time"].dt.hour
        frame["weight"], frame["width"], frame["n_widths"] = weight, width, n_widths
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def choose_widths(model, X, y, d, seed: int, priors=None) -> tuple[np.ndarray, dict]:
    """Explicit widths as given, or ``"auto"`` ones chosen once on a pooled subsample
    (by members with the noise ``priors``, ``{"e0": ..., "f0": ...}``, of the fit)."""
    if not isinstance(model.kernel_widths, str):
        return np.atleast_1d(np.asarray(model.kernel_widths, dtype=np.float64)), {}
    rng = np.random.default_rng(seed)
    rows = np.arange(X.shape[0])
    if rows.size > model.selection_size:
        rows = np.sort(rng.choice(rows.size, size=model.selection_size, replace=False))
    started = time.perf_counter()
    selector = model.member_template(random_state=seed, n_jobs=model.n_jobs, **(priors or {})).fit(
        X[rows], y[rows], linear=d[rows]
    )
    logger.info(
        "chose kernel widths %s on %d trips in %.1f s",
        np.round(selector.kernel_widths_, 4).tolist(),
        rows.size,
        time.perf_counter() - started,
    )
    return np.asarray(selector.kernel_widths_, dtype=np.float64), dict(selector.width_scores_)


def pairwise_sum(items, add=operator.add):
    """Sum ``items`` in order, paired by a binary counter: the same pairing (hence the
    same rounding) whoever adds, holding O(log P) partial sums. ``add`` may build the
    sum as tasks (Dask futures) instead of computing it."""
    stack: list = []  # (size, partial sum), sizes decreasing
    for item in items:
        entry = (1, item)
        while stack and stack[-1][0] == entry[0]:
            size, left = stack.pop()
            entry = (size + entry[0], add(left, entry[1]))
        stack.append(entry)
    if not stack:
        raise ValueError("no parts to sum")
    total = stack.pop()[1]
    while stack:
        total = add(stack.pop()[1], total)
    return total
