"""Shareable views: the URL's query parameters restore origin, destination and time.

State keys: ``{key}_restored`` (the link was read this session), ``{key}_warnings``.
The parameters are read once per session and written back after every run, so the
address bar always holds a link to the current view.
"""

from __future__ import annotations

import streamlit as st

from vrvm.services.display.text import plain_markdown
from vrvm.services.map.area import ServiceArea
from vrvm.services.planning import url_state


def read_once(key: str, area: ServiceArea, tz: str) -> url_state.ViewParams | None:
    """The view in the URL on the session's first run, else None."""
    if st.session_state.get(f"{key}_restored"):
        return None
    st.session_state[f"{key}_restored"] = True
    view, warnings = url_state.from_query_params(st.query_params.to_dict(), area, tz)
    st.session_state[f"{key}_warnings"] = warnings
    return view


def show_warnings(key: str) -> None:
    for message in st.session_state.get(f"{key}_warnings") or []:
        st.warning(plain_markdown(message), icon=":material/link:")


def write(params: dict[str, str]) -> None:
    """Put the current view into the address bar (no rerun)."""
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
