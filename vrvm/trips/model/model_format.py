"""The saved form of a travel-time model: what goes into its model directory and back.

``model.json`` holds the format name ``"vrvm.TravelTimeModel"`` and version, the
parameters, the featurizer configuration, the kernel widths, the zone resolution, the
time zone, the training summary with its SHA-256, the members' metadata and the
metrics; ``arrays.npz`` holds every member's arrays under the prefix ``m000__``,
``m001__``, ... (the model directory itself, atomic and pickle-free, is
:mod:`vrvm.trips.store.model_dir`).

Format history: version 2 added the distance scale of the spread (``noise_scale``);
a version-1 model loads with ``noise_model="constant"``. Version 3 added the model's
``name`` (among the parameters); a version-1 or -2 model loads with ``name=None``, and
:func:`vrvm.services.versions.models.model_name` names it after its training data. A model
saved without ``shard_weight`` among its parameters was fitted on plain shards and loads
with ``shard_weight=1``. Version 4 added the zone-pair offsets (``pair_offsets`` and
the arrays ``pairs__{level}__{origin,dest,n,offset}``); a model saved without them loads
with ``pair_offsets=False`` and predicts as it did. Version 5 added the twin scales
(``noise_scale.twin``, the parameter ``twin_scales``); a model saved without them loads
with ``twin_scales=False`` and one component per member. Version 6 added the location
stage (``location_stage``: its parameters and constants, and the arrays
``location__{feature,threshold,left,right,value,leaf,roots,rotation,rotation_mean}``,
checked as trees by :meth:`~vrvm.trips.model.location.Trees.check`); a model saved
without it loads with ``location_stage=False``. Version 7 added the spread's PIT map
(``noise_scale.pit_map``: null or a Bernstein map's weights, the parameter
``recalibration``); a model saved without it loads with ``recalibration="none"``.
Version 8 added the round-trip regime (``round_trips``: its resolution, bandwidth,
shrinkage, weight, grid and score, and the arrays ``round__{log_s,cell}``); a model
saved without it loads with ``round_trips=False`` and predicts as it did. Version 9
added the pairs' own durations (``pair_durations``: their resolution, bands, bandwidths,
shrinkages, grid and score, and the arrays ``durations__{log_s,origin,dest}``); a model
saved without them loads with ``pair_durations=False`` and predicts as it did. Version
10 added the location stage's median trees (``location_stage.median``: their constant and
weight, and the arrays ``location__median_{feature,threshold,left,right,value,leaf,roots}``,
checked as trees, and the parameter ``median_trees``); a stage saved without them has none
and predicts as it did, and a model saved without the parameter loads with
``median_trees`` True exactly when its stage has median trees. Version 11 added the
forest pooled with the predictive (``forest_durations``: its constants, weight and
score, and the arrays ``forest__{feature,threshold,left,right,value_row,values,roots}``,
checked as trees); a model saved without it loads with ``forest_durations=False`` and
predicts as it did.

A loaded model is checked to be one that could have been fitted (issue 32): its arrays
hold finite numbers (only the kernel widths of linear columns are NaN, and the fit's
bound trace ``elbo_`` is not a parameter), and it predicts finite, positive spreads and
a median within :data:`SANE_FACTOR` times the largest observed travel time for (up to
:data:`N_SELF_CHECK`) trips it was trained on, its relevance trips.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vrvm.engine.regressor import VRVMRegressor
from vrvm.trips.model._ensemble import RELEVANCE_TRIP_COLUMNS
from vrvm.trips.model._spread import Spread
from vrvm.trips.model.features import TripFeaturizer
from vrvm.trips.model.forest_durations import ForestDurations
from vrvm.trips.model.location import INPUT_NAMES, LocationStage
from vrvm.trips.model.pair_durations import PairDurations
from vrvm.trips.model.pair_offsets import PairOffsets
from vrvm.trips.model.round_trips import RoundTrips
from vrvm.trips.store.model_dir import ModelFormatError, load_model_dir, save_model_dir

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "load_model", "save_model"]

#: Format name and newest format version of saved models.
FORMAT_NAME = "vrvm.TravelTimeModel"
# 2: the distance scale (noise_scale), 1 is read as no scaling; 3: the name, absent is None;
# 4: the zone-pair offsets, absent is none; 5: twin scales; 6: the location stage;
# 7: the PIT map (noise_scale.pit_map), absent is none; 8: the round-trip regime;
# 9: the pairs' own durations; 10: the location stage's median trees
FORMAT_VERSION = 11
_PAIRS = "pairs"  # prefix of the pair offsets' arrays
_LOCATION = "location"  # prefix of the location stage's arrays
_ROUND = "round"  # prefix of the round-trip regime's arrays
_DURATIONS = "durations"  # prefix of the pairs' own durations' arrays
_FOREST = "forest"  # prefix of the forest's arrays
N_SELF_CHECK = 32
"""Relevance trips a loaded model must predict sanely (spread over its members)."""
SANE_FACTOR = 1000.0
"""A loaded model's median for a trip it was trained on is within this factor times the
largest travel time observed among those trips (and finite)."""
# arrays that are not parameters (a trace of the fit) or hold NaN by design (linear
# columns have no kernel width)
_NOT_PARAMETERS = ("__elbo_",)
_NAN_ALLOWED = ("__basis_width_",)


def _round_for_json(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _json_params(model) -> dict[str, Any]:
    """The model's parameters as JSON (no live Dask client, no Generator seed)."""
    params = model.get_params()
    params["client"] = None  # a live connection is not part of the model
    if not (params["random_state"] is None or isinstance(params["random_state"], int)):
        params["random_state"] = None
    if not isinstance(params["kernel_widths"], str):
        params["kernel_widths"] = np.atleast_1d(params["kernel_widths"]).astype(float).tolist()
    return params


def save_model(model, path: str | os.PathLike[str], metrics: Mapping | None) -> Path:
    """Write a fitted :class:`~vrvm.trips.model.travel_time.TravelTimeModel` to a model directory.

    See :meth:`TravelTimeModel.save <vrvm.trips.model.travel_time.TravelTimeModel.save>`.
    """
    member_meta = []
    arrays: dict[str, np.ndarray] = {}
    for m, member in enumerate(model.members_):
        meta, member_arrays = member.export_state()
        member_meta.append(meta)
        member_arrays["relevance_trips"] = model.relevance_trip_arrays_[m]
        arrays.update({f"m{m:03d}__{key}": value for key, value in member_arrays.items()})
    pair_meta = None
    if model.pair_offsets_ is not None:
        pair_meta, pair_arrays = model.pair_offsets_.to_state()
        arrays.update({f"{_PAIRS}__{key}": value for key, value in pair_arrays.items()})
    location_meta = None
    if model.location_ is not None:
        location_meta, location_arrays = model.location_.to_state()
        arrays.update({f"{_LOCATION}__{key}": value for key, value in location_arrays.items()})
    round_meta = None
    if (regime := getattr(model, "round_trips_", None)) is not None:
        round_meta, round_arrays = regime.to_state()
        arrays.update({f"{_ROUND}__{key}": value for key, value in round_arrays.items()})
    durations_meta = None
    if (pairs := getattr(model, "pair_durations_", None)) is not None:
        durations_meta, durations_arrays = pairs.to_state()
        arrays.update({f"{_DURATIONS}__{key}": value for key, value in durations_arrays.items()})
    forest_meta = None
    if (forest := getattr(model, "forest_durations_", None)) is not None:
        forest_meta, forest_arrays = forest.to_state()
        arrays.update({f"{_FOREST}__{key}": value for key, value in forest_arrays.items()})
    metadata = {
        "params": _json_params(model),
        "n_members": len(model.members_),
        "target": model.target,
        "featurizer": model.featurizer_.to_dict(),
        "kernel_widths": [float(w) for w in model.kernel_widths_],
        "width_scores": [
            {"widths": list(widths), "score": _round_for_json(score)}
            for widths, score in model.width_scores_.items()
        ],
        "h3_resolution": model.h3_resolution_,
        "tz": model.tz_,
        "shard_sizes": [int(s) for s in model.shard_sizes_],
        "fit_time_s": float(model.fit_time_s_),
        "training_summary": model.training_summary_,
        "metrics": dict(metrics) if metrics is not None else model.metrics_,
        "noise_scale": model.spread_.to_state(),
        "pair_offsets": pair_meta,
        "location_stage": location_meta,
        "round_trips": round_meta,
        "pair_durations": durations_meta,
        "forest_durations": forest_meta,
        "n_updates": int(model.n_updates_),
        "update_history": list(model.update_history_),
        "members": member_meta,
    }
    return save_model_dir(
        path,
        metadata=metadata,
        arrays=arrays,
        format_name=FORMAT_NAME,
        format_version=FORMAT_VERSION,
    )


_NOUNS = {
    "pair_offsets": "pair-offset",
    "location_stage": "location-stage",
    "round_trips": "round-trip",
    "pair_durations": "pair-duration",
    "forest_durations": "forest-duration",
}


def _owned(model, meta: dict, key: str, arrays: dict, kind):
    """The collaborator ``key`` of a saved model (``kind.from_state``), or None when the
    file holds none: one from before its format, or a model fitted without it, whose
    switch (the parameter ``key``) then reads False unless the metadata names it."""
    state = meta.get(key)
    if state is None:
        setattr(model, key, bool(getattr(model, key)) and key in meta)
        if arrays:
            raise ValueError(f"{_NOUNS[key]} arrays without their metadata")
        return None
    return kind.from_state(state, arrays)


def load_model(cls, path: str | os.PathLike[str]):
    """Read a model directory written by :func:`save_model` into a new ``cls`` instance.

    See :meth:`TravelTimeModel.load <vrvm.trips.model.travel_time.TravelTimeModel.load>`.
    """
    meta, arrays = load_model_dir(path, format_name=FORMAT_NAME, max_format_version=FORMAT_VERSION)
    try:
        model = cls(**meta["params"])
        if "shard_weight" not in meta["params"]:  # fitted before it existed: plain shards
            model.shard_weight = 1.0
        if "noise_prior" not in meta["params"]:  # fitted before it existed: vague prior
            model.noise_prior = 0.0
        n_members = int(meta["n_members"])
        if len(meta["members"]) != n_members:
            raise ValueError(f"{len(meta['members'])} member records for {n_members} members")
        per_member: list[dict[str, np.ndarray]] = [{} for _ in range(n_members)]
        pair_arrays: dict[str, np.ndarray] = {}
        location_arrays: dict[str, np.ndarray] = {}
        round_arrays: dict[str, np.ndarray] = {}
        durations_arrays: dict[str, np.ndarray] = {}
        forest_arrays: dict[str, np.ndarray] = {}
        for key, value in arrays.items():
            prefix, sep, name = key.partition("__")
            if prefix == _PAIRS and sep:
                pair_arrays[name] = value
                continue
            if prefix == _LOCATION and sep:
                location_arrays[name] = value
                continue
            if prefix == _ROUND and sep:
                round_arrays[name] = value
                continue
            if prefix == _DURATIONS and sep:
                durations_arrays[name] = value
                continue
            if prefix == _FOREST and sep:
                forest_arrays[name] = value
                continue
            index = int(prefix[1:]) if prefix[1:].isdigit() else -1
            if not (sep and prefix[:1] == "m" and 0 <= index < n_members):
                raise ValueError(f"unexpected array {key!r}")
            per_member[index][name] = value
        members = [
            VRVMRegressor.from_state(member_meta, member_arrays)
            for member_meta, member_arrays in zip(meta["members"], per_member, strict=True)
        ]
        model.members_ = members
        model.relevance_trip_arrays_ = [
            np.asarray(member_arrays["relevance_trips"], dtype=np.float64).reshape(-1, 6)
            for member_arrays in per_member
        ]
        model.featurizer_ = TripFeaturizer.from_dict(meta["featurizer"])
        model.kernel_widths_ = np.asarray(meta["kernel_widths"], dtype=np.float64)
        model.width_scores_ = {
            tuple(entry["widths"]): entry["score"] for entry in meta["width_scores"]
        }
        model.h3_resolution_ = meta["h3_resolution"]
        model.tz_ = meta["tz"]
        model.shard_sizes_ = np.asarray(meta["shard_sizes"], dtype=np.int64)
        model.n_relevance_ = np.array([member.n_relevance_ for member in members])
        model.fit_time_s_ = float(meta["fit_time_s"])
        model.training_summary_ = dict(meta["training_summary"])
        model.metrics_ = meta["metrics"]
        model.n_updates_ = int(meta.get("n_updates", 0))
        model.update_history_ = list(meta.get("update_history", []))
        # collaborators added in formats 4, 6, 8, 9 and 11 (None before, or fitted without)
        model.pair_offsets_ = _owned(model, meta, "pair_offsets", pair_arrays, PairOffsets)
        model.location_ = _owned(model, meta, "location_stage", location_arrays, LocationStage)
        model.round_trips_ = _owned(model, meta, "round_trips", round_arrays, RoundTrips)
        model.pair_durations_ = _owned(
            model, meta, "pair_durations", durations_arrays, PairDurations
        )
        model.forest_durations_ = _owned(
            model, meta, "forest_durations", forest_arrays, ForestDurations
        )
        forest = model.forest_durations_
        if forest is not None and forest.active:  # it splits the location stage's inputs
            if model.location_ is None or forest.n_inputs != len(INPUT_NAMES):
                raise ValueError("a forest without the location stage whose inputs it splits")
        # the median trees (format 10) are the location stage's: the switch says whether
        # the stage has them
        has_median = model.location_ is not None and model.location_.median_trees_ is not None
        if "median_trees" not in meta["params"]:  # saved before the switch: what it holds
            model.median_trees = has_median
        elif has_median and not model.median_trees:
            raise ValueError("median-tree arrays with median_trees=False")
        # parameters added in format 2 take their format-1 behaviour when absent
        model.distance_in_kernel = bool(model.featurizer_.distance_in_kernel)
        scale = meta.get("noise_scale")
        if scale is None:  # format 1: members' own noise, no distance scale
            model.noise_model = "constant"
            scale = {"coef": [0.0, 0.0, 0.0], "d_range": [0.0, 0.0], "score": {}}
        if "twin" not in scale:  # before format 5: one component per member
            model.twin_scales = False
        if "pit_map" not in scale:  # before format 7: no PIT map
            model.recalibration = "none"
        model.spread_ = Spread.from_state(
            scale,
            distance=model.noise_model != "constant",
            twins=bool(model.twin_scales),
            recalibrate=model.recalibration == "auto",
        )
        if model.target != meta["target"]:
            raise ValueError("target does not match the stored parameters")
    except ModelFormatError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ModelFormatError(
            f"{path} does not hold a consistent TravelTimeModel ({type(exc).__name__}: "
            f"{exc}); the model.json was modified or written by an incompatible tool"
        ) from None
    _check_finite(arrays, Path(path))
    _check_predicts(model, Path(path))
    return model


def _check_finite(arrays: Mapping[str, np.ndarray], path: Path) -> None:
    """Refuse a model whose parameters hold infinities or NaN (naming the array)."""
    for key, value in arrays.items():
        if value.dtype.kind not in "fc" or key.endswith(_NOT_PARAMETERS):
            continue
        bad = ~np.isfinite(value)
        if key.endswith(_NAN_ALLOWED):
            bad &= ~np.isnan(value)
        if bad.any():
            raise ModelFormatError(
                f"{path / 'arrays.npz'}: array {key!r} holds {int(bad.sum())} non-finite "
                f"value(s) (the first is {value.flat[np.flatnonzero(bad)[0]]}); a fitted "
                "model's parameters are finite"
            )


def _check_predicts(model, path: Path) -> None:
    """Refuse a model that predicts nonsense for trips it was trained on.

    Finite parameters can still overflow (weights of 1e300 predict an infinite time,
    and the predictions would silently come out empty), so the model predicts up to
    :data:`N_SELF_CHECK` of its relevance trips: every component's location and scale
    must be finite (scales positive), and every median, the mixture's and each
    component's, finite and within :data:`SANE_FACTOR` times the largest of their
    observed travel times.
    """
    # not model.relevance_trips(), which also sums every column's weight (10x the time)
    raw = np.concatenate(model.relevance_trip_arrays_)
    if len(raw) == 0:
        return
    raw = raw[np.linspace(0, len(raw) - 1, min(len(raw), N_SELF_CHECK)).astype(int)]
    trips = pd.DataFrame(raw, columns=list(RELEVANCE_TRIP_COLUMNS))
    try:
        trips["start_time"] = pd.to_datetime(trips.pop("start_s"), unit="s", utc=True)
        with np.errstate(all="ignore"):  # overflow is what is being looked for
            dist = model.predict_dist(trips)
            median = dist.median()
            loc, scale = np.asarray(dist.loc), np.asarray(dist.scale)
            # each component's own median: one absurd member moves the mixture's little
            components = np.exp(loc) if dist.transform == "log" else loc
    except (ValueError, TypeError, OverflowError, FloatingPointError) as exc:
        raise ModelFormatError(
            f"{path} does not hold a usable TravelTimeModel: predicting the trips it was "
            f"trained on fails ({type(exc).__name__}: {exc})"
        ) from None
    observed = float(np.max(trips["travel_time_s"].to_numpy(dtype=np.float64)))
    sane = (
        np.all(np.isfinite(loc))
        and np.all(np.isfinite(scale) & (scale > 0))
        and np.all(np.isfinite(median))
        and np.isfinite(observed)
        and np.all(np.abs(median) <= SANE_FACTOR * observed)
        and np.all(np.abs(components) <= SANE_FACTOR * observed)
    )
    if not sane:
        raise ModelFormatError(
            f"{path} does not hold a usable TravelTimeModel: for trips it was trained on "
            f"(observed travel times up to {observed:g} s) it predicts medians from "
            f"{np.min(median):g} to {np.max(median):g} s (its components' medians up to "
            f"{np.max(np.abs(components)):g} s); its parameters were modified"
        )
