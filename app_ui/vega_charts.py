"""Vega-Lite specs of the answer's two charts (no Streamlit here: the components show them).

The same content as :func:`app_ui.charts.density_figure` and
:func:`app_ui.charts.profile_figure`, as plain Vega-Lite 6 dicts (the version that
Streamlit 1.67's frontend draws) on a canvas: no WebGL, no plotly bundle (issue 37).
The predictive density with its members, the shaded central intervals, the median and
the threshold with their labels and a hover read-out of the nearest minute; the
time-of-day fan chart with its median, the observed trips (dots, or in private mode
medians and quartiles per time-of-day bin) and the departure; each with the
synthetic-data note in its title band and a legend below.

What makes them cheap, measured in ``BENCHMARKS.md`` (issue 37):

* **A constant layout, the answer in named datasets.** Every number that changes with
  the trip (curves, bands, lines, label texts and positions) is a row of a dataset in
  ``spec["datasets"]``, referenced by name; the rest of the spec depends only on what
  is shown (the interval levels, the number of members, dots or boxes, the synthetic
  note). ``st.vega_lite_chart`` sends such datasets as Arrow beside the spec, and its
  frontend, seeing the same spec again, changes the data of the drawn view in place
  instead of compiling and embedding a new one (the larger part of a new chart's time
  in the browser). The PNG file name goes to ``usermeta`` only, which Streamlit's
  frontend drops before it compares specs.
* **Few, rounded numbers.** At most :data:`DENSITY_POINTS` points per density curve
  (plotly's figure sends 300), four significant digits, rows built from numpy arrays
  without pandas (a few milliseconds for both charts; no Altair).

Vega-Lite has no text background: the median's and P(T <= threshold)'s labels stand on
a white halo (the same text stroked white beneath) instead, on the far sides of their
lines as in plotly's figure. The interval bands span the plot's height (rectangles with
no y encoding).

The PNG export. ``st.vega_lite_chart`` (Streamlit 1.67) hides vega-embed's actions
menu (``actions: false``) and keeps only ``theme``, ``renderer`` and ``padding`` of
``usermeta.embedOptions``: its own toolbar's "Download as PNG" names every file
``<date>T<time>_chart.png``. :func:`png_bytes` draws a spec server-side with
vl-convert (an optional dependency, imported when called) for a download button that
keeps plotly's file names (:attr:`VegaChart.file_name`); a deferred button calls it only
when clicked.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from app_ui.charts import BAND_ALPHA, DEST, MEMBER, MIXTURE, SYNTHETIC_NOTE
from vrvm.services.answers.forecast import ODForecast

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
HEIGHT = 400
"""Pixels, as plotly's figures."""
DENSITY_POINTS = 150
"""Points per density curve at most (a curve on a chart some 600 pixels wide)."""
HALO = {"stroke": "white", "strokeWidth": 4, "strokeOpacity": 0.85, "strokeJoin": "round"}
"""Beneath a label: what plotly's ``bgcolor`` does, readable over the shaded intervals."""
LABEL_ROOM = 0.25
"""Room for a label beside its line, as a fraction of the density curve's span (its
text, some 120 pixels, on a plot some 500 wide): the x axis reaches that far."""
PROFILE_BANDS = (
    ("q05", "q95", 0.12, "90 % band"),
    ("q10", "q90", 0.18, "80 % band"),
    ("q25", "q75", 0.30, "50 % band"),
)


@dataclass(frozen=True)
class VegaChart:
    """A Vega-Lite chart and the name of its PNG file.

    Attributes
    ----------
    spec : dict
        A whole Vega-Lite 6 spec, JSON-serialisable; its data are the named datasets in
        ``spec["datasets"]``.
    file_name : str
        The PNG's file name without extension (plotly's export names the same chart's
        file so: :func:`app_ui.charts.export_config`).
    """

    spec: dict
    file_name: str


def _rgba(alpha: float) -> str:
    return f"rgba(27, 79, 114, {alpha})"


def _rounded(values, digits: int = 4) -> list:
    """``values`` to ``digits`` significant digits, as Python floats (None if not finite)."""
    array = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.floor(np.log10(np.abs(array)))
    scale = np.where(np.isfinite(scale), scale, 0.0)
    factor = 10.0 ** (digits - 1 - scale)
    out = np.round(array * factor) / factor
    return [v if math.isfinite(v) else None for v in out.tolist()]


def _rows(**columns) -> list[dict]:
    """Records from equally long columns (lists or scalars repeated)."""
    n = max(len(v) for v in columns.values() if isinstance(v, list))
    lists = {k: v if isinstance(v, list) else [v] * n for k, v in columns.items()}
    return [dict(zip(lists, values, strict=True)) for values in zip(*lists.values(), strict=True)]


def _title(text: str, synthetic: bool) -> dict:
    title = {"text": text, "anchor": "start", "fontSize": 15, "fontWeight": "normal"}
    if synthetic:  # where plotly puts it: the title's band, above the plot
        title.update(subtitle=SYNTHETIC_NOTE, subtitleColor="#b03a2e", subtitleFontSize=11)
    return title


def _colour(domain: list[str], colours: list[str]) -> dict:
    """The shared colour scale, its legend below the plot (as plotly's)."""
    return {
        "type": "nominal",
        "scale": {"domain": domain, "range": colours},
        "legend": {
            "orient": "bottom",
            "title": None,
            "direction": "horizontal",
            "columns": 3,
            "labelLimit": 400,
            "symbolType": "square",
        },
    }


def _series(name: str) -> dict:
    """A layer's ``series`` field, the name of what it draws in the colour legend (a
    ``datum`` colour cannot carry the shared scale and legend)."""
    return {"calculate": json.dumps(name), "as": "series"}


def _chart(title: dict, layers: list, datasets: dict, file_name: str) -> VegaChart:
    spec = {
        "$schema": SCHEMA,
        "title": title,
        "height": HEIGHT,
        "usermeta": {
            "embedOptions": {
                "renderer": "canvas",
                # vega-embed's PNG export outside Streamlit (which drops both)
                "downloadFileName": file_name,
                "actions": {"export": True, "source": False, "compiled": False, "editor": False},
            }
        },
        "layer": layers,
        "datasets": datasets,
    }
    return VegaChart(spec=spec, file_name=file_name)


def _thinned(curve: pd.DataFrame) -> pd.DataFrame:
    step = max(1, math.ceil(len(curve) / DENSITY_POINTS))
    return curve if step == 1 else curve.iloc[::step]


def _label_layers(dataset: str, x: dict, y: dict) -> list[dict]:
    """Text labels of ``dataset`` (``x``, ``y``, ``text``, ``align``, ``colour``, ``edge``):
    a white halo under each, left- or right-aligned by its row (a mark's align is not a
    channel); and an invisible point at each row's ``edge`` and ``y``, so that the axes
    hold every label (the x axis its far end, the y axis its height)."""
    layers = [
        {
            "data": {"name": dataset},
            "mark": {"type": "point", "opacity": 0},
            "encoding": {"x": {**x, "field": "edge"}, "y": y},
        }
    ]
    for align, dx in (("left", 4), ("right", -4)):
        for halo in (True, False):
            mark = {"type": "text", "align": align, "dx": dx, "baseline": "bottom", "fontSize": 11}
            colour = {"field": "colour", "type": "nominal", "scale": None, "legend": None}
            layers.append(
                {
                    "data": {"name": dataset},
                    "transform": [{"filter": f"datum.align === '{align}'"}],
                    "mark": {**mark, **HALO} if halo else mark,
                    "encoding": {
                        "x": x,
                        "y": y,
                        "text": {"field": "text", "type": "nominal"},
                        "color": {"value": "white"} if halo else colour,
                    },
                }
            )
    return layers


def density_chart(
    curve: pd.DataFrame, forecast: ODForecast, *, file_name: str, synthetic: bool = False
) -> VegaChart:
    """The predictive density, its members (faint), the shaded intervals, the median and
    P(T <= threshold) (:func:`app_ui.charts.density_figure` in Vega-Lite).

    Parameters
    ----------
    curve : pandas.DataFrame
        :func:`vrvm.services.answers.forecast.density_curve` (``minutes``, ``density``,
        ``member_0``, ...).
    forecast : ODForecast
        The answer: intervals, median, threshold and P(T <= threshold).
    file_name : str
        The PNG's file name, without extension.
    synthetic : bool, default=False
        Say in the title band that the data are synthetic.

    Returns
    -------
    VegaChart
        Datasets ``bands`` (``series``, ``lower``, ``upper``), ``members`` (``minutes``,
        ``d``, ``member``), ``density`` (``minutes``, ``density``), ``lines`` (``x``,
        ``what``) and ``labels`` (``x``, ``y``, ``text``, ``align``, ``what``).
    """
    thin = _thinned(curve)
    minutes = _rounded(thin["minutes"])
    density = _rounded(thin["density"])
    members = [c for c in curve.columns if c.startswith("member_")]
    intervals = forecast.intervals.sort_values("level", ascending=False)
    band_names = [f"{name} interval" for name in intervals["interval"]]
    member_name = "ensemble members (each / M)"
    colour = _colour(
        [*band_names, member_name, "predictive density"],
        [*(_rgba(BAND_ALPHA.get(lv, 0.12)) for lv in intervals["level"]), MEMBER, MIXTURE],
    )
    finite = [d for d in density if d is not None]
    top = 1.08 * max(finite, default=1.0)
    median, threshold = float(forecast.median_min), float(forecast.threshold_min)
    right = threshold >= median  # the labels go to the far sides of their lines
    room = LABEL_ROOM * (float(thin["minutes"].max()) - float(thin["minutes"].min()))
    datasets = {
        "bands": _rows(
            series=band_names,
            lower=_rounded(intervals["lower_min"]),
            upper=_rounded(intervals["upper_min"]),
        ),
        "members": [
            {"minutes": x, "d": d, "member": i}
            for i, column in enumerate(members)
            for x, d in zip(minutes, _rounded(thin[column], 3), strict=True)
        ],
        "density": _rows(minutes=minutes, density=density),
        "lines": _rows(x=_rounded([median, threshold]), what=["median", "threshold"]),
        "labels": [
            {
                "x": _rounded([median])[0],
                "y": top,
                "text": f"median {median:.1f}",
                "align": "right" if right else "left",
                "colour": MIXTURE,
                "edge": _rounded([median - room if right else median + room])[0],
            },
            {
                "x": _rounded([threshold])[0],
                "y": 0.86 * top,
                "text": f"P(≤ {threshold:g} min) = {100 * forecast.prob_within:.0f} %",
                "align": "left" if right else "right",
                "colour": DEST,
                "edge": _rounded([threshold + room if right else threshold - room])[0],
            },
            # the top of the y axis, above the median's label (plotly's range)
            {
                "x": _rounded([median])[0],
                "y": 1.05 * top,
                "text": "",
                "align": "",
                "colour": "",
                "edge": _rounded([median])[0],
            },
        ],
    }
    x_title, y_title = "travel time (minutes)", "probability per minute"
    x_scale, y_scale = {"zero": False}, {"zero": True, "nice": False}

    def qx(field: str) -> dict:  # every layer's axis title the same: one title shown
        return {"field": field, "type": "quantitative", "title": x_title, "scale": x_scale}

    def qy(field: str) -> dict:
        return {"field": field, "type": "quantitative", "title": y_title, "scale": y_scale}

    layers = [
        {
            "data": {"name": "bands"},
            "mark": {"type": "rect"},
            "encoding": {
                "x": qx("lower"),
                "x2": {"field": "upper"},
                "color": {"field": "series", **colour},
            },
        },
        {
            "data": {"name": "members"},
            "transform": [_series(member_name)],
            "mark": {"type": "line", "strokeWidth": 1},
            "encoding": {
                "x": qx("minutes"),
                "y": qy("d"),
                "detail": {"field": "member", "type": "nominal"},
                "color": {"field": "series", **colour},
            },
        },
        {
            "data": {"name": "density"},
            "transform": [_series("predictive density")],
            "mark": {"type": "line", "strokeWidth": 3},
            "encoding": {
                "x": qx("minutes"),
                "y": qy("density"),
                "color": {"field": "series", **colour},
            },
        },
        {  # plotly's "x unified" hover: the nearest minute's density
            "data": {"name": "density"},
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
                "x": qx("minutes"),
                "opacity": {
                    "condition": {"param": "hover", "empty": False, "value": 1},
                    "value": 0,
                },
                "tooltip": [
                    {"field": "minutes", "type": "quantitative", "format": ".1f", "title": "min"},
                    {
                        "field": "density",
                        "type": "quantitative",
                        "format": ".3f",
                        "title": "per min",
                    },
                ],
            },
        },
        {
            "data": {"name": "lines"},
            "transform": [{"filter": "datum.what === 'median'"}],
            "mark": {"type": "rule", "color": MIXTURE, "strokeDash": [5, 4], "strokeWidth": 1.5},
            "encoding": {"x": qx("x")},
        },
        {
            "data": {"name": "lines"},
            "transform": [{"filter": "datum.what === 'threshold'"}],
            "mark": {"type": "rule", "color": DEST, "strokeWidth": 2},
            "encoding": {"x": qx("x")},
        },
        *_label_layers("labels", qx("x"), qy("y")),
    ]
    return _chart(
        _title("Predictive distribution of the travel time", synthetic),
        layers,
        datasets,
        file_name,
    )


def profile_chart(
    profile: pd.DataFrame,
    observed: pd.DataFrame,
    *,
    departure_hour: float,
    file_name: str,
    rings: int = 0,
    synthetic: bool = False,
    summary: pd.DataFrame | None = None,
) -> VegaChart:
    """Fan chart of the quantiles over the day, the observed trips of the zone pair on
    top (dots, or ``summary``'s medians and quartiles per time-of-day bin), the departure
    (:func:`app_ui.charts.profile_figure` in Vega-Lite).

    Parameters
    ----------
    profile : pandas.DataFrame
        :func:`vrvm.services.answers.forecast.time_of_day_profile` (``hour``, ``q05``, ...,
        ``q95``; minutes).
    observed : pandas.DataFrame
        Observed trips (``hour``, ``minutes``); empty for none.
    departure_hour : float
        The departure, in local fractional hours.
    file_name : str
        The PNG's file name, without extension.
    rings : int, default=0
        The rings of zones the observed trips were gathered from (said in the legend).
    synthetic : bool, default=False
        Say in the title band that the data are synthetic.
    summary : pandas.DataFrame or None
        :func:`vrvm.services.map.privacy.observed_summary` (private mode), drawn as boxes.

    Returns
    -------
    VegaChart
        Datasets ``profile`` (``hour`` and the quantile columns), ``departure``
        (``hour``), and ``observed`` (``hour``, ``minutes``) or ``summary`` (``hour``,
        ``median``, ``q25``, ``q75``, ``n``, ``hour_from``, ``hour_to``) when drawn.
    """
    where = "this zone pair" if rings == 0 else f"zones within {rings} ring(s) of the pair"
    dots = f"observed training trips ({where})"
    boxes = f"observed trips, median and quartiles ({where})"
    shown = [b for b in PROFILE_BANDS if b[0] in profile and b[1] in profile]
    domain = [name for *_, name in shown] + ["median"]
    colours = [_rgba(alpha) for _, _, alpha, _ in shown] + [MIXTURE]
    with_dots = len(observed) > 0
    with_boxes = summary is not None and len(summary) > 0
    if with_dots:
        domain, colours = [*domain, dots], [*colours, DEST]
    if with_boxes:
        domain, colours = [*domain, boxes], [*colours, DEST]
    colour = _colour(domain, colours)
    x = {
        "field": "hour",
        "type": "quantitative",
        "title": "departure hour (local time)",
        "scale": {"domain": [0, 24], "nice": False},
        "axis": {"values": list(range(0, 25, 3))},
    }
    y_title = "travel time (minutes)"
    y_scale = {"zero": True}

    def qy(field: str) -> dict:  # every layer's axis title the same: one title shown
        return {"field": field, "type": "quantitative", "title": y_title, "scale": y_scale}

    columns = ["hour", *dict.fromkeys(c for lo, hi, *_ in shown for c in (lo, hi)), "q50"]
    datasets = {
        "profile": _rows(**{c: _rounded(profile[c]) for c in columns}),
        "departure": [{"hour": float(departure_hour)}],
    }
    layers = [
        {
            "data": {"name": "profile"},
            "transform": [_series(name)],
            "mark": {"type": "area"},
            "encoding": {
                "x": x,
                "y": qy(lo),
                "y2": {"field": hi},
                "color": {"field": "series", **colour},
            },
        }
        for lo, hi, _, name in shown
    ]
    layers.append(
        {
            "data": {"name": "profile"},
            "transform": [_series("median")],
            "mark": {"type": "line", "strokeWidth": 3},
            "encoding": {
                "x": x,
                "y": qy("q50"),
                "color": {"field": "series", **colour},
                "tooltip": [
                    {"field": "hour", "type": "quantitative", "format": ".2f", "title": "hour"},
                    {
                        "field": "q50",
                        "type": "quantitative",
                        "format": ".1f",
                        "title": "median (min)",
                    },
                ],
            },
        }
    )
    if with_dots:
        datasets["observed"] = _rows(
            hour=_rounded(observed["hour"]), minutes=_rounded(observed["minutes"])
        )
        layers.append(
            {
                "data": {"name": "observed"},
                "transform": [_series(dots)],
                "mark": {
                    "type": "circle",
                    "size": 45,
                    "opacity": 0.75,
                    "stroke": "white",
                    "strokeWidth": 0.5,
                },
                "encoding": {
                    "x": x,
                    "y": qy("minutes"),
                    "color": {"field": "series", **colour},
                    "tooltip": [
                        {"field": "hour", "type": "quantitative", "format": ".2f"},
                        {
                            "field": "minutes",
                            "type": "quantitative",
                            "format": ".1f",
                            "title": "observed (min)",
                        },
                    ],
                },
            }
        )
    if with_boxes:
        names = ["hour", "median", "q25", "q75", "n", "hour_from", "hour_to"]
        datasets["summary"] = _rows(**{c: _rounded(summary[c]) for c in names})
        layers += [
            {
                "data": {"name": "summary"},
                "transform": [_series(boxes)],
                "mark": {"type": "rule", "strokeWidth": 2},
                "encoding": {
                    "x": x,
                    "y": qy("q25"),
                    "y2": {"field": "q75"},
                    "color": {"field": "series", **colour},
                },
            },
            {
                "data": {"name": "summary"},
                "transform": [_series(boxes)],
                "mark": {"type": "square", "size": 110, "opacity": 1},
                "encoding": {
                    "x": x,
                    "y": qy("median"),
                    "color": {"field": "series", **colour},
                    "tooltip": [
                        {"field": "n", "type": "quantitative", "title": "trips"},
                        {"field": "hour_from", "type": "quantitative", "title": "from (h)"},
                        {"field": "hour_to", "type": "quantitative", "title": "to (h)"},
                        {"field": "median", "type": "quantitative", "format": ".0f"},
                        {"field": "q25", "type": "quantitative", "format": ".0f"},
                        {"field": "q75", "type": "quantitative", "format": ".0f"},
                    ],
                },
            },
        ]
    layers.append(
        {
            "data": {"name": "departure"},
            "mark": {"type": "rule", "color": "#444", "strokeDash": [2, 3], "strokeWidth": 1.5},
            "encoding": {"x": x},
        }
    )
    return _chart(
        _title("Time-of-day profile of the same trip", synthetic), layers, datasets, file_name
    )


def png_bytes(chart: VegaChart, *, scale: float = 2.0, width: int = 900) -> bytes:
    """The chart as a PNG drawn on the server, ``scale`` times ``width`` pixels wide (as
    plotly's export: twice the shown resolution), by vl-convert (``vl-convert-python``,
    imported here: an optional dependency).

    Raises
    ------
    ValueError
        When vl-convert is not installed.
    """
    try:
        import vl_convert
    except ImportError as exc:  # said, not a traceback
        raise ValueError(
            "drawing a chart as a PNG needs vl-convert: pip install vl-convert-python"
        ) from exc
    spec = {**chart.spec, "width": width, "background": "white"}
    return vl_convert.vegalite_to_png(spec, scale=scale)


__all__ = [
    "DENSITY_POINTS",
    "HEIGHT",
    "VegaChart",
    "density_chart",
    "png_bytes",
    "profile_chart",
]
