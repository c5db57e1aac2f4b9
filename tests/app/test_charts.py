"""The answer's figures: valid plotly (they are built without plotly's validators), labels
that never overlap, a PNG export for slides; the reach map drawn as a PNG."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from app_ui import charts, map_image
from vrvm.services.answers import forecast
from vrvm.services.map.places import place_from_zone
from vrvm.services.planning import coverage


@pytest.fixture(scope="module")
def answer(tiny_model, tiny_area):
    grid = tiny_area.grid
    origin, dest = (place_from_zone(tiny_area, grid["zone"][i]) for i in (3, len(grid) - 4))
    departure = pd.Timestamp("2024-03-05 08:15", tz=tiny_model.tz_)
    return forecast.answer_od(
        tiny_model, origin, dest, departure, 15.0, trips=None, resolution=tiny_area.resolution
    )


def _annotation(figure: go.Figure, text: str) -> dict:
    return next(a for a in figure.to_dict()["layout"]["annotations"] if a["text"].startswith(text))


def test_the_figures_are_valid_plotly(answer):
    """Built as plain specs for speed; plotly's validators accept them unchanged."""
    density = charts.density_figure(answer.density, answer.forecast, synthetic=True)
    profile = charts.profile_figure(
        answer.profile, answer.observed, departure_hour=8.25, synthetic=True
    )
    for figure in (density, profile):
        validated = go.Figure(figure.to_dict())  # raises on any invalid property
        assert len(validated.data) == len(figure.data)
    # the members are one trace (one path for the browser), the mixture another
    names = [trace.name for trace in density.data]
    assert names.count("ensemble members (each / M)") == 1 and "predictive density" in names
    assert density.to_dict()["layout"]["template"]["layout"]  # plotly_white, expanded


@pytest.mark.parametrize("threshold_shift", [-3.0, -0.2, 0.0, 0.2, 3.0])
def test_the_median_and_threshold_labels_stand_on_far_sides(answer, threshold_shift):
    """Whatever the threshold, the median's label and P(T <= T)'s point away from each
    other, and the synthetic note sits above the plot, where no label can fall."""
    threshold = answer.forecast.median_min + threshold_shift
    shifted = replace(answer.forecast, threshold_min=threshold, prob_within=0.5)
    figure = charts.density_figure(answer.density, shifted, synthetic=True)
    median, prob = _annotation(figure, "median"), _annotation(figure, "P(≤")
    if threshold >= shifted.median_min:
        assert (median["xanchor"], prob["xanchor"]) == ("right", "left")
        assert median["xshift"] < 0 < prob["xshift"]
    else:
        assert (median["xanchor"], prob["xanchor"]) == ("left", "right")
        assert prob["xshift"] < 0 < median["xshift"]
    assert median["y"] != prob["y"]
    note = _annotation(figure, charts.SYNTHETIC_NOTE)
    assert note["yref"] == "paper" and note["y"] >= 1.0 and note["yanchor"] == "bottom"


def test_export_config_names_the_png():
    config = charts.export_config("travel_time_density_20240305_0815")
    assert config["toImageButtonOptions"] == {
        "format": "png",
        "filename": "travel_time_density_20240305_0815",
        "scale": 2,
    }


def test_rounding_keeps_four_significant_digits():
    assert charts._rounded([123456.0, 0.000123456, 0.0, np.nan]) == [123500.0, 0.0001235, 0.0, None]


def test_the_reach_map_draws_as_a_png(tiny_model, tiny_area):
    origin = place_from_zone(tiny_area, tiny_area.grid["zone"][0])
    departure = pd.Timestamp("2024-03-05 08:15", tz=tiny_model.tz_)
    grid = coverage.coverage_grid(tiny_model, tiny_area, origin, departure, 15.0)
    fill, _, legend = coverage.coverage_map(grid, "probability", 15.0, near=True)
    png = map_image.reach_map_png(
        tiny_area, fill, origin=origin, legend=legend, title="P(arrive within 15 min)"
    )
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 20_000
    with pytest.raises(ValueError, match="one RGBA row per zone"):
        map_image.reach_map_png(tiny_area, fill[:3], origin=origin, legend=legend, title="x")
    # the hatched swatch of thin-data zones becomes a hatched patch
    thin = "repeating-linear-gradient(135deg, #d0d0d0 0 2px, #f4f4f4 2px 5px)"
    assert map_image._swatch(thin) == ("#f4f4f4", "///")


def test_the_reach_map_png_draws_polygon_zones():
    """A planner's polygons (one of them in two parts) are drawn from their shapes."""
    from vrvm.services.map.area import ServiceArea
    from vrvm.services.map.places import Place

    square = [[0.0, 0.0], [0.01, 0.0], [0.01, 0.01], [0.0, 0.01], [0.0, 0.0]]
    shifted = [[x + 0.02, y] for x, y in square]
    grid = pd.DataFrame(
        {"zone": ["a", "b"], "lat": [0.005, 0.005], "lon": [0.005, 0.025], "label": ["A", "B"]}
    )
    shapes = (
        {"type": "Polygon", "coordinates": [square]},
        {"type": "MultiPolygon", "coordinates": [[shifted], [[[x, y + 0.02] for x, y in square]]]},
    )
    area = ServiceArea(grid=grid, resolution=9, bbox=(0, 0, 0.03, 0.03), view=None, shapes=shapes)
    assert len(map_image._rings(area, 1)) == 2
    png = map_image.reach_map_png(
        area,
        np.array([[0, 114, 178, 255], [230, 159, 0, 255]]),
        origin=Place(0.005, 0.005, "a", "A"),
        legend=[("reached", "#0072b2")],
        title="Median travel time",
        footnote="synthetic",
    )
    assert png.startswith(b"\x89PNG")
