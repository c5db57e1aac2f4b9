"""The travel-time model: an ensemble of VRVMs on stratified shards, as a uniform mixture.

:class:`TravelTimeModel` is what the CLI and the dashboard train, save and query. It
wires together the building blocks of the package:

1. :class:`~vrvm.trips.model.features.TripFeaturizer` turns trips into standardised kernel inputs
   ``X`` and the standardised great-circle distance ``d`` (the paper's linear column);
2. the trips are dealt into ``n_members`` shards by
   :func:`~vrvm.trips.places.zones.stratified_shards` on (origin zone, destination zone, hour of
   day), so every member sees every origin-destination-hour cell in proportion;
3. kernel widths are chosen once on a pooled subsample (when ``"auto"``), then one
   :class:`~vrvm.engine.regressor.VRVMRegressor` per shard is fitted with those widths, in
   parallel (joblib/loky or Dask);
4. predictions are the uniform mixture of the members' predictives
   (:class:`~vrvm.engine.mixture.MixtureDistribution`), on seconds.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from vrvm.engine import single_threaded_blas
from vrvm.engine.metrics import DEFAULT_LEVELS, evaluate_distribution
from vrvm.engine.mixture import MixtureDistribution
from vrvm.engine.regressor import VRVMRegressor
from vrvm.engine.validation import FORGETTING, SEED, check_params, integer, one_of, real
from vrvm.trips.model import _ensemble, location, model_format
from vrvm.trips.model._online import KeptArrays, OnlineState, record_history
from vrvm.trips.model._spread import Spread, out_of_shard
from vrvm.trips.model.features import TripFeaturizer
from vrvm.trips.model.forest_durations import fit_model_forest_durations
from vrvm.trips.model.location import MEDIAN_WEIGHTS
from vrvm.trips.model.pair_durations import fit_model_pair_durations
from vrvm.trips.model.pair_offsets import ENDS, fit_model_offsets
from vrvm.trips.model.round_trips import fit_model_round_trips
from vrvm.trips.places.zones import stratified_shards, trip_strata
from vrvm.trips.table import (
    DAY_KINDS,
    check_trips,
    day_kind,
    local_weekday,
    summarise_trips,
    travel_times,
    trip_provenance,
)

__all__ = ["NOISE_PRIOR_FRACTION", "TravelTimeModel"]

logger = logging.getLogger(__name__)


#: Signature of the progress callback: ``progress(done, total, elapsed_s, phase)``,
#: phase one of "reading", "location", "members", "statistics", "offsets" (see
#: :meth:`TravelTimeModel.fit`).
ProgressCallback = Callable[[int, int, float, str], Any]

#: The prior guess of a member's noise sd as a fraction of its targets' sd (``noise_prior``).
NOISE_PRIOR_FRACTION = 0.25

# Parameters passed on unchanged to every member (and to the width-selection fit).
_REGRESSOR_PARAMS = (
    "kernel_widths",
    "kernel_mode",
    "width_selection",
    "n_widths",
    "max_basis",
    "factorization",
    "selection_size",
)


# Declarative table of the ensemble's own parameters: name -> (predicate, allowed values).
# Parameters shared with VRVMRegressor are checked by VRVMRegressor's own table.
_PARAMETER_CONSTRAINTS = {
    "n_members": (integer(1), "an integer >= 1"),
    "target": (one_of("log", "seconds"), '"log" or "seconds"'),
    "h3_resolution": (integer(0, 15, allow_none=True), "None or an integer in [0, 15]"),
    "target_zones": (integer(1), "an integer >= 1"),
    "tz": (lambda v: v is None or isinstance(v, str), "None or an IANA time-zone name"),
    "n_jobs": (lambda v: integer(allow_none=True)(v) and v != 0, "None or a non-zero integer"),
    "backend": (one_of("loky", "dask"), '"loky" or "dask"'),
    "distance_feature": (one_of("auto", "km", "log1p"), '"auto", "km" or "log1p"'),
    "noise_model": (one_of("distance", "constant"), '"distance" or "constant"'),
    "distance_in_kernel": (lambda v: isinstance(v, bool | np.bool_), "True or False"),
    "pair_offsets": (lambda v: isinstance(v, bool | np.bool_), "True or False"),
    "twin_scales": (lambda v: isinstance(v, bool | np.bool_), "True or False"),
    "location_stage": (lambda v: isinstance(v, bool | np.bool_), "True or False"),
    "median_trees": (lambda v: isinstance(v, bool | np.bool_), "True or False"),
    "round_trips": (lambda v: isinstance(v, bool | np.bool_), "True or False"),
    "pair_durations": (lambda v: isinstance(v, bool | np.bool_), "True or False"),
    "forest_durations": (lambda v: isinstance(v, bool | np.bool_), "True or False"),
    "recalibration": (one_of("auto", "none"), '"auto" or "none"'),
    "client": (
        lambda v: v is None or isinstance(v, str) or hasattr(v, "submit"),
        "None, a dask.distributed.Client or a scheduler address string",
    ),
    "subsample_size": (integer(10), "an integer >= 10"),
    "refit": (one_of("prune", "reestimate"), '"prune" or "reestimate"'),
    "stage_one_evidence": (
        lambda v: one_of("all", "sample")(v) or real(1, strict=False)(v),
        '"all", "sample" or a number >= 1',
    ),
    "shard_weight": (real(0, strict=True), "a number > 0"),
    "online_reserve": (integer(0), "an integer >= 0"),
    "noise_prior": (real(0, strict=False), "a number >= 0"),
    "online_every": (integer(1), "an integer >= 1"),
    "random_state": SEED,
    "name": (
        lambda v: v is None or (isinstance(v, str) and v.isprintable() and 0 < len(v) <= 100),
        "None or one line of 1 to 100 characters",
    ),
}


class FitData(NamedTuple):
    """The trips a one-stage fit saw: features, targets, the deal and raw values."""

    X: np.ndarray
    y: np.ndarray
    d: np.ndarray
    shard_of_row: np.ndarray
    shard_rows: list
    raw: np.ndarray


class TravelTimeModel(BaseEstimator):
    r"""Probabilistic travel-time model: a uniform mixture of VRVMs fitted on data shards.

    Each of ``n_members`` variational relevance vector machines
    (:class:`~vrvm.engine.regressor.VRVMRegressor`) is fitted on its own shard of the trips;
    the shards are stratified by (origin zone, destination zone, hour of day). The
    predictive distribution of a trip is the equally weighted mixture of the members'
    predictives (Student-t for the structured factorisation, Gaussian for the
    mean-field one), their scales multiplied by a factor that depends on the trip's
    distance (``noise_model``).

    Parameters
    ----------
    n_members : int, default=8
        Number of ensemble members (and of shards).
    target : {"log", "seconds"}, default="log"
        Scale the members model. ``"log"``: log(travel_time_s); the predictive on
        seconds is then a log-t (or log-normal) mixture with positive support.
        ``"seconds"``: travel_time_s itself (the paper's scale; the predictive puts
        some mass on negative times).
    kernel_widths : "auto", float or sequence of float, default="auto"
        Gaussian kernel widths, in units of the standardised features. ``"auto"``
        chooses them once, by ``width_selection``, on a random subsample of at most
        ``selection_size`` trips, and every member uses the result.
    kernel_mode : {"stacked", "summed"}, default="stacked"
        See :class:`~vrvm.engine.regressor.VRVMRegressor`.
    width_selection : {"evidence", "cv"}, default="evidence"
        Criterion for ``"auto"`` widths (see :class:`~vrvm.engine.regressor.VRVMRegressor`).
    n_widths : int, default=2
        Number of widths chosen by ``"auto"``.
    max_basis : int, default=1000
        Maximum number of kernel centres per member.
    factorization : {"structured", "meanfield"}, default="structured"
        Variational family: Student-t or Gaussian member predictives.
    h3_resolution : int or None, default=None
        H3 resolution of the zones used for stratification. None chooses it from the
        extent of the training data (:func:`~vrvm.trips.places.zones.choose_h3_resolution` with
        ``target_zones``).
    target_zones : int, default=200
        Approximate number of zones covering the data when ``h3_resolution`` is None.
    tz : str or None, default=None
        Time zone (IANA name) in which hours and weekdays are read. None: the zone of
        ``start_time`` at ``fit``. Naive query times are read in this zone.
    distance_feature : {"auto", "km", "log1p"}, default="auto"
        The linear basis column d(x): great-circle distance in km, or log(1 + km)
        (see :class:`vrvm.trips.model.features.TripFeaturizer`). ``"auto"``: log1p for the log
        target (log t ~ a + b log d), km for seconds (the paper's column). On the
        Chicago sample log1p lowered the ensemble's CRPS from 210 s to 169 s and its
        RMSE from 1569 s to 376 s (benchmarks/bench_trips.py).
    distance_in_kernel : bool, default=True
        Give the kernel the standardised distance column as an input too (besides the
        linear term), so that trips of similar length look similar to it. On the
        Chicago sample the evidence of the width selection rose by 49 nats (random
        split; 33 on the time split) and CRPS fell from 164.6 to 162.5 s (176.4 to
        174.4 s; benchmarks/bench_trips.py).
    noise_model : {"distance", "constant"}, default="distance"
        ``"constant"``: each member's own noise level for every trip (the paper's
        model). ``"distance"``: every member's predictive scale is multiplied by
        exp(c0 + c1 u + c2 u^2), u the distance column clipped to its training range,
        with c fitted by maximum out-of-shard likelihood after the members
        (:mod:`vrvm.engine.calibration`; needs ``n_members >= 2``). On the Chicago sample the
        members' 90 % intervals covered 68 % of trips under 0.5 km and 98 % over
        8 km; with the distance scale 88 % and 93 %, CRPS 169 -> 165 s.
    n_jobs : int or None, default=1
        Members fitted in parallel with the loky backend (-1: all cores).
    backend : {"loky", "dask"}, default="loky"
        ``"loky"``: local processes through joblib. ``"dask"``: tasks on a Dask cluster
        (needs ``pip install 'vrvm[dask]'``), given by ``client``.
    client : dask.distributed.Client, str or None, default=None
        For ``backend="dask"``: a client, or a scheduler address such as
        ``"tcp://10.0.0.5:8786"`` (connected to for the fit, then closed). None uses
        the current default client.
    selection_size : int, default=2000
        Trips in the pooled subsample used to choose ``"auto"`` widths.
    subsample_size : int, default=20000
        Trips per member beyond which the fit has two stages
        (:func:`vrvm.trips.model.training.fit_dataset`): each member chooses its widths,
        centres and basis functions on a stratified subsample of this size, then
        re-estimates weights, ARD precisions and noise on all of its trips from their
        sufficient statistics, read part by part. Smaller data is fitted in one stage.
    refit : {"prune", "reestimate"}, default="prune"
        The second stage: ``"prune"`` runs the fast solver again over the chosen
        functions and a reserve of candidates on the full statistics (the data may drop
        some and add others; docs/scaling.md); ``"reestimate"`` keeps them all.
    stage_one_evidence : {"all", "sample"} or float, default=3.0
        The evidence each member's first stage chooses its functions by, as the trips
        each sampled trip counts for (``sample_weight`` of :meth:`VRVMRegressor.fit`):
        a number w counts it as min(w, N / n) trips, N trips in all and n in the
        sample, so the subsample proposes the functions of up to w times its trips and
        the second stage prunes what all trips do not support; ``"all"`` counts it as
        the N / n trips it stands for (no bound: the more trips, the more functions and
        the slower each prediction); ``"sample"`` counts it once and carries a reserve
        of candidates into the second stage instead. On the synthetic city the bound
        of 3 keeps about 530 functions per member at 1e7 trips instead of 930, for
        predictions 2.9 times as fast and 0.7 % higher CRPS (0.4 % at 1e6;
        docs/scaling.md). Only two-stage fits use it.
    shard_weight : float, default=2.0
        The trips each of a member's trips stands for in its fit (in a two-stage fit,
        its second stage): its likelihood raised to this power, so the evidence
        supports the functions of ``shard_weight`` times its shard (Minsker et al. 2017
        raise each of M subset likelihoods to the power M). 2 lowered CRPS by 1.5 %
        (Chicago), 3.5 % (NYC), 0.2 % (SF) and 2.5 % (Synthetica), with twice the
        functions; 3 let members extrapolate wildly (BENCHMARKS.md, issue 16). 1: the
        plain fit on the shard.
    online_reserve : int, default=300
        Candidates each member keeps beside its functions for :meth:`update` to add
        (in memory, not saved; one-stage fits). 0: updates only re-weight the functions.
    online_every : int, default=200
        Each member re-solves its basis over its functions and reserve after every
        ``online_every`` trips it learns (:meth:`update`; benchmarks/bench_online.py:
        on Chicago 200 gave the CRPS of 100 with the stage's refreshes, at half the
        re-solves' cost).
    pair_offsets : bool, default=True
        Move every member's location of a trip by its pair of zones' offset: the shrunk
        mean of the out-of-shard residuals of the training trips between the same two
        H3 cells, at the zone resolution and the two finer ones
        (:mod:`vrvm.trips.model.pair_offsets`; a two-stage fit learns them on its sample).
        Updates add each trip's residual to its pairs; the members learn what is left.
    twin_scales : bool, default=True
        Each member's predictive as two components of equal weight with scales
        ``e^-a`` and ``e^a`` times its own, a fitted with the distance scale by
        out-of-shard log score: a sharper body and heavier tails, still an exact mixture
        (:mod:`vrvm.engine.calibration`; over three seeds CRPS -0.7 % and NLL -0.08 on
        the San Francisco bike share, -0.1 % and -0.02 on Chicago taxis).
    location_stage : bool, default=True
        Learn the location of a trip's target first with boosted trees
        (:class:`~vrvm.trips.model.location.LocationStage`: log distance, bearing,
        rotated ends, hour and weekday; out of fold on the training trips) when there
        are at least :data:`~vrvm.trips.model.location.MIN_TRIPS` (2,000) of them, and fit the
        members, the pair offsets and the spread on what it leaves. The predictive
        stays an exact mixture, shifted by the stage's location; updates change the
        members and the offsets, and a model fitted in this process refreshes the trees
        whenever the trips it has learned double (:meth:`update`). Over three seeds on
        the random split,
        CRPS -7.9 % on the NYC taxi sample, -3.6 % on Chicago taxis and -1.7 % on the San
        Francisco bike share, NLL lower on all three (``BENCHMARKS.md``, issue 34).
    median_trees : bool, default=True
        With the location stage, also learn a quantile forest's median of the training
        trips as boosted trees (the median trees, out of fold as the stage), and after
        the members move every component's location by ``w (m(x) - mean_m mu_m)``
        toward theirs, ``m(x)``: ``w`` among
        :data:`~vrvm.trips.model.location.MEDIAN_WEIGHTS` (0 to 0.8) chosen by the
        training trips' out-of-shard log score (:meth:`median_shift`), and again by the
        stream's held-out predictions whenever updates refit the spread. The
        predictive stays an exact mixture with the same scales. Over three seeds on the
        random split, CRPS -0.7 % on the San Francisco bike share, -0.4 % on NYC,
        Chicago level, NLL lower on all three, for 1.5x the prediction time
        (``BENCHMARKS.md``, issue 34). No effect without the stage
        (``location_stage=False`` or fewer than 2,000 trips).
    round_trips : bool, default=True
        Predict round trips (ends less than 1 m apart) from the training round trips
        that started in the same H3 cell of resolution 11 (a station), shrunk toward
        all round trips and blended with the members' predictive by a weight chosen out
        of shard (:class:`~vrvm.trips.model.round_trips.RoundTrips`; off with fewer than
        30 of them, or where the blend does not beat the members). Their predictive
        stays an exact mixture of as many components; updates add new round trips to
        their cells. Round trips have no geometry: on the San Francisco bike share they
        are leisure rides (median 1,012 s, 74 s to 9,484 s) that the members could not
        tell apart, and CRPS over all test trips fell 1.1 % over three seeds (Chicago
        -0.03 %, NYC off; ``BENCHMARKS.md``, issue 34).
    pair_durations : bool, default=True
        Blend a trip between a pair of H3 cells of resolution 10 seen at least twice in
        training with that pair's own trips' durations: a log-normal kernel estimate,
        weight n / (n + k) for a pair of n trips, h and k per band of n (2-5, 6 or more)
        chosen by the CRPS of the blend on training trips with the trip left out of its
        pair and the members out of shard
        (:class:`~vrvm.trips.model.pair_durations.PairDurations`; off where the blend
        gains less than 2 %). The predictive stays an exact mixture;
        updates add new trips to their pairs (a pair's last 32 count). On the San
        Francisco bike share, where pairs of stations seen a few times are where a
        quantile forest kept its lead, CRPS fell 0.5 % over three seeds (NLL +0.05);
        Chicago and NYC keep the members' predictive (``BENCHMARKS.md``, issue 34).
    forest_durations : bool, default=True
        With the location stage, pool every prediction with a quantile forest's
        neighbours of the trip: K = G'((F + R) / 2), F the members' mixture, R the
        union of the trip's leaves' durations in 64 trees on the stage's inputs, G' a
        PIT map fitted on the pooled PITs of training trips (out of bag and out of
        shard) (:class:`~vrvm.trips.model.forest_durations.ForestDurations`; off, and
        dropped, where the pool gains less than 0.5 % CRPS there). The predictive stays
        an exact mixture, of twice the components; updates leave the forest as
        fitted. On the San Francisco bike share CRPS fell below the quantile forest's;
        Chicago and NYC keep the predictive (``BENCHMARKS.md``, issue 34).
    recalibration : {"auto", "none"}, default="auto"
        ``"auto"``: fit a PIT map G on the out-of-shard PIT values of the training trips
        (with the spread, and again with it on the stream) and predict with
        H = G o F (:class:`~vrvm.engine.recalibrated.RecalibratedMixture`) when the map
        gains more than 0.01 nats per trip under 5-fold cross-validation; a model whose
        PITs are uniform enough keeps the exact mixture F. On the San Francisco bike
        share the map takes 90 % coverage from 0.94 to 0.90; Chicago and NYC keep F
        (``BENCHMARKS.md``, issue 34). ``"none"``: never.
    noise_prior : float, default=4.0
        Weight, in trips, of a prior on each member's noise: a Gamma prior on the noise
        precision, lambda ~ Gam(e0, f0) with e0 = noise_prior / 2 and
        f0 = e0 (rho s)^2, s the standard deviation of the members' targets and
        rho = :data:`NOISE_PRIOR_FRACTION` (a guess of the noise as a quarter of the
        spread), worth ``noise_prior`` trips of that noise (Bishop 2006, eq. 2.146-2.151).
        On a few hundred trips per member the vague prior (``0``: e0 = f0 = 1e-6) lets
        a member interpolate its shard (noise sd 1e-4 in log seconds with 108 relevance
        vectors for 125 trips); the spread fitted out of shard must then widen it
        ~1,000-fold, which also widens the weights' uncertainty far from the data, and
        some predictives get log-scales of 4 and means of days (NYC, 1,000 trips). With
        the prior: noise sd 0.03, the largest mean 1.2 h, CRPS alike; on thousands of
        trips per member it weighs nothing (``BENCHMARKS.md``, small uploads).
    random_state : int, numpy Generator or None, default=None
        Seed of sharding, width selection and the members' centre choice. An integer
        makes the fit reproducible, whatever ``n_jobs`` and ``backend``.
    name : str or None, default=None
        The model's name (a city or data set, e.g. ``"Chicago taxi trips"``), saved with
        it and shown instead of file paths. None: named after the training data by
        :func:`vrvm.services.versions.models.model_name`.

    Attributes
    ----------
    members_ : list of VRVMRegressor
        The fitted members, member ``m`` trained on shard ``m``.
    featurizer_ : TripFeaturizer
        The fitted featurizer shared by all members.
    kernel_widths_ : ndarray
        Kernel widths every member used.
    width_scores_ : dict
        Score of every candidate width set when widths were chosen automatically
        (empty otherwise).
    h3_resolution_ : int or None
        H3 resolution of the stratification zones (None when ``zones=`` was given).
    tz_ : str
        Time zone of hours and weekdays.
    shard_sizes_ : ndarray of int
        Trips per member.
    n_relevance_ : ndarray of int
        Relevance vectors per member.
    location_ : LocationStage or None
        The boosted location the members' predictions are shifted by (None with
        ``location_stage=False``, fewer than 2,000 training trips, and models saved
        before it existed); without median trees (``median_trees=False``, and models
        saved before them) its ``median_trees_`` is None and its ``median_weight_`` 0.
    round_trips_ : RoundTrips or None
        The round-trip regime (None with ``round_trips=False``, ``target="seconds"``,
        one member, and models saved before it existed); its ``weight`` is 0 where it
        is off.
    pair_durations_ : PairDurations or None
        The pairs' own durations (None with ``pair_durations=False``,
        ``target="seconds"``, one member, and models saved before it existed); off
        (``active`` False) where the blend did not help.
    forest_durations_ : ForestDurations or None
        The forest pooled with the members' mixture (None with
        ``forest_durations=False``, without a location stage, ``target="seconds"``, one
        member, and models saved before it existed); off (``active`` False, no trees)
        where the pool did not help.
    spread_ : Spread
        The spread it puts around its members (the distance scale and twin scales),
        fitted out of shard; the four attributes below read it.
    noise_scale_coef_ : ndarray of shape (3,)
        c of the distance scale g(x) = exp(c0 + c1 u + c2 u^2) (zeros: no scaling).
    noise_scale_range_ : tuple of float
        Training range of the distance column, to which u is clipped.
    twin_scale_ : float
        a of the twin scales (0: one component per member).
    noise_scale_score_ : dict
        Mean out-of-shard log density (target scale) of the training trips used to
        fit the scale, ``"before"`` and ``"after"`` it (empty without a distance scale
        and twin scales).
    fit_time_s_ : float
        Wall-clock duration of :meth:`fit`, in seconds.
    training_summary_ : dict
        ``n_trips``, ``start_time_min`` / ``start_time_max`` (ISO 8601),
        ``bbox`` ``[min_lat, min_lon, max_lat, max_lon]``, ``travel_time_s``
        min/median/max, ``sha256`` (:func:`trips_sha256`), ``day_kind_trips`` (the
        trips on each kind of day, see :meth:`trips_on_day_kind`; absent from models
        saved before it was recorded), and the trips'
        ``source``/``schema``/``synthetic`` attributes when present.
    metrics_ : dict or None
        Metrics stored with the model (see :meth:`save`); None after :meth:`fit`.

    See Also
    --------
    vrvm.engine.regressor.VRVMRegressor : one member.
    vrvm.engine.mixture.MixtureDistribution : the predictive returned by :meth:`predict_dist`.
    vrvm.engine.metrics.evaluate_distribution : the scores of :meth:`evaluate`.

    Notes
    -----
    With target y = log T the members' Student-t predictives p_m(y) give the mixture

    .. math:: p(t) = \frac{1}{M} \sum_{m=1}^{M} \frac{1}{t}\, p_m(\log t), \qquad t > 0,

    whose quantiles are exp of the log-scale mixture quantiles, so medians and
    intervals are exact; its mean and variance use variance-matched log-normal
    components (log-t moments are infinite, see
    :class:`~vrvm.engine.mixture.MixtureDistribution`).

    Training on disjoint shards and averaging the predictives is a
    divide-and-conquer approximation to one VRVM on all data: each member works on
    n/M rows (its Gram matrix Phi^T Phi costs O(n K^2 / M) for K candidate basis
    functions) and the members run in parallel. By the law of total variance the
    mixture's variance is the members' average variance plus the spread of their
    means, so disagreement between members widens the predictive. Stratifying the
    shards on (origin zone, destination zone, hour) keeps every member's view of the
    city and of the day representative.

    Prediction costs O(M K_r^2) per trip, K_r being a member's number of relevance
    vectors: the members' posterior factors are inverted once and applied block-wise
    (about 8 µs per trip for 8 members of ~100 relevance vectors on one core).

    Examples
    --------
    >>> from vrvm import synthetic_city
    >>> from vrvm.trips.model.travel_time import TravelTimeModel
    >>> trips = synthetic_city(800, seed=0)
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.0, 2.0], max_basis=60,
    ...                         random_state=0).fit(trips)
    >>> dist = model.predict_dist(trips.head(3))
    >>> dist.n_members, dist.n_components, len(dist)  # twin scales: 2 components each
    (2, 4, 3)
    >>> lo, hi = dist.interval(0.9)
    >>> median = model.predict(trips.head(3))
    >>> bool(((lo > 0) & (lo < median) & (median < hi)).all())
    True
    """

    def __init__(
        self,
        *,
        n_members: int = 8,
        target: str = "log",
        kernel_widths="auto",
        kernel_mode: str = "stacked",
        width_selection: str = "evidence",
        n_widths: int = 2,
        max_basis: int = 1000,
        factorization: str = "structured",
        h3_resolution: int | None = None,
        target_zones: int = 200,
        tz: str | None = None,
        distance_feature: str = "auto",
        distance_in_kernel: bool = True,
        noise_model: str = "distance",
        n_jobs: int | None = 1,
        backend: str = "loky",
        client=None,
        selection_size: int = 2000,
        subsample_size: int = 20_000,
        refit: str = "prune",
        stage_one_evidence: str | float = 3.0,
        shard_weight: float = 2.0,
        online_reserve: int = 300,
        online_every: int = 200,
        pair_offsets: bool = True,
        twin_scales: bool = True,
        location_stage: bool = True,
        median_trees: bool = True,
        round_trips: bool = True,
        pair_durations: bool = True,
        forest_durations: bool = True,
        recalibration: str = "auto",
        noise_prior: float = 4.0,
        random_state: int | np.random.Generator | None = None,
        name: str | None = None,
    ):
        self.n_members = n_members
        self.target = target
        self.kernel_widths = kernel_widths
        self.kernel_mode = kernel_mode
        self.width_selection = width_selection
        self.n_widths = n_widths
        self.max_basis = max_basis
        self.factorization = factorization
        self.h3_resolution = h3_resolution
        self.target_zones = target_zones
        self.tz = tz
        self.distance_feature = distance_feature
        self.distance_in_kernel = distance_in_kernel
        self.noise_model = noise_model
        self.n_jobs = n_jobs
        self.backend = backend
        self.client = client
        self.selection_size = selection_size
        self.subsample_size = subsample_size
        self.refit = refit
        self.stage_one_evidence = stage_one_evidence
        self.shard_weight = shard_weight
        self.online_reserve = online_reserve
        self.online_every = online_every
        self.pair_offsets = pair_offsets
        self.twin_scales = twin_scales
        self.location_stage = location_stage
        self.median_trees = median_trees
        self.round_trips = round_trips
        self.pair_durations = pair_durations
        self.forest_durations = forest_durations
        self.recalibration = recalibration
        self.noise_prior = noise_prior
        self.random_state = random_state
        self.name = name

    # ------------------------------------------------------------------ validation
    def validate_params(self) -> None:
        """Check every parameter as :meth:`fit` does, the members' shared ones by the
        members' own rules; ValueError names the parameter and what it allows."""
        check_params(self, _PARAMETER_CONSTRAINTS)
        # the shared parameters, by the members' own table (same names, same rules)
        self.member_template(kernel_widths=self.kernel_widths).validate_params()

    def member_template(self, **overrides) -> VRVMRegressor:
        """An unfitted member with this model's shared parameters (``overrides`` replace
        some): what every member, and the width selection, is fitted from."""
        params = {name: getattr(self, name) for name in _REGRESSOR_PARAMS}
        params.update(overrides)
        return VRVMRegressor(**params)

    def noise_priors(self, y: np.ndarray) -> dict[str, float]:
        """The members' Gamma prior on the noise precision, ``{"e0": ..., "f0": ...}``, for
        targets ``y`` (see ``noise_prior``; empty: the members' vague default)."""
        if not self.noise_prior:
            return {}
        spread = float(np.std(y)) if y.size > 1 else 0.0
        if not (np.isfinite(spread) and spread > 0):
            return {}
        e0 = 0.5 * float(self.noise_prior)
        return {"e0": e0, "f0": e0 * (NOISE_PRIOR_FRACTION * spread) ** 2}

    # ------------------------------------------------------------------ fitting
    def fit(
        self,
        trips: pd.DataFrame,
        *,
        progress: ProgressCallback | None = None,
        zones=None,
    ) -> TravelTimeModel:
        """Fit the ensemble on canonical trips.

        Parameters
        ----------
        trips : pandas.DataFrame or TripDataset
            Canonical trips (:data:`vrvm.trips.CANONICAL_COLUMNS`, as returned by
            :func:`vrvm.read_trips`), with finite travel times (positive for
            ``target="log"``). ``start_time`` must be timezone-aware unless ``tz``
            is given. Or a :class:`~vrvm.trips.files.dataset.TripDataset` (Parquet files
            read part by part, never all at once). Beyond ``subsample_size`` trips per
            member the fit has two stages (:func:`vrvm.trips.model.training.fit_dataset`).
        progress : callable or None, default=None
            Called as ``progress(done, total, elapsed_s, phase)`` in the calling
            process, ``elapsed_s`` counting from the start of ``fit``: with phase
            ``"location"`` after each boosting fit of the location stage, ``"members"``
            before the first member starts (``done`` 0) and after each member
            completes (in any order), and for a two-stage fit ``"reading"``,
            ``"statistics"`` and ``"offsets"`` after each part of the passes over the
            data. For a CLI progress bar or ``st.progress``.
        zones : array-like or pandas.DataFrame, optional
            Zone labels of each trip used for stratification instead of H3 cells:
            shape ``(n,)`` (one label, e.g. an origin-destination pair) or
            ``(n, k)`` (e.g. origin and destination zone). The hour of day is added
            to the strata in both cases.

        Returns
        -------
        self : TravelTimeModel
        """
        started = time.perf_counter()
        self.validate_params()
        if not isinstance(trips, pd.DataFrame) or len(trips) > self.n_members * self.subsample_size:
            from vrvm.trips.model.training import fit_dataset  # imports this module

            fit_dataset(self, trips, progress=progress, zones=zones, started=started)
            return self
        provenance = trip_provenance(trips)
        trips = check_trips(trips, with_target=True)
        with _ensemble.dask_client(
            self.backend, self.client
        ) as client:  # connect before the work, to fail early
            self.fit_trips(trips, progress, zones, client, started, provenance)
        return self

    def fit_trips(
        self,
        trips,
        progress,
        zones,
        client,
        started: float,
        provenance: dict[str, Any],
        *,
        final: bool = True,
        n_reserve: int | None = None,
        sample_weight: float | None = None,
    ) -> FitData:
        """Fit on trips in memory (:meth:`fit`'s work, and the first stage of
        :func:`~vrvm.trips.model.training.fit_dataset`); returns what the second stage of a
        two-stage fit reuses (the trips' features, targets and members). With ``final=False`` (the
        first stage of a two-stage fit) the distance scale is left to the second;
        ``n_reserve`` is the members' (:class:`VRVMRegressor`; None: ``online_reserve``),
        ``sample_weight`` the trips stood for by each trip of ``trips`` (the members'
        fits, not the widths')."""
        if n_reserve is None:
            n_reserve = self.online_reserve
        if final and sample_weight is None and self.shard_weight != 1:
            sample_weight = float(self.shard_weight)
        positive = self.target == "log"
        travel_time_s = travel_times(trips, positive=positive)
        n = len(trips)
        if n < 3 * self.n_members:
            raise ValueError(
                f"{n} trips are too few for {self.n_members} members (each member needs "
                "at least 3); use fewer members or more data"
            )

        distance = self.distance_feature
        if distance == "auto":
            distance = "log1p" if self.target == "log" else "km"
        featurizer = TripFeaturizer(
            tz=self.tz, distance=distance, distance_in_kernel=bool(self.distance_in_kernel)
        )
        X, d = featurizer.fit_transform(trips)
        y = np.log(travel_time_s) if positive else travel_time_s
        seeds = _ensemble.Seeds(self.random_state, self.n_members)
        self.location_ = None
        stage_offset = np.zeros(y.size)
        if self.location_stage and y.size >= location.MIN_TRIPS:  # members learn what it leaves
            self.location_ = location.LocationStage(
                random_state=seeds.location, median_trees=bool(self.median_trees)
            )
            stage_offset = self.location_.fit(
                featurizer,
                trips,
                X,
                d,
                y,
                n_jobs=self.n_jobs,
                progress=_ensemble.phase_progress(progress, started, "location"),
            )
            y = y - stage_offset

        strata, resolution = self._strata(trips, featurizer.tz_, zones)
        shard_of_row = stratified_shards(strata, self.n_members, random_state=seeds.shards)
        shard_rows = [np.flatnonzero(shard_of_row == m) for m in range(self.n_members)]

        priors = self.noise_priors(y)
        widths, width_scores = _ensemble.choose_widths(self, X, y, d, seeds.selection, priors)
        logger.info(
            "fitting %d members on %d trips with kernel widths %s",
            self.n_members,
            n,
            np.round(widths, 4).tolist(),
        )
        tasks = []
        for m, rows in enumerate(shard_rows):
            params = self.member_template(kernel_widths=widths.tolist(), **priors).get_params()
            params["random_state"] = seeds.members[m]
            params["n_reserve"] = n_reserve
            tasks.append((m, X[rows], y[rows], d[rows], params, sample_weight))
        members = _ensemble.fit_members(tasks, progress, started, client, self.n_jobs)
        wild = _ensemble.wild_members(members, X, y, d) if final and sample_weight else []
        if wild:  # fitted again on their shards alone (shard_weight 1)
            logger.warning("members %s extrapolate wildly; fitting them without weight", wild)
            again = [(i, *tasks[m][1:5], None) for i, m in enumerate(wild)]
            plain = _ensemble.fit_members(again, None, started, client, 1)
            for m, member in zip(wild, plain, strict=True):
                members[m] = member
        # the trips each member's trip stood for, which its growing basis keeps counting
        weights = [1.0 if m in wild else sample_weight or 1.0 for m in range(len(members))]

        self.members_ = members
        # the training trips behind each member's relevance vectors, for maps of them
        starts = trips["start_time"]
        starts = starts.dt.tz_convert("UTC") if starts.dt.tz else starts
        raw = np.column_stack(
            [
                trips[["origin_lat", "origin_lon", "dest_lat", "dest_lon"]].to_numpy(float),
                starts.astype("int64").to_numpy() / 1e9,
                travel_time_s,
            ]
        )
        data = FitData(X, y, d, shard_of_row, shard_rows, raw)
        self.keep_relevance_trips(data)
        self.featurizer_ = featurizer
        self._online = OnlineState(None)
        self.pair_offsets_ = None
        self.round_trips_ = None
        self.pair_durations_ = None
        self.forest_durations_ = None
        if final:
            loo = np.zeros(y.size)  # each trip's offset without itself
            if self.pair_offsets:
                self.pair_offsets_, loo = fit_model_offsets(self, data, resolution)
            inputs = None
            if self.location_ is not None:  # the stage's inputs: its refreshes' and the forest's
                inputs = self.location_.inputs(featurizer, trips, X, d)
            self.fit_after_members(data, loo, seeds.noise_scale, inputs)
            if self.online_reserve > 0:
                kept = None
                if self.location_ is not None:  # the trips its refreshes refit it on
                    kept = KeptArrays(
                        inputs,
                        X,
                        d,
                        y + stage_offset,
                        raw[:, :4],
                        shard_of_row,
                    )
                self._online = OnlineState(
                    [(X[r], y[r], d[r], w) for r, w in zip(shard_rows, weights, strict=True)],
                    kept,
                )
        self.kernel_widths_ = widths
        self.width_scores_ = width_scores
        self.h3_resolution_ = resolution
        self.tz_ = featurizer.tz_
        self.shard_sizes_ = np.array([rows.size for rows in shard_rows])
        self.n_relevance_ = np.array([member.n_relevance_ for member in members])
        self.training_summary_ = summarise_trips(trips, travel_time_s, provenance, featurizer.tz_)
        self.metrics_ = None
        self.n_updates_ = 0
        self.update_history_ = []
        self.fit_time_s_ = time.perf_counter() - started
        logger.info("fitted %d members in %.1f s", self.n_members, self.fit_time_s_)
        return data

    def fit_after_members(
        self, data: FitData, loo: np.ndarray, seed: int, inputs: np.ndarray | None
    ) -> np.ndarray:
        """What a fit learns after its members and pair offsets, on the trips of ``data``
        (``loo``: their leave-one-out pair offsets; ``inputs``: the location stage's
        inputs of them, None without a stage; ``seed``: the spread's): the forest's
        pool, or else the median trees' weight; the spread; the round trips and the
        pairs' own durations. Returns ``loo`` with the median trees' shift.

        The forest is scored against the spread of what the offsets leave; where it is
        kept its neighbours stand for the median trees, which are dropped (on the San
        Francisco bike share the pool without them scored 140.36 s against 140.43 with
        them, and predictions cost less than the median trees alone). Where it is not,
        the median trees' weight is chosen (:meth:`median_shift`) and the spread fitted
        on what they leave, as without a forest.
        """

        def fit_spread(targets: np.ndarray, held_out=None) -> None:
            # the distance and twin scales (and the PIT map) of what ``targets`` leave
            predictors = self.member_predictors()
            self.spread_ = self.new_spread().fit(
                predictors, data.X, targets, data.d, data.shard_of_row, seed, held_out=held_out
            )

        self.forest_durations_ = None
        if self.forest_durations and inputs is not None:
            fit_spread(data.y - loo)
            self.forest_durations_ = fit_model_forest_durations(self, data, loo, inputs, seed)
        if self.forest_pooled():
            self.location_.drop_median_trees()  # the forest's neighbours stand for them
        else:  # out of shard, what the offsets and the median trees leave
            shift, held_out = self.median_shift(data, loo, seed)
            loo = loo + shift
            fit_spread(data.y - loo, held_out)  # the predictions the weight was chosen on
        if self.round_trips:  # round trips from their own cells' rides
            self.round_trips_ = fit_model_round_trips(self, data, loo, seed)
        if self.pair_durations:  # pairs seen before from their own trips
            self.pair_durations_ = fit_model_pair_durations(self, data, loo, seed)
        return loo

    def median_shift(
        self, data: FitData, loo: np.ndarray, seed: int
    ) -> tuple[np.ndarray, tuple | None]:
        """Choose the weight ``w`` of the location stage's median trees; return what it
        moves each training trip's out-of-shard location by, and the members'
        out-of-shard predictions it chose on.

        After the members (and the pair offsets), every component's location ``mu_m``
        of a query moves by ``w (m(x) - mean_m mu_m)``, toward the median trees'
        location ``m(x)``: a blend of the two locations, the mixture still exact.
        ``w`` is the weight among :data:`~vrvm.trips.model.location.MEDIAN_WEIGHTS`
        whose spread, fitted as the model's (:meth:`new_spread`), gives the training
        trips of ``data`` (targets after the stage) the highest out-of-shard mean log
        density: each trip located by the members that did not see it plus its
        leave-one-out pair offset ``loo``, and by the out-of-fold median trees
        (``seed``: the spread's). Updates choose it again on the stream
        (:meth:`OnlineState.refit_scale <vrvm.trips.model._online.OnlineState.refit_scale>`,
        by :meth:`Spread.scores_by_shift
        <vrvm.trips.model._spread.Spread.scores_by_shift>`). Zero without
        median trees, with one member, or with a spread without scales
        (``noise_model="constant"`` and no twin scales): no score to choose by.

        Returns
        -------
        shift : ndarray of shape (n,)
            What ``w`` moves each trip of ``data`` by (zeros for ``w = 0``).
        held_out : tuple or None
            The members' predictions of the trips the weight was scored on
            (:func:`~vrvm.trips.model._spread.out_of_shard` of ``data`` and ``seed``),
            for the model's spread to be fitted on without predicting them again
            (``held_out`` of :meth:`Spread.fit <vrvm.trips.model._spread.Spread.fit>`,
            valid while the members stay as they are); None where no weight was scored.
        """
        stage = self.location_
        n = data.y.size
        if stage is None or stage.median_gap_ is None or len(self.members_) < 2:
            return np.zeros(n), None
        predictives = self.member_predictors()
        held_out = out_of_shard(predictives, data.X, data.d, data.shard_of_row, seed)
        rows, loc, scale, mask = held_out
        # the members' out-of-shard location of the sampled trips, as the spread sees it
        location = (loc * mask).sum(axis=0) / mask.sum(axis=0) + loo[rows]
        toward = np.zeros(n)
        toward[rows] = stage.median_gap_[rows] - location
        # the spread each weight is scored with, fitted as the model's (its score does
        # not depend on the largest scale Spread.fit also sets)
        spread = self.new_spread()
        spread.d_range = (float(data.d.min()), float(data.d.max()))
        scores = dict.fromkeys(MEDIAN_WEIGHTS, -np.inf)
        if spread.learns:
            scores = spread.scores_by_shift(
                predictives,
                loc,
                scale,
                (data.y - loo)[rows],
                mask,
                data.d[rows],
                toward[rows],
                MEDIAN_WEIGHTS,
            )
        w = max(scores, key=scores.get)
        logger.info(
            "median trees: out-of-shard mean log density %s by weight; weight %s",
            {k: round(v, 4) for k, v in scores.items()},
            w,
        )
        stage.median_weight_, stage.median_scores_ = float(w), scores
        gap, stage.median_gap_ = stage.median_gap_, None
        if w == 0:
            return np.zeros(n), held_out
        # every trip's members' locations: those just predicted when the sample is every
        # trip (member_loc_scale's blocks of 1,024 rows are two of the 512 member_loc
        # predicts by, so the same numbers bit for bit)
        full = loc if rows.size == n else _ensemble.member_loc(predictives, data.X, data.d)
        own = full[data.shard_of_row, np.arange(n)]
        shift = w * (gap - ((full.sum(axis=0) - own) / (len(predictives) - 1) + loo))
        return shift, held_out

    def keep_relevance_trips(self, data: FitData) -> None:
        """The training trips behind each member's relevance vectors (raw values)."""
        self.relevance_trip_arrays_ = [
            data.raw[rows[member.relevance_indices_]]
            for rows, member in zip(data.shard_rows, self.members_, strict=True)
        ]

    def _strata(self, trips: pd.DataFrame, tz: str, zones) -> tuple[list, int | None]:
        """Stratification keys (origin zone, destination zone, local hour) and the resolution."""
        return trip_strata(trips, tz, zones, self.h3_resolution, self.target_zones)

    # ------------------------------------------------------------------ prediction
    def predict_dist(self, queries: pd.DataFrame, *, forest: bool = True) -> MixtureDistribution:
        """Predictive distribution of the travel time (seconds) of each query.

        Parameters
        ----------
        queries : pandas.DataFrame
            Columns ``origin_lat, origin_lon, dest_lat, dest_lon, start_time``;
            other columns are ignored. Naive ``start_time`` values are read as wall
            clock times in the model's time zone ``tz_``.
        forest : bool, default=True
            Pool with the forest's neighbours where the model does
            (:meth:`forest_pooled`); False gives what the members say without them
            (the split of the members' own uncertainty, which the forest's shared
            neighbours are no part of).

        Returns
        -------
        MixtureDistribution
            ``M = n_members`` components per query (``2 M`` with twin scales: member
            m is components m and M + m), on seconds: Student-t (structured) or
            Gaussian (mean-field) components of log-seconds with ``transform="log"``
            for ``target="log"``; of seconds otherwise. Each component's scale is the
            member's times :meth:`noise_scale_at` the query's distance (1 for
            ``noise_model="constant"``), times ``e^-a`` or ``e^a`` (``twin_scale_``).
            A round trip's components are the round-trip regime's where it is on
            (``round_trips_``), those of a trip between cells seen before the blend
            of their own trips' durations with the members' (``pair_durations_``).
            Where the forest is on (``forest_durations_``) these components are
            followed by as many normals at the forest's neighbours' durations, and
            read through the forest's PIT map instead of the spread's.
        """
        check_is_fitted(self, "members_")
        queries = check_trips(queries, with_target=False, name="queries")
        X, d = self.featurizer_.transform(queries)
        predictives = self.member_predictors()
        loc, scale = _ensemble.member_loc_scale(predictives, X, d)
        if self.pair_offsets_ is not None:
            loc += self.pair_offsets_.offset_of_trips(queries)[None, :]
        if (stage := self.location_) is not None:
            F = stage.inputs(self.featurizer_, queries, X, d)
            loc += stage.offset_of_inputs(F)[None, :]
            if stage.median_weight_ > 0:  # every component moved alike toward the median trees
                loc += stage.median_weight_ * (
                    stage.median_location_of_inputs(F) - loc.mean(axis=0)
                )
        dist = self.spread_.mixture(
            self.member_predictors(), loc, scale, d, log=self.target == "log"
        )
        ends = [queries[c].to_numpy(np.float64) for c in ENDS]
        if (regime := getattr(self, "round_trips_", None)) is not None:
            dist = regime.apply(dist, *ends)
        if (pairs := getattr(self, "pair_durations_", None)) is not None:
            dist = pairs.apply(dist, *ends)
        if forest and stage is not None and self.forest_pooled():  # the forest's neighbours
            dist = self.forest_durations_.apply(dist, F)
        return dist

    def forest_pooled(self) -> bool:
        """Whether predictions pool the members' mixture with the forest's neighbours
        (``forest_durations_`` kept, with the location stage whose inputs it splits)."""
        forest = getattr(self, "forest_durations_", None)
        return self.location_ is not None and forest is not None and forest.active

    def trips_on_day_kind(self, queries: pd.DataFrame) -> np.ndarray | None:
        """How many training trips departed on each query's kind of day.

        A model that learned from weekdays alone (the San Francisco bike-share sample
        has no weekend trip) answers for a Saturday with what it learned on weekdays:
        :meth:`predict_dist` cannot tell, this can. The kinds of day are those of
        :data:`~vrvm.trips.table.DAY_KINDS` (Monday to Friday, Saturday and Sunday),
        on the local calendar of ``tz_``, as the model's ``is_weekend`` input reads them.

        Parameters
        ----------
        queries : pandas.DataFrame
            A ``start_time`` column (other columns are ignored). Naive values are read
            as wall clock times in the model's time zone ``tz_``.

        Returns
        -------
        numpy.ndarray of int or None
            The training trips (``training_summary_["day_kind_trips"]``) on each
            query's kind of day; None for a model saved before they were counted
            (what it learned of the kinds of day is unknown).

        Examples
        --------
        >>> import pandas as pd
        >>> from vrvm import synthetic_city
        >>> trips = synthetic_city(800, seed=0)
        >>> weekdays = trips[trips["start_time"].dt.weekday < 5]
        >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.5], max_basis=40,
        ...                         random_state=0).fit(weekdays)
        >>> asked = weekdays.head(2).assign(
        ...     start_time=pd.to_datetime(["2024-03-09 08:00", "2024-03-12 08:00"]))
        >>> model.trips_on_day_kind(asked).tolist() == [0, len(weekdays)]  # Sat., Tue.
        True
        """
        check_is_fitted(self, "members_")
        counts = (self.training_summary_ or {}).get("day_kind_trips")
        if counts is None:
            return None
        kinds = day_kind(local_weekday(queries["start_time"], self.tz_))
        n_weekend = int(counts.get(DAY_KINDS[1], 0))
        return np.where(kinds == DAY_KINDS[1], n_weekend, int(counts.get(DAY_KINDS[0], 0)))

    def recalibrate(self, probability) -> np.ndarray:
        """G(p): a probability the members' mixture F gives for an event "within T",
        read through the spread's PIT map as :meth:`predict_dist` reads F(T) (``p``
        unchanged without a map); where the forest is pooled, F is the pool and the map
        the pool's. For answers built member by member, such as a fleet's chance that any
        of several bases is in time."""
        probability = np.asarray(probability, dtype=np.float64)
        pit_map = self.spread_.pit_map
        if self.forest_pooled():
            pit_map = self.forest_durations_.pit_map  # predict_dist reads the pool through it
        return probability.copy() if pit_map is None else pit_map.cdf(probability)

    def noise_scale_at(self, km) -> np.ndarray:
        """Factor g(x) by which the distance scale multiplies the members' spread.

        Parameters
        ----------
        km : float or array-like
            Great-circle origin-destination distances in km.

        Returns
        -------
        ndarray
            g for each distance (all ones for ``noise_model="constant"``).

        Examples
        --------
        >>> from vrvm import synthetic_city
        >>> model = TravelTimeModel(n_members=2, kernel_widths=[1.0, 2.0], max_basis=60,
        ...                         random_state=0).fit(synthetic_city(800, seed=0))
        >>> model.noise_scale_at([0.5, 2.0, 10.0]).shape
        (3,)
        """
        check_is_fitted(self, "members_")
        km = np.atleast_1d(np.asarray(km, dtype=np.float64))
        if np.any(~np.isfinite(km)) or np.any(km < 0):
            raise ValueError("km must be finite distances >= 0")
        d = self.featurizer_.distance_column(km)
        return self.spread_.multiplier(d)

    def new_spread(self) -> Spread:
        """An unfitted :class:`Spread` with this model's settings (``noise_model``,
        ``twin_scales``)."""
        return Spread(
            distance=self.noise_model != "constant",
            twins=bool(self.twin_scales),
            recalibrate=self.recalibration == "auto",
        )

    @property
    def noise_scale_coef_(self) -> np.ndarray:
        """c of the distance scale (``spread_.coef``)."""
        return self.spread_.coef

    @property
    def noise_scale_range_(self) -> tuple[float, float]:
        """Training range of the distance column (``spread_.d_range``)."""
        return self.spread_.d_range

    @property
    def twin_scale_(self) -> float:
        """a of the twin scales (``spread_.twin``)."""
        return self.spread_.twin

    @property
    def noise_scale_score_(self) -> dict:
        """The spread's out-of-shard score (``spread_.score``)."""
        return self.spread_.score

    def member_predictors(self) -> list:
        """The members' compact predictive models (:attr:`VRVMRegressor.predictor_`), in
        member order: what the spread, the pair offsets and online updates evaluate."""
        return [member.predictor_ for member in self.members_]

    # ------------------------------------------------------------------ online updates
    def update(
        self,
        trips: pd.DataFrame,
        *,
        forgetting: float = 1.0,
        assign: str = "shard",
    ) -> TravelTimeModel:
        """Learn new trips without refitting, in about a millisecond per trip.

        Each member's posterior over its weights and noise precision is conjugate given
        its basis functions, so today's posterior becomes tomorrow's prior
        (:meth:`VRVMRegressor.partial_fit`); a member of a model fitted in this process
        (with ``online_reserve > 0``) also keeps the statistics of its functions and
        reserve candidates and re-solves its basis every ``online_every`` trips, so
        functions the stream supports come in and others go out
        (:class:`vrvm.engine.growing.GrowingBasis`). The distance scale is refitted on
        the members' predictions of the streamed trips made before they learn them
        (:mod:`vrvm.trips.model._online`); the zone-pair offsets learn their residuals, the
        round-trip regime its new round trips.

        A model with a location stage that grows its members' bases (fitted in this
        process, ``online_reserve > 0``, one-stage fit) keeps the trips it has learned,
        the training trips first, and refreshes the stage whenever the trips learned
        since its last fit reach as many as it was fitted on: the trees are fitted
        again on all kept trips, out of fold, each member's posterior is re-solved over
        its candidates on its own kept trips' new residuals and the pair offsets are
        fitted again, as a fit would (``OnlineState.refresh`` in
        :mod:`vrvm.trips.model._online`). A geometric schedule: the refreshes cost a
        bounded time per trip, about 1 ms on Chicago. The kept trips (32 numbers each)
        live in memory only, at most 400,000 (102 MB; refreshes then fit the latest
        200,000); a loaded model, a two-stage fit and an update with ``forgetting < 1``
        keep none and leave the trees as they are. Updates run BLAS on one thread. In
        place: copy the model first (``copy.deepcopy``) to keep the old one.

        Parameters
        ----------
        trips : pandas.DataFrame
            Canonical trips with travel times.
        forgetting : float in (0, 1], default=1.0
            Exponential forgetting per new trip (see :meth:`VRVMRegressor.partial_fit`):
            below 1 the model follows drift such as a road closure; 1 forgets nothing.
        assign : {"shard", "all"}, default="shard"
            ``"shard"``: trips are dealt to the members in turn (continuing across
            calls), keeping each member's share of the data as at fit time, as the
            ensemble was trained; a one-trip update then costs one member's time.
            ``"all"``: every member learns every trip (8x the
            work; within 1 % of the same CRPS in benchmarks/bench_online.py).

        Returns
        -------
        self : TravelTimeModel
        """
        check_is_fitted(self, "members_")
        check_params(self, {"forgetting": FORGETTING}, values={"forgetting": forgetting})
        if assign not in ("all", "shard"):
            raise ValueError(f"assign must be 'all' or 'shard', got {assign!r}")
        trips = check_trips(trips, with_target=True)
        with single_threaded_blas():  # small matrices: more threads only wait for each other
            self._learn(trips, forgetting, assign)
        return self

    def _learn(self, trips: pd.DataFrame, forgetting: float, assign: str) -> None:
        """:meth:`update`'s work on checked trips."""
        travel_time_s = travel_times(trips, positive=self.target == "log")
        X, d = self.featurizer_.transform(trips)
        y = np.log(travel_time_s) if self.target == "log" else travel_time_s
        ends = [trips[c].to_numpy(np.float64) for c in ENDS]
        if (regime := getattr(self, "round_trips_", None)) is not None:  # h, k, w stay
            regime.learn(*ends, y)
        if (pairs := getattr(self, "pair_durations_", None)) is not None:  # h and k stay
            pairs.learn(*ends, y)
        online = getattr(self, "_online", None)
        if online is None:  # a loaded model
            online = self._online = OnlineState(None)
        n_members = len(self.members_)
        seen = self.n_updates_
        member_of_row = (
            np.full(len(trips), -1)
            if assign == "all"
            else (np.arange(len(trips)) + seen) % n_members
        )
        gap = None  # the median trees' location minus the stage's
        if (stage := self.location_) is not None:  # the trees stay until a refresh; the
            F = stage.inputs(self.featurizer_, trips, X, d)  # rest learns what they leave
            online.keep(KeptArrays(F, X, d, y, np.column_stack(ends), member_of_row), forgetting)
            offset = stage.offset_of_inputs(F)
            y = y - offset
            if stage.median_trees_ is not None:  # (their weight may change on the stream)
                gap = stage.median_location_of_inputs(F) - offset
        loc, scale = online.predictions(self, X, d)  # before the members learn the trips
        pairs_at = np.zeros(y.size)
        if (offsets := self.pair_offsets_) is not None:  # pairs, then members
            offsets.learn(*(trips[c] for c in ENDS), y - loc.mean(axis=0))
            pairs_at = offsets.offset_of_trips(trips)
            y = y - pairs_at
        toward = None  # the move toward the median trees per unit of their weight
        if gap is not None and loc is not None:
            toward = gap - loc.mean(axis=0) - pairs_at
        online.record(self, loc, scale, y, d, toward)
        for m in range(n_members):
            rows = slice(None) if assign == "all" else member_of_row == m
            if assign == "all" or np.any(rows):
                online.learn(self, m, X[rows], y[rows], d[rows], forgetting)
        online.refresh(self)  # the stage, the members and the offsets, when due
        online.refit_scale(self)
        self.n_relevance_ = np.array([member.n_relevance_ for member in self.members_])
        self.n_updates_ = seen + len(trips)
        self.update_history_ = record_history(self.update_history_, trips, forgetting, assign)

    def relevance_trips(self) -> pd.DataFrame:
        """The training trips that became relevance vectors, one row per (member, trip).

        Columns: ``member``, ``origin_lat``, ``origin_lon``, ``dest_lat``, ``dest_lon``,
        ``start_time`` (in the model's time zone), ``hour``, ``travel_time_s``,
        ``weight`` (sum of |posterior mean weight| of the trip's kernel columns, in
        target units), ``width`` (kernel width of its largest-weight column; NaN for
        summed kernels) and ``n_widths`` (how many of its widths survived).
        """
        check_is_fitted(self, "members_")
        return _ensemble.relevance_table(self.members_, self.relevance_trip_arrays_, self.tz_)

    def predict(self, queries: pd.DataFrame) -> np.ndarray:
        """Predictive median travel time of each query, in seconds.

        The median, not the mean: it is exact for the mixture, robust to the heavy
        right tail of travel times, and the point forecast minimising absolute error.
        """
        return self.predict_dist(queries).median()

    def evaluate(
        self,
        trips: pd.DataFrame,
        *,
        levels=DEFAULT_LEVELS,
        pit_bins: int = 10,
    ) -> dict[str, Any]:
        """Score the predictive distributions of ``trips`` against their travel times.

        Returns the dict of :func:`vrvm.engine.metrics.evaluate_distribution` (RMSE / MAE /
        MAPE of the median and the mean, NLL, CRPS, interval coverage and width, PIT
        histogram), all in seconds.
        """
        check_is_fitted(self, "members_")
        trips = check_trips(trips, with_target=True)
        y = travel_times(trips, positive=False)
        return evaluate_distribution(self.predict_dist(trips), y, levels=levels, pit_bins=pit_bins)

    # ------------------------------------------------------------------ storage
    def save(self, path: str | os.PathLike[str], *, metrics: Mapping | None = None):
        """Save the model atomically to the directory ``path`` (no pickle).

        ``model.json`` holds the format name ``"vrvm.TravelTimeModel"`` and version,
        the parameters, the featurizer configuration, the kernel widths, the zone
        resolution, the time zone, the training summary with its SHA-256, the
        members' metadata and ``metrics``; ``arrays.npz`` holds every member's arrays
        under the prefix ``m000__``, ``m001__``, ... (see
        :func:`vrvm.trips.store.model_dir.save_model_dir` for the atomicity guarantee).

        Parameters
        ----------
        path : str or path-like
            Model directory; an existing model there is replaced.
        metrics : dict, optional
            JSON-serialisable scores to store (for example :meth:`evaluate` on a
            held-out set); default: the model's ``metrics_``.

        Returns
        -------
        pathlib.Path
            ``path``.
        """
        check_is_fitted(self, "members_")
        return model_format.save_model(self, path, metrics)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TravelTimeModel:
        """Load a model saved by :meth:`save`, verifying its format and checksum.

        Raises
        ------
        ModelFormatError
            If the directory is missing, damaged, tampered with (checksum mismatch),
            of another format, written by a newer vrvm, or inconsistent.
        """
        return model_format.load_model(cls, path)
