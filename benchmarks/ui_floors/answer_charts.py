"""The answer's two charts drawn by other renderers than the page's, for the floors of
``bench_ui.py --floors`` (issue 37): plotly (the page's charts before issue 37) and
Streamlit's native charts (``st.line_chart``).

The page draws them with Vega-Lite (:mod:`app_ui.vega_charts`, through
``forecast_view``); :func:`use` routes those two charts to another renderer, from the
same data (``answer.density``, ``answer.profile``, the observed trips), so that
everything else the answer shows (metrics, sentence, tables, captions) is the page's
own, unchanged. Streamlit's native charts show lines (and points, areas, bars) of
columns only: no shaded interval bands, no vertical lines for the median, the threshold
or the departure, no annotations, no title, no observed trips over the profile's lines;
what they cannot show is said under them.
"""

from __future__ import annotations

import types

import pandas as pd
import streamlit as st

from app_ui import charts, forecast_view, vega_charts

HEIGHT = vega_charts.HEIGHT


def _rgba(alpha: float) -> str:
    return f"rgba(27, 79, 114, {alpha})"


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
    """What a stand-in chart function puts in place of a Vega-Lite spec: the chart to draw
    (``draw(key)``), for the ``vega_lite_chart`` stand-in."""

    def __init__(self, draw) -> None:
        self.draw = draw


def use(renderer: str) -> None:
    """Route :func:`app_ui.forecast_view.show`'s two charts to ``renderer``.

    ``"plotly"`` or ``"native"``. The view's ``vega_charts`` and ``st`` are replaced in
    that module by stand-ins: the chart functions return what to draw in place of a
    spec, ``vega_lite_chart`` draws it, and the PNG buttons are left out (plotly has its
    own export); every other call goes to Streamlit unchanged.
    """
    if renderer not in ("plotly", "native"):
        raise ValueError(f"renderer must be 'plotly' or 'native', not {renderer!r}")

    def density_chart(curve, forecast, *, file_name, synthetic=False):
        if renderer == "native":
            drawn = _Drawn(lambda key: _native_density(curve, forecast, synthetic))
        else:
            figure = charts.density_figure(curve, forecast, synthetic=synthetic)
            drawn = _Drawn(lambda key: _plotly(figure, key, file_name))
        return vega_charts.VegaChart(spec=drawn, file_name=file_name)

    def profile_chart(
        profile, observed, *, departure_hour, file_name, rings=0, synthetic=False, summary=None
    ):
        if renderer == "native":
            drawn = _Drawn(lambda key: _native_profile(profile, synthetic))
        else:
            figure = charts.profile_figure(
                profile,
                observed,
                departure_hour=departure_hour,
                rings=rings,
                synthetic=synthetic,
                summary=summary,
            )
            drawn = _Drawn(lambda key: _plotly(figure, key, file_name))
        return vega_charts.VegaChart(spec=drawn, file_name=file_name)

    def vega_lite_chart(spec, *, key=None, **kwargs):
        if isinstance(spec, _Drawn):
            return spec.draw(key)
        return st.vega_lite_chart(spec, key=key, **kwargs)

    def download_button(label, data=None, *, key=None, **kwargs):
        if key is not None and key.endswith("_png"):
            return False  # the chart's PNG button: plotly's export, or none
        return st.download_button(label, data, key=key, **kwargs)

    forecast_view.vega_charts = types.SimpleNamespace(
        density_chart=density_chart,
        profile_chart=profile_chart,
        VegaChart=vega_charts.VegaChart,
        HEIGHT=vega_charts.HEIGHT,
    )
    forecast_view.st = types.SimpleNamespace(
        **{name: getattr(st, name) for name in dir(st) if not name.startswith("__")}
    )
    forecast_view.st.vega_lite_chart = vega_lite_chart
    forecast_view.st.download_button = download_button


def _plotly(figure, key: str, file_name: str) -> None:
    st.plotly_chart(figure, key=key, width="stretch", config=charts.export_config(file_name))


__all__ = ["use"]
