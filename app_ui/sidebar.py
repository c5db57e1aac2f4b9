"""Page set-up and the sidebar: navigation and the map settings shared by every page.

State keys: ``settings_basemap`` and ``settings_webgl_map`` (bool). Streamlit forgets a
widget's value when another page is shown, so each setting lives in its key, which the
widget only writes to. Boundary files are kept in the data home
(:mod:`vrvm.services.map.boundaries`), not in the session: an upload is saved there and
shown on the map, and stays after a restart until it is removed;
``settings_boundary_seen`` holds the last upload handled (and its error, if it was
refused) so a rerun does not save it again. The map's clickable zones are the hexagons
of the training trips or the polygons of a kept zone file (``settings_zone_choice``), a
choice also kept in the data home (:func:`vrvm.services.map.area.set_zone_choice`).
Uploading, choosing and removing zone files changes the map for everyone: analysts only
(viewers see which file is drawn).
"""

from __future__ import annotations

import hashlib

import streamlit as st

from app_ui import access_view
from vrvm.services.access.policy import Access
from vrvm.services.display.text import plain_markdown
from vrvm.services.map import area as area_svc
from vrvm.services.map import boundaries as boundaries_svc
from vrvm.services.versions import models

SETTINGS_BASEMAP = "settings_basemap"
SETTINGS_WEBGL_MAP = "settings_webgl_map"
SETTINGS_BOUNDARY_SEEN = "settings_boundary_seen"
NO_BOUNDARIES = "(none)"
HEXAGONS = "Hexagons (from the trips)"
SETTINGS_ZONE_CHOICE = "settings_zone_choice"
# the browser refuses a larger boundary file before sending it (the server would refuse it)
_MAX_UPLOAD_MB = max(1, boundaries_svc.MAX_BOUNDARY_BYTES // 2**20)

PAGES = (
    ("app.py", "Predict", ":material/route:"),
    ("pages/1_Relevance_vectors.py", "Relevance vectors", ":material/hub:"),
    ("pages/2_Retrain.py", "Retrain & publish", ":material/model_training:"),
    ("pages/3_Plan.py", "Plan", ":material/event_available:"),
)


def page_setup(title: str) -> Access:
    """Page configuration, navigation, who is signed in and map settings: the first call
    of every page; returns the session's access.

    The pages live in ``pages/`` (Streamlit's multipage layout, so a link to any page
    works on a fresh server); the sidebar navigation is drawn here, with readable
    names, instead of Streamlit's file-name based one (hidden in config.toml).
    """
    st.set_page_config(
        page_title=f"{title} · vrvm travel times", page_icon=":material/route:", layout="wide"
    )
    with st.sidebar:
        for path, label, icon in PAGES:
            st.page_link(path, label=label, icon=icon)
        st.divider()
    sign_in = access_view.options()
    access = access_view.current(sign_in)
    access_view.sidebar_status(access, sign_in)
    map_settings(access)
    return access


def basemap_enabled() -> bool:
    return bool(st.session_state.get(SETTINGS_BASEMAP, False))


def webgl_map_enabled() -> bool:
    """Whether the zone maps are drawn by deck.gl (WebGL: pan and zoom) rather than on a
    plain canvas (:func:`app_ui.od_picker.renderer`)."""
    return bool(st.session_state.get(SETTINGS_WEBGL_MAP, False))


@st.cache_resource(show_spinner=False, max_entries=4)
def _boundary_document(home: str, name: str, fingerprint: str, added_at: str) -> dict:
    del fingerprint, added_at  # the cache key: a replaced file is read again
    return boundaries_svc.load_boundaries(home, name)


def boundaries() -> tuple[str, dict, str] | None:
    """``(fingerprint, GeoJSON, file name)`` of the boundary file shown on the map, if any
    (None too when it can no longer be used: :func:`map_settings` says why)."""
    return _boundaries()[0]


def _boundaries() -> tuple[tuple[str, dict, str] | None, str | None]:
    """:func:`boundaries`, and why the file shown on the map cannot be used (or None)."""
    home = models.data_home()
    try:
        entry = boundaries_svc.shown_boundaries(home)
        if entry is None:
            return None, None
        document = _boundary_document(str(home), entry.name, entry.fingerprint, entry.added_at)
    except (KeyError, ValueError, OSError) as exc:  # a ZoneFileError names file and feature
        return None, str(exc)
    return (entry.fingerprint, document, entry.file_name), None


def _keep(widget_key: str, key: str) -> None:
    st.session_state[key] = st.session_state[widget_key]


def _show(widget_key: str, access: Access) -> None:
    choice = st.session_state[widget_key]
    name = None if choice == NO_BOUNDARIES else choice
    boundaries_svc.show_boundaries(models.data_home(), name, by=access)


def _choose_zones(widget_key: str, access: Access) -> None:
    choice = st.session_state[widget_key]
    area_svc.set_zone_choice(models.data_home(), None if choice == HEXAGONS else choice, by=access)


def zone_choice_control(saved, access: Access) -> None:
    """Which zones the map's clicks pick: the trips' hexagons or a kept zone file's polygons."""
    chosen = area_svc.zone_choice(models.data_home())
    # the widget shows what the home says (another session may have changed it)
    st.session_state[SETTINGS_ZONE_CHOICE] = chosen.name if chosen else HEXAGONS
    st.selectbox(
        "Clickable zones",
        [HEXAGONS, *(entry.name for entry in saved)],
        key=SETTINGS_ZONE_CHOICE,
        on_change=_choose_zones,
        args=(SETTINGS_ZONE_CHOICE, access),
        help="Pick origins and destinations by hexagon, or by the polygons of a kept zone "
        "file (taxi zones, community areas): those holding training trip ends can be "
        "clicked, the reach map colours them and its downloads carry them.",
    )


def _remove(name: str, access: Access) -> None:
    boundaries_svc.remove_boundaries(models.data_home(), name, by=access)


def _save_upload(upload, access: Access) -> None:
    """Keep a new upload in the data home (once per upload), or remember why not."""
    data = upload.getvalue()
    seen = (getattr(upload, "file_id", ""), hashlib.sha256(data).hexdigest())
    previous = st.session_state.get(SETTINGS_BOUNDARY_SEEN)
    if previous is None or previous[0] != seen:
        try:
            boundaries_svc.save_boundaries(models.data_home(), data, upload.name, by=access)
            error = None
        except ValueError as exc:
            error = str(exc)
        st.session_state[SETTINGS_BOUNDARY_SEEN] = (seen, error)
    error = st.session_state[SETTINGS_BOUNDARY_SEEN][1]
    if error:
        st.error(plain_markdown(error))


def _say_why_unusable(shown) -> None:
    """The boundary file on the map can no longer be used (changed on disk, or kept
    under looser checks): the refusal's message, as plain text."""
    _, problem = _boundaries()
    if problem is not None:
        st.error(
            f"The boundary file {plain_markdown(shown.file_name)} can no longer be used, so "
            f"the map is drawn without it: {plain_markdown(problem)}",
            icon=":material/layers_clear:",
        )


def map_settings(access: Access) -> None:
    """Basemap toggle and boundary polygons: upload (kept in the data home), choose, remove
    (an analyst; a viewer sees which boundaries are drawn)."""
    with st.sidebar:
        st.subheader("Map settings")
        st.toggle(
            "Carto basemap (needs internet)",
            value=basemap_enabled(),
            key=f"{SETTINGS_BASEMAP}_toggle",
            on_change=_keep,
            args=(f"{SETTINGS_BASEMAP}_toggle", SETTINGS_BASEMAP),
            help="Off by default so the app works offline; the zones and boundaries are "
            "drawn without it. On, the maps are drawn with WebGL (they pan and zoom).",
        )
        st.toggle(
            "Pan-and-zoom maps (WebGL)",
            value=webgl_map_enabled(),
            key=f"{SETTINGS_WEBGL_MAP}_toggle",
            on_change=_keep,
            args=(f"{SETTINGS_WEBGL_MAP}_toggle", SETTINGS_WEBGL_MAP),
            help="Off: the clickable maps are drawn on a plain canvas, quick on any "
            "computer, in a fixed view of the trips. On: drawn with WebGL (deck.gl), so "
            "they pan and zoom; without a graphics card each click then takes about a "
            "second.",
        )
        if not access.may("zones"):
            shown = boundaries_svc.shown_boundaries(models.data_home())
            if shown is not None:
                st.caption(plain_markdown(boundaries_svc.describe_boundaries(shown)))
                _say_why_unusable(shown)
            return
        upload = st.file_uploader(
            "Boundary polygons (GeoJSON)",
            type=["geojson", "json"],
            key="settings_boundary_upload",
            max_upload_size=_MAX_UPLOAD_MB,
            help="For example Chicago community areas or NYC taxi zones, in WGS84 "
            "longitude/latitude: zones are named after the polygon they fall in, and the "
            "polygons are drawn under the zones. Kept in the data home until removed.",
        )
        if upload is not None:
            _save_upload(upload, access)
        home = models.data_home()
        saved = boundaries_svc.saved_boundaries(home)
        if not saved:
            return
        zone_choice_control(saved, access)
        shown = boundaries_svc.shown_boundaries(home)
        options = [NO_BOUNDARIES, *(entry.name for entry in saved)]
        # the widget shows what the home says (another session may have changed it)
        st.session_state["settings_boundary_choice"] = shown.name if shown else NO_BOUNDARIES
        st.selectbox(
            "Boundaries on the map",
            options,
            key="settings_boundary_choice",
            on_change=_show,
            args=("settings_boundary_choice", access),
        )
        if shown is not None:
            st.caption(plain_markdown(boundaries_svc.describe_boundaries(shown)))
            _say_why_unusable(shown)
            st.button(
                "Remove boundaries",
                key="settings_boundary_remove",
                on_click=_remove,
                args=(shown.name, access),
                help="Delete this boundary file from the data home.",
            )
