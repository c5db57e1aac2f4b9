"""Departure date and time, and the arrival-time threshold.

State keys: ``{key}_when`` (the departure, a naive datetime local to the model's time
zone), ``{key}_zone`` (that time zone, and whether the departure is "now" there or
was chosen), ``{key}_threshold`` (minutes).

"Leave now" (and the first visit) is now in the model's time zone. When the active
model's zone changes (another version activated), a departure that was "now" is now
in the new zone; one a user chose (typed, picked or from a link) keeps its wall-clock
time, read in the new zone, as the field's label says.

The departure is one date-and-time field (``st.datetime_input``): a date typed into it
is applied on Enter, which a separate date box only did when it lost the focus.

With the area's index of training trips (``support``), a departure on a kind of day
the model learned too little of (a weekend, for a model of weekday trips) gets a
warning under the field (:func:`day_caution`).
"""

from __future__ import annotations

import contextlib
from datetime import datetime

import pandas as pd
import streamlit as st

from vrvm.services.answers import forecast
from vrvm.services.map.support import TripSupport, day_note

DEFAULT_THRESHOLD_MIN = 15.0


def set_values(
    key: str, *, departure: pd.Timestamp | None = None, threshold_min: float | None = None
) -> None:
    """Preset the widgets (from a shared link); call before :func:`show`."""
    if departure is not None:
        st.session_state[f"{key}_when"] = _wall_clock(departure)
        st.session_state.pop(f"{key}_zone", None)  # a chosen time, read in the model's zone
    if threshold_min is not None:
        st.session_state[f"{key}_threshold"] = float(threshold_min)


def _wall_clock(departure) -> datetime:
    """A departure as the field shows it: local wall-clock time to the minute, naive."""
    stamp = pd.Timestamp(departure)
    if stamp.tz is not None:
        stamp = stamp.tz_localize(None)
    return stamp.to_pydatetime().replace(second=0, microsecond=0)


def _now(key: str, tz: str) -> None:
    st.session_state[f"{key}_when"] = _wall_clock(forecast.default_departure(tz))
    st.session_state[f"{key}_zone"] = (tz, True)


def _chosen(key: str, tz: str) -> None:
    st.session_state[f"{key}_zone"] = (tz, False)


def show(
    key: str, tz: str, *, row: bool = False, support: TripSupport | None = None
) -> tuple[pd.Timestamp, float]:
    """Departure (default: now in the model's time zone ``tz``) and threshold T in minutes.

    One under the other, or with ``row=True`` side by side (the Predict page's bar above
    its answer). With ``support``, :func:`day_caution` under them.
    """
    if row:
        when_column, now_column, threshold_column = st.columns(
            [3, 1, 2], vertical_alignment="bottom"
        )
    else:
        when_column = now_column = st
        threshold_column = contextlib.nullcontext()
    zone, is_now = st.session_state.get(f"{key}_zone") or (tz, False)
    if st.session_state.get(f"{key}_when") is None or (is_now and zone != tz):
        _now(key, tz)  # first run, the field cleared, or "now" in another model's zone
    elif zone != tz or f"{key}_zone" not in st.session_state:
        _chosen(key, tz)
    st.session_state.setdefault(f"{key}_threshold", DEFAULT_THRESHOLD_MIN)
    when = when_column.datetime_input(
        f"Departure (local time, {tz})",
        key=f"{key}_when",
        step=300,
        on_change=_chosen,
        args=(key, tz),
        help="Type a date and a time and press Enter, or pick them from the calendar.",
    )
    now_column.button(
        "Leave now",
        key=f"{key}_now",
        on_click=_now,
        args=(key, tz),
        type="tertiary",
        help=f"Now in the model's time zone ({tz})",
    )
    with threshold_column:
        threshold = threshold_input(
            key, help="Probability of arriving within T minutes; on the coverage map, per zone."
        )
    departure = forecast.combine_departure(when.date(), when.time(), tz)
    day_caution(support, departure, tz)
    return departure, threshold


def day_caution(support: TripSupport | None, departure, tz: str) -> None:
    """A warning when the model learned too little of ``departure``'s kind of day
    (:func:`~vrvm.services.map.support.day_note`; nothing without ``support``)."""
    note = "" if support is None else day_note(support, departure, tz)
    if note:
        st.warning(note, icon=":material/event_busy:")


def threshold_input(key: str, help: str | None = None) -> float:
    """The threshold T in minutes (1-240), kept under ``{key}_threshold``."""
    return float(
        st.number_input(
            "Arrive within T (minutes)",
            min_value=1.0,
            max_value=240.0,
            step=1.0,
            key=f"{key}_threshold",
            help=help,
        )
    )
