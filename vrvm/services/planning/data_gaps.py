r"""Where data is missing: how much of each answer's spread is the model's own uncertainty.

A predictive interval is wide for two reasons. Trips between the same two places at the
same time differ (traffic, lights, the driver): *trip-to-trip variation*, which no
amount of data removes. Or the model has seen too few trips like this one to pin the
answer down: *the model's own (epistemic) uncertainty*, which more trips there would
shrink. This module splits the predictive variance of every answer into the two, per
zone of a :class:`~vrvm.services.map.area.ServiceArea` (:func:`zone_gaps`) or from one
origin to every zone (:func:`origin_gaps`), with the training trips behind each zone
beside it, ranks the zones by how much more trips there would sharpen the answers, and
writes the table as CSV or GeoJSON (:func:`gaps_csv`, :func:`gaps_geojson`: per-zone
aggregates only, never a trip).

The decomposition
-----------------
Everything is on the model's scale: **log-seconds** for a model of ``target="log"``
(the default; a standard deviation s there is a factor e^s on the travel time, about
s x 100 % for small s), seconds for ``target="seconds"`` (the columns then end in
``_s`` instead of ``_log``). The ensemble's predictive of a trip is the uniform mixture
of its members' predictives (:class:`~vrvm.engine.mixture.MixtureDistribution`; with
twin scales each member is two components of equal weight). By the law of total
variance, with component c of member m(c) having mean mu_c and variance v_c,

.. math:: \operatorname{Var}[Y] = \underbrace{\tfrac1C \textstyle\sum_c (\mu_c - \bar\mu)^2}
          _{\text{between members}} + \tfrac1C \textstyle\sum_c v_c .

A member's own predictive variance is itself a weight part and a noise part. For the
structured (normal-gamma) member, y = phi^T w + eps with w | lambda ~ N(mu, V / lambda),
eps ~ N(0, 1 / lambda), so (Bishop & Tipping 2000; Drugowitsch 2013, the Student-t
predictive of scale^2 = (f'/e')(1 + phi^T V phi))

.. math:: \operatorname{Var}[y] = E[1/\lambda]\,\phi^T V \phi + E[1/\lambda]
          = \underbrace{\tfrac{f'}{e'-1}\,\phi^T V\phi}_{\text{weights}}
          + \underbrace{\tfrac{f'}{e'-1}}_{\text{noise}} ,

and for the mean-field member the Gaussian N(mu^T phi, f'/e' + phi^T Sigma phi) splits
the same way. Either way the member's noise part of its squared scale is f'/e' (on the
unit scale of its fit, times its ``y_scale^2``), read from its
:class:`~vrvm.engine.predictor.Predictor`, and its weight share is
rho_m = 1 - (f'/e') y_scale^2 / scale_m^2 with scale_m from
:meth:`~vrvm.engine.predictor.Predictor.loc_scale`. The model's spread (the distance
scale g(x) and the twin scales e^{+-a}, :mod:`vrvm.trips.model._spread`) multiplies a
member's whole scale, so it enlarges both parts alike: component c's variance v_c is
split as rho_{m(c)} v_c (weights) and (1 - rho_{m(c)}) v_c (noise). Hence

* **epistemic** variance = between-member variance + mean weight part (the model's own
  uncertainty: the shards disagree, and each member is unsure of its weights), and
* **noise** variance = mean noise part (trip-to-trip variation, including the
  distance and twin scales of the spread),

which add up exactly to the mixture's variance on the model scale
(:meth:`SpreadParts.total`). A model whose predictive is read through a PIT map
(:class:`~vrvm.engine.recalibrated.RecalibratedMixture`) is decomposed before the map:
the map reshapes probabilities and has no parts of its own (``recalibrated`` in the
table's ``attrs``).

Per zone
--------
:func:`zone_gaps` asks, at each departure, the trips from every zone to a set of
representative destinations R (every zone's point, or the ``max_destinations`` zones
with the most demand when there are more) and from R to every zone, skipping a zone's
trip to its own point. A zone's figures are the means over its pairs (as origin and as
destination) and departures of each variance part: ``epistemic_share`` = mean epistemic
variance / mean total variance, ``epistemic_sd_log`` and ``noise_sd_log`` their square
roots (``between_sd_log`` and ``weights_sd_log`` the two epistemic parts). The support
count ``support_trips`` is the training trips starting or ending in the zone, from the
area's index of them (:class:`~vrvm.services.map.support.TripSupport`); the columns are
left out when the area has no such index (the training trips were not kept).

Where more trips would sharpen the answers most
-----------------------------------------------
With zone weights w_z (demand, :func:`~vrvm.services.planning.fleet.zone_demand`:
training trips starting in each zone by default, normalised to sum to 1), a zone's
pairs' mean epistemic variance E_z and mean total variance T_z, the answers' demand-
weighted mean predictive variance is sum_z w_z T_z. Removing zone z's epistemic part
would lower it by w_z E_z, and its share of it is

w_z E_z / sum_z' w_z' T_z'. Both the posterior covariance of a member's weights,
(A + Phi^T Phi)^-1, and the spread between members fitted on disjoint shards fall
roughly like 1/n in the trips n near the query, so N more trips in a zone with n_z
training trips would remove about the fraction N / (n_z + N) of it:

.. math:: \text{sharpening}_z = \frac{w_z E_z}{\sum_{z'} w_{z'} T_{z'}}
          \cdot \frac{N}{n_z + N}, \qquad N = 100 \ (:data:`MORE_TRIPS`),

the share of the demand-weighted variance that 100 more trips from the zone would
remove, which ranks the zones (``rank`` 1 first): a busy zone with thousands of trips
gains little from 100 more, a zone of high demand and few trips much. Without the
training trips (``support_trips`` unknown) the factor is left out and the ranking is by
w_z E_z alone. It is a first-order guide: it ignores that trips added in one zone also
inform the pairs of its neighbours.

What the split cannot see
-------------------------
The epistemic part is what the *members* are unsure of. Parts of the predictive every
member shares are point estimates with no uncertainty of their own: the location
stage's boosted trees (models of 2,000 trips or more), the zone-pair offsets, the
spread, and a forest's neighbours where the model pools them (left out of the split:
it is made on what the members alone predict, ``predict_dist(queries, forest=False)``).
Where the trees carry the structure the members model residuals, and a
thinned region can then show a *smaller* epistemic share than a dense one (measured on
Synthetica, 3,700 trips, the north-east quarter thinned to 5 %: 1.3-3.2 % in the
region against 1.6-4.3 % elsewhere over three seeds; without the stage 7.9-13.0 %
against 7.1-11.0 %). And a relevance vector machine's weight uncertainty phi^T V phi
falls, not rises, far from its relevance vectors, where every kernel vanishes
(Rasmussen & Quiñonero-Candela 2005): far outside the data the members agree on the
bias and distance terms. On the Chicago sample (15,000 trips, 8 members, community
areas, Tuesday 08:00) the zones' epistemic share rose *with* their training trips
(Spearman +0.75; +0.24 without the location stage): the busy North Side and Loop at
14 %, thinly covered South Side areas at 1-6 %. So read the map as "where the ensemble
disagrees or is unsure", always beside the support counts, not as a complete account
of what is unknown; averaged over three Synthetica models the thinned quarter's zones
and the zones with fewer trips do show the larger share
(tests/services/test_data_gaps.py).

References
----------
Bishop & Tipping (2000), "Variational relevance vector machines", UAI.
Drugowitsch (2013), "Variational Bayesian inference for linear and logistic
regression", arXiv:1310.5438.
Lakshminarayanan, Pritzel & Blundell (2017), "Simple and scalable predictive
uncertainty estimation using deep ensembles", NeurIPS (the ensemble's mixture and its
between-member spread).
Depeweg, Hernández-Lobato, Doshi-Velez & Udluft (2018), "Decomposition of uncertainty
in Bayesian deep learning for efficient and risk-sensitive learning", ICML (the
variance decomposition into epistemic and aleatoric parts).
Rasmussen & Quiñonero-Candela (2005), "Healing the relevance vector machine through
augmentation", ICML (the RVM's predictive variance shrinks away from the data).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from vrvm.engine.distributions import Normal, StudentT
from vrvm.services.answers.schedule import local_time
from vrvm.services.display.colours import (
    WEIGHT_PALETTE,
    binned_colors,
    legend_entries,
    nice_edges,
)
from vrvm.services.display.csv_cells import safe_cells
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import Place
from vrvm.services.map.support import THIN_TRIPS, day_note, minute_of_day, origin_support
from vrvm.services.planning.coverage import zone_collection
from vrvm.services.planning.fleet import zone_demand
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.table import check_trips

__all__ = [
    "GAP_METRICS",
    "MAX_DESTINATIONS",
    "MORE_TRIPS",
    "SHARE_EDGES",
    "SpreadParts",
    "gaps_colors",
    "gaps_csv",
    "gaps_geojson",
    "gaps_map",
    "gaps_summary",
    "origin_gaps",
    "spread_parts",
    "zone_gaps",
]

GAP_METRICS = ("epistemic_share", "sharpening")
MORE_TRIPS = 100
"""The trips added to a zone in the sharpening ranking (see the module)."""
"""What a data-gaps map can colour the zones by."""

MAX_DESTINATIONS = 200
"""Representative destinations of :func:`zone_gaps` by default (the busiest zones)."""

SHARE_EDGES = (0.0, 0.05, 0.1, 0.2, 0.35, 0.5, 1.0)
"""Bins of the epistemic share on the map."""

_BLOCK_QUERIES = 50_000
"""Queries predicted at once (a block of origins times the destinations)."""


# --------------------------------------------------------------------- the decomposition


@dataclass(frozen=True)
class SpreadParts:
    """The predictive variance of many queries, split into its parts (model scale).

    Attributes
    ----------
    between : ndarray of shape (n,)
        Variance of the members' means (the mixture's components' locations).
    weights : ndarray of shape (n,)
        Mean over the components of the part of their variance that comes from the
        members' uncertainty about their weights (phi^T V phi).
    noise : ndarray of shape (n,)
        Mean over the components of the noise part of their variance (trip-to-trip
        variation, the distance and twin scales included).
    scale : str
        ``"log-seconds"`` or ``"seconds"``: the scale of the variances.
    recalibrated : bool
        Whether the model's predictive is read through a PIT map (the parts are of the
        mixture before it).
    """

    between: np.ndarray
    weights: np.ndarray
    noise: np.ndarray
    scale: str = "log-seconds"
    recalibrated: bool = False

    @property
    def epistemic(self) -> np.ndarray:
        """The model's own uncertainty: ``between + weights``."""
        return self.between + self.weights

    @property
    def total(self) -> np.ndarray:
        """The mixture's variance on the model scale: ``epistemic + noise``."""
        return self.epistemic + self.noise

    @property
    def epistemic_share(self) -> np.ndarray:
        """``epistemic / total``, in [0, 1]."""
        return self.epistemic / self.total


def _weight_shares(model: TravelTimeModel, queries: pd.DataFrame) -> np.ndarray:
    """rho_m: the share of each member's own predictive variance that is weight
    uncertainty, shape (M, n) (see the module: 1 - noise / scale^2 of the member)."""
    X, d = model.featurizer_.transform(queries)
    predictors = model.member_predictors()
    shares = np.empty((len(predictors), X.shape[0]))
    for m, member in enumerate(predictors):
        _, scale = member.loc_scale(X, d[:, None])
        noise = member.f / member.e * member.y_scale**2  # f'/e' on the scale of y
        shares[m] = np.clip(1.0 - noise / scale**2, 0.0, 1.0)
    return shares


def spread_parts(model: TravelTimeModel, queries: pd.DataFrame) -> SpreadParts:
    """Split each query's predictive variance into between-member, weight and noise parts.

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model.
    queries : pandas.DataFrame
        As for :meth:`~vrvm.trips.model.travel_time.TravelTimeModel.predict_dist`.

    Returns
    -------
    SpreadParts
        On the model's scale (log-seconds for ``target="log"``); ``between + weights
        + noise`` is the variance of the mixture's components' law on that scale.

    Raises
    ------
    ValueError
        If the members' Student-t predictives have no finite variance (df <= 2).

    Examples
    --------
    >>> from vrvm import synthetic_city
    >>> from vrvm.engine.mixture import MixtureDistribution
    >>> trips = synthetic_city(600, seed=1)
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[2.0], max_basis=30,
    ...                         random_state=0).fit(trips)
    >>> parts = spread_parts(model, trips.head(5))
    >>> dist = model.predict_dist(trips.head(5))
    >>> log_var = MixtureDistribution(dist.loc, dist.scale, dist.df).var()
    >>> bool(np.allclose(parts.total, log_var, rtol=1e-12, atol=0))
    True
    >>> bool(np.all((parts.epistemic_share > 0) & (parts.epistemic_share < 1)))
    True
    """
    queries = check_trips(queries, with_target=False, name="queries")
    # the members' own predictive: a forest's neighbours, pooled with every member
    # alike, are a shared estimate like the location stage, not the members' doubt
    dist = model.predict_dist(queries, forest=False)
    loc, scale, df = dist.loc, dist.scale, dist.df
    component = Normal(loc, scale) if df is None else StudentT(loc, scale, df)
    variance = component.var()
    if not np.all(np.isfinite(variance)):
        raise ValueError(
            "the members' Student-t predictives have df <= 2 here: their variance is "
            "infinite and cannot be split"
        )
    shares = _weight_shares(model, queries)
    member = np.arange(dist.n_components) % dist.n_members  # member m is m, M + m, ...
    weight_part = variance * shares[member]
    between = ((loc - loc.mean(axis=0)) ** 2).mean(axis=0)
    return SpreadParts(
        between=between,
        weights=weight_part.mean(axis=0),
        noise=(variance - weight_part).mean(axis=0),
        scale="log-seconds" if model.target == "log" else "seconds",
        recalibrated=model.spread_.pit_map is not None,
    )


# ------------------------------------------------------------------------------ per zone


def _departures(departures, tz: str) -> list[pd.Timestamp]:
    """One departure or several, as times in ``tz`` (naive ones are wall-clock times
    there; ValueError naming a bad one)."""
    if isinstance(departures, str | datetime.datetime | np.datetime64) or not isinstance(
        departures, Sequence | np.ndarray | pd.Index | pd.Series
    ):
        departures = [departures]
    out = [local_time(value, tz, "departure") for value in departures]
    if not out:
        raise ValueError("no departure time given: need at least one")
    return out


def _suffix(model: TravelTimeModel) -> str:
    return "log" if model.target == "log" else "s"


def _pairs(o_lat, o_lon, d_lat, d_lon, departure) -> pd.DataFrame:
    """Queries from every origin to every destination (origin-major)."""
    n_o, n_d = o_lat.size, d_lat.size
    return pd.DataFrame(
        {
            "origin_lat": np.repeat(o_lat, n_d),
            "origin_lon": np.repeat(o_lon, n_d),
            "dest_lat": np.tile(d_lat, n_o),
            "dest_lon": np.tile(d_lon, n_o),
            "start_time": pd.DatetimeIndex([departure]).repeat(n_o * n_d),
        }
    )


def _matrix_parts(model, o_lat, o_lon, d_lat, d_lon, departures) -> np.ndarray:
    """Parts (between, weights, noise) of every origin-destination pair, summed over the
    departures: shape (3, n_origins, n_destinations); origins predicted in blocks."""
    n_o, n_d = o_lat.size, d_lat.size
    out = np.zeros((3, n_o, n_d))
    step = max(1, _BLOCK_QUERIES // max(n_d, 1))
    for departure in departures:
        for start in range(0, n_o, step):
            rows = slice(start, start + step)
            queries = _pairs(o_lat[rows], o_lon[rows], d_lat, d_lon, departure)
            parts = spread_parts(model, queries)
            for k, part in enumerate((parts.between, parts.weights, parts.noise)):
                out[k, rows] += part.reshape(-1, n_d)
    return out


def _zone_frame(area: ServiceArea) -> pd.DataFrame:
    """The columns a zone table starts with (as a coverage grid has them)."""
    grid = area.grid
    out = grid[["zone", "number", "label", "lat", "lon", "boundary"]].copy()
    if "geometry" in grid.columns:  # a planner's polygons: their names and shapes
        out.insert(3, "name", grid["place"].to_numpy())
        out["geometry"] = grid["geometry"].to_numpy()
    return out.reset_index(drop=True)


def _zone_support(area: ServiceArea) -> np.ndarray | None:
    """Training trips starting or ending in each zone (grid order), from the area's
    index of them; None without one."""
    support = area.support
    n = len(area.grid)
    if support is None or support.n_zones != n:
        return None
    origin = support.index.column("origin").astype(np.int64)
    dest = support.index.column("dest").astype(np.int64)
    starts = np.bincount(origin[origin >= 0], minlength=n)
    ends = np.bincount(dest[dest >= 0], minlength=n)
    within = np.bincount(origin[(origin >= 0) & (origin == dest)], minlength=n)
    return (starts + ends - within)[:n]


def _finish(
    out: pd.DataFrame,
    sums: np.ndarray,
    count: np.ndarray,
    weights: np.ndarray,
    suffix: str,
    support: np.ndarray | None = None,
) -> pd.DataFrame:
    """The variance columns, the sharpening and the rank from summed parts (3, n), with
    the training trips behind each zone (``support``) when they are known."""
    with np.errstate(invalid="ignore", divide="ignore"):
        between, weight, noise = sums / np.where(count > 0, count, np.nan)
    epistemic = between + weight
    total = epistemic + noise
    out["epistemic_share"] = epistemic / total
    out[f"epistemic_sd_{suffix}"] = np.sqrt(epistemic)
    out[f"noise_sd_{suffix}"] = np.sqrt(noise)
    out[f"total_sd_{suffix}"] = np.sqrt(total)
    out[f"between_sd_{suffix}"] = np.sqrt(between)
    out[f"weights_sd_{suffix}"] = np.sqrt(weight)
    w = np.where(np.isfinite(total), weights, 0.0)
    w = w / w.sum() if w.sum() > 0 else w
    out["demand_weight"] = w
    overall = float(np.nansum(w * total))
    removable = w * epistemic
    if support is not None:  # the part MORE_TRIPS more trips would remove, at 1/n
        removable = removable * (MORE_TRIPS / (np.asarray(support, dtype=np.float64) + MORE_TRIPS))
    out["sharpening"] = np.where(np.isfinite(epistemic), removable, np.nan) / overall
    order = np.argsort(-np.nan_to_num(out["sharpening"].to_numpy(), nan=-np.inf), kind="stable")
    rank = np.empty(len(out), dtype=np.int64)
    rank[order] = np.arange(1, len(out) + 1)
    out["rank"] = rank
    return out


def _attrs(out: pd.DataFrame, model, departures, demand_source: str, recalibrated: bool):
    out.attrs.update(
        {
            "scale": "log-seconds" if model.target == "log" else "seconds",
            "departures": [d.isoformat() for d in departures],
            "demand": demand_source,
            "recalibrated": recalibrated,
        }
    )
    return out


def zone_gaps(
    model: TravelTimeModel,
    area: ServiceArea,
    departures,
    *,
    max_destinations: int | None = MAX_DESTINATIONS,
    demand=None,
) -> pd.DataFrame:
    """Each zone's split of the predictive spread, its support and its sharpening rank.

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model (of the city of ``area``).
    area : ServiceArea
        The zones, each standing for its point (:attr:`ServiceArea.grid`).
    departures : timestamp or sequence of timestamps
        The departure time(s) the answers are for (naive: the model's time zone); the
        parts are averaged over them.
    max_destinations : int or None, default=200
        The representative destinations R: every zone when there are at most this many
        (or None), else this many zones with the most demand.
    demand : array-like, optional
        One non-negative weight per zone (grid order) for the sharpening; default:
        :func:`~vrvm.services.planning.fleet.zone_demand`.

    Returns
    -------
    pandas.DataFrame
        The area's zones (``zone``, ``number``, ``label``, ``lat``, ``lon``,
        ``boundary``; polygons also ``name`` and ``geometry``) with
        ``epistemic_share``, ``epistemic_sd_log``, ``noise_sd_log``, ``total_sd_log``,
        ``between_sd_log``, ``weights_sd_log`` (``_s`` for a model of seconds),
        ``demand_weight``, ``sharpening`` and ``rank`` (see the module), and, when the
        area indexes its training trips, ``support_trips`` (trips starting or ending in
        the zone) and ``thin`` (fewer than :data:`~vrvm.services.map.support.THIN_TRIPS`).
        ``attrs`` holds the ``scale``, the ``departures``, where the ``demand`` came
        from and whether the model is ``recalibrated``.

    Raises
    ------
    ValueError
        Fewer than two zones, no departure or a bad one, a ``max_destinations`` below 1,
        or demand of the wrong length or sign.
    """
    times = _departures(departures, model.tz_)
    grid = area.grid
    n = len(grid)
    if n < 2:
        raise ValueError(f"the service area has {n} zone(s): need at least two to pair them")
    if max_destinations is not None and int(max_destinations) < 1:
        raise ValueError(f"max_destinations must be None or at least 1, got {max_destinations}")
    weights, source = zone_demand(area, demand)
    lat, lon = grid["lat"].to_numpy(float), grid["lon"].to_numpy(float)
    if max_destinations is None or n <= int(max_destinations):
        chosen = np.arange(n)
    else:  # the busiest zones (demand), ties in grid order
        chosen = np.sort(np.argsort(-weights, kind="stable")[: int(max_destinations)])
    # zone z as origin: z -> R; as destination: R -> z (the same matrix when R is all)
    as_origin = _matrix_parts(model, lat, lon, lat[chosen], lon[chosen], times)
    same = (lat[:, None] == lat[chosen][None, :]) & (lon[:, None] == lon[chosen][None, :])
    keep = ~same  # (n, |R|): a zone's trip to its own point says nothing about travel
    sums = (as_origin * keep).sum(axis=2)
    count = keep.sum(axis=1) * len(times)
    if chosen.size == n:
        sums += (as_origin * keep).sum(axis=1)
        count = count + keep.sum(axis=0) * len(times)
    else:
        as_dest = _matrix_parts(model, lat[chosen], lon[chosen], lat, lon, times)
        sums += (as_dest * keep.T).sum(axis=1)
        count = count + keep.T.sum(axis=0) * len(times)
    support = _zone_support(area)
    out = _finish(_zone_frame(area), sums, count, weights, _suffix(model), support)
    if support is not None:
        out["support_trips"] = support.astype(np.int64)
        out["thin"] = support < THIN_TRIPS
    recalibrated = model.spread_.pit_map is not None
    return _attrs(out, model, times, source, recalibrated)


def origin_gaps(
    model: TravelTimeModel, area: ServiceArea, origin: Place, departures, *, demand=None
) -> pd.DataFrame:
    """The split of the predictive spread of the trips from one origin to every zone.

    Parameters
    ----------
    model, area, departures, demand
        As for :func:`zone_gaps`; the demand weighs the destinations.
    origin : Place
        Where the trips start.

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`zone_gaps` for the trip from ``origin`` to each zone
        (averaged over the departures); the support columns are those of
        :func:`~vrvm.services.planning.coverage.coverage_grid`: ``support_trips``
        (trips from near the origin to near the zone), ``support_trips_at_time``
        (within an hour of the first departure's time of day) and ``thin``. The trip
        to the origin's own point has no figures (NaN, ranked last).
    """
    times = _departures(departures, model.tz_)
    grid = area.grid
    if len(grid) < 1:
        raise ValueError("the service area has no zone")
    weights, source = zone_demand(area, demand)
    lat, lon = grid["lat"].to_numpy(float), grid["lon"].to_numpy(float)
    parts = _matrix_parts(model, np.array([origin.lat]), np.array([origin.lon]), lat, lon, times)[
        :, 0, :
    ]
    keep = ~((lat == origin.lat) & (lon == origin.lon))
    row = area.zone_row(origin.zone)
    counts = None
    if area.support is not None and area.support.n_zones == len(grid) and row is not None:
        counts = origin_support(area.support, row, minute_of_day(times[0], model.tz_))
    support = None if counts is None else counts["support_trips"].to_numpy()
    out = _finish(
        _zone_frame(area), parts * keep, keep * len(times), weights, _suffix(model), support
    )
    out.insert(0, "origin_lat", float(origin.lat))
    out.insert(1, "origin_lon", float(origin.lon))
    if counts is not None:
        out["support_trips"] = counts["support_trips"].to_numpy()
        out["support_trips_at_time"] = counts["support_trips_at_time"].to_numpy()
        thin_day = bool(day_note(area.support, times[0], model.tz_))
        out["thin"] = (out["support_trips"].to_numpy() < THIN_TRIPS) | thin_day
    out = _attrs(out, model, times, source, model.spread_.pit_map is not None)
    out.attrs["origin"] = {
        "lat": float(origin.lat),
        "lon": float(origin.lon),
        "label": origin.label,
    }
    return out


def _suffix_of(grid: pd.DataFrame) -> str:
    """``"log"`` or ``"s"``: the scale the table's standard deviations are on."""
    for suffix in ("log", "s"):
        if f"epistemic_sd_{suffix}" in grid.columns:
            return suffix
    raise ValueError("not a data-gaps table: no epistemic_sd_log (or _s) column")


def gaps_summary(grid: pd.DataFrame, top: int = 5) -> dict[str, Any]:
    """The headline of a gaps table: the overall epistemic share and the top zones.

    ``epistemic_share`` is the demand-weighted mean epistemic variance over the
    demand-weighted mean total variance; ``top`` the ``top`` zones by ``rank`` as
    ``(label, sharpening, support_trips or None)``.

    Examples
    --------
    >>> grid = pd.DataFrame({"label": ["a", "b"], "demand_weight": [0.5, 0.5],
    ...     "epistemic_sd_log": [0.1, 0.2], "total_sd_log": [0.3, 0.3],
    ...     "sharpening": [0.06, 0.22], "rank": [2, 1]})
    >>> s = gaps_summary(grid, top=1)
    >>> round(s["epistemic_share"], 3), s["top"]
    (0.278, [('b', 0.22, None)])
    """
    suffix = _suffix_of(grid)
    sd = f"epistemic_sd_{suffix}"
    w = grid["demand_weight"].to_numpy(float)
    epistemic = np.nansum(w * grid[sd].to_numpy(float) ** 2)
    total = np.nansum(w * grid[f"total_sd_{suffix}"].to_numpy(float) ** 2)
    best = grid.sort_values("rank").head(top)
    support = best["support_trips"] if "support_trips" in best else [None] * len(best)
    return {
        "epistemic_share": float(epistemic / total) if total > 0 else float("nan"),
        "top": [
            (str(label), float(s), None if n is None else int(n))
            for label, s, n in zip(best["label"], best["sharpening"], support, strict=True)
        ],
    }


# --------------------------------------------------------------------------------- map


def gaps_colors(
    grid: pd.DataFrame, metric: str = "epistemic_share", *, n_bins: int = 6
) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Fill colours of a gaps table and the legend: warm where data is missing.

    ``"epistemic_share"`` bins the share on :data:`SHARE_EDGES`; ``"sharpening"``
    bins each zone's share of the variance more trips there would remove (percent,
    rounded edges). Zones without figures are grey.
    """
    if metric == "epistemic_share":
        edges = np.asarray(SHARE_EDGES)
        colours = binned_colors(grid["epistemic_share"].to_numpy(float), edges, WEIGHT_PALETTE)
        return colours, legend_entries(edges, WEIGHT_PALETTE, lambda v: f"{100 * v:g} %")
    if metric == "sharpening":
        percent = 100.0 * grid["sharpening"].to_numpy(float)
        edges = nice_edges(percent, n_bins)
        colours = binned_colors(percent, edges, WEIGHT_PALETTE)
        return colours, legend_entries(edges, WEIGHT_PALETTE, lambda v: f"{v:g} %")
    raise ValueError(f"metric must be one of {GAP_METRICS}, got {metric!r}")


def gaps_map(
    grid: pd.DataFrame, metric: str = "epistemic_share"
) -> tuple[np.ndarray, list[str], list[tuple[str, str]]]:
    """Fill colours, tooltips (plain text, lines split by "\\n") and the legend of a
    gaps map. Thin zones are not faded: they are what the map is for; their tooltip
    says so."""
    fill, legend = gaps_colors(grid, metric)
    suffix = _suffix_of(grid)
    sd = f"epistemic_sd_{suffix}"
    unit = "log-s" if suffix == "log" else "s"
    tips = []
    for i in range(len(grid)):
        row = grid.iloc[i]
        if not np.isfinite(row["epistemic_share"]):
            tips.append("no figures (the origin's own point)")
            continue
        tip = (
            f"model's own uncertainty {100 * row['epistemic_share']:.0f} % of the spread"
            f"\nsd: model {row[sd]:.3f} {unit} · trip-to-trip {row[f'noise_sd_{suffix}']:.3f} "
            f"{unit}\n{MORE_TRIPS} more trips here: rank {int(row['rank'])} "
            f"(they remove {100 * row['sharpening']:.2f} % of the spread)"
        )
        if "support_trips" in grid.columns:
            tip += f"\n{int(row['support_trips']):,} training trips"
            if bool(row["thin"]):
                tip += "\n⚠ Thin data"
        tips.append(tip)
    return fill, tips, legend


# ---------------------------------------------------------------------------- downloads


def _export_frame(grid: pd.DataFrame, synthetic: bool) -> pd.DataFrame:
    out = grid.drop(columns=["boundary", "geometry"], errors="ignore").copy()
    out.insert(0, "departures", ";".join(grid.attrs.get("departures", [])))
    out.insert(1, "scale", grid.attrs.get("scale", ""))
    if synthetic:
        out["data"] = "SYNTHETIC (Synthetica, not a real city)"
    return out


def gaps_csv(grid: pd.DataFrame, *, synthetic: bool = False) -> bytes:
    """A gaps table (:func:`zone_gaps` or :func:`origin_gaps`) as CSV (UTF-8), one row per
    zone: per-zone aggregates and counts only, never a trip."""
    out = _export_frame(grid, synthetic)
    return safe_cells(out).to_csv(index=False, float_format="%.6g").encode("utf-8")


def gaps_geojson(grid: pd.DataFrame, *, synthetic: bool = False) -> bytes:
    """A gaps table as a GeoJSON FeatureCollection of the zones (hexagons, or the
    planner's polygons), with the departures, the scale, the demand's source and, for
    :func:`origin_gaps`, the origin as members of the collection."""
    document = zone_collection(_export_frame(grid, synthetic), grid)
    document["departures"] = list(grid.attrs.get("departures", []))
    document["scale"] = grid.attrs.get("scale", "")
    document["demand"] = grid.attrs.get("demand", "")
    document["recalibrated"] = bool(grid.attrs.get("recalibrated", False))
    if "origin" in grid.attrs:
        document["origin"] = dict(grid.attrs["origin"])
    document["synthetic"] = bool(synthetic)
    return json.dumps(document, allow_nan=False).encode("utf-8")
