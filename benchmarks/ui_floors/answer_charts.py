"""The answer's two charts drawn by other renderers than plotly, for the floors of
``bench_ui.py --floors`` (issue 37): Vega-Lite (``st.vega_lite_chart``, canvas renderer)
and Streamlit's native charts (``st.line_chart``).

The same content as :func:`app_ui.charts.density_figure` and
:func:`app_ui.charts.profile_figure` as far as each renderer can show it, from the same
data (``answer.density``, ``answer.profile``, the observed trips). :func:`use` routes
the two ``st.plotly_chart`` calls of :func:`app_ui.forecast_view.show` to one of them,
so that everything else the answer shows (metrics, sentence, tables, captions) is the
page's own, unchanged.

Vega-Lite: the product's specs, :mod:`app_ui.vega_charts` (a constant layout, the
answer in named datasets that Streamlit changes in place), each chart with a deferred
PNG download button under it (the file drawn by vl-convert when clicked, named as
plotly's export names it), as the Predict page would draw them. Streamlit's native
charts show lines (and points, areas, bars) of columns only: no shaded interval bands,
no vertical lines for the median, the threshold or the departure, no annotations, no
title, no observed trips over the profile's lines; what they cannot show is said under
them.
"""

from __future__ import annotations

import types

import pandas as pd
import streamlit as st

from app_ui import charts, forecast_view, vega_charts

HEIGHT = vega_charts.HEIGHT


def _rgba(alpha: float) -> str:
    return f"rgba(27, 79, 114, {alpha})"


def _vega_lite(chart: vega_charts.VegaChart, key: str) -> None:
    """The chart, and under it a button that downloads it as a PNG (drawn when clicked)."""
    st.vega_lite_chart(chart.spec, key=key, width="stretch", height=HEIGHT)
    st.download_button(
        "PNG",
        data=lambda: vega_charts.png_bytes(chart),
        file_name=f"{chart.file_name}.png",
        mime="image/png",
        key=f"{key}_png",
        on_click="ignore",
        icon=":material/download:",
        type="tertiary",
    )


def _native_density(curve: pd.DataFrame, forecast, synthetic: bool) -> None:
    members = [c for c in curve.columns if c.startswith("member_")]
    frame = curve[["minutes", "density", *members]].rename(
        columns={"density": "predictive density"}
    )
    st.markdown("**Predictive distribution of the travel time**")
    st.line_chart(
        frame,
        x="minutes",
        y=["predictive density", *members],
        color=[charts.MIXTURE, *[charts.MEMBER] * len(members)],
        x_label="travel time (minutes)",
        y_label="probability per minute",
        height=HEIGHT - 60,
    )
    st.caption(
        f"Median {forecast.median_min:.1f} min; P(≤ {forecast.threshold_min:g} min) = "
        f"{100 * forecast.prob_within:.0f} % (no lines or shaded intervals in a native chart)."
        + (f" {charts.SYNTHETIC_NOTE}" if synthetic else "")
    )


def _native_profile(profile: pd.DataFrame, synthetic: bool) -> None:
    columns = [c for c in ("q05", "q25", "q50", "q75", "q95") if c in profile]
    st.markdown("**Time-of-day profile of the same trip**")
    st.line_chart(
        profile[["hour", *columns]],
        x="hour",
        y=columns,
        color=[_rgba(0.35), _rgba(0.6), charts.MIXTURE, _rgba(0.6), _rgba(0.35)][: len(columns)],
        x_label="departure hour (local time)",
        y_label="travel time (minutes)",
        height=HEIGHT - 60,
    )
    st.caption(
        "Quantile lines 5-95 % (no shaded bands, departure line or observed trips in a "
        "native chart)." + (f" {charts.SYNTHETIC_NOTE}" if synthetic else "")
    )


class _Drawn:
    """What a stand-in figure function returns: the chart to draw, for ``plotly_chart``
    (``draw(key, file_name)``: the file name of plotly's export config)."""

    def __init__(self, draw) -> None:
        self.draw = draw


def use(renderer: str) -> None:
    """Route :func:`app_ui.forecast_view.show`'s two charts to ``renderer``.

    ``"vega-lite"`` or ``"native"``. The view's ``charts`` and ``st`` are replaced in
    that module by stand-ins: the figure functions return what to draw, and
    ``plotly_chart`` draws it; every other call goes to Streamlit unchanged.
    """
    if renderer not in ("vega-lite", "native"):
        raise ValueError(f"renderer must be 'vega-lite' or 'native', not {renderer!r}")

    def density_figure(curve, forecast, *, synthetic=False):
        if renderer == "native":
            return _Drawn(lambda key, name: _native_density(curve, forecast, synthetic))
        return _Drawn(
            lambda key, name: _vega_lite(
                vega_charts.density_chart(curve, forecast, file_name=name, synthetic=synthetic),
                key,
            )
        )

    def profile_figure(
        profile, observed, *, departure_hour, rings=0, synthetic=False, summary=None
    ):
        if renderer == "native":
            return _Drawn(lambda key, name: _native_profile(profile, synthetic))
        return _Drawn(
            lambda key, name: _vega_lite(
                vega_charts.profile_chart(
                    profile,
                    observed,
                    departure_hour=departure_hour,
                    file_name=name,
                    rings=rings,
                    synthetic=synthetic,
                    summary=summary,
                ),
                key,
            )
        )

    def plotly_chart(figure, *, key, config=None, **_):
        figure.draw(key, (config or {}).get("toImageButtonOptions", {}).get("filename", key))

    forecast_view.charts = types.SimpleNamespace(
        density_figure=density_figure,
        profile_figure=profile_figure,
        export_config=charts.export_config,
    )
    forecast_view.st = types.SimpleNamespace(
        **{name: getattr(st, name) for name in dir(st) if not name.startswith("__")}
    )
    forecast_view.st.plotly_chart = plotly_chart


__all__ = ["use"]
