"""Training on more trips than memory holds: the two-stage fit of a TravelTimeModel.

:func:`fit_dataset` fits a :class:`~vrvm.trips.model.travel_time.TravelTimeModel` on a
:class:`~vrvm.trips.files.dataset.TripDataset` (or on a large table in memory) in two
passes over the data (three with zone-pair offsets), holding at any time the trips of
one batch, a uniform sample and, per member, the statistics of its chosen basis
functions:

1. **Sample** (first pass, part by part): a uniform sample of
   ``n_members * subsample_size`` trips, and the trips' count.
2. **First stage** (on the sample, in memory): the one-stage fit — features
   standardised, the sample dealt into members stratified by (origin zone,
   destination zone, hour), widths chosen, and each member's centres and active set
   chosen by the fast solver on its subsample, each sampled trip weighted by the
   trips it stands for, up to ``stage_one_evidence`` (3) trips
   (:func:`stage_one_weight`): the evidence of more trips asks for more functions than
   that of the sample, and the subsample alone would choose too few; the bound keeps
   the members, and so each prediction's cost, the same size whatever N.
3. **Statistics** (second pass, part by part): every trip is dealt to a member
   (sampled trips to the member whose subsample held them, the others uniformly at
   random, :func:`~vrvm.trips.model._outofcore.row_uniforms`), and each member accumulates
   G = Phi^T Phi, h = Phi^T y, y^T y and n over its chosen columns. The statistics of
   disjoint rows add up, so the parts' sums are exact whatever the order and the
   machine. Cost: O(N K^2 / M) for K chosen columns instead of O(N C^2 / M) for all
   C candidates.
4. **Second stage**: each member re-estimates its weights, ARD precisions and noise
   from its statistics (:meth:`~vrvm.engine.regressor.VRVMRegressor.refit_statistics`),
   counted ``shard_weight`` times, as a one-stage fit counts its trips (the first
   stage chose the functions without that weight).
   With ``refit="prune"`` the statistics also cover a reserve of
   :data:`RESERVE_COLUMNS` inactive candidates per member, those the first stage's
   evidence came closest to adding, so that the fast solver on all trips can add
   functions as well as drop them (more trips support more functions).
5. **Zone-pair offsets** (``pair_offsets=True``; a third pass, part by part): the
   levels and their shrinkage are chosen on the sample, and each pair's offset is
   summed over the out-of-shard residuals of up to :data:`OFFSET_TRIPS` trips. Then
   the distance and twin scales are fitted out of shard on the sample, to what the
   offsets leave.

When the sample is the whole data (at most ``subsample_size`` trips per member) the
first stage is the fit, identical to fitting the table in memory.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from vrvm.trips.files import PARQUET_BATCH_ROWS
from vrvm.trips.files.cleaning import CleaningReport, combine_reports, far_from, median_point
from vrvm.trips.files.dataset import PART_ROWS, TripDataset
from vrvm.trips.model import _ensemble
from vrvm.trips.model._outofcore import (
    OffsetPlan,
    PartSample,
    SampleSpec,
    StatisticsPlan,
    part_pair_sums,
    part_statistics,
    sample_part,
)
from vrvm.trips.model.pair_offsets import PairOffsets, offset_resolutions, out_of_shard_residual
from vrvm.trips.table import check_trips, trip_provenance

__all__ = ["FitOutcome", "fit_dataset", "stage_one_weight"]

#: Held-out trips kept (at most) to score a model trained out of core.
MAX_TEST_TRIPS = 100_000

#: Inactive candidate columns each member carries into the second stage with
#: ``refit="prune"`` and ``stage_one_evidence="sample"`` (``VRVMRegressor(n_reserve=...)``),
#: ranked by the first stage's relevance ratio E[lambda] q_k^2 / s_k; see
#: docs/scaling.md for the measurements.
RESERVE_COLUMNS = 300

#: Trips (at most; a uniform sample of the rest) whose residuals a two-stage fit's
#: zone-pair offsets are summed over: measured on 1e6 synthetic trips, offsets from all
#: of them instead of the 160,000 of the sample cut CRPS 171.1 -> 168.2 s.
OFFSET_TRIPS = 2_000_000


def stage_one_weight(evidence: str | float, train_rate: float) -> float | None:
    """The trips each sampled trip counts for in a two-stage fit's first stage.

    Each sampled trip stands for ``1 / train_rate`` trips of the second stage: with
    that weight (``evidence="all"``) the first stage has the evidence of all of them;
    a number caps the weight, and so the functions the first stage proposes;
    ``"sample"`` counts each trip once (None: no weights).

    Examples
    --------
    >>> stage_one_weight(3.0, 0.16), stage_one_weight("all", 0.125), stage_one_weight("sample", 0.5)
    (3.0, 8.0, None)
    >>> stage_one_weight(3.0, 0.5)
    2.0
    """
    if evidence == "sample":
        return None
    weight = 1.0 / train_rate
    return weight if evidence == "all" else min(weight, float(evidence))


@dataclass
class FitOutcome:
    """What :func:`fit_dataset` learnt about the data besides the model.

    Attributes
    ----------
    report : CleaningReport or None
        The cleaning report of the whole data set (None for a table in memory).
    n_trips : int
        Trips kept after cleaning (training and held out).
    test : pandas.DataFrame or None
        A uniform sample (at most :data:`MAX_TEST_TRIPS`) of the held-out trips.
    n_test : int
        Held-out trips in all.
    """

    report: CleaningReport | None
    n_trips: int
    test: pd.DataFrame | None
    n_test: int


def fit_dataset(
    model,
    data,
    *,
    progress=None,
    zones=None,
    holdout: float = 0.0,
    started: float | None = None,
) -> FitOutcome:
    """Fit ``model`` on a data set too large for memory (see the module docstring).

    Parameters
    ----------
    model : TravelTimeModel
        Fitted in place (its parameters say how: ``subsample_size``, ``refit``,
        ``n_jobs``, ``backend``/``client``).
    data : TripDataset or pandas.DataFrame
        The trips; a table is read in place, part by part.
    progress : callable, optional
        ``progress(done, total, elapsed_s, phase)`` with phase ``"reading"`` (parts of
        the first pass), ``"members"`` (members of the first stage) and
        ``"statistics"`` (parts of the second pass).
    zones : array-like, optional
        For a table in memory, zone labels per trip to stratify on (as for
        :meth:`TravelTimeModel.fit`).
    holdout : float in [0, 1), default=0
        Fraction of the trips held out of the fit (each trip by its own coin, so the
        same trips whatever the parts); a sample of them is returned to score on.
    started : float, optional
        ``time.perf_counter()`` at the start of the fit (for ``fit_time_s_``).

    Returns
    -------
    FitOutcome
    """
    started = time.perf_counter() if started is None else started
    model.validate_params()
    if not 0.0 <= float(holdout) < 1.0:
        raise ValueError(f"holdout must be in [0, 1), got {holdout!r}")
    if isinstance(data, pd.DataFrame):
        provenance = trip_provenance(data)
        dataset = TripDataset.from_frame(check_trips(data, with_target=True))
    elif isinstance(data, TripDataset):
        provenance, dataset = {"source": data.name}, data
    else:
        raise TypeError(
            f"trips must be a pandas DataFrame or a TripDataset, got {type(data).__name__}"
        )
    if zones is not None and not dataset.in_memory:
        raise ValueError("zones= labels trips of a table in memory; a TripDataset has none")
    seeds = _ensemble.Seeds(model.random_state, model.n_members)
    wanted = model.n_members * model.subsample_size
    n_rows = max(dataset.n_rows, 1)
    spec = SampleSpec(
        seed=seeds.rows,
        train_rate=min(1.0, wanted / (n_rows * (1.0 - holdout))) if dataset.n_rows else 1.0,
        holdout=float(holdout),
        test_rate=min(1.0, MAX_TEST_TRIPS / (n_rows * holdout)) if holdout else 0.0,
    )

    def report(phase: str):
        return _ensemble.phase_progress(progress, started, phase)

    with _ensemble.dask_client(model.backend, model.client) as client:
        # a table in memory is read in this process (its parts in threads)
        part_client = None if dataset.in_memory else client
        if dataset.n_rows:
            # about four parts per worker (at least a batch each, at most PART_ROWS),
            # so that the workers stay busy to the end; results do not depend on it
            workers = _workers(part_client, model.n_jobs)
            per_part = -(-dataset.n_rows // (4 * workers))
            dataset = dataset.split(int(min(max(per_part, PARQUET_BATCH_ROWS), PART_ROWS)))
        parts = dataset.parts
        options = {"client": part_client, "n_jobs": model.n_jobs}
        samples = list(
            _ensemble.map_parts(
                sample_part, dataset, parts, spec, on_done=report("reading"), **options
            )
        )
        train, test, center = _pooled(samples, dataset)
        n_trips = sum(s.n_kept for s in samples)
        if len(train) < 3 * model.n_members:
            raise ValueError(
                f"{dataset.name}: {len(train)} trips are too few for {model.n_members} "
                "members (each member needs at least 3)"
            )
        member_zones = None
        if zones is not None:
            member_zones = _take(zones, train["row"].to_numpy())
        one_stage = spec.train_rate >= 1.0
        # the reserve lets the second stage add functions a first stage on the sample
        # alone did not choose; a first stage with the evidence of all trips proposes
        # them itself (measured: the reserve then gains 0.14 % CRPS for 30 % more time)
        reserve = 0
        if not one_stage and model.refit == "prune" and model.stage_one_evidence == "sample":
            reserve = RESERVE_COLUMNS
        sample = train.drop(columns=["file", "row"])
        sample.attrs.update(provenance)
        weight = None if one_stage else stage_one_weight(model.stage_one_evidence, spec.train_rate)
        fitted = model.fit_trips(
            sample,
            progress,
            member_zones,
            client,
            started,
            trip_provenance(sample),
            final=one_stage,
            n_reserve=reserve,
            sample_weight=weight,
        )
        n_test = sum(s.n_holdout for s in samples)
        if one_stage:
            reports = [s.report for s in samples if s.report is not None]
            model.fit_time_s_ = time.perf_counter() - started
            return FitOutcome(_with_radius(reports, dataset, train, center), n_trips, test, n_test)
        forced = {
            int(f): (rows[order], fitted.shard_of_row[idx][order])
            for f, idx in train.groupby("file").indices.items()
            for rows in [train["row"].to_numpy()[idx]]
            for order in [np.argsort(rows, kind="stable")]
        }
        plan = StatisticsPlan(
            model.featurizer_,
            model.members_,
            model.target == "log",
            seeds.rows,
            spec.holdout,
            center,
            forced,
            model.location_,
        )
        total = _ensemble.reduce_parts(
            part_statistics, dataset, parts, plan, on_done=report("statistics"), **options
        )
        # the second stage's posterior has the shard weight (the likelihood to its power,
        # as a one-stage fit's); the first stage chose the functions without it, so that
        # pass 2's columns, and its cost, do not grow with it
        stats = [s.scaled(model.shard_weight) for s in total.stats]
        model.members_ = _ensemble.refit_members(
            model.members_, stats, prune=model.refit == "prune", n_jobs=model.n_jobs
        )
        loo = np.zeros(fitted.y.size)
        if model.pair_offsets:
            rate = min(1.0, OFFSET_TRIPS / max(n_trips - n_test, 1))
            plan = dataclasses.replace(plan, members=model.members_)
            loo = _pair_offsets(model, fitted, plan, rate, dataset, report("offsets"), options)
        inputs = None
        if model.location_ is not None:  # the stage's inputs of the sample, for the forest
            inputs = model.location_.inputs(model.featurizer_, sample, fitted.X, fitted.d)
        # the forest or the median trees, the spread and the own-duration regimes, out of
        # shard on the sample with the refitted members
        model.fit_after_members(fitted, loo, seeds.noise_scale, inputs)
    _second_stage(model, total, fitted, train, provenance, spec, dataset, weight)
    model.fit_time_s_ = time.perf_counter() - started
    report_all = combine_reports(total.reports) if total.reports else None
    return FitOutcome(report_all, n_trips, test, n_test)


def _workers(client, n_jobs) -> int:
    """Parts that run at once: the cluster's threads, or the local jobs."""
    if client is not None:
        return max(1, sum(client.nthreads().values()))
    from joblib import effective_n_jobs

    return max(1, effective_n_jobs(n_jobs if n_jobs is not None else 1))


def _pooled(samples: list[PartSample], dataset: TripDataset):
    """The pooled sample (and held-out sample) in part order, radius-checked."""
    train = pd.concat([s.train for s in samples], ignore_index=True)
    test = pd.concat([s.test for s in samples], ignore_index=True)
    center = None
    radius = dataset.cleaning.max_radius_km
    if radius is not None and len(train):
        center = median_point(*_ends(train))
        train, test = (t.loc[~far_from(center, radius, *_ends(t))] for t in (train, test))
    return train.reset_index(drop=True), test.reset_index(drop=True), center


def _ends(trips: pd.DataFrame) -> list[np.ndarray]:
    columns = ("origin_lat", "origin_lon", "dest_lat", "dest_lon")
    return [trips[c].to_numpy(float) for c in columns]


def _with_radius(reports, dataset, train, center) -> CleaningReport | None:
    """The first pass's report (it had no radius check) with the sample's radius drops:
    when the sample is the whole data, the rows the check dropped from it."""
    if not reports:
        return None
    combined = combine_reports(reports)
    if center is None:
        return combined
    dropped = combined.n_kept - len(train)
    counts = dict(combined.counts)
    counts["invalid_coordinates"] = counts.get("invalid_coordinates", 0) + dropped
    config = combined.config
    return dataclasses.replace(
        combined,
        n_kept=len(train),
        counts=counts,
        center=center,
        config=dataclasses.replace(config, center=center),
    )


def _take(zones, rows: np.ndarray):
    """The labels of the sampled rows (``rows``: positions in the table)."""
    if isinstance(zones, pd.DataFrame | pd.Series):
        return zones.iloc[rows].reset_index(drop=True)
    return np.asarray(zones, dtype=object)[rows]


def _pair_offsets(model, fitted, plan, rate, dataset, on_done, options) -> np.ndarray:
    """The zone-pair offsets of a two-stage fit; returns the sample's leave-one-out
    offsets (zeros without offsets).

    Which levels to keep and their shrinkage ``k`` are chosen on the sample's trips
    (leave-one-out, as in a one-stage fit), each trip's residual taken under the member
    after its own (:func:`~vrvm.trips.model.pair_offsets.out_of_shard_residual`); the
    offsets themselves are summed over ``rate`` of all trips by a third pass
    (:func:`~vrvm.trips.model._outofcore.part_pair_sums`), which costs a member's design
    and the cells of the two ends per trip.
    """
    predictives = model.member_predictors()
    residual = out_of_shard_residual(predictives, fitted.X, fitted.d, fitted.y, fitted.shard_of_row)
    ends = fitted.raw[:, :4].T
    chosen = PairOffsets(offset_resolutions(model, *ends[:2], model.h3_resolution_))
    chosen.fit(*ends, residual)
    model.pair_offsets_ = None
    if not chosen.levels:
        return np.zeros(residual.size)
    levels = [(level["resolution"], level["k"]) for level in chosen.levels]
    offsets_plan = OffsetPlan(plan, tuple(r for r, _ in levels), rate)
    total = _ensemble.reduce_parts(
        part_pair_sums, dataset, dataset.parts, offsets_plan, on_done=on_done, **options
    )
    model.pair_offsets_ = PairOffsets.from_pair_sums(total.frame, levels)
    return model.pair_offsets_.leave_one_out(*ends, residual)


def _second_stage(model, total, fitted, train, provenance, spec, dataset, weight) -> None:
    """Record what the second stage's members and the whole data set tell (``weight``:
    the first stage's weight of a sampled trip, None for once)."""
    model.keep_relevance_trips(fitted)
    model.shard_sizes_ = np.array([s.n for s in total.stats])
    model.n_relevance_ = np.array([m.n_relevance_ for m in model.members_])
    median = float(np.median(train["travel_time_s"].to_numpy(float)))
    summary: dict[str, Any] = total.summary.as_dict(median)
    summary.update(provenance)
    summary["two_stage"] = {
        "sample_trips": len(train),
        "subsample_size": model.subsample_size,
        "refit": model.refit,
        "stage_one_evidence": model.stage_one_evidence,
        # the trips each sampled trip counted for in the first stage
        "stage_one_weight": weight or 1.0,
        "parts": len(dataset.parts),
        # the third pass sums the zone-pair offsets
        "passes": 2 if model.pair_offsets_ is None else 3,
        "held_out": spec.holdout,
        "median_from_sample": True,
    }
    model.training_summary_ = summary
    model.update_history_, model.n_updates_ = [], 0
