"""The model versions: what each was trained on, publishing a new one, activating one.

Plain functions over the data home's model store (:mod:`vrvm.trips.home`, whose
:func:`data_home` and :func:`load_training_trips` the pages use through here): the
active model, the caption every page shows, the versions table, and the only two ways
the active model changes, :func:`publish_model` and :func:`activate_version`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from vrvm.trips.home import data_home, load_training_trips, model_store, save_training_trips
from vrvm.trips.model import TravelTimeModel

__all__ = [
    "activate_version",
    "active_model_path",
    "compact_metrics",
    "data_description",
    "data_home",
    "is_synthetic",
    "load_training_trips",
    "model_caption",
    "publish_model",
    "version_numbers",
    "versions_table",
]


def is_synthetic(model: TravelTimeModel) -> bool:
    """Whether the model was trained on synthetic data (so every view must say so)."""
    return bool(model.training_summary_.get("synthetic", False))


def data_description(model: TravelTimeModel) -> str:
    """One line saying what the model was trained on."""
    summary = model.training_summary_
    n = summary.get("n_trips")
    what = summary.get("city") or summary.get("source") or "uploaded trips"
    start, end = summary.get("start_time_min", ""), summary.get("start_time_max", "")
    text = f"{what}: {n:,} trips" if isinstance(n, int) else str(what)
    if start and end:
        text += f", {start[:10]} to {end[:10]}"
    if is_synthetic(model):
        text += " - SYNTHETIC data, not a real city"
    return text


def model_caption(version: int, model: TravelTimeModel) -> str:
    """One line naming the model version and its data (the caption of every page)."""
    return (
        f"Model version {version} · {len(model.members_)} members · "
        f"{int(model.n_relevance_.sum())} relevance vectors · {data_description(model)}"
    )


def compact_metrics(metrics: Mapping[str, Any] | None) -> dict[str, Any]:
    """The few scores worth listing beside a model version (seconds)."""
    if not metrics:
        return {}
    out = {
        "n": metrics.get("n"),
        "crps_s": metrics.get("crps_s"),
        "mae_s": (metrics.get("median") or {}).get("mae_s"),
    }
    for entry in metrics.get("intervals") or []:
        if entry.get("level") in (0.8, 0.9):
            out[f"coverage_{round(100 * entry['level'])}"] = entry.get("coverage")
    return out


def publish_model(
    home: Path,
    model: TravelTimeModel,
    *,
    metrics: Mapping[str, Any] | None,
    info: Mapping[str, Any],
    training_trips: pd.DataFrame | None = None,
) -> int:
    """Save ``model`` as a new version in the store and activate it.

    The store writes the version atomically and only then moves the active pointer,
    so a failure leaves the active model untouched.
    """
    store = model_store(home)
    if training_trips is not None:
        save_training_trips(home, training_trips)
    record = dict(info)
    record.setdefault("metrics", compact_metrics(metrics))
    record.setdefault("n_members", len(model.members_))
    return store.add(lambda path: model.save(path, metrics=metrics), info=record, activate=True)


def versions_table(home: Path) -> pd.DataFrame:
    """The model store's versions, newest first, with what they were trained on and scores."""
    rows = []
    for v in model_store(home).versions():
        info = v.info or {}
        metrics = info.get("metrics") or {}
        crps = metrics.get("crps_s")
        data = info.get("data", "")
        n_trips = info.get("n_trips")
        if isinstance(data, Mapping):  # as `vrvm update` records it
            n_trips = data.get("n_trips", n_trips)
            data = data.get("source", "")
        rows.append(
            {
                "version": v.version,
                "active": v.is_active,
                "created (UTC)": v.created.strftime("%Y-%m-%d %H:%M:%S"),
                "kind": info.get("kind", ""),
                "parent": info.get("parent"),
                "trips": n_trips,
                "members": info.get("n_members"),
                "hold-out CRPS (min)": None if crps is None else round(crps / 60.0, 3),
                "synthetic": bool(info.get("synthetic", False)),
                "data": str(data),
            }
        )
    columns = [
        "version",
        "active",
        "created (UTC)",
        "kind",
        "parent",
        "trips",
        "members",
        "hold-out CRPS (min)",
        "synthetic",
        "data",
    ]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values("version", ascending=False).reset_index(drop=True)


def activate_version(home: Path, version: int) -> None:
    """Make an existing version the active one (the store refuses unknown versions)."""
    model_store(home).activate(int(version))


def active_model_path(home: Path) -> tuple[int, Path] | None:
    """``(version, model directory)`` of the active model, or None when there is none.

    Raises
    ------
    vrvm.ModelFormatError
        If the active pointer is damaged (:func:`version_numbers` still lists the
        versions, and :func:`activate_version` repairs it).
    """
    store = model_store(home)
    version = store.active_version()
    return None if version is None else (version, store.path(version))


def version_numbers(home: Path) -> list[int]:
    """Numbers of the committed versions, oldest first."""
    return [v.version for v in model_store(home).versions()]
