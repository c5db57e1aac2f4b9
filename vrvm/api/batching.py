"""Concurrent requests' trips answered together: one model call per batch.

Answering one trip costs a few milliseconds, almost all of it fixed overhead (see
:mod:`vrvm.services.answers.summaries`), and Python threads take turns at the interpreter
lock, so answering N clients in N threads is no faster than one after the other: on
the demo model 119 trips/s with one thread, 93 with eight. :class:`TripBatcher`
instead queues every request's trips; one worker thread takes *everything that is
waiting* (up to ``max_trips`` trips), answers it with one
:func:`~vrvm.services.answers.summaries.trip_summaries` call, and hands each request its rows.
While a batch runs the next one gathers, so batches grow with the load and a lone
request waits for nothing (no timer). The batch runs on one BLAS thread
(:func:`vrvm.engine.single_threaded_blas`: its products are small).

A batch answers with one model snapshot (:meth:`LiveModel.current`), which it returns
with each request's rows, so an answer always names the model that computed it, even
across a model swap. If a batch fails, its requests are answered one by one, so a
request that cannot be answered fails alone.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from vrvm.engine import single_threaded_blas
from vrvm.services.answers.live import LiveModel, Served
from vrvm.services.answers.summaries import trip_summaries

__all__ = ["DEFAULT_MAX_BATCH_TRIPS", "TripBatcher"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_BATCH_TRIPS = 1024
"""Most trips answered in one model call (a single request may hold more)."""


@dataclass
class _Job:
    queries: pd.DataFrame
    quantiles: tuple[float, ...]
    within_s: tuple[float, ...]
    indices: bool
    support: bool
    future: asyncio.Future = field(repr=False)


def _answer(served: Served, jobs: list[_Job]) -> list[pd.DataFrame]:
    """Every job's rows from one call, with the union of what they asked for."""
    quantiles = sorted({q for job in jobs for q in job.quantiles})
    within = sorted({t for job in jobs for t in job.within_s})
    queries = pd.concat([job.queries for job in jobs], ignore_index=True)
    table = trip_summaries(
        served.model,
        queries,
        quantiles=quantiles,
        thresholds_s=within,
        indices=any(job.indices for job in jobs),
        area=served.area if any(job.support for job in jobs) else None,
        free_flow=served.free_flow,
    )
    ends = np.cumsum([len(job.queries) for job in jobs])
    return [table.iloc[end - len(job.queries) : end] for job, end in zip(jobs, ends, strict=True)]


class TripBatcher:
    """Gathers the trips of concurrent requests into one model call per batch.

    Parameters
    ----------
    live : LiveModel
        What answers (a snapshot per batch).
    max_trips : int, default=DEFAULT_MAX_BATCH_TRIPS
        Most trips per batch (a single request larger than this is one batch).
    """

    def __init__(self, live: LiveModel, *, max_trips: int = DEFAULT_MAX_BATCH_TRIPS) -> None:
        if max_trips < 1:
            raise ValueError(f"max_trips must be a positive integer, got {max_trips!r}")
        self.live = live
        self.max_trips = int(max_trips)
        self._queue: asyncio.Queue[_Job] | None = None
        self._task: asyncio.Task | None = None
        self._executor: ThreadPoolExecutor | None = None
        self.batches = 0  # how many batches ran, and how many trips (for the logs)
        self.trips = 0

    async def start(self) -> None:
        """Start the worker (inside the server's event loop)."""
        self._queue = asyncio.Queue()
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="vrvm-batch")
        self._task = asyncio.get_running_loop().create_task(self._work())

    async def stop(self) -> None:
        """Stop the worker; requests still queued fail with ``RuntimeError``."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        while self._queue is not None and not self._queue.empty():
            job = self._queue.get_nowait()
            if not job.future.done():
                job.future.set_exception(RuntimeError("the server is shutting down"))
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    async def answer(
        self,
        queries: pd.DataFrame,
        *,
        quantiles=(),
        within_s=(),
        indices: bool = True,
        support: bool = True,
    ) -> tuple[Served, pd.DataFrame]:
        """The summaries of ``queries`` (:func:`trip_summaries`'s columns for the union
        of the batch's requests: select the ones asked for) and the model that made them."""
        if self._queue is None:
            raise RuntimeError("the batcher is not started")
        future = asyncio.get_running_loop().create_future()
        job = _Job(queries, tuple(quantiles), tuple(within_s), bool(indices), bool(support), future)
        await self._queue.put(job)
        return await future

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            jobs = [await self._queue.get()]
            size = len(jobs[0].queries)
            while size < self.max_trips and not self._queue.empty():
                job = self._queue.get_nowait()
                jobs.append(job)
                size += len(job.queries)
            jobs = [job for job in jobs if not job.future.done()]  # clients gone
            if not jobs:
                continue
            outcomes = await loop.run_in_executor(self._executor, self._run, jobs)
            for job, outcome in zip(jobs, outcomes, strict=True):
                if job.future.done():
                    continue
                if isinstance(outcome, BaseException):
                    job.future.set_exception(outcome)
                else:
                    job.future.set_result(outcome)

    def _run(self, jobs: list[_Job]) -> list:
        """The jobs' answers, or each job's exception (run in the worker thread)."""
        try:
            served = self.live.current()
        except Exception as exc:
            return [exc] * len(jobs)
        with single_threaded_blas():
            try:
                frames = _answer(served, jobs)
                self.batches += 1
                self.trips += sum(len(job.queries) for job in jobs)
                return [(served, frame) for frame in frames]
            except Exception as exc:
                if len(jobs) == 1:
                    return [exc]
                logger.info("a batch of %d requests failed (%s): one by one", len(jobs), exc)
            outcomes: list = []
            for job in jobs:
                try:
                    outcomes.append((served, _answer(served, [job])[0]))
                except Exception as exc:
                    outcomes.append(exc)
            return outcomes
