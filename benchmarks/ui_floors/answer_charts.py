"""The answer's two charts drawn by other renderers than plotly, for the floors of
``bench_ui.py --floors`` (issue 37): Vega-Lite (``st.vega_lite_chart``, canvas renderer)
and Streamlit's native charts (``st.line_chart``).

The same content as :func:`app_ui.charts.density_figure` and
:func:`app_ui.charts.profile_figure` as far as each renderer can show it, from the same
data (``answer.density``, ``answer.profile``, the observed trips). :func:`use` routes
the two ``st.plotly_chart`` calls of :func:`app_ui.forecast_view.show` to one of them,
so that everything else the answer shows (metrics, sentence, tables, captions) is the
page's own, unchanged.

Vega-Lite has no band across the whole height without a y encoding, no text
background and no "x unified" hover: the intervals are rectangles from the axis to the
top of the y scale, the labels stand without a background, and a nearest-point rule
with a tooltip stands for the unified hover. Streamlit's native charts show lines (and
points, areas, bars) of columns only: no shaded interval bands, no vertical lines for
the median, the threshold or the departure, no annotations, no title, no observed
trips over the profile's lines; what they cannot show is said under them.
"""

from __future__ import annotations

import types

import pandas as pd
import streamlit as st

from app_ui import charts, forecast_view

CANVAS = {"embedOptions": {"renderer": "canvas"}}
HEIGHT = 400


def _rgba(alpha: float) -> str:
    return f"rgba(27, 79, 114, {alpha})"


def _title(text: str, synthetic: bool) -> dict:
    title = {"text": text, "anchor": "start", "fontSize": 15, "fontWeight": "normal", "limit": 2000}
    if synthetic:  # where plotly puts it: the title's band, right-aligned (as a subtitle)
        title["subtitle"] = charts.SYNTHETIC_NOTE
        title["subtitleColor"] = "#b03a2e"
        title["subtitleFontSize"] = 11
    return title


def _legend_colour(domain: list[str], colours: list[str]) -> dict:
    return {
        "field": "series",
        "type": "nominal",
        "scale": {"domain": domain, "range": colours},
        "legend": {
            "orient": "bottom",
            "title": None,
            "direction": "horizontal",
            "columns": 2,
            "labelLimit": 400,
        },
    }


def _round(frame: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    return frame.astype(float).round(digits)


def density_spec(curve: pd.DataFrame, forecast, *, synthetic: bool) -> dict:
    """The predictive density, its members, the shaded intervals, median and threshold."""
    top = float(curve["density"].max()) * 1.08
    intervals = forecast.intervals.sort_values("level", ascending=False)
    bands = pd.DataFrame(
        {
            "series": [f"{name} interval" for name in intervals["interval"]],
            "lower": intervals["lower_min"].astype(float).to_numpy(),
            "upper": intervals["upper_min"].astype(float).to_numpy(),
        }
    )
    band_colours = [_rgba(charts.BAND_ALPHA.get(lv, 0.12)) for lv in intervals["level"]]
    members = [c for c in curve.columns if c.startswith("member_")]
    long = curve.melt(id_vars="minutes", value_vars=members, var_name="member", value_name="d")
    long["series"] = "ensemble members (each / M)"
    main = _round(curve[["minutes", "density"]]).assign(series="predictive density")
    domain = [*bands["series"], "ensemble members (each / M)", "predictive density"]
    colour = _legend_colour(domain, [*band_colours, charts.MEMBER, charts.MIXTURE])
    x = {"field": "minutes", "type": "quantitative", "title": "travel time (minutes)"}
    y_scale = {"domain": [0, top * 1.05], "nice": False}
    median, threshold = forecast.median_min, forecast.threshold_min
    right = threshold >= median
    marks = pd.DataFrame({"x": [median, threshold]})
    layers = [
        {
            "data": {"values": bands.to_dict("records")},
            "mark": {"type": "rect"},
            "encoding": {
                "x": {"field": "lower", "type": "quantitative"},
                "x2": {"field": "upper"},
                "color": colour,
            },
        },
        {
            "data": {
                "values": _round(long[["minutes", "d"]], 3)
                .assign(member=long["member"].to_numpy(), series=long["series"].to_numpy())
                .to_dict("records")
            },
            "mark": {"type": "line", "strokeWidth": 1},
            "encoding": {
                "x": x,
                "y": {"field": "d", "type": "quantitative", "scale": y_scale},
                "detail": {"field": "member"},
                "color": colour,
            },
        },
        {
            "data": {"values": main.to_dict("records")},
            "layer": [
                {
                    "mark": {"type": "line", "strokeWidth": 3},
                    "encoding": {
                        "x": x,
                        "y": {
                            "field": "density",
                            "type": "quantitative",
                            "title": "probability per minute",
                            "scale": y_scale,
                        },
                        "color": colour,
                    },
                },
                {  # what plotly's "x unified" hover shows: the nearest minute's density
                    "params": [
                        {
                            "name": "hover",
                            "select": {
                                "type": "point",
                                "on": "pointermove",
                                "nearest": True,
                                "fields": ["minutes"],
                                "clear": "pointerout",
                            },
                        }
                    ],
                    "mark": {"type": "rule", "color": "#888"},
                    "encoding": {
                        "x": x,
                        "opacity": {
                            "condition": {"param": "hover", "empty": False, "value": 1},
                            "value": 0,
                        },
                        "tooltip": [
                            {"field": "minutes", "format": ".1f", "title": "min"},
                            {"field": "density", "format": ".3f", "title": "per min"},
                        ],
                    },
                },
            ],
        },
        {
            "data": {"values": marks.iloc[[0]].to_dict("records")},
            "mark": {"type": "rule", "color": charts.MIXTURE, "strokeDash": [5, 4]},
            "encoding": {"x": {"field": "x", "type": "quantitative"}},
        },
        {
            "data": {"values": marks.iloc[[1]].to_dict("records")},
            "mark": {"type": "rule", "color": charts.DEST, "strokeWidth": 2},
            "encoding": {"x": {"field": "x", "type": "quantitative"}},
        },
        {
            "data": {
                "values": [
                    {"x": median, "y": top, "text": f"median {median:.1f}"},
                ]
            },
            "mark": {
                "type": "text",
                "align": "right" if right else "left",
                "dx": -4 if right else 4,
                "baseline": "bottom",
                "color": charts.MIXTURE,
                "fontSize": 11,
            },
            "encoding": {
                "x": {"field": "x", "type": "quantitative"},
                "y": {"field": "y", "type": "quantitative", "scale": y_scale},
                "text": {"field": "text"},
            },
        },
        {
            "data": {
                "values": [
                    {
                        "x": threshold,
                        "y": top * 0.86,
                        "text": f"P(≤ {threshold:g} min) = {100 * forecast.prob_within:.0f} %",
                    }
                ]
            },
            "mark": {
                "type": "text",
                "align": "left" if right else "right",
                "dx": 4 if right else -4,
                "color": charts.DEST,
                "fontSize": 11,
            },
            "encoding": {
                "x": {"field": "x", "type": "quantitative"},
                "y": {"field": "y", "type": "quantitative", "scale": y_scale},
                "text": {"field": "text"},
            },
        },
    ]
    return {
        "title": _title("Predictive distribution of the travel time", synthetic),
        "usermeta": CANVAS,
        "layer": layers,
    }


def profile_spec(
    profile: pd.DataFrame,
    observed: pd.DataFrame,
    *,
    departure_hour: float,
    rings: int = 0,
    synthetic: bool,
    summary: pd.DataFrame | None = None,
) -> dict:
    """Fan chart of the quantiles over the day, observed trips on top, the departure."""
    bands = (
        ("q05", "q95", 0.12, "90 % band"),
        ("q10", "q90", 0.18, "80 % band"),
        ("q25", "q75", 0.30, "50 % band"),
    )
    where = "this zone pair" if rings == 0 else f"zones within {rings} ring(s) of the pair"
    dots = f"observed training trips ({where})"
    boxes = f"observed trips, median and quartiles ({where})"
    shown = [b for b in bands if b[0] in profile and b[1] in profile]
    domain = [name for *_, name in shown] + ["median"]
    colours = [_rgba(alpha) for _, _, alpha, _ in shown] + [charts.MIXTURE]
    if len(observed):
        domain, colours = [*domain, dots], [*colours, charts.DEST]
    if summary is not None and len(summary):
        domain, colours = [*domain, boxes], [*colours, charts.DEST]
    colour = _legend_colour(domain, colours)
    x = {
        "field": "hour",
        "type": "quantitative",
        "title": "departure hour (local time)",
        "scale": {"domain": [0, 24], "nice": False},
        "axis": {"values": list(range(0, 25, 3))},
    }
    y_title = "travel time (minutes)"
    columns = ["hour", *{c for lo, hi, *_ in shown for c in (lo, hi)}, "q50"]
    data = _round(profile[columns])
    layers = [
        {
            "data": {"values": data.assign(series=name).to_dict("records")},
            "mark": {"type": "area"},
            "encoding": {
                "x": x,
                "y": {"field": lo, "type": "quantitative", "title": y_title},
                "y2": {"field": hi},
                "color": colour,
            },
        }
        for lo, hi, _, name in shown
    ]
    layers.append(
        {
            "data": {"values": data[["hour", "q50"]].assign(series="median").to_dict("records")},
            "mark": {"type": "line", "strokeWidth": 3},
            "encoding": {
                "x": x,
                "y": {"field": "q50", "type": "quantitative", "title": y_title},
                "color": colour,
                "tooltip": [
                    {"field": "hour", "format": ".2f", "title": "hour"},
                    {"field": "q50", "format": ".1f", "title": "median (min)"},
                ],
            },
        }
    )
    if len(observed):
        points = _round(observed[["hour", "minutes"]]).assign(series=dots)
        layers.append(
            {
                "data": {"values": points.to_dict("records")},
                "mark": {
                    "type": "circle",
                    "size": 45,
                    "opacity": 0.75,
                    "stroke": "white",
                    "strokeWidth": 0.5,
                },
                "encoding": {
                    "x": x,
                    "y": {"field": "minutes", "type": "quantitative"},
                    "color": colour,
                    "tooltip": [
                        {"field": "hour", "format": ".2f"},
                        {"field": "minutes", "format": ".1f", "title": "observed (min)"},
                    ],
                },
            }
        )
    if summary is not None and len(summary):
        rows = _round(summary[["hour", "median", "q25", "q75", "n"]]).assign(series=boxes)
        layers.append(
            {
                "data": {"values": rows.to_dict("records")},
                "layer": [
                    {
                        "mark": {"type": "rule", "strokeWidth": 2},
                        "encoding": {
                            "x": x,
                            "y": {"field": "q25", "type": "quantitative"},
                            "y2": {"field": "q75"},
                            "color": colour,
                        },
                    },
                    {
                        "mark": {"type": "square", "size": 110, "opacity": 1},
                        "encoding": {
                            "x": x,
                            "y": {"field": "median", "type": "quantitative"},
                            "color": colour,
                            "tooltip": [
                                {"field": "n", "title": "trips"},
                                {"field": "median", "format": ".0f"},
                                {"field": "q25", "format": ".0f"},
                                {"field": "q75", "format": ".0f"},
                            ],
                        },
                    },
                ],
            }
        )
    layers.append(
        {
            "data": {"values": [{"hour": float(departure_hour)}]},
            "mark": {"type": "rule", "color": "#444", "strokeDash": [2, 3], "strokeWidth": 1.5},
            "encoding": {"x": {"field": "hour", "type": "quantitative"}},
        }
    )
    return {
        "title": _title("Time-of-day profile of the same trip", synthetic),
        "usermeta": CANVAS,
        "layer": layers,
    }


def _vega_lite(spec: dict, key: str) -> None:
    st.vega_lite_chart(spec, key=key, width="stretch", height=HEIGHT)


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
    """What a stand-in figure function returns: the chart to draw, for ``plotly_chart``."""

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
            return _Drawn(lambda key: _native_density(curve, forecast, synthetic))
        spec = density_spec(curve, forecast, synthetic=synthetic)
        return _Drawn(lambda key: _vega_lite(spec, key))

    def profile_figure(
        profile, observed, *, departure_hour, rings=0, synthetic=False, summary=None
    ):
        if renderer == "native":
            return _Drawn(lambda key: _native_profile(profile, synthetic))
        spec = profile_spec(
            profile,
            observed,
            departure_hour=departure_hour,
            rings=rings,
            synthetic=synthetic,
            summary=summary,
        )
        return _Drawn(lambda key: _vega_lite(spec, key))

    def plotly_chart(figure, *, key, **_):
        figure.draw(key)

    forecast_view.charts = types.SimpleNamespace(
        density_figure=density_figure,
        profile_figure=profile_figure,
        export_config=charts.export_config,
    )
    forecast_view.st = types.SimpleNamespace(
        **{name: getattr(st, name) for name in dir(st) if not name.startswith("__")}
    )
    forecast_view.st.plotly_chart = plotly_chart


__all__ = ["density_spec", "profile_spec", "use"]
