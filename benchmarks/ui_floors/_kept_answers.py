"""Answers kept across sessions, for the floors that time the page without our work.

:func:`keep_answers` makes :func:`vrvm.services.answers.forecast.answer_od` return the
answer already computed for the same places and departure (in this server process; a
new threshold read from it, as the page does), so that a trip asked once costs the
server nothing of ours the next time: only Streamlit's own work on the page's elements
is left. ``bench_ui.py`` asks every trip of a floor once before it times them.
"""

import pandas as pd
import streamlit as st

from vrvm.services.answers import forecast


@st.cache_resource
def _answers() -> dict:
    return {}


def keep_answers() -> None:
    """Patch ``forecast.answer_od`` (once per process: every rerun runs this again)."""
    computed = getattr(forecast, "_computed_answer_od", forecast.answer_od)
    forecast._computed_answer_od = computed
    answers = _answers()

    def answer_od(model, origin, dest, departure, threshold_min, **kwargs):
        key = (repr(origin), repr(dest), str(pd.Timestamp(departure)))
        answer = answers.get(key)
        if answer is None:
            answer = answers[key] = computed(
                model, origin, dest, departure, threshold_min, **kwargs
            )
        return answer.at_threshold(threshold_min)

    forecast.answer_od = answer_od
