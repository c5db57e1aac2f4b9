"""The answer's charts as Vega-Lite: what they show (intervals, median, threshold, the
synthetic note, observed trips, the PNG's file name), a layout that stays the same from
one trip to the next (the data change in place), valid Vega-Lite, plain JSON."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from app_ui import charts, vega_charts
from vrvm import MixtureDistribution
from vrvm.services.answers import forecast
from vrvm.services.map import privacy


def _answer(log_minutes: list[float], departure: str, threshold_min: float, peak: float):
    """An answer of a two-member mixture (no model: the charts only draw what it holds)."""
    dist = MixtureDistribution(
        np.log(np.array(log_minutes)[:, None] * 60.0),
        0.2,
        df=np.array([[8.0], [9.0]]),
        transform="log",
    )
    median = float(dist.ppf(np.array([[0.5]]))[0, 0]) / 60.0
    hours = np.arange(0, 24.25, 0.25)
    level = median * (1 + 0.5 * np.exp(-0.5 * ((hours - peak) / 1.5) ** 2))
    profile = pd.DataFrame({"hour": hours})
    factors = {5: 0.7, 10: 0.78, 25: 0.88, 50: 1.0, 75: 1.14, 90: 1.3, 95: 1.42}
    for q, factor in factors.items():
        profile[f"q{q:02d}"] = level * factor
    result = forecast.ODForecast(
        origin=None,
        dest=None,
        departure=pd.Timestamp(departure, tz="UTC"),
        median_min=median,
        mean_min=median * 1.02,
        std_min=0.2 * median,
        intervals=forecast.interval_table(dist),
        threshold_min=threshold_min,
        prob_within=float(dist.cdf(np.array([[threshold_min * 60.0]]))[0, 0]),
        dist=dist,
    )
    return SimpleNamespace(forecast=result, density=forecast.density_curve(dist), profile=profile)


@pytest.fixture(scope="module")
def answer():
    return _answer([14.0, 16.0], "2024-03-05 08:15", 15.0, peak=8.0)


@pytest.fixture(scope="module")
def swapped():
    return _answer([18.0, 17.0], "2024-03-05 17:40", 25.0, peak=17.5)


OBSERVED = pd.DataFrame({"hour": [7.25, 8.5, 17.75], "minutes": [14.0, 16.5, 22.25]})


def _density(answer, **kwargs):
    kwargs = {"file_name": "travel_time_density_20240305_0815", "synthetic": True, **kwargs}
    return vega_charts.density_chart(answer.density, answer.forecast, **kwargs)


def _profile(answer, observed=OBSERVED, **kwargs):
    kwargs = {"file_name": "travel_time_profile_20240305", "synthetic": True, **kwargs}
    return vega_charts.profile_chart(answer.profile, observed, departure_hour=8.25, **kwargs)


def _legend(spec: dict) -> list[str]:
    domains = [
        layer["encoding"]["color"]["scale"]["domain"]
        for layer in spec["layer"]
        if "scale" in layer.get("encoding", {}).get("color", {})
        and layer["encoding"]["color"]["scale"] is not None
    ]
    assert domains and all(d == domains[0] for d in domains)  # one shared legend
    return domains[0]


def _label(spec: dict, start: str) -> dict:
    return next(row for row in spec["datasets"]["labels"] if row["text"].startswith(start))


def test_the_density_shows_the_intervals_median_and_threshold(answer):
    chart = _density(answer)
    spec, data = chart.spec, chart.spec["datasets"]
    intervals = answer.forecast.intervals
    assert len(data["bands"]) == len(intervals)
    for row in intervals.itertuples():
        band = next(b for b in data["bands"] if b["series"] == f"{row.interval} interval")
        assert band["lower"] == pytest.approx(row.lower_min, rel=1e-3)
        assert band["upper"] == pytest.approx(row.upper_min, rel=1e-3)
    legend = _legend(spec)
    assert {f"{name} interval" for name in intervals["interval"]} <= set(legend)
    assert {"ensemble members (each / M)", "predictive density"} <= set(legend)
    lines = {row["what"]: row["x"] for row in data["lines"]}
    assert lines["median"] == pytest.approx(answer.forecast.median_min, rel=1e-3)
    assert lines["threshold"] == pytest.approx(15.0)
    assert _label(spec, "median")["text"] == f"median {answer.forecast.median_min:.1f}"
    p = f"{100 * answer.forecast.prob_within:.0f} %"
    assert _label(spec, "P(≤")["text"] == f"P(≤ 15 min) = {p}"
    # each member's curve, thinned to at most DENSITY_POINTS points like the mixture
    n_members = sum(c.startswith("member_") for c in answer.density.columns)
    assert len(data["density"]) <= vega_charts.DENSITY_POINTS
    assert len(data["members"]) == n_members * len(data["density"])
    assert spec["title"]["subtitle"] == charts.SYNTHETIC_NOTE
    assert "subtitle" not in _density(answer, synthetic=False).spec["title"]


@pytest.mark.parametrize("threshold_shift", [-3.0, -0.2, 0.0, 0.2, 3.0])
def test_the_median_and_threshold_labels_stand_on_far_sides(answer, threshold_shift):
    threshold = answer.forecast.median_min + threshold_shift
    shifted = replace(answer.forecast, threshold_min=threshold, prob_within=0.5)
    spec = vega_charts.density_chart(answer.density, shifted, file_name="x").spec
    median, prob = _label(spec, "median"), _label(spec, "P(≤")
    expected = ("right", "left") if threshold >= shifted.median_min else ("left", "right")
    assert (median["align"], prob["align"]) == expected
    # the y axis reaches above the median's label, as plotly's range does
    assert max(row["y"] for row in spec["datasets"]["labels"]) > median["y"] > prob["y"]


def test_the_profile_shows_the_bands_observed_trips_and_departure(answer):
    chart = _profile(answer)
    spec, data = chart.spec, chart.spec["datasets"]
    legend = _legend(spec)
    assert legend[:4] == ["90 % band", "80 % band", "50 % band", "median"]
    assert "observed training trips (this zone pair)" in legend
    assert data["observed"] == OBSERVED.to_dict("records")
    assert data["departure"] == [{"hour": 8.25}]
    assert len(data["profile"]) == len(answer.profile)
    assert data["profile"][0]["q50"] == pytest.approx(answer.profile["q50"].iloc[0], rel=1e-3)
    assert spec["title"]["subtitle"] == charts.SYNTHETIC_NOTE
    # no trips: no dots in the legend, no dataset for them
    bare = _profile(answer, OBSERVED.iloc[0:0], rings=2, synthetic=False).spec
    assert "observed" not in bare["datasets"] and len(_legend(bare)) == 4


def test_the_profile_shows_private_summaries_as_boxes(answer):
    trips = pd.DataFrame({"hour": np.linspace(7.0, 8.9, 12), "minutes": np.linspace(12, 20, 12)})
    summary = privacy.observed_summary(trips, 5)
    spec = _profile(answer, trips.iloc[0:0], rings=1, summary=summary).spec
    assert "observed trips, median and quartiles (zones within 1 ring(s) of the pair)" in (
        _legend(spec)
    )
    rows = spec["datasets"]["summary"]
    assert [row["n"] for row in rows] == summary["n"].tolist()
    assert rows[0]["median"] == pytest.approx(summary["median"].iloc[0], rel=1e-3)


def test_the_file_names_are_plotlys(answer):
    """The PNG's file name is the one plotly's export gives the same chart."""
    density, profile = _density(answer), _profile(answer)
    assert density.file_name == "travel_time_density_20240305_0815"
    assert profile.file_name == "travel_time_profile_20240305"
    options = density.spec["usermeta"]["embedOptions"]
    assert options["downloadFileName"] == density.file_name
    assert options["renderer"] == "canvas"


def test_the_layout_stays_the_same_for_another_trip(answer, swapped):
    """Only the datasets change from one trip (time, threshold) to the next: Streamlit's
    frontend then changes the drawn view's data instead of embedding a new one."""

    def layout(chart):
        spec = dict(chart.spec)
        spec.pop("datasets")
        spec.pop("usermeta")  # the file name, which Streamlit's frontend drops
        return json.dumps(spec, sort_keys=True)

    assert layout(_density(answer)) == layout(_density(swapped, file_name="another"))
    assert layout(_profile(answer)) == layout(_profile(swapped, OBSERVED.iloc[:1]))
    assert _density(answer).spec["datasets"] != _density(swapped).spec["datasets"]


def test_the_specs_are_valid_vega_lite_and_plain_json(answer):
    """Validated against the Vega-Lite schema that Altair ships (the major version of
    Streamlit's frontend), and serialisable as strict JSON (no NaN)."""
    core = pytest.importorskip("altair.vegalite.v6.schema.core")
    from altair.utils.schemapi import validate_jsonschema

    schema = core.load_schema()
    trips = pd.DataFrame({"hour": np.linspace(7.0, 8.9, 12), "minutes": np.linspace(12, 20, 12)})
    summary = privacy.observed_summary(trips, 5)
    for chart in (
        _density(answer),
        _density(answer, synthetic=False),
        _profile(answer),
        _profile(answer, trips.iloc[0:0], summary=summary, synthetic=False),
    ):
        validate_jsonschema(chart.spec, schema)  # raises on any invalid property
        assert json.loads(json.dumps(chart.spec, allow_nan=False)) == chart.spec


def test_png_bytes_names_its_missing_dependency(answer, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "vl_convert", None)
    with pytest.raises(ValueError, match="vl-convert-python"):
        vega_charts.png_bytes(_profile(answer))


def test_png_bytes_draws_a_png(answer):
    pytest.importorskip("vl_convert")
    png = vega_charts.png_bytes(_profile(answer), scale=1.0, width=300)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
