"""Exporting a model to share it: snapped to zone centres by default, with what that cost.

A model directory holds no trip table, but each relevance vector *is* a training trip
(its exact ends and start time, and its travel time beside it for the maps): a model
file is personal data (``docs/security.md``). :func:`export_model` writes a version of
the data home's store (the active one by default) as a model directory or a zip of one,
snapped (:func:`vrvm.trips.model.snapping.snap_model`) at the coarsest H3 resolution whose
cost in CRPS, measured on a sample of the model's own kept training trips, stays within
``max_cost`` (:func:`vrvm.trips.model.snapping.choose_snap_resolution`); or raw, on request.
Every export is recorded in the home's audit log.
"""

from __future__ import annotations

import io
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from vrvm.services.access.policy import Access, record
from vrvm.services.versions.models import model_name, strip_paths
from vrvm.trips.home import Home
from vrvm.trips.model.snapping import (
    DEFAULT_MAX_COST,
    DEFAULT_SLOT_MINUTES,
    SnapChoice,
    choose_snap_resolution,
    snap_model,
)
from vrvm.trips.model.travel_time import TravelTimeModel

__all__ = ["COST_SAMPLE_TRIPS", "ModelExport", "export_model", "snapped_copy"]

COST_SAMPLE_TRIPS = 2000
"""Training trips the cost of snapping is measured on (a bounded sample)."""


@dataclass(frozen=True)
class ModelExport:
    """One exported model.

    Attributes
    ----------
    version : int
        The store's version that was exported.
    model : TravelTimeModel
        The model as exported (snapped or not).
    snapped : bool
        Whether its relevance vectors were snapped to zone centres.
    choice : SnapChoice or None
        The resolution chosen and the cost of each one tried (None when raw, or when the
        training trips were not kept and the cost could not be measured).
    resolution : int or None
        The H3 resolution snapped to.
    """

    version: int
    model: TravelTimeModel
    snapped: bool
    choice: SnapChoice | None
    resolution: int | None

    def sentence(self) -> str:
        """What was exported, and what snapping cost, in one sentence."""
        name = model_name(self.model)
        if not self.snapped:
            return (
                f"Version {self.version} ({name}) exported raw: its relevance vectors are "
                "training trips, with their exact ends and start times."
            )
        text = (
            f"Version {self.version} ({name}) exported with its relevance vectors at the "
            f"centres of H3 cells of resolution {self.resolution} and {DEFAULT_SLOT_MINUTES}-"
            "minute slots"
        )
        if self.choice is None:
            return text + " (the training trips were not kept, so the cost was not measured)."
        return text + (
            f": mean CRPS {self.choice.exact_crps_s / 60:.2f} -> "
            f"{self.choice.exact_crps_s * (1 + self.choice.cost) / 60:.2f} min "
            f"({100 * self.choice.cost:+.1f} %) on {self.choice.n_trips:,} of its training trips."
        )


def snapped_copy(
    model: TravelTimeModel,
    trips: pd.DataFrame | None,
    *,
    resolution: int | None = None,
    max_cost: float = DEFAULT_MAX_COST,
) -> tuple[TravelTimeModel, SnapChoice | None, int]:
    """The model snapped at ``resolution``, or at the coarsest resolution within
    ``max_cost`` on ``trips``; without trips, one finer than the model's own zones
    (0.6 % of CRPS on the Chicago sample, BENCHMARKS.md)."""
    choice = None
    if resolution is None and trips is not None and len(trips):
        choice = choose_snap_resolution(model, trips, max_cost=max_cost)
        resolution = choice.resolution
    elif resolution is None:
        resolution = min(15, (model.h3_resolution_ or 7) + 1)
    return snap_model(model, resolution=resolution), choice, int(resolution)


def _zip_dir(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def export_model(
    home: str | os.PathLike[str],
    *,
    version: int | None = None,
    snap: bool = True,
    resolution: int | None = None,
    max_cost: float = DEFAULT_MAX_COST,
    out: str | os.PathLike[str] | None = None,
    trips: pd.DataFrame | None = None,
    by: Access | None = None,
) -> tuple[ModelExport, bytes | None]:
    """Export a version of the home's model store; returns it and, without ``out``, a zip.

    Parameters
    ----------
    home : path-like
        The data home.
    version : int, optional
        The version (default: the active one).
    snap : bool, default=True
        Snap the relevance vectors to zone centres (:func:`snapped_copy`).
    resolution : int, optional
        The H3 resolution to snap to; default: chosen by the cost on the kept training
        trips (``max_cost``).
    max_cost : float, default=0.02
        The largest relative CRPS increase the chosen resolution may cost.
    out : path-like, optional
        A model directory to write (replaced atomically); without it the model
        directory is returned as the bytes of a zip file.
    trips : pandas.DataFrame, optional
        Trips with travel times to measure the cost on (held-out trips); default a
        sample of the model's kept training trips.
    by : Access, optional
        Who exports (an analyst); recorded in the audit log.

    Raises
    ------
    AccessDenied
        When ``by`` is a viewer.
    ValueError
        When the store has no such version (or none at all).
    """
    if by is not None:
        by.require("export")
    store = Home(home).models
    number = store.active_version() if version is None else int(version)
    if number is None:
        raise ValueError(f"the model store of {home} has no active version to export")
    model = TravelTimeModel.load(store.path(number))
    choice, used = None, None
    if snap:
        if trips is None:
            table = Home(home).training_trip_table(model)
            trips = None if table is None else table.sample(COST_SAMPLE_TRIPS)
        model, choice, used = snapped_copy(model, trips, resolution=resolution, max_cost=max_cost)
    data = None
    if out is not None:
        model.save(out)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            data = _zip_dir(model.save(Path(tmp) / "model"))
    result = ModelExport(version=number, model=model, snapped=snap, choice=choice, resolution=used)
    record(
        home,
        by,
        "export",
        version=number,
        snapped=snap,
        resolution=used,
        cost=None if choice is None else round(choice.cost, 4),
        to=None if out is None else strip_paths(str(out)),
    )
    return result, data
