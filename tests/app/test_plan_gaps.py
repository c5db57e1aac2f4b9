"""The Plan page's "Where data is missing" section (AppTest, no browser).

The headline, the map's colours and tooltips, the top zones and the downloads are
recomputed here with :mod:`vrvm.services.planning.data_gaps` for the same model, zones
and departures; the caption saying what the split cannot see is always shown. A click
on the map asks for the trips from that zone; more departures, another origin or other
zones give a new answer, never the last one.
"""

from __future__ import annotations

import datetime as dt
import io
import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tests.app.test_no_stale_answers import active_area
from tests.app.test_pages import (
    APP,
    TIMEOUT,
    click_zone,
    deck,
    map_records,
    no_exception,
    shown,
    tips_drawn,
)
from tests.app.test_private_mode import downloads  # noqa: F401 (a fixture)
from tests.app.test_zone_polygons import districts_geojson
from vrvm.services.answers.forecast import combine_departure
from vrvm.services.map.places import place_from_label
from vrvm.services.planning import data_gaps
from vrvm.trips.home import Home

PLAN = "pages/3_Plan.py"
KEY = "plan_gaps"
CANNOT_SEE = (
    "Read beside the training-trip counts: the ensemble cannot see the uncertainty of "
    "parts all its members share (the location trees, the zone-pair offsets), and far "
    "from any trip its members agree, so zones with almost no trips can show a *low* "
    "share. Thin zones are marked ⚠."
)


def plan_gaps() -> AppTest:
    """The Plan page on its "Where data is missing" section, leaving 08:15 on a Tuesday."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["plan_section"] = "gaps"
    at.session_state[f"{KEY}_when"] = dt.datetime(2024, 3, 5, 8, 15)
    at = at.switch_page(PLAN).run()
    no_exception(at)
    return at


def at_time(model, hour: int, minute: int):
    return combine_departure(dt.date(2024, 3, 5), dt.time(hour, minute), model.tz_)


def headline(grid: pd.DataFrame) -> str:
    share = data_gaps.gaps_summary(grid)["epistemic_share"]
    return (
        f"The model's own uncertainty is **{100 * share:.1f} %** of the spread of its "
        "answers (the rest is trip-to-trip variation that more data will not remove)."
    )


def zone_records(at: AppTest) -> list[dict]:
    return map_records(deck(at, f"{KEY}_map"), "zones")


def top_shown(at: AppTest) -> pd.DataFrame:
    return next(f.value for f in at.dataframe if "model's own share" in f.value.columns)


def assert_table_is(at: AppTest, grid: pd.DataFrame) -> None:
    """The top zones shown are the service's, with their figures."""
    table = top_shown(at)
    best = grid[np.isfinite(grid["epistemic_share"])].sort_values("rank").head(10)
    marks = ["⚠ " if thin else "" for thin in best["thin"]]
    assert table["zone"].tolist() == [
        m + str(label) for m, label in zip(marks, best["label"], strict=True)
    ]
    assert table["rank"].tolist() == best["rank"].tolist()
    assert table["model's own share"].to_numpy() == pytest.approx(best["epistemic_share"])
    own = 100 * np.expm1(best["epistemic_sd_log"].to_numpy())
    assert table["model's own sd (±%)"].to_numpy() == pytest.approx(own)
    noise = 100 * np.expm1(best["noise_sd_log"].to_numpy())
    assert table["trip-to-trip sd (±%)"].to_numpy() == pytest.approx(noise)
    assert table["training trips"].tolist() == best["support_trips"].tolist()


def test_every_zone_split_with_the_caption_and_the_downloads(vrvm_home, downloads):  # noqa: F811
    at = plan_gaps()
    model, area = active_area(vrvm_home)
    grid = data_gaps.zone_gaps(model, area, [at_time(model, 8, 15)])
    assert headline(grid) in [m.value for m in at.markdown]
    assert CANNOT_SEE in [c.value for c in at.caption]  # what the split cannot see
    assert_table_is(at, grid)
    for metric in ("epistemic_share", "sharpening"):
        at.radio(key=f"{KEY}_metric").set_value(metric).run()
        no_exception(at)
        fill, tips, legend = data_gaps.gaps_map(grid, metric)
        zones = zone_records(at)
        assert [z["fill"] for z in zones] == fill.tolist()
        assert [z["tip"] for z in zones] == tips_drawn(tips)
        assert len({tuple(z["fill"]) for z in zones}) >= 3  # a choropleth
        html = next(m.value for m in at.markdown if "font-size:0.85rem" in m.value)
        assert all(label in html for label, _ in legend)
    labels = {d.label for d in at.get("download_button")}
    assert {"Download CSV", "Download GeoJSON"} <= labels
    csv = next(d for d in reversed(downloads) if d.startswith(b"departures,scale,zone,"))
    got, want = (
        pd.read_csv(io.BytesIO(b)) for b in (csv, data_gaps.gaps_csv(grid, synthetic=True))
    )
    pd.testing.assert_frame_equal(got, want)
    assert (got["data"] == "SYNTHETIC (Synthetica, not a real city)").all()
    geojson = next(d for d in reversed(downloads) if d.startswith(b'{"type": "FeatureCollection"'))
    document = json.loads(geojson)
    assert len(document["features"]) == len(grid) and document["synthetic"] is True


def click(at: AppTest, index: int) -> AppTest:
    """The browser's payload when the zone at ``index`` of the gaps map is clicked."""
    return click_zone(at, None, index, f"{KEY}_map")


def test_a_click_departures_and_zones_give_a_new_answer(vrvm_home):
    Home(vrvm_home).zones.add("districts", districts_geojson(), id_property="district")
    at = plan_gaps()
    at.selectbox(key="settings_zone_choice").set_value("districts").run()
    no_exception(at)
    model, area = active_area(vrvm_home)
    assert len(area.grid) < 10
    grid = data_gaps.zone_gaps(model, area, [at_time(model, 8, 15)])
    assert headline(grid) in [m.value for m in at.markdown]
    assert_table_is(at, grid)

    # a click on a zone shows the trips from it
    north_west = "Q0 · North-West"
    at = click(at, area.labels.index(north_west))
    no_exception(at)
    assert at.radio(key=f"{KEY}_scope").value == "origin"
    assert at.selectbox(key=f"{KEY}_place").value == north_west
    origin = place_from_label(area, north_west)
    grid = data_gaps.origin_gaps(model, area, origin, [at_time(model, 8, 15)])
    assert headline(grid) in [m.value for m in at.markdown]
    assert_table_is(at, grid)
    assert CANNOT_SEE in [c.value for c in at.caption]

    # one more departure: the parts averaged over both
    at.multiselect(key=f"{KEY}_more").set_value([dt.time(17, 30)]).run()
    no_exception(at)
    both = [at_time(model, 8, 15), at_time(model, 17, 30)]
    grid = data_gaps.origin_gaps(model, area, origin, both)
    assert headline(grid) in [m.value for m in at.markdown]
    assert any("at 08:15, 17:30" in c.value for c in at.caption)

    # another origin from the list: its name is shown as text, never as HTML
    downtown = "D1 · Downtown <b>Synthetica</b>"
    at.selectbox(key=f"{KEY}_place").set_value(downtown).run()
    no_exception(at)
    grid = data_gaps.origin_gaps(model, area, place_from_label(area, downtown), both)
    assert headline(grid) in [m.value for m in at.markdown]
    html = next(m.value for m in at.markdown if "font-size:0.85rem" in m.value)
    assert "Downtown &lt;b&gt;Synthetica&lt;/b&gt;" in html and "<b>Synthetica" not in html
    assert any(m.value.startswith("<small>The dot is the origin") for m in at.markdown)

    # every zone again, over both departures
    at.radio(key=f"{KEY}_scope").set_value("zones").run()
    no_exception(at)
    grid = data_gaps.zone_gaps(model, area, both)
    assert headline(grid) in [m.value for m in at.markdown]
    assert shown(next(c.value for c in at.caption if c.value.startswith("Leaving"))).startswith(
        "Leaving 2024-03-05 at 08:15, 17:30"
    )
