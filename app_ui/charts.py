"""Plotly figures of the dashboard (no Streamlit here: the components show them).

Each function draws data computed by :mod:`vrvm.services` (the OD answer, the
evaluation of candidates, the ELBO curves); nothing is computed here beyond layout.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from vrvm import MixtureDistribution
from vrvm.services.answers.forecast import ODForecast, density_curve, interval_table
from vrvm.services.answers.schedule import ArriveBy
from vrvm.services.display.colours import DEST_RGB, ORIGIN_RGB, TIME_PALETTE, hex_colour

ORIGIN = hex_colour(ORIGIN_RGB)
DEST = hex_colour(DEST_RGB)
MIXTURE = "#1b4f72"
MEMBER = "rgba(90, 90, 90, 0.35)"
BAND_ALPHA = {0.5: 0.30, 0.8: 0.18, 0.95: 0.09}
SYNTHETIC_NOTE = "SYNTHETIC DATA (Synthetica)"
LABEL_BACKGROUND = "rgba(255, 255, 255, 0.85)"


def _error_bars(
    centre, low, high, colour: str, thickness: float, width=None, *, rounded: bool = False
) -> dict:
    """Plotly error bars from ``low`` to ``high`` around ``centre`` (asymmetric).

    ``rounded`` sends plain lists of four significant digits (figures built as specs).
    """
    up, down = high - centre, centre - low
    bars = {
        "type": "data",
        "symmetric": False,
        "array": _rounded(up) if rounded else up,
        "arrayminus": _rounded(down) if rounded else down,
        "color": colour,
        "thickness": thickness,
    }
    if width is not None:
        bars["width"] = width
    return bars


def _layout(fig: go.Figure, *, title: str, x: str, y: str, synthetic: bool, height: int = 340):
    fig.update_layout(
        title={"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 15}},
        xaxis_title=x,
        yaxis_title=y,
        height=height,
        margin={"l": 10, "r": 10, "t": 45, "b": 10},
        template="plotly_white",
        # below the plot, so that it never covers the title or the data
        legend={"orientation": "h", "yanchor": "top", "y": -0.22, "xanchor": "left", "x": 0.0},
        hovermode="x unified",
    )
    if synthetic:  # in the title's band, above the plot: never on a label of the data
        fig.add_annotation(**_synthetic_note())
    return fig


def export_config(filename: str) -> dict:
    """The modebar's PNG download (plotly's own export) of a chart, for a slide: the file
    name given (without extension), at twice the shown resolution, no plotly logo."""
    return {
        "toImageButtonOptions": {"format": "png", "filename": filename, "scale": 2},
        "displaylogo": False,
    }


def _template() -> dict:
    """plotly_white as a dict, expanded once (a figure built without plotly's validators
    would otherwise send its name, which plotly.js does not know)."""
    global _TEMPLATE
    if _TEMPLATE is None:
        import plotly.io as pio

        _TEMPLATE = pio.templates["plotly_white"].to_plotly_json()
    return _TEMPLATE


_TEMPLATE: dict | None = None


def _layout_spec(*, title: str, x: str, y: str, synthetic: bool, height: int) -> dict:
    """The layout of :func:`_layout` as a plain dict (the figures built without validators).

    The synthetic note sits right-aligned in the title's band, above the plot, where no
    label of the data can fall.
    """
    layout = {
        "title": {"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 15}},
        "xaxis": {"title": {"text": x}},
        "yaxis": {"title": {"text": y}},
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 45, "b": 10},
        "template": _template(),
        "legend": {"orientation": "h", "yanchor": "top", "y": -0.22, "xanchor": "left", "x": 0.0},
        "hovermode": "x unified",
        "annotations": [],
        "shapes": [],
    }
    if synthetic:
        layout["annotations"].append(_synthetic_note())
    return layout


def _synthetic_note() -> dict:
    return {
        "text": SYNTHETIC_NOTE,
        "xref": "paper",
        "yref": "paper",
        "x": 1.0,
        "y": 1.0,
        "xanchor": "right",
        "yanchor": "bottom",
        "yshift": 6,
        "showarrow": False,
        "font": {"size": 11, "color": "#b03a2e"},
    }


def _main_line(x, y, name: str, hovertemplate: str) -> dict:
    """The figure's main curve (a plain trace spec, ``y`` rounded for the browser)."""
    return {
        "type": "scatter",
        "x": x,
        "y": _rounded(y),
        "mode": "lines",
        "line": {"color": MIXTURE, "width": 3},
        "name": name,
        "hovertemplate": hovertemplate,
    }


def _vline(x: float, line: dict) -> dict:
    return {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": x,
        "x1": x,
        "y0": 0,
        "y1": 1,
        "line": line,
    }


def _rounded(values, digits: int = 4) -> list:
    """Numbers for the browser, to ``digits`` significant digits (a smaller message)."""
    array = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(array == 0, 0, np.floor(np.log10(np.abs(array))))
    scale = np.nan_to_num(scale, nan=0.0, posinf=0.0, neginf=0.0)
    factor = 10.0 ** (digits - 1 - scale)
    out = np.round(array * factor) / factor
    return [None if not np.isfinite(v) else float(v) for v in out]


def _figure(spec: dict) -> go.Figure:
    """A figure from a plain spec, without plotly's validators (tens of milliseconds per
    figure on every answer; ``tests/app/test_charts.py`` validates the specs instead)."""
    return go.Figure(spec, _validate=False)


def density_figure(
    curve: pd.DataFrame, forecast: ODForecast, *, synthetic: bool = False
) -> go.Figure:
    """The predictive density, its members (faint) and the shaded intervals.

    The median's label and P(T <= threshold)'s stand on the far sides of their lines
    (the median's to the left when the threshold is to its right, and the other way
    round), so they never overlap each other, whatever the two values.
    """
    top = float(curve["density"].max()) * 1.08
    layout = _layout_spec(
        title="Predictive distribution of the travel time",
        x="travel time (minutes)",
        y="probability per minute",
        synthetic=synthetic,
        height=400,
    )
    data = []
    for _, row in forecast.intervals.sort_values("level", ascending=False).iterrows():
        opacity = BAND_ALPHA.get(row["level"], 0.12)
        layout["shapes"].append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": float(row["lower_min"]),
                "x1": float(row["upper_min"]),
                "y0": 0,
                "y1": 1,
                "fillcolor": MIXTURE,
                "opacity": opacity,
                "line": {"width": 0},
                "layer": "below",
            }
        )
        # an invisible trace so the band appears in the legend
        data.append(
            {
                "type": "scatter",
                "x": [None],
                "y": [None],
                "mode": "markers",
                "marker": {"size": 12, "color": MIXTURE, "opacity": opacity},
                "name": f"{row['interval']} interval",
                "hoverinfo": "skip",
            }
        )
    minutes = _rounded(curve["minutes"])
    members = [c for c in curve.columns if c.startswith("member_")]
    if members:  # one trace, the members' curves separated by gaps: one path to draw
        gap = [None]
        data.append(
            {
                "type": "scatter",
                "x": [v for _ in members for v in [*minutes, *gap]],
                "y": [v for column in members for v in [*_rounded(curve[column], 3), *gap]],
                "mode": "lines",
                "line": {"color": MEMBER, "width": 1},
                "connectgaps": False,
                "name": "ensemble members (each / M)",
                "hoverinfo": "skip",
            }
        )
    data.append(
        _main_line(
            minutes,
            curve["density"],
            "predictive density",
            "%{x:.1f} min: %{y:.3f} per min<extra></extra>",
        )
    )
    median, threshold = forecast.median_min, forecast.threshold_min
    threshold_right = threshold >= median  # the labels go to the far sides of the lines
    layout["shapes"].append(_vline(median, {"color": MIXTURE, "dash": "dash", "width": 1.5}))
    layout["annotations"].append(
        {
            "x": median,
            "y": top,
            "text": f"median {median:.1f}",
            "showarrow": False,
            "yanchor": "bottom",
            "xanchor": "right" if threshold_right else "left",
            "xshift": -4 if threshold_right else 4,
            "font": {"size": 11, "color": MIXTURE},
            "bgcolor": LABEL_BACKGROUND,  # readable over the shaded intervals
        }
    )
    layout["shapes"].append(_vline(threshold, {"color": DEST, "width": 2}))
    layout["annotations"].append(
        {
            "x": threshold,
            "y": top * 0.86,
            "text": f"P(≤ {threshold:g} min) = {100 * forecast.prob_within:.0f} %",
            "showarrow": False,
            "xanchor": "left" if threshold_right else "right",
            "xshift": 4 if threshold_right else -4,
            "font": {"size": 11, "color": DEST},
            "bgcolor": LABEL_BACKGROUND,
        }
    )
    layout["yaxis"].update(rangemode="tozero", range=[0, top * 1.05])
    return _figure({"data": data, "layout": layout})


def profile_figure(
    profile: pd.DataFrame,
    observed: pd.DataFrame,
    *,
    departure_hour: float,
    rings: int = 0,
    synthetic: bool = False,
    summary: pd.DataFrame | None = None,
) -> go.Figure:
    """Fan chart of the quantiles over the day, observed trips of the zone pair on top:
    as dots, or (private mode) as ``summary``'s medians and quartiles per time-of-day bin
    (:func:`vrvm.services.map.privacy.observed_summary`)."""
    layout = _layout_spec(
        title="Time-of-day profile of the same trip",
        x="departure hour (local time)",
        y="travel time (minutes)",
        synthetic=synthetic,
        height=400,
    )
    data = []
    hours = _rounded(profile["hour"])
    bands = (
        ("q05", "q95", 0.12, "90 % band"),
        ("q10", "q90", 0.18, "80 % band"),
        ("q25", "q75", 0.30, "50 % band"),
    )
    for lo, hi, alpha, name in bands:
        if lo not in profile or hi not in profile:
            continue
        data.append(
            {
                "type": "scatter",
                "x": hours,
                "y": _rounded(profile[hi]),
                "mode": "lines",
                "line": {"width": 0},
                "showlegend": False,
                "hoverinfo": "skip",
            }
        )
        data.append(
            {
                "type": "scatter",
                "x": hours,
                "y": _rounded(profile[lo]),
                "mode": "lines",
                "line": {"width": 0},
                "fill": "tonexty",
                "fillcolor": f"rgba(27, 79, 114, {alpha})",
                "name": name,
                "hoverinfo": "skip",
            }
        )
    data.append(
        _main_line(
            hours, profile["q50"], "median", "%{x:.2f} h: median %{y:.1f} min<extra></extra>"
        )
    )
    where = "this zone pair" if rings == 0 else f"zones within {rings} ring(s) of the pair"
    if len(observed):
        data.append(
            {
                "type": "scatter",
                "x": _rounded(observed["hour"]),
                "y": _rounded(observed["minutes"]),
                "mode": "markers",
                "marker": {
                    "color": DEST,
                    "size": 7,
                    "opacity": 0.75,
                    "line": {"color": "white", "width": 0.5},
                },
                "name": f"observed training trips ({where})",
                "hovertemplate": "%{x:.2f} h: %{y:.1f} min observed<extra></extra>",
            }
        )
    if summary is not None and len(summary):
        data.append(
            {
                "type": "scatter",
                "x": _rounded(summary["hour"]),
                "y": _rounded(summary["median"]),
                "mode": "markers",
                "marker": {"color": DEST, "size": 11, "symbol": "square"},
                "error_y": _error_bars(
                    summary["median"], summary["q25"], summary["q75"], DEST, 2, rounded=True
                ),
                "customdata": summary[["n", "hour_from", "hour_to", "q25", "q75"]]
                .astype(float)
                .to_numpy()
                .tolist(),
                "name": f"observed trips, median and quartiles ({where})",
                "hovertemplate": "%{customdata[0]} trips from %{customdata[1]}:00 to "
                "%{customdata[2]}:00: median %{y:.0f} min, quartiles %{customdata[3]:.0f}-"
                "%{customdata[4]:.0f} min<extra></extra>",
            }
        )
    layout["shapes"].append(
        _vline(float(departure_hour), {"color": "#444", "dash": "dot", "width": 1.5})
    )
    layout["xaxis"].update(range=[0, 24], tickvals=list(range(0, 25, 3)))
    layout["yaxis"].update(rangemode="tozero")
    return _figure({"data": data, "layout": layout})


def _wall_clock(times) -> pd.DatetimeIndex:
    """Local wall-clock times for an axis (plotly would show aware times in UTC)."""
    times = pd.DatetimeIndex(times)
    return times if times.tz is None else times.tz_localize(None)


def arrive_by_figure(answer: ArriveBy, *, synthetic: bool = False) -> go.Figure:
    """P(arrive by the deadline) against departure time, the required p and the answer."""
    curve = answer.curve
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=_wall_clock(curve["departure"]),
            y=curve["prob_on_time"],
            mode="lines",
            line={"color": MIXTURE, "width": 3},
            name="P(arrive by the deadline)",
            hovertemplate="leave %{x|%H:%M}: %{y:.1%}<extra></extra>",
        )
    )
    fig.add_hline(y=answer.prob, line={"color": DEST, "dash": "dash", "width": 1.5})
    fig.add_annotation(
        x=0.0,
        xref="paper",
        y=answer.prob,
        text=f"required {100 * answer.prob:g} %",
        showarrow=False,
        xanchor="left",
        yanchor="bottom",
        font={"size": 11, "color": DEST},
    )
    if answer.departure is not None:
        when = _wall_clock([answer.departure])
        fig.add_trace(
            go.Scatter(
                x=when,
                y=[answer.prob_at_departure],
                mode="markers",
                marker={"color": ORIGIN, "size": 12, "line": {"color": "white", "width": 1}},
                name=f"latest departure {when[0]:%H:%M:%S}",
                hovertemplate="leave by %{x|%H:%M:%S}: %{y:.1%}<extra></extra>",
            )
        )
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%")
    fig.update_xaxes(tickformat="%H:%M")
    return _layout(
        fig,
        title=f"Probability of arriving by {answer.deadline:%H:%M}, by departure time",
        x="departure time (local)",
        y="P(arrive by the deadline)",
        synthetic=synthetic,
        height=380,
    )


def elbo_figure(curves: pd.DataFrame) -> go.Figure:
    """Each member's evidence lower bound per iteration (the first steps' very low values
    are cut off so the converged part is readable)."""
    fig = go.Figure()
    if len(curves):
        low, high = curves["elbo"].quantile([0.03, 1.0])
        pad = 0.05 * max(high - low, 1e-9)
        fig.update_yaxes(range=[low - pad, high + pad])
    for member, part in curves.groupby("member"):
        fig.add_trace(
            go.Scatter(x=part["iteration"], y=part["elbo"], mode="lines", name=f"member {member}")
        )
    return _layout(
        fig, title="ELBO per iteration", x="iteration", y="ELBO", synthetic=False, height=380
    )


# colours of the models compared on the retrain page (colour-blind safe, Okabe-Ito)
_SERIES_COLOURS = [MIXTURE, DEST, "#009e73", "#cc79a7"]


def _reference_line(top: float, name: str) -> go.Scatter:
    """The dashed diagonal from (0, 0) to (top, top) that a perfect model follows."""
    return go.Scatter(
        x=[0, top], y=[0, top], mode="lines", line={"color": "#888", "dash": "dash"}, name=name
    )


def predicted_vs_observed_figure(
    frames: dict[str, pd.DataFrame], *, level: float = 0.8
) -> go.Figure:
    """Observed vs predicted median with central intervals, per model."""
    fig = go.Figure()
    top = 0.0
    for (name, frame), colour in zip(frames.items(), _SERIES_COLOURS, strict=False):
        top = max(top, float(frame["observed_min"].max()), float(frame["upper_min"].max()))
        fig.add_trace(
            go.Scatter(
                x=frame["observed_min"],
                y=frame["median_min"],
                mode="markers",
                marker={"color": colour, "size": 5, "opacity": 0.6},
                error_y=_error_bars(
                    frame["median_min"], frame["lower_min"], frame["upper_min"], colour, 0.6, 0
                ),
                name=f"{name}: median and {100 * level:g} % interval",
            )
        )
    fig.add_trace(_reference_line(top, "perfect"))
    fig.update_layout(hovermode="closest")
    return _layout(
        fig,
        title="Hold-out trips: predicted vs observed",
        x="observed (minutes)",
        y="predicted (minutes)",
        synthetic=False,
        height=380,
    )


def calibration_figure(curves: dict[str, pd.DataFrame]) -> go.Figure:
    """Observed vs nominal coverage of central intervals (the diagonal is calibrated)."""
    fig = go.Figure()
    for (name, frame), colour in zip(curves.items(), _SERIES_COLOURS, strict=False):
        fig.add_trace(
            go.Scatter(
                x=frame["nominal"],
                y=frame["observed"],
                mode="lines+markers",
                line={"color": colour},
                name=name,
            )
        )
    fig.add_trace(_reference_line(1, "calibrated"))
    fig.update_xaxes(range=[0, 1], tickformat=".0%")
    fig.update_yaxes(range=[0, 1], tickformat=".0%")
    fig.update_layout(hovermode="closest")
    return _layout(
        fig,
        title="Calibration of central intervals",
        x="nominal coverage",
        y="observed coverage",
        synthetic=False,
        height=380,
    )


def pit_figure(pits: dict[str, pd.DataFrame]) -> go.Figure:
    """PIT histograms (flat at 1 when calibrated)."""
    fig = go.Figure()
    for (name, frame), colour in zip(pits.items(), _SERIES_COLOURS, strict=False):
        fig.add_trace(
            go.Bar(
                x=frame["bin_mid"], y=frame["density"], name=name, marker_color=colour, opacity=0.75
            )
        )
    fig.add_hline(y=1.0, line={"color": "#888", "dash": "dash"})
    fig.update_layout(barmode="group", hovermode="closest")
    fig.update_xaxes(range=[0, 1])
    return _layout(
        fig,
        title="PIT histogram",
        x="PIT value F(y)",
        y="density (1 = flat)",
        synthetic=False,
        height=380,
    )


def _short_labels(labels) -> list[str]:
    """Axis labels: each zone label's first part ("Zone 195" of "Zone 195 · Downtown"),
    unless that would make two the same."""
    full = [str(label) for label in labels]
    short = [label.split(" · ")[0] for label in full]
    return short if len(set(short)) == len(short) else full


def matrix_heatmap_figure(grid: pd.DataFrame, *, synthetic: bool = False) -> go.Figure:
    """Median minutes between zones: origins as rows, destinations as columns (axes
    with short labels, one per row and column; the full names on hover)."""
    steps = len(TIME_PALETTE) - 1
    names = [[[html.escape(str(o)), html.escape(str(d))] for d in grid.columns] for o in grid.index]
    fig = go.Figure(
        go.Heatmap(
            z=grid.to_numpy(),
            x=[html.escape(label) for label in _short_labels(grid.columns)],
            y=[html.escape(label) for label in _short_labels(grid.index)],
            customdata=names,
            colorscale=[[i / steps, hex_colour(rgb)] for i, rgb in enumerate(TIME_PALETTE)],
            colorbar={"title": {"text": "min"}},
            hovertemplate="%{customdata[0]} → %{customdata[1]}<br>median %{z:.1f} min"
            "<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed", dtick=1)  # the first origin on top, as in the table
    fig.update_xaxes(dtick=1)
    fig.update_layout(hovermode="closest")
    return _layout(
        fig,
        title="Median travel time (minutes)",
        x="destination",
        y="origin",
        synthetic=synthetic,
        height=max(340, 180 + 22 * len(grid)),
    )


def warm_up() -> None:
    """Draw throw-away versions of the figures (loads plotly's lazy validators)."""
    import numpy as np

    dist = MixtureDistribution(
        np.log([[600.0], [700.0]]), 0.2, df=np.array([[8.0], [9.0]]), transform="log"
    )
    intervals = interval_table(dist)
    forecast = ODForecast(
        origin=None,
        dest=None,
        departure=pd.Timestamp("2024-01-01", tz="UTC"),
        median_min=10.0,
        mean_min=10.0,
        std_min=1.0,
        intervals=intervals,
        threshold_min=10.0,
        prob_within=0.5,
        dist=dist,
    )
    density_figure(density_curve(dist, n_points=20), forecast, synthetic=True).to_json()
    profile = pd.DataFrame(
        {"hour": [0.0, 24.0], **{f"q{q:02d}": [float(q)] * 2 for q in (5, 10, 25, 50, 75, 90, 95)}}
    )
    observed = pd.DataFrame({"hour": [1.0], "minutes": [10.0]})
    profile_figure(profile, observed, departure_hour=8.0, synthetic=True).to_json()
