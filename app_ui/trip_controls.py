"""Departure date and time, and the arrival-time threshold.

State keys: ``{key}_date``, ``{key}_time`` (departure, local to the model's time zone),
``{key}_threshold`` (minutes).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from vrvm.services import forecast

DEFAULT_THRESHOLD_MIN = 15.0


def set_values(
    key: str, *, departure: pd.Timestamp | None = None, threshold_min: float | None = None
) -> None:
    """Preset the widgets (from a shared link); call before :func:`show`."""
    if departure is not None:
        st.session_state[f"{key}_date"] = departure.date()
        st.session_state[f"{key}_time"] = departure.time().replace(second=0, microsecond=0)
    if threshold_min is not None:
        st.session_state[f"{key}_threshold"] = float(threshold_min)


def _now(key: str, tz: str) -> None:
    now = forecast.default_departure(tz)
    st.session_state[f"{key}_date"] = now.date()
    st.session_state[f"{key}_time"] = now.time()


def show(key: str, tz: str) -> tuple[pd.Timestamp, float]:
    """Departure (default: now in the model's time zone) and threshold T in minutes."""
    if f"{key}_date" not in st.session_state or f"{key}_time" not in st.session_state:
        _now(key, tz)
    st.session_state.setdefault(f"{key}_threshold", DEFAULT_THRESHOLD_MIN)
    left, right = st.columns([3, 2])
    day = left.date_input("Departure date", key=f"{key}_date")
    clock = right.time_input("Time", key=f"{key}_time", step=300)
    st.button(
        "Leave now",
        key=f"{key}_now",
        on_click=_now,
        args=(key, tz),
        type="tertiary",
        help=f"Now in the model's time zone ({tz})",
    )
    threshold = threshold_input(
        key, help="Probability of arriving within T minutes; on the coverage map, per zone."
    )
    return forecast.combine_departure(day, clock, tz), threshold


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
