"""Data access for every page: the active model (cached by version), its zones, first start.

The model is loaded with ``st.cache_resource`` keyed by its path and version, so a page
rerun never reloads it and publishing a new version simply makes the next run load (and
cache) the new one; a published model object is never mutated. The zones are the
hexagons of its training trips, or the polygons of the zone file chosen in the sidebar
(cached by that file's fingerprint as well). The training trips are never loaded: they
are a :class:`~vrvm.services.versions.models.TripTable` over the kept file (its footer), and the
zones and the trips' index by zone are derived from them once per model and kept
beside them (:mod:`vrvm.services.map.trip_index`), so a start reads a few hundred kilobytes
whatever the number of trips, and an answer reads the trips of a few zones. Once per
process the data home is healed (:meth:`vrvm.trips.home.Home.heal`: what a killed
writer left is finished or rolled back, and logged). A data home that cannot be written
(or a file where it should be) is said in one ``st.error``, naming the path, why and
what to do, and the page stops there, without a traceback. The context also says who
is using the page (:class:`~vrvm.services.access.policy.Access`) and whether its trips are shown
in private mode (:class:`~vrvm.services.map.privacy.PrivacyView`), with an analyst's switch
to the raw views in the sidebar.

Every answer depends on the model and the map's zones besides its own inputs:
:attr:`ModelContext.fingerprint` names both, so that what a view keeps between runs
(a cache entry, a prepared file) is kept with it and never shown for another model,
time zone or zone file (:func:`kept`, :func:`keep`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from app_ui import access_view, sidebar
from vrvm import ModelFormatError, TravelTimeModel, ZoneFile
from vrvm.services.access.policy import Access
from vrvm.services.analyst import demo
from vrvm.services.display.progress import TimeLeft
from vrvm.services.display.text import plain_markdown
from vrvm.services.map import area as area_svc
from vrvm.services.map import privacy
from vrvm.services.map.area import ServiceArea
from vrvm.services.map.privacy import PrivacyView
from vrvm.services.versions import models
from vrvm.services.versions.models import TripTable

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelContext:
    """What the pages need: the active model, its zones and its training trips; who is
    looking, and whether trips are shown in private mode."""

    home: Path
    version: int
    model: TravelTimeModel
    area: ServiceArea
    trips: TripTable | None
    synthetic: bool
    access: Access
    privacy: PrivacyView
    zones_key: str = ""

    @property
    def fingerprint(self) -> tuple[str, int, str, str]:
        """What every answer depends on besides its own inputs: the model (its file and
        version, in this process's cache of every home), its time zone and the map's
        zones (the zone file and the boundaries naming them, by content)."""
        return (str(self.home), self.version, self.model.tz_, self.zones_key)


@st.cache_resource(show_spinner=False, max_entries=4)
def _load_model(path: str, version: int) -> TravelTimeModel:
    del version  # part of the cache key: a new version is a new object
    return TravelTimeModel.load(path)


@st.cache_resource(show_spinner=False, max_entries=4)
def _training_trips(home: str, path: str, version: int) -> TripTable | None:
    return models.Home(Path(home)).training_trip_table(_load_model(path, version))


@st.cache_resource(show_spinner=False, max_entries=4)
def _zone_polygons(home: str, name: str, fingerprint: str, added_at: str) -> ZoneFile:
    del fingerprint, added_at  # the cache key: a replaced file is read again
    return area_svc.load_zone_choice(home, name)


@st.cache_resource(show_spinner="Indexing the training trips by zone", max_entries=8)
def _service_area(
    home: str,
    path: str,
    version: int,
    boundaries_key: str,
    _boundaries: dict | None,
    zones_key: str = "",
    _zones: ZoneFile | None = None,
) -> ServiceArea:
    del boundaries_key, zones_key  # the cache keys of _boundaries and _zones (not hashed)
    model = _load_model(path, version)
    return area_svc.build_service_area(
        model, trips=_training_trips(home, path, version), boundaries=_boundaries, zones=_zones
    )


def _clickable_area(home: Path, path: Path, version: int, boundaries) -> tuple[ServiceArea, str]:
    """The area of the zones chosen in the sidebar (hexagons when the choice cannot be
    used) and a key naming its zones and boundaries by content."""
    key, document, _ = boundaries or ("", None, "")
    hexagons = (str(home), str(path), version, key, document)
    try:
        entry = area_svc.zone_choice(home)
        if entry is None:
            return _service_area(*hexagons), f"hexagons|{key}"
        zones = _zone_polygons(str(home), entry.name, entry.fingerprint, entry.added_at)
        if key == entry.fingerprint:
            document = None  # the same polygons: drawn once, as the zones
        area = _service_area(str(home), str(path), version, key, document, entry.fingerprint, zones)
        return area, f"{entry.fingerprint}:{entry.added_at}|{key}"
    except (KeyError, ValueError, OSError) as exc:
        st.warning(
            "The chosen zone file cannot be used, so the map shows hexagons: " + plain_markdown(exc)
        )
        return _service_area(*hexagons), f"hexagons|{key}"


@st.cache_resource(show_spinner=False)
def _warm_up_charts() -> bool:
    """Build one small figure of each kind once per process.

    Plotly loads its validators lazily on first use, which would otherwise add about
    0.3 s to the first answer after a click.
    """
    from app_ui import charts

    try:
        charts.warm_up()
    except Exception:  # a warm-up must never break the page
        return False
    return True


@st.cache_resource(show_spinner=False)
def _healed(home: str) -> tuple[str, ...]:
    """Once per process: finish or roll back what a crash left in the data home (logged)."""
    try:
        return tuple(models.Home(Path(home)).heal())
    except OSError as exc:  # a read-only home is said by the first write, not here
        logger.warning("cannot heal the data home %s: %s", home, exc)
        return ()


class _FirstStart:
    """The demo model's training on first start, in a thread of its own.

    A page's script is stopped by a rerun, a reload or a move to another page; training
    in it was cancelled then (joblib cancelling the members being fitted, and warning
    about it on the terminal) and started again from nothing by the next visit. Here it
    goes on whatever the pages do; each page run only reads its progress.
    """

    def __init__(self, home: Path) -> None:
        self._lock = threading.Lock()
        self._progress: tuple[int, int, float, str] | None = None
        self._stages: list[str] = []
        self.version: int | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        thread = threading.Thread(
            target=self._run, args=(home,), name="vrvm-first-start", daemon=True
        )
        thread.start()

    def _run(self, home: Path) -> None:
        def progress(done: int, total: int, elapsed: float, phase: str) -> None:
            with self._lock:
                self._progress = (done, total, elapsed, phase)

        def stage(text) -> None:
            with self._lock:
                self._stages.append(str(text))

        try:
            self.version, _ = demo.ensure_demo_model(
                home, demo.demo_settings(), progress=progress, stage=stage
            )
        except BaseException as exc:  # handed to the page that shows it
            self.error = exc
        finally:
            self.done.set()

    def snapshot(self) -> tuple[tuple[int, int, float, str] | None, list[str]]:
        with self._lock:
            return self._progress, list(self._stages)


@st.cache_resource(show_spinner=False, max_entries=4)
def _first_start_job(home: str) -> _FirstStart:
    """One first start per process and home, shared by every session waiting for it."""
    return _FirstStart(Path(home))


FIRST_START_WAIT_S = 3600.0  # a page waits this long at most (the fit takes seconds)


def _first_start(home: Path) -> None:
    """Train the demo model, showing progress, when the store is empty."""
    settings = demo.demo_settings()
    job = _first_start_job(str(home))
    with st.status(
        "First start: building the demo model on Synthetica, a synthetic city", expanded=True
    ) as status:
        st.write(
            f"{settings.n_trips:,} synthetic trips, {settings.n_members} ensemble members. "
            "This happens once; later starts load the saved model."
        )
        bar = st.progress(0.0, text="Preparing")
        time_left = TimeLeft()  # each phase's bar says its time left
        shown = 0  # stage messages written so far

        def show() -> None:
            nonlocal shown
            progress, stages = job.snapshot()
            if progress is not None:
                done, total, elapsed, phase = progress
                text = time_left.say(done, total, elapsed, phase)
                bar.progress(min(done / max(total, 1), 1.0), text=text)
            for line in stages[shown:]:
                st.write(line)
            shown = len(stages)

        deadline = time.monotonic() + FIRST_START_WAIT_S
        while not job.done.wait(0.2) and time.monotonic() < deadline:
            show()
        show()
        if not job.done.is_set():
            status.update(label="The first start is still training", state="error")
            st.stop()
        _first_start_job.clear()  # done: a later first start (an emptied home) trains anew
        if isinstance(job.error, demo.StorageError):
            status.update(label="First start failed: cannot write the data home", state="error")
            raise job.error
        if job.error is not None:
            status.update(label="First start failed", state="error")
            raise job.error
        status.update(label=f"Demo model ready (version {job.version})", state="complete")


def _storage_problem(exc: OSError) -> None:
    """The data home cannot be written: which path, why and what to do; stop the page."""
    message = _storage_message(exc)
    st.error(plain_markdown(message[:1].upper() + message[1:] + "."), icon=":material/folder_off:")
    st.stop()


def _storage_message(exc: OSError) -> str:
    """The message of a :class:`demo.StorageError`; the path and the reason of another."""
    if isinstance(exc, demo.StorageError):
        return str(exc)
    reason = (exc.strerror or str(exc)).lower()
    where = exc.filename or "the data home"
    return f"cannot write {where}: {reason}; {demo.home_advice(exc)}"


def _model_problem(home: Path, exc: Exception, access: Access) -> None:
    """The store's active pointer or model is damaged: say so and offer an analyst the
    versions."""
    st.error(f"The active model cannot be loaded: {plain_markdown(exc)}")
    if not access.may("activate"):
        st.info("An analyst can activate another version on the Retrain & publish page.")
        st.stop()
    try:
        versions = models.version_numbers(home)
    except OSError:
        versions = []
    if versions:
        choice = st.selectbox("Activate another version", versions[::-1], key="ctx_repair")
        if st.button("Activate", key="ctx_repair_go"):
            try:
                models.activate_version(home, int(choice), by=access)
            except models.StoreBusyError as busy:
                st.error(plain_markdown(busy))
                st.stop()
            except OSError as write_exc:
                _storage_problem(write_exc)
            st.rerun()
    st.stop()


def get_context() -> ModelContext:
    """The active model and its zones, training the demo model on first start."""
    home = models.data_home()
    access = access_view.current()
    try:
        demo.prepare_home(home)
        _healed(str(home))
        active = models.active_model_path(home)
        if active is None:
            _first_start(home)
            active = models.active_model_path(home)
        version, path = active
        model = _load_model(str(path), version)
        trips = _training_trips(str(home), str(path), version)
        area, zones_key = _clickable_area(home, path, version, sidebar.boundaries())
        if area.boundary_problem:  # the map was built without the boundary file: say why
            st.warning(plain_markdown(area.boundary_problem), icon=":material/layers_clear:")
        _warm_up_charts()
    except demo.StorageError as exc:
        _storage_problem(exc)
        raise  # unreachable: st.stop() ends the run
    except (ModelFormatError, ValueError) as exc:
        _model_problem(home, exc, access)
        raise  # unreachable: st.stop() ends the run
    synthetic = models.is_synthetic(model)
    try:
        view = privacy.privacy_view(synthetic=synthetic, access=access)
    except ValueError as exc:  # VRVM_PRIVATE_MODE or VRVM_PRIVATE_MIN_TRIPS
        access_view.settings_error(exc)
        raise  # unreachable: st.stop() ends the run
    if view.can_switch and access_view.raw_switch(True):
        view = privacy.privacy_view(synthetic=synthetic, access=access, raw=True)
    return ModelContext(
        home=home,
        version=version,
        model=model,
        area=area,
        trips=trips,
        synthetic=synthetic,
        access=access,
        privacy=view,
        zones_key=zones_key,
    )


def kept(key: str, inputs: Hashable) -> Any | None:
    """The answer kept under ``key`` if it was made from these ``inputs``, else None.

    ``inputs`` is everything the answer depends on (the context's
    :attr:`~ModelContext.fingerprint` and the view's own choices); an answer kept for
    other inputs is forgotten here, so that it is never shown again.
    """
    found = st.session_state.get(key)
    if found is None:
        return None
    if found[0] != inputs:
        del st.session_state[key]
        return None
    return found[1]


def keep(key: str, inputs: Hashable, answer: Any) -> Any:
    """Keep ``answer`` under ``key`` with the ``inputs`` it was made from (see :func:`kept`)."""
    st.session_state[key] = (inputs, answer)
    return answer


def synthetic_banner(ctx: ModelContext) -> None:
    """Every page says so when it shows synthetic data."""
    if ctx.synthetic:
        st.warning(
            "**Synthetic data.** Everything on this page comes from *Synthetica*, a "
            "fictional city in the South Atlantic generated by `vrvm.synthetic_city`. "
            "It is a demo, not a real place. Upload real trips on the Retrain page.",
            icon=":material/science:",
        )


def page_header(title: str, ctx: ModelContext) -> None:
    """The title, the caption naming the model and its data, the synthetic banner."""
    st.title(title)
    st.caption(plain_markdown(models.model_caption(ctx.version, ctx.model)))
    synthetic_banner(ctx)


def privacy_note(ctx: ModelContext) -> None:
    """Under a view of training trips: that they are shown in private mode (or raw)."""
    if ctx.privacy.private:
        st.caption(":material/shield_person: " + ctx.privacy.sentence())
    elif ctx.privacy.can_switch:
        st.caption(
            ":material/visibility: Individual trips are shown (analyst view); viewers see "
            "aggregates only."
        )
