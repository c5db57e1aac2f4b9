"""The answer for one origin-destination pair: numbers, density and time-of-day profile.

The answer card is made to be shown: the answer as one sentence to copy
(:func:`app_ui.share.copy_box`), the intervals and quantiles as small static tables, the
density and the fan chart, each drawn by Vega-Lite on a canvas (:mod:`app_ui.vega_charts`:
no WebGL, no plotly bundle on the Predict page) with a PNG download button under it, the
PNG drawn on the server when the button is clicked. The time-of-day profile depends on
the trip and its day only, so it is cached (``st.cache_data``) and not recomputed while
the clock time or the threshold change.
"""

from __future__ import annotations

from datetime import date

import pandas as pd
import streamlit as st

from app_ui import indices_view, share, vega_charts
from app_ui.context import ModelContext, keep, kept, privacy_note
from vrvm import TravelTimeModel
from vrvm.services.answers import forecast
from vrvm.services.display.text import plain_markdown
from vrvm.services.map import privacy
from vrvm.services.map.places import ODState, Place


def _support_note(answer: forecast.ODAnswer) -> None:
    """How much data stands behind the answer, right under it; a warning when thin."""
    support = answer.support
    spread = answer.spread_sentence()
    if support is None:
        st.caption(
            "The training trips of this model were not kept, so how many of them went "
            "between these places is unknown. " + spread
        )
    elif support.caution:
        title = "Thin data."
        if not support.thin:  # the pair is well travelled, but not on this kind of day
            title = f"{'No' if support.n_day_kind == 0 else 'Few'} trips on a {support.day_kind}."
        st.warning(
            f"**{title}** {plain_markdown(support.sentence())} {spread}",
            icon=":material/warning:",
        )
    else:
        st.caption(f"{plain_markdown(support.sentence())} {spread}")


@st.cache_data(show_spinner=False, max_entries=256)
def _day_profile(
    fingerprint: tuple, origin: Place, dest: Place, day: date, _model: TravelTimeModel
) -> pd.DataFrame:
    """The trip's time-of-day profile on ``day`` (the context's ``fingerprint`` is the
    cache key of ``_model``: its home, version and time zone), without the mean, which the
    fan chart does not show and a recalibrated predictive finds by quadrature (a third
    of the script's time for a new pair, measured)."""
    del fingerprint
    return forecast.time_of_day_profile(_model, origin, dest, day, mean=False)


def show(key: str, ctx: ModelContext, state: ODState, departure, threshold_min: float) -> None:
    """Median, mean, intervals, P(T <= threshold), the density and the daily profile."""
    if not state.complete:
        missing = "an origin and a destination" if state.origin is None else "a destination"
        st.info(f"Choose {missing}: click two zones on the map, or pick them from the lists.")
        return
    local = pd.Timestamp(departure)
    try:
        answer = _answer(key, ctx, state, departure, threshold_min)
    except ValueError as exc:  # places that are not zones of this map: no answer
        st.error(plain_markdown(exc))
        return
    observed, rings = answer.observed, answer.observed_rings
    summary = None
    if ctx.privacy.private:  # counts and quartiles of >= k trips; no trip reaches the page
        summary = privacy.observed_summary(observed, ctx.privacy.min_trips)
        n_observed, observed = len(observed), observed.iloc[0:0]
    result = answer.forecast
    eighty = result.intervals.set_index("level").loc[0.8]
    cols = st.columns(4)
    cols[0].metric(
        "Median",
        f"{result.median_min:.1f} min",
        help="Half of such trips take less, half take more.",
    )
    cols[1].metric(
        "Mean",
        f"{result.mean_min:.1f} min",
        help="Pulled up by the long right tail (occasional large delays).",
    )
    cols[2].metric(
        "80 % interval",
        f"{eighty['lower_min']:.0f}-{eighty['upper_min']:.0f} min",
        help="8 in 10 trips take this long.",
    )
    cols[3].metric(f"P(arrive within {threshold_min:g} min)", f"{100 * result.prob_within:.0f} %")
    # the answer as one sentence with a copy button
    share.copy_box(result.answer_sentence() + (" Synthetic data." if ctx.synthetic else ""))
    _support_note(answer)
    indices_view.show(answer.indices)

    left, right = st.columns([3, 2])
    with left:
        _chart(
            vega_charts.density_chart(
                answer.density,
                result,
                file_name=f"travel_time_density_{local:%Y%m%d_%H%M}",
                synthetic=ctx.synthetic,
            ),
            f"{key}_density",
        )
    with right:
        table = result.intervals.rename(
            columns={
                "interval": "central interval",
                "lower_min": "from (min)",
                "upper_min": "to (min)",
                "width_min": "width (min)",
            }
        ).drop(columns="level")
        st.markdown("**Prediction intervals**")
        st.table(table.style.format(precision=1), hide_index=True, border="horizontal")
        show_quantiles(answer.quantiles)
        st.caption(
            forecast.density_description(result.dist, forest=ctx.model.forest_pooled())
            + " Each chart's :material/download: "
            "PNG button saves it as a picture; the sentence above has a copy button."
        )

    _chart(
        vega_charts.profile_chart(
            answer.profile,
            observed,
            departure_hour=local.hour + local.minute / 60.0,
            file_name=f"travel_time_profile_{local:%Y%m%d}",
            rings=rings,
            synthetic=ctx.synthetic,
            summary=summary,
        ),
        f"{key}_profile",
    )
    weekday = "weekend" if local.dayofweek >= 5 else "weekday"
    note = (
        f"Departures through {local:%A %d %b} ({weekday}), every 15 minutes; bands hold 50, 80 "
        "and 90 % of trips."
    )
    k = ctx.privacy.min_trips
    if summary is not None and len(summary):
        note += (
            f" Boxes: the {int(summary['n'].sum())} observed training trips (all days) of "
            f"this pair per {privacy.OBSERVED_BIN_HOURS} hours of the day, median and "
            f"quartiles, where at least {k} trips fell."
        )
    elif summary is not None and n_observed:
        note += (
            f" Fewer than {k} observed training trips for this pair: in private mode "
            "they are not shown."
        )
    elif len(observed):
        note += f" Dots: {len(observed)} observed training trips (all days) for this pair."
    elif ctx.trips is None:
        note += " The training trips of this model were not kept, so none are overlaid."
    else:
        note += " No training trip joins these two zones."
    st.caption(note)
    privacy_note(ctx)


def _answer(
    key: str, ctx: ModelContext, state: ODState, departure, threshold_min: float
) -> forecast.ODAnswer:
    """The services' answer for the trip in the boxes. A new threshold alone does not
    predict again: the answer kept for the same model, zones, places and departure
    (:func:`app_ui.context.kept`) gives P(T <= threshold) from its distribution."""
    local = pd.Timestamp(departure)
    inputs = (ctx.fingerprint, state.origin, state.dest, local)
    answer = kept(f"{key}_answer", inputs)
    if answer is not None:
        return answer.at_threshold(threshold_min)
    answer = forecast.answer_od(
        ctx.model,
        state.origin,
        state.dest,
        departure,
        threshold_min,
        trips=ctx.trips,
        resolution=ctx.area.resolution,
        area=ctx.area,
        profile=_day_profile(ctx.fingerprint, state.origin, state.dest, local.date(), ctx.model),
    )
    return keep(f"{key}_answer", inputs, answer)


def _chart(chart: vega_charts.VegaChart, key: str) -> None:
    """A chart drawn by Vega-Lite on a canvas and, under it, a button that downloads it as
    a PNG (drawn on the server when clicked, named as plotly's export named it)."""
    st.vega_lite_chart(chart.spec, key=key, width="stretch", height=vega_charts.HEIGHT)
    st.download_button(
        "PNG",
        data=lambda: vega_charts.png_bytes(chart),
        file_name=f"{chart.file_name}.png",
        mime="image/png",
        key=f"{key}_png",
        on_click="ignore",
        icon=":material/download:",
        type="tertiary",
        help="The chart as a picture for a slide.",
    )


def show_quantiles(quantiles: pd.DataFrame) -> None:
    """The travel-time quantiles (columns ``q`` and ``minutes``) as a small static table
    (``st.table``, like the intervals': a few rows need no data grid, whose script a new
    tab would load and whose canvas each new answer would draw)."""
    shown = quantiles.assign(quantile=[f"{100 * q:g} %" for q in quantiles["q"]])
    st.markdown("**Quantiles**")
    st.table(
        shown[["quantile", "minutes"]].style.format(precision=1),
        hide_index=True,
        border="horizontal",
    )
