"""Page set-up and the sidebar: navigation and the map settings shared by every page.

State keys: ``settings_basemap`` (bool) and ``settings_boundaries`` (``(sha256,
GeoJSON dict, file name)`` of the uploaded boundary file). Streamlit forgets a widget's
value when another page is shown, so the settings live in these keys, which the
widgets only write to.
"""

from __future__ import annotations

import hashlib

import streamlit as st

from vrvm.services import boundaries as boundaries_svc

SETTINGS_BASEMAP = "settings_basemap"
SETTINGS_BOUNDARIES = "settings_boundaries"

PAGES = (
    ("app.py", "Predict", ":material/route:"),
    ("pages/1_Relevance_vectors.py", "Relevance vectors", ":material/hub:"),
    ("pages/2_Retrain.py", "Retrain & publish", ":material/model_training:"),
)


def page_setup(title: str) -> None:
    """Page configuration, navigation and map settings: the first call of every page.

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
    map_settings()


def basemap_enabled() -> bool:
    return bool(st.session_state.get(SETTINGS_BASEMAP, False))


def boundaries() -> tuple[str, dict, str] | None:
    """``(sha256, GeoJSON, file name)`` of the uploaded boundary file, if any."""
    return st.session_state.get(SETTINGS_BOUNDARIES)


def _keep(widget_key: str, key: str) -> None:
    st.session_state[key] = st.session_state[widget_key]


def _remove_boundaries() -> None:
    current = st.session_state.pop(SETTINGS_BOUNDARIES, None)
    if current:
        st.session_state[f"{SETTINGS_BOUNDARIES}_removed"] = current[0]


def map_settings() -> None:
    """Basemap toggle and boundary polygons (GeoJSON upload)."""
    with st.sidebar:
        st.subheader("Map settings")
        st.toggle(
            "Carto basemap (needs internet)",
            value=basemap_enabled(),
            key=f"{SETTINGS_BASEMAP}_toggle",
            on_change=_keep,
            args=(f"{SETTINGS_BASEMAP}_toggle", SETTINGS_BASEMAP),
            help="Off by default so the app works offline; the zones and boundaries are "
            "drawn without it.",
        )
        upload = st.file_uploader(
            "Boundary polygons (GeoJSON)",
            type=["geojson", "json"],
            key="settings_boundary_upload",
            help="For example Chicago community areas: zones are named after the polygon "
            "they fall in, and the polygons are drawn under the zones.",
        )
        if upload is not None:
            data = upload.getvalue()
            key = hashlib.sha256(data).hexdigest()
            current = boundaries()
            removed = st.session_state.get(f"{SETTINGS_BOUNDARIES}_removed")
            if (not current or current[0] != key) and key != removed:
                try:
                    document = boundaries_svc.parse_geojson(data)
                    st.session_state[SETTINGS_BOUNDARIES] = (key, document, upload.name)
                except ValueError as exc:
                    st.error(str(exc))
        current = boundaries()
        if current:
            st.caption(f"Boundaries: {current[2]} ({len(current[1]['features'])} features)")
            st.button(
                "Remove boundaries", key="settings_boundary_remove", on_click=_remove_boundaries
            )
