"""A model whose relevance vectors are no longer training trips: snapped to zone centres.

Every kernel centre of a fitted member is a training trip (its origin, destination and
start time, as kernel inputs), and the model keeps those trips beside them for the maps
(:meth:`TravelTimeModel.relevance_trips`): a saved model is personal data. :func:`snap_model`
returns a copy whose relevance vectors stand for the centre of the H3 cell each end lies
in, the middle of a time-of-day slot on the same weekday of a reference week
(2001-01-01 is a Monday) and a travel time to the minute. The members' weights, precisions
and noise are kept as they are, so the copy is a valid model that loads and predicts like
any other; moving a kernel centre by a fraction of its width changes the predictions a
little, which ``benchmarks/bench_snapping.py`` measures (BENCHMARKS.md): on the Chicago
sample a hexagon of about 0.1 km^2 (resolution 9) costs 0.1 % of held-out CRPS, 0.7 km^2
(resolution 8) 0.6 % and 5 km^2 (resolution 7) 6.6 %. :func:`choose_snap_resolution`
therefore picks, per model, the coarsest resolution whose cost on its own trips stays
within a bound (2 % by default). The model's zone-pair offsets
(:mod:`vrvm.trips.model.pair_offsets`) keep only their levels no finer than the snapped zones.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import h3
import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

from vrvm.engine.regressor import VRVMRegressor
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.places.zones import choose_h3_resolution

__all__ = [
    "DEFAULT_MAX_COST",
    "DEFAULT_SLOT_MINUTES",
    "REFERENCE_MONDAY",
    "SnapChoice",
    "choose_snap_resolution",
    "snap_model",
    "snap_trips",
]

DEFAULT_MAX_COST = 0.02
"""The largest relative increase of CRPS :func:`choose_snap_resolution` accepts (2 %)."""
DEFAULT_SLOT_MINUTES = 15
"""Width of the time-of-day slots start times are snapped to."""
REFERENCE_MONDAY = pd.Timestamp("2001-01-01")
"""Snapped start times fall in the week starting on this Monday (no DST change in it)."""

_RAW_COLUMNS = ["origin_lat", "origin_lon", "dest_lat", "dest_lon", "start_s", "travel_time_s"]
_MATCH_TOLERANCE = 1e-6  # kernel centres are copies of the relevance vectors' input rows


def _cell_centres(lat: np.ndarray, lon: np.ndarray, resolution: int) -> tuple[np.ndarray, ...]:
    """Centre of the H3 cell of each point, each distinct point looked up once."""
    points, inverse = np.unique(np.column_stack([lat, lon]), axis=0, return_inverse=True)
    centres = np.array(
        [h3.cell_to_latlng(h3.latlng_to_cell(a, b, resolution)) for a, b in points], dtype=float
    ).reshape(-1, 2)
    snapped = centres[inverse.ravel()]
    return snapped[:, 0], snapped[:, 1]


def snap_trips(raw: np.ndarray, tz: str, resolution: int, slot_minutes: int) -> np.ndarray:
    """Relevance-vector trips (rows of ``origin_lat, origin_lon, dest_lat, dest_lon,
    start_s, travel_time_s``) moved to cell centres, slot middles and whole minutes.

    Examples
    --------
    >>> raw = np.array([[41.8781, -87.6298, 41.9742, -87.9073, 1400269500.0, 1234.0]])
    >>> out = snap_trips(raw, "America/Chicago", 8, 15)
    >>> bool(np.abs(out[0, :4] - raw[0, :4]).max() < 0.01), float(out[0, 5])
    (True, 1260.0)
    >>> str(pd.Timestamp(out[0, 4], unit="s", tz="UTC").tz_convert("America/Chicago"))
    '2001-01-05 14:52:30-06:00'
    """
    raw = np.asarray(raw, dtype=float).reshape(-1, 6)
    out = raw.copy()
    if len(raw) == 0:
        return out
    out[:, 0], out[:, 1] = _cell_centres(raw[:, 0], raw[:, 1], resolution)
    out[:, 2], out[:, 3] = _cell_centres(raw[:, 2], raw[:, 3], resolution)
    local = pd.to_datetime(raw[:, 4], unit="s", utc=True).tz_convert(tz)
    minute = local.hour * 60 + local.minute + local.second / 60.0
    middle = np.floor(minute / slot_minutes) * slot_minutes + slot_minutes / 2.0
    naive = (
        REFERENCE_MONDAY
        + pd.to_timedelta(np.asarray(local.dayofweek), unit="D")
        + pd.to_timedelta(np.asarray(middle), unit="min")
    )
    snapped = pd.DatetimeIndex(naive).tz_localize(tz, nonexistent="shift_forward", ambiguous=True)
    out[:, 4] = snapped.tz_convert("UTC").asi8 / 1e9
    out[:, 5] = np.maximum(60.0, np.round(raw[:, 5] / 60.0) * 60.0)
    return out


def _trip_frame(raw: np.ndarray, tz: str) -> pd.DataFrame:
    frame = pd.DataFrame(raw, columns=_RAW_COLUMNS)
    frame["start_time"] = pd.to_datetime(frame.pop("start_s"), unit="s", utc=True).dt.tz_convert(tz)
    return frame


def _matching_rows(centres: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """The row of ``vectors`` each kernel centre is (nearest; it must be a copy)."""
    if len(centres) == 0:
        return np.empty(0, dtype=np.intp)
    gaps = ((centres[:, None, :] - vectors[None, :, :]) ** 2).sum(axis=2)
    rows = np.argmin(gaps, axis=1)
    if np.sqrt(gaps[np.arange(len(centres)), rows]).max() > _MATCH_TOLERANCE:
        raise ValueError("a kernel centre is not one of the member's relevance vectors")
    return rows


def _snap_member(member: VRVMRegressor, X_new: np.ndarray) -> VRVMRegressor:
    """A copy of ``member`` with its relevance vectors and kernel centres replaced."""
    meta, arrays = member.export_state()
    rows = _matching_rows(np.asarray(arrays["basis_centres"]), member.relevance_vectors_)
    arrays = dict(arrays)
    arrays["basis_centres"] = X_new[rows]
    arrays["relevance_vectors_"] = X_new.copy()
    return VRVMRegressor.from_state(meta, arrays)


def _default_resolution(model: TravelTimeModel) -> int:
    if model.h3_resolution_ is not None:
        return int(model.h3_resolution_)
    raw = np.concatenate(model.relevance_trip_arrays_)
    lat = np.concatenate([raw[:, 0], raw[:, 2]])
    lon = np.concatenate([raw[:, 1], raw[:, 3]])
    return choose_h3_resolution(lat, lon, target_zones=600)


def snap_model(
    model: TravelTimeModel,
    *,
    resolution: int | None = None,
    slot_minutes: int = DEFAULT_SLOT_MINUTES,
) -> TravelTimeModel:
    """A copy of ``model`` whose relevance vectors are zone centres, not training trips.

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model (left unchanged).
    resolution : int, optional
        H3 resolution of the zones whose centres the trip ends move to; default the
        model's own (``h3_resolution_``, the zones it stratified its shards on). Coarser
        (smaller) hides more and costs more accuracy.
    slot_minutes : int, default=15
        Start times move to the middle of their slot of this many minutes, on the same
        weekday of the week of :data:`REFERENCE_MONDAY` (the model uses only the time of
        day and whether it is a weekend).

    Returns
    -------
    TravelTimeModel
        The snapped copy; ``training_summary_["snapped"]`` records how, and its
        ``source`` is reduced to a file name.

    Examples
    --------
    >>> from vrvm import TravelTimeModel, synthetic_city
    >>> trips = synthetic_city(800, seed=2)
    >>> model = TravelTimeModel(n_members=2, kernel_widths=[2.0], max_basis=40,
    ...                         random_state=0).fit(trips)
    >>> snapped = snap_model(model, resolution=8)
    >>> before, after = model.relevance_trips(), snapped.relevance_trips()
    >>> bool((before["origin_lat"] != after["origin_lat"]).all())
    True
    >>> ratio = snapped.predict(trips.head(50)) / model.predict(trips.head(50))
    >>> bool(np.abs(ratio - 1).max() < 0.25), snapped.training_summary_["snapped"]
    (True, {'resolution': 8, 'slot_minutes': 15})
    """
    check_is_fitted(model, "members_")
    if not isinstance(slot_minutes, int) or not 1 <= slot_minutes <= 240 or 1440 % slot_minutes:
        raise ValueError(f"slot_minutes must divide 1440 and lie in [1, 240], got {slot_minutes!r}")
    res = _default_resolution(model) if resolution is None else int(resolution)
    if not 0 <= res <= 15:
        raise ValueError(f"resolution must be an H3 resolution in [0, 15], got {resolution!r}")
    snapped = copy.deepcopy(model)
    members, arrays = [], []
    for member, raw in zip(model.members_, model.relevance_trip_arrays_, strict=True):
        moved = snap_trips(raw, model.tz_, res, slot_minutes)
        X_new, _ = model.featurizer_.transform(_trip_frame(moved, model.tz_))
        members.append(_snap_member(member, X_new))
        arrays.append(moved)
    snapped.members_ = members
    snapped.relevance_trip_arrays_ = arrays
    # zone-pair offsets only of pairs of cells no finer than the snapped zones
    offsets = model.pair_offsets_
    snapped.pair_offsets_ = None if offsets is None else offsets.coarsened(res)
    summary = dict(model.training_summary_)
    if isinstance(summary.get("source"), str):
        summary["source"] = Path(summary["source"].replace("\\", "/")).name
    summary["snapped"] = {"resolution": res, "slot_minutes": slot_minutes}
    snapped.training_summary_ = summary
    return snapped


@dataclass(frozen=True)
class SnapChoice:
    """The resolution :func:`choose_snap_resolution` chose, and what each one cost.

    Attributes
    ----------
    resolution : int
        The coarsest H3 resolution whose relative CRPS increase is within the bound
        (the finest tried when none is).
    within : bool
        Whether ``resolution`` is within the bound.
    costs : pandas.DataFrame
        Per resolution tried: ``resolution``, ``crps_s`` and ``cost`` (relative increase
        of CRPS over the exact model's ``exact_crps_s``), coarsest first.
    exact_crps_s : float
        The exact model's mean CRPS on the same trips.
    n_trips : int
        How many trips were scored.
    """

    resolution: int
    within: bool
    costs: pd.DataFrame
    exact_crps_s: float
    n_trips: int

    @property
    def cost(self) -> float:
        """The chosen resolution's relative CRPS increase."""
        return float(self.costs.set_index("resolution").loc[self.resolution, "cost"])


def choose_snap_resolution(
    model: TravelTimeModel,
    trips: pd.DataFrame,
    *,
    max_cost: float = DEFAULT_MAX_COST,
    slot_minutes: int = DEFAULT_SLOT_MINUTES,
    resolutions: tuple[int, ...] | None = None,
    max_trips: int = 2000,
    seed: int = 0,
) -> SnapChoice:
    """The coarsest H3 resolution whose snapped model costs at most ``max_cost`` of CRPS.

    Parameters
    ----------
    model : TravelTimeModel
        A fitted model.
    trips : pandas.DataFrame
        Trips with travel times to score on: held-out trips, or (as the dashboard and
        ``vrvm export`` do) the model's training trips, on which the cost of moving the
        centres is measured in the same way.
    max_cost : float, default=0.02
        The largest relative increase of the mean CRPS accepted.
    slot_minutes : int, default=15
        As :func:`snap_model`.
    resolutions : tuple of int, optional
        Resolutions to try; default from one coarser than the model's own to 10.
    max_trips : int, default=2000
        A uniform sample of at most this many trips is scored.
    seed : int, default=0
        Seed of that sample.

    Returns
    -------
    SnapChoice
    """
    check_is_fitted(model, "members_")
    if not 0 <= max_cost < 1:
        raise ValueError(f"max_cost must lie in [0, 1), got {max_cost!r}")
    if len(trips) == 0:
        raise ValueError("no trips to measure the cost of snapping on")
    if len(trips) > max_trips:
        trips = trips.sample(n=max_trips, random_state=seed)
    if resolutions is None:
        first = max(0, _default_resolution(model) - 1)
        resolutions = tuple(range(min(first, 10), 11))
    t = trips["travel_time_s"].to_numpy(float)
    exact = float(np.mean(model.predict_dist(trips).crps(t)))
    rows = []
    for res in sorted(resolutions):
        snapped = snap_model(model, resolution=res, slot_minutes=slot_minutes)
        crps = float(np.mean(snapped.predict_dist(trips).crps(t)))
        rows.append({"resolution": res, "crps_s": crps, "cost": crps / exact - 1.0})
    costs = pd.DataFrame(rows)
    within = costs.loc[costs["cost"] <= max_cost, "resolution"]
    chosen = int(within.min()) if len(within) else int(costs["resolution"].max())
    return SnapChoice(
        resolution=chosen,
        within=bool(len(within)),
        costs=costs,
        exact_crps_s=exact,
        n_trips=len(trips),
    )
