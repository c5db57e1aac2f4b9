"""The model versions: their names, what each was trained on, publishing, activating.

Plain functions over the data home's model store (:mod:`vrvm.trips.home`, whose
:func:`data_home` and :func:`training_trip_table` the pages use through here): a
model's name (:func:`model_name`, :func:`default_model_name`), the caption every page
shows, the versions table, and the only two ways the active model changes,
:func:`publish_model` and :func:`activate_version`.

Trip files are personal data and their paths say who had them where: nothing here
shows a local path. A model is shown by its name; a file by its name alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from vrvm.services.access.policy import Access, library_access
from vrvm.services.display.units import metric_label, metric_value
from vrvm.trips.home import Home, data_home
from vrvm.trips.model.model_format import FORMAT_NAME, FORMAT_VERSION
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.store.errors import StoreBusyError
from vrvm.trips.store.model_dir import ModelFormatError, read_model_manifest
from vrvm.trips.store.model_store import UNCHECKED, ModelStore, StoreConflictError, VersionInfo
from vrvm.trips.store.trip_table import TripTable
from vrvm.trips.synthetic import SYNTHETIC_CITY_NAME
from vrvm.trips.table import date_span

__all__ = [
    "SYNTHETIC_MODEL_NAME",
    "UNNAMED_MODEL",
    "Home",
    "StoreBusyError",
    "StoreConflictError",
    "TripTable",
    "activate_version",
    "active_model_path",
    "audit_of",
    "compact_metrics",
    "data_description",
    "data_home",
    "default_model_name",
    "is_synthetic",
    "lineage_text",
    "load_version",
    "model_caption",
    "model_name",
    "name_from_summary",
    "publish_model",
    "store_versions_table",
    "strip_paths",
    "update_active_version",
    "version_numbers",
    "version_records",
    "version_state",
    "versions_table",
]

UNNAMED_MODEL = "unnamed model"
"""The name of a model whose training data say nothing usable about it."""

SYNTHETIC_MODEL_NAME = "Synthetica (synthetic)"
"""The name of models of the synthetic city (the demo model)."""

# Extensions of trip files (and their compression) dropped from a default name.
_FILE_SUFFIXES = re.compile(r"(\.(csv|tsv|txt|parquet|pq|gz|gzip|zip|bz2|xz|zst|zstd))+$", re.I)
# A path of two or more components, POSIX, Windows or a URL (its last component is kept).
_PATH = re.compile(r"(?:[A-Za-z][\w+.-]*:)?[\\/]{0,3}(?:[^\s\\/:]+[\\/])+([^\s\\/]*)")
_MAX_NAME = 100


def strip_paths(text: str) -> str:
    """``text`` with every file path in it reduced to the file's name.

    Examples
    --------
    >>> strip_paths("/home/ana/trips/chicago_taxi_trips.csv")
    'chicago_taxi_trips.csv'
    >>> strip_paths(r"trip store C:\\Users\\ana\\vrvm\\trips, 2024-03-01")
    'trip store trips, 2024-03-01'
    >>> strip_paths("trip store: 600 trips, 2024-03-04 to 2024-04-14")
    'trip store: 600 trips, 2024-03-04 to 2024-04-14'
    """
    return _PATH.sub(lambda match: match.group(1), text)


def default_model_name(file_name: str | None) -> str:
    """The name a model trained on ``file_name`` gets unless one is given.

    The file's name without folders, extensions and compression suffixes, with
    underscores, hyphens and dots as spaces; :data:`UNNAMED_MODEL` when nothing is left.

    Examples
    --------
    >>> default_model_name("chicago_taxi_trips.csv")
    'chicago taxi trips'
    >>> default_model_name("/home/ana/NYC-yellow_2016-01.csv.gz")
    'NYC yellow 2016 01'
    >>> default_model_name(""), default_model_name("<bytes>")
    ('unnamed model', 'unnamed model')
    """
    text = str(file_name or "").strip()
    if text.startswith("<"):  # a buffer read without a name
        return UNNAMED_MODEL
    text = re.split(r"[\\/]", text)[-1]
    text = _FILE_SUFFIXES.sub("", text)
    text = " ".join(re.sub(r"[_\-.]+", " ", text).split())
    return text[:_MAX_NAME].strip() or UNNAMED_MODEL


def name_from_summary(summary: Mapping[str, Any]) -> str:
    """The default name of a model trained on trips summarised by ``summary``.

    ``summary`` is a model's ``training_summary_``: its ``city``, else the file name of
    its ``source``; a synthetic model's name says so. Models of trips that came from the
    trip store, and models older than names with no usable provenance, are
    :data:`UNNAMED_MODEL`.

    Examples
    --------
    >>> name_from_summary({"source": "/data/chicago_taxi_trips.csv", "n_trips": 10})
    'chicago taxi trips'
    >>> name_from_summary({"city": "Synthetica (synthetic city)", "synthetic": True})
    'Synthetica (synthetic)'
    >>> name_from_summary({"source": "trip store /home/ana/.vrvm/trips"})
    'unnamed model'
    """
    city, source = summary.get("city"), summary.get("source")
    if city == SYNTHETIC_CITY_NAME:
        return SYNTHETIC_MODEL_NAME
    if isinstance(city, str) and city.strip():
        name = " ".join(city.split())[:_MAX_NAME]
    elif isinstance(source, str) and not source.startswith("trip store"):
        name = default_model_name(source)
    else:
        name = UNNAMED_MODEL
    if summary.get("synthetic") and "synthetic" not in name.lower():
        name += " (synthetic)"
    return name


def model_name(model: TravelTimeModel) -> str:
    """The model's name: the one it was given, else :func:`name_from_summary`.

    Examples
    --------
    >>> from vrvm import TravelTimeModel
    >>> model = TravelTimeModel(name="Chicago taxi trips")
    >>> model_name(model)
    'Chicago taxi trips'
    >>> model.name, model.training_summary_ = None, {"source": "week_1.parquet"}
    >>> model_name(model)
    'week 1'
    """
    name = getattr(model, "name", None)
    if isinstance(name, str) and name.strip():
        return name.strip()
    return name_from_summary(getattr(model, "training_summary_", None) or {})


def is_synthetic(model: TravelTimeModel) -> bool:
    """Whether the model was trained on synthetic data (so every view must say so)."""
    return bool(model.training_summary_.get("synthetic", False))


def _trips_text(summary: Mapping[str, Any]) -> str:
    n = summary.get("n_trips")
    text = f"{n:,} trips" if isinstance(n, int) else "trips"
    start, end = summary.get("start_time_min", ""), summary.get("start_time_max", "")
    if start and end:
        text += f", {date_span(start, end)}"
    return text


def data_description(model: TravelTimeModel) -> str:
    """One line saying what the model was trained on: its name, trips and dates (no path).

    Examples
    --------
    >>> from vrvm import TravelTimeModel
    >>> model = TravelTimeModel(name="Chicago taxi trips")
    >>> model.training_summary_ = {"n_trips": 3000, "source": "/home/ana/trips.csv",
    ...     "start_time_min": "2024-03-04T07:37:50+00:00",
    ...     "start_time_max": "2024-04-14T19:12:52+00:00"}
    >>> data_description(model)
    'Chicago taxi trips: 3,000 trips, 2024-03-04 to 2024-04-14'
    """
    text = f"{model_name(model)}: {_trips_text(model.training_summary_)}"
    if is_synthetic(model):
        text += " - SYNTHETIC data, not a real city"
    return text


def model_caption(version: int, model: TravelTimeModel) -> str:
    """One line naming the model version, the model and its data (every page's caption)."""
    return (
        f"Model version {version} · {data_description(model)} · {len(model.members_)} "
        f"members · {int(model.n_relevance_.sum())} relevance vectors"
    )


def compact_metrics(metrics: Mapping[str, Any] | None) -> dict[str, Any]:
    """The few scores recorded beside a model version, as the engine gives them:
    ``n``, ``crps_s`` and ``mae_s`` (seconds), ``coverage_80`` / ``coverage_90`` (shares).
    """
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
    built_on: int | object | None = UNCHECKED,
    by: Access | None = None,
    store: ModelStore | None = None,
) -> int:
    """Save ``model`` as a new version in the store and activate it.

    The one write path for new versions: the dashboard, ``vrvm update`` (through
    :func:`update_active_version`) and the first start's demo model all publish here,
    so every version records its publisher as ``"<who> (<how>)"`` and every publish is
    audited with one entry shape (who, how, via, name, kind, parent, trips, source,
    snapped).

    The store writes the version atomically and only then moves the active pointer,
    so a failure leaves the active model untouched. ``info["parent"]`` is recorded as
    the version's parent. ``built_on`` is the active version the model was made from
    (an update, or candidates scored against it): if another version became active
    meanwhile, nothing is published
    (:class:`~vrvm.trips.store.model_store.StoreConflictError`). ``by`` (an analyst) is
    recorded as the version's publisher and in the audit log. ``store`` is the home's
    model store unless given (the CLI opens a store root with its own lock wait).
    """
    if by is not None:
        by.require("publish")
    return _publish(home, model, metrics, info, training_trips, built_on, by, store)


def _publish(home, model, metrics, info, training_trips, built_on, by, store) -> int:
    """:func:`publish_model` once ``by`` may publish."""
    place = Home(home)
    store = place.models if store is None else store
    if training_trips is not None:
        place.save_training_trips(training_trips)
    details = dict(info)
    details.setdefault("name", model_name(model))
    details.setdefault("metrics", compact_metrics(metrics))
    details.setdefault("n_members", len(model.members_))
    details.setdefault("published_by", _publisher(by))
    parent = details.pop("parent", None)  # kept in the version's record, not its info
    parent = parent if isinstance(parent, int) else None
    data = details.get("data")
    source = data.get("source") if isinstance(data, Mapping) else data
    return store.add(
        lambda path: model.save(path, metrics=metrics),
        info=details,
        activate=True,
        parent=parent,
        expect_active=built_on,
        audit=audit_of(
            by,
            name=details["name"],
            kind=details.get("kind", ""),
            parent=parent,
            trips=details.get("n_trips"),
            source=strip_paths(str(source)) if source else None,
            snapped=bool((model.training_summary_ or {}).get("snapped")),
        ),
    )


def update_active_version(
    home: Path,
    update: Callable[[TravelTimeModel], Mapping[str, Any]],
    *,
    by: Access | None = None,
    store: ModelStore | None = None,
) -> tuple[int, int, TravelTimeModel]:
    """Update the active version and publish the result on it, as one step.

    Under the store's lock: the active version is loaded, ``update(model)`` changes it
    in place and returns the version's info (``kind``, ``data``, ``n_trips``, ...), and
    :func:`publish_model` publishes it with the active version as parent. A concurrent
    update waits for the lock (or gives up with
    :class:`~vrvm.trips.store.errors.StoreBusyError`), so updates chain.

    Returns
    -------
    version, parent : int
        The new version and the one it was made from.
    model : TravelTimeModel
        The updated model.

    Raises
    ------
    ValueError
        When the store has no active version.
    """
    if by is not None:
        by.require("publish")
    store = Home(home).models if store is None else store
    with store.lock():
        parent = store.active_version()
        if parent is None:
            raise ValueError(f"{store.root}: the model store has no active version to update")
        model = TravelTimeModel.load(store.path(parent))
        info = {**update(model), "parent": parent}
        version = _publish(home, model, None, info, None, parent, by, store)
    return version, parent, model


def audit_of(by: Access | None, **details: Any) -> dict[str, Any]:
    """The audit entry a model store records with a publish or an activation by ``by``
    (the library's access when None): who, how, via and ``details``.

    The store writes it in the same durable step as the change
    (:class:`~vrvm.trips.store.model_store.ModelStore`), so a crash never leaves a version
    without its entry.

    Examples
    --------
    >>> from vrvm.services.access.policy import cli_access
    >>> entry = audit_of(cli_access(), kind="update")
    >>> entry["how"], entry["via"], entry["kind"]
    ('os', 'cli', 'update')
    """
    by = library_access() if by is None else by
    return {"who": by.who, "how": by.how, "via": by.via, **details}


def _publisher(by: Access | None) -> str:
    """Who a version's record names as its publisher: ``"ana (passphrase)"``."""
    by = library_access() if by is None else by
    return f"{by.who} ({by.how})"


def _version_name(path: Path, info: Mapping[str, Any]) -> str:
    """The name of a stored version: recorded when published, else read from its model
    (versions published before names were named after their training data)."""
    name = info.get("name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    try:
        meta = read_model_manifest(
            path, format_name=FORMAT_NAME, max_format_version=FORMAT_VERSION
        ).metadata
    except ModelFormatError:
        return UNNAMED_MODEL
    name = (meta.get("params") or {}).get("name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    return name_from_summary(meta.get("training_summary") or {})


def versions_table(home: Path) -> pd.DataFrame:
    """The data home's model versions (:func:`store_versions_table` of its store)."""
    return store_versions_table(Home(home).models)


def lineage_text(chain: list[int], *, shown: int = 4) -> str:
    """A lineage (newest first, as :meth:`ModelStore.lineage` gives it) in one short line.

    Examples
    --------
    >>> lineage_text([9, 8, 7, 6, 5, 2, 1])
    'v9 ← v8 ← v7 ← … ← v1 (7 versions)'
    >>> lineage_text([3])
    'v3'
    """
    if len(chain) <= shown:
        return " ← ".join(f"v{v}" for v in chain)
    head = " ← ".join(f"v{v}" for v in chain[: shown - 1])
    return f"{head} ← … ← v{chain[-1]} ({len(chain)} versions)"


def version_state(version: VersionInfo) -> str:
    """``active``, ``kept (activated by hand)``, ``never activated`` or ``""``."""
    if version.is_active:
        return "active"
    if version.never_activated:
        return "never activated"
    return "kept (activated by hand)" if version.by_hand else ""


def store_versions_table(store: ModelStore) -> pd.DataFrame:
    """A model store's versions, newest first: name, lineage, data and scores.

    ``parent`` is the version each was made from and ``lineage`` the chain back to its
    first model (through versions removed by retention); ``state`` says which is
    active, which a user activated by hand (kept by retention) and which were never
    activated. Scores carry their unit in the column name (times in minutes, coverage
    in %); the ``data`` column names files without their folders; ``published by`` the
    analyst (and how they signed in, or the OS user of the command line) as recorded
    when it was published, blank for versions published before it was recorded.
    """
    crps, mae = metric_label("crps_s", label="hold-out CRPS"), metric_label("mae_s", label="MAE")
    coverage = metric_label("coverage", label="90 % interval coverage")
    listing = store.versions()
    chains = store.lineages(listing)
    rows = []
    for v in listing:
        info = v.info or {}
        metrics = info.get("metrics") or {}
        data = info.get("data", "")
        n_trips = info.get("n_trips")
        if isinstance(data, Mapping):  # as `vrvm update` records it
            n_trips = data.get("n_trips", n_trips)
            data = data.get("source", "")
        rows.append(
            {
                "version": v.version,
                "active": v.is_active,
                "state": version_state(v),
                "model": _version_name(v.path, info),
                "created (UTC)": v.created.strftime("%Y-%m-%d %H:%M:%S"),
                "kind": info.get("kind", ""),
                "parent": v.parent,
                "lineage": lineage_text(chains[v.version]),
                "trips": n_trips,
                "members": info.get("n_members"),
                crps: metric_value("crps_s", metrics.get("crps_s")),
                mae: metric_value("mae_s", metrics.get("mae_s")),
                coverage: metric_value("coverage", metrics.get("coverage_90")),
                "synthetic": bool(info.get("synthetic", False)),
                "data": strip_paths(str(data)),
                "published by": str(info.get("published_by") or ""),
            }
        )
    columns = ["version", "active", "state", "model", "created (UTC)", "kind", "parent"]
    columns += ["lineage", "trips", "members", crps, mae, coverage, "synthetic", "data"]
    columns += ["published by"]
    frame = pd.DataFrame(rows, columns=columns)
    for column in ("parent", "trips", "members"):  # whole numbers, blank when unknown
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("Int64")
    for column in (crps, mae, coverage):
        frame[column] = frame[column].astype(float).round(3)
    return frame.sort_values("version", ascending=False).reset_index(drop=True)


def version_records(home: Path) -> list[dict[str, Any]]:
    """The data home's versions as plain records, newest first (for the HTTP API).

    Each: ``version``, ``name``, ``active``, ``state``, ``created`` (ISO 8601, UTC),
    ``kind``, ``parent``, ``trips``, ``members``, ``metrics`` (``crps_s``, ``mae_s``,
    ``coverage_90`` when scored), ``synthetic`` and ``data`` (file names without their
    folders), as :func:`store_versions_table` shows them.
    """
    store = Home(home).models
    records = []
    for v in sorted(store.versions(), key=lambda v: v.version, reverse=True):
        info = v.info or {}
        metrics = info.get("metrics") or {}
        data = info.get("data", "")
        n_trips = info.get("n_trips")
        if isinstance(data, Mapping):
            n_trips = data.get("n_trips", n_trips)
            data = data.get("source", "")
        records.append(
            {
                "version": v.version,
                "name": _version_name(v.path, info),
                "active": v.is_active,
                "state": version_state(v),
                "created": v.created.isoformat(),
                "kind": info.get("kind", ""),
                "parent": v.parent,
                "trips": n_trips,
                "members": info.get("n_members"),
                "metrics": {
                    k: float(metrics[k])
                    for k in ("crps_s", "mae_s", "coverage_90")
                    if isinstance(metrics.get(k), (int, float))
                },
                "synthetic": bool(info.get("synthetic", False)),
                "data": strip_paths(str(data)),
            }
        )
    return records


def activate_version(
    home: Path,
    version: int,
    *,
    by: Access | None = None,
    how: str = "by hand",
    store: ModelStore | None = None,
) -> None:
    """Make an existing version the active one; the one activation path of every door.

    The store refuses unknown versions; ``how`` is kept with the pointer, and retention
    keeps every version activated ``"by hand"``. Recorded in the audit log with the
    version it replaced, in the same durable step as the pointer. ``store`` is the
    home's model store unless given (as in :func:`publish_model`)."""
    if by is not None:
        by.require("activate")
    store = Home(home).models if store is None else store
    store.activate(int(version), how=how, audit=audit_of(by))


def active_model_path(home: Path) -> tuple[int, Path] | None:
    """``(version, model directory)`` of the active model, or None when there is none.

    Raises
    ------
    vrvm.ModelFormatError
        If the active pointer is damaged (:func:`version_numbers` still lists the
        versions, and :func:`activate_version` repairs it).
    """
    store = Home(home).models
    version = store.active_version()
    return None if version is None else (version, store.path(version))


def load_version(home: Path, version: int) -> TravelTimeModel:
    """A committed version's model, read from the data home's model store (a comparison's
    second model; ``ValueError`` naming the versions there for an unknown one)."""
    store = Home(home).models
    known = version_numbers(home)
    if int(version) not in known:
        raise ValueError(f"model version {version} is not in the store (versions: {known})")
    return TravelTimeModel.load(store.path(int(version)))


def version_numbers(home: Path) -> list[int]:
    """Numbers of the committed versions, oldest first."""
    return [v.version for v in Home(home).models.versions()]
