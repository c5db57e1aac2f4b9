"""Retraining: candidates from the stored trips, scored beside the active model, published.

The Retrain page's path, one call per step: the trips are in the trip store
(:mod:`vrvm.services.analyst.store_admin`); :func:`train_candidates` splits them with the one
hold-out split of vrvm (:func:`vrvm.split_holdout`, the same trips as ``vrvm train
--holdout`` for the same seed and fraction), trains a new ensemble and/or updates a copy
of the active model with the trips added since it was published, and scores every model
on the same hold-out trips (:mod:`vrvm.services.analyst.evaluation`); :func:`publish_candidate`
makes one candidate the new active version. The active model object is never modified.

An update must stay in the active model's area: trips mostly outside it
(:func:`vrvm.services.analyst.area_check.check_same_area`) are refused as an update, with the
reason, and can train a new model of their own instead (a full retrain, published
without a parent). :func:`suggest_model_name` gives the name field its default.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vrvm.services.access.policy import Access, record
from vrvm.services.analyst.area_check import AreaCheck, ModelArea, model_area
from vrvm.services.analyst.evaluation import ModelScores, compare_models, metrics_table
from vrvm.services.versions.models import (
    SYNTHETIC_MODEL_NAME,
    UNNAMED_MODEL,
    default_model_name,
    model_name,
    publish_model,
)
from vrvm.trips.home import Home
from vrvm.trips.model.split import split_holdout
from vrvm.trips.model.training import MAX_TEST_TRIPS
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.store.trip_table import TripTable
from vrvm.trips.table import date_span, trip_ids

__all__ = [
    "RETRAIN_FULL",
    "RETRAIN_OPTIONS",
    "RETRAIN_UPDATE",
    "RetrainResult",
    "TrainingSettings",
    "parse_widths",
    "publish_candidate",
    "run_retrain",
    "suggest_model_name",
    "train_candidates",
]

RETRAIN_FULL = "full"
RETRAIN_UPDATE = "update"
RETRAIN_OPTIONS: tuple[dict[str, str], ...] = (
    {
        "key": RETRAIN_FULL,
        "label": "Full retrain",
        "help": "Train a new ensemble from scratch on the trips in the store.",
    },
    {
        "key": RETRAIN_UPDATE,
        "label": "Update with new trips (fast)",
        "help": "Update a copy of the active model with the trips added since it was "
        "published (sequential Bayesian update).",
    },
)
"""The ways to produce a candidate model: ``key``, ``label`` and ``help`` of each."""

#: Signature of the progress callback: ``progress(option, done, total, elapsed_s, phase)``,
#: the fit's report (:data:`~vrvm.trips.model.travel_time.ProgressCallback`) with the option first.
RetrainProgress = Callable[[str, int, int, float, str], Any]


def parse_widths(text: str | Sequence[float]) -> str | tuple[float, ...]:
    """``"auto"`` or a list of positive kernel widths from text such as ``"1.5, 3"``.

    Examples
    --------
    >>> parse_widths("auto"), parse_widths("1.5; 3")
    ('auto', (1.5, 3.0))
    """
    if not isinstance(text, str):
        values = tuple(float(v) for v in text)
    else:
        if text.strip().lower() in ("", "auto"):
            return "auto"
        try:
            values = tuple(float(v) for v in re.split(r"[\s,;]+", text.strip()) if v)
        except ValueError:
            raise ValueError(
                f"kernel widths must be 'auto' or numbers such as '1.5, 3', got {text!r}"
            ) from None
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"kernel widths must be positive numbers, got {text!r}")
    return values


@dataclass(frozen=True)
class TrainingSettings:
    """The retrain form: the new model's name, ensemble size, widths, basis size and the
    hold-out split (``name`` None: the active model's, or :func:`suggest_model_name`)."""

    name: str | None = None
    n_members: int = 4
    kernel_widths: str | tuple[float, ...] = "auto"
    max_basis: int = 500
    holdout_fraction: float = 0.2
    holdout_split: str = "random"  # or "latest" (the most recent trips)
    random_state: int = 0
    n_jobs: int = 1

    def model_params(self) -> dict[str, Any]:
        """Keyword arguments of :class:`vrvm.TravelTimeModel`."""
        widths = (
            self.kernel_widths if isinstance(self.kernel_widths, str) else list(self.kernel_widths)
        )
        return {
            "name": self.name.strip() if self.name and self.name.strip() else None,
            "n_members": int(self.n_members),
            "kernel_widths": widths,
            "max_basis": int(self.max_basis),
            "random_state": int(self.random_state),
            "n_jobs": int(self.n_jobs),
        }


@dataclass
class RetrainResult:
    """Candidates trained from the stored trips, scored beside the active model.

    Attributes
    ----------
    train, holdout : pandas.DataFrame
        The split of the stored trips (every model is scored on the same ``holdout``).
    settings : TrainingSettings
        The form that produced it.
    candidates : dict of str to TravelTimeModel
        New models by display name (not yet published).
    kinds : dict of str to str
        ``"train"`` or ``"update"`` per candidate (recorded when publishing).
    scores : dict of str to ModelScores
        Hold-out scores of the candidates and of the active model.
    parent_version : int or None
        The active version when training started.
    active_name : str or None
        The active model's name in ``scores``.
    errors : dict of str to str
        Options that failed, with the message (the active model is untouched).
    trips_used : dict of str to int
        Trips each candidate learned from.
    comparable : bool
        Whether the active model was trained on this area (else its scores on these
        trips mean little).
    area_check : AreaCheck or None
        The training trips against the active model's area (None without one).
    refused_update : AreaCheck or None
        Why the update was refused: its new trips lie outside the active model's area.
    n_scored : int
        Hold-out trips the models were scored on: all of ``holdout``, or a uniform
        sample of :data:`~vrvm.trips.model.training.MAX_TEST_TRIPS` of a larger one (scores
        of 100,000 trips are precise to a fraction of a percent; predicting millions of
        trips per model would keep the page busy for minutes).
    """

    train: pd.DataFrame
    holdout: pd.DataFrame
    settings: TrainingSettings
    candidates: dict[str, TravelTimeModel] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    scores: dict[str, ModelScores] = field(default_factory=dict)
    parent_version: int | None = None
    active_name: str | None = None
    errors: dict[str, str] = field(default_factory=dict)
    trips_used: dict[str, int] = field(default_factory=dict)
    comparable: bool = True
    area_check: AreaCheck | None = None
    refused_update: AreaCheck | None = None
    n_scored: int = 0

    @property
    def new_area(self) -> bool:
        """Whether the trips lie outside the active model's area (a new model's)."""
        return self.area_check is not None and not self.area_check.ok

    @property
    def metrics(self) -> dict[str, dict]:
        """Hold-out metrics by model name."""
        return {name: score.metrics for name, score in self.scores.items()}

    def metrics_table(self) -> pd.DataFrame:
        """The hold-out scores side by side (rows: scores, columns: models; minutes)."""
        return metrics_table(self.metrics)


def _update_copy(active: TravelTimeModel, new_trips: pd.DataFrame) -> TravelTimeModel:
    """A copy of ``active`` updated with ``new_trips`` (the cached model is not mutated)."""
    return copy.deepcopy(active).update(new_trips)


def run_retrain(
    trips: pd.DataFrame,
    settings: TrainingSettings,
    *,
    options: Sequence[str] = (RETRAIN_FULL,),
    active: TravelTimeModel | None = None,
    active_version: int | None = None,
    new_trips: pd.DataFrame | None = None,
    active_trips: pd.DataFrame | TripTable | None = None,
    progress: RetrainProgress | None = None,
) -> RetrainResult:
    """Split the trips, produce the chosen candidates and score everything on the hold-out.

    ``options`` holds ``"full"`` (train from scratch on the training part; named
    ``settings.name``, else after the active model when the trips lie in its area)
    and/or ``"update"`` (update a copy of ``active`` with the training-part rows of
    ``new_trips``, all of them when None). An update whose trips lie mostly outside the
    active model's area (:func:`~vrvm.services.analyst.area_check.check_same_area`, finer with
    its training trips ``active_trips``) is refused: ``refused_update`` says why, with
    the numbers. A failing option is recorded in ``errors``; nothing is published and
    the active model object is never modified.
    """
    train, holdout = split_holdout(
        trips, settings.holdout_fraction, how=settings.holdout_split, seed=settings.random_state
    )
    result = RetrainResult(
        train=train, holdout=holdout, settings=settings, parent_version=active_version
    )

    def reporter(option: str):
        if progress is None:
            return None
        return lambda done, total, elapsed, phase: progress(option, done, total, elapsed, phase)

    area: ModelArea | None = None
    if active is not None:
        area = model_area(active, active_trips)
        result.area_check = area.check(train)
    params = settings.model_params()
    if params["name"] is None and active is not None and not result.new_area:
        params["name"] = model_name(active)  # a retrain of the same city keeps its name
    labels = {o["key"]: o["label"] for o in RETRAIN_OPTIONS}
    for option in options:
        name = labels.get(option, option)
        try:
            if option == RETRAIN_FULL:
                model = TravelTimeModel(**params)
                model.fit(train, progress=reporter(option))
                result.trips_used[name] = len(train)
            elif option == RETRAIN_UPDATE:
                if active is None or area is None:
                    raise ValueError("there is no active model to update")
                fresh = train
                if new_trips is not None:
                    fresh = train.loc[np.isin(trip_ids(train), trip_ids(new_trips))]
                if len(fresh) == 0:
                    raise ValueError("no trips were added since the active model was published")
                check = area.check(fresh)
                if not check.ok:
                    result.refused_update = check
                    result.errors[name] = check.reason
                    continue
                model = _update_copy(active, fresh.reset_index(drop=True))
                result.trips_used[name] = len(fresh)
            else:
                raise ValueError(f"unknown retrain option {option!r}")
        except Exception as exc:  # a failed option must not stop the others
            result.errors[name] = f"{type(exc).__name__}: {exc}"
            continue
        result.candidates[name] = model
        result.kinds[name] = "update" if option == RETRAIN_UPDATE else "train"
    models: dict[str, TravelTimeModel] = dict(result.candidates)
    if active is not None:
        result.active_name = (
            f"active (v{active_version})" if active_version is not None else "active"
        )
        models[result.active_name] = active
        result.comparable = area is not None and area.check(holdout).ok
    scored = holdout
    if len(holdout) > MAX_TEST_TRIPS:  # the same seeded sample for every model
        scored = holdout.sample(MAX_TEST_TRIPS, random_state=settings.random_state or 0)
    result.n_scored = len(scored)
    result.scores = compare_models(models, scored)
    return result


def train_candidates(
    home: Path,
    settings: TrainingSettings,
    options: Sequence[str],
    *,
    active: TravelTimeModel | None,
    active_version: int | None,
    progress: RetrainProgress | None = None,
    by: Access | None = None,
) -> RetrainResult:
    """:func:`run_retrain` on every trip in the trip store of ``home``.

    For an update, the new trips are those added to the store after the active version
    was created; the active model's area is that of its training trips kept in
    ``home`` (else its bounding box). Without ``settings.name``, a full retrain is
    named :func:`suggest_model_name`. The training is recorded in the audit log (by
    ``by``, who must be an analyst).

    Raises
    ------
    ValueError
        If the trip store is empty or the hold-out split leaves nothing to train on.
    """
    store = Home(home).trips
    trips = store.load()
    if len(trips) == 0:
        raise ValueError("the trip store is empty: add trips first")
    new_trips = None
    if RETRAIN_UPDATE in options and active_version is not None:
        created = next(
            (v.created for v in Home(home).models.versions() if v.version == active_version),
            None,
        )
        if created is not None:
            new_trips = store.load(added_after=created)
    if by is not None:
        by.require("train")
    if settings.model_params()["name"] is None:
        settings = dataclasses.replace(settings, name=suggest_model_name(home, active))
    result = run_retrain(
        trips,
        settings,
        options=options,
        active=active,
        active_version=active_version,
        new_trips=new_trips,
        active_trips=None if active is None else Home(home).training_trip_table(active),
        progress=progress,
    )
    record(
        home,
        by,
        "train",
        options=list(options),
        candidates=sorted(result.candidates),
        trips=len(result.train),
        holdout=len(result.holdout),
        refused=sorted(result.errors),
        active_version=active_version,
    )
    return result


def suggest_model_name(home: Path, active: TravelTimeModel | None) -> str:
    """The default name of a model trained on the trip store of ``home``.

    The active model's name when the stored trips lie in its area (their median origin
    inside its padded training box), else the name of the file added last
    (:func:`~vrvm.services.versions.models.default_model_name`; that of the synthetic city for
    the demo trips), else :data:`~vrvm.services.versions.models.UNNAMED_MODEL`.
    """
    store = Home(home).trips
    if active is not None:
        centre = store.center()
        if (
            centre is None
            or model_area(active).inside(np.array([centre[0]]), np.array([centre[1]]))[0]
        ):
            return model_name(active)
    parts = store.parts()
    if parts.empty:
        return UNNAMED_MODEL
    newest = parts.iloc[-1]  # parts are listed in the order they were added
    source, synthetic = str(newest["source"] or ""), bool(newest["synthetic"])
    if synthetic and (not source or "synthetic" in source.lower()):
        return SYNTHETIC_MODEL_NAME  # the demo trips
    name = default_model_name(source)
    return f"{name} (synthetic)" if synthetic and name != UNNAMED_MODEL else name


def publish_candidate(
    home: Path, result: RetrainResult, name: str, *, by: Access | None = None
) -> int:
    """Publish one candidate of ``result`` as the new active version; returns its number.

    Raises
    ------
    StoreConflictError
        If another version became active since the candidates were trained and scored
        against ``result.parent_version``: nothing is published (train them again).
    """
    model = result.candidates[name]
    kind = result.kinds.get(name, "train")
    # a model of another area is a new model of its own, not a child of the active one
    new_model = kind == "train" and result.new_area
    train = result.train
    start, end = train["start_time"].min(), train["start_time"].max()
    settings = result.settings
    info = {
        "name": model_name(model),
        "kind": kind,
        "parent": None if new_model else result.parent_version,
        "new_area": new_model,
        "n_trips": result.trips_used.get(name, len(train)),
        "holdout_n": len(result.holdout),
        "data": f"trip store: {len(train):,} trips, {date_span(start, end)}",
        "synthetic": bool(train.attrs.get("synthetic", False)),
        "settings": {
            "n_members": settings.n_members,
            "kernel_widths": settings.model_params()["kernel_widths"],
            "max_basis": settings.max_basis,
            "holdout_fraction": settings.holdout_fraction,
            "holdout_split": settings.holdout_split,
            "random_state": settings.random_state,
        },
    }
    return publish_model(
        home,
        model,
        metrics=result.scores[name].metrics if name in result.scores else None,
        info=info,
        training_trips=train if kind == "train" else None,
        built_on=result.parent_version,
        by=by,
    )
