"""The dashboard's CSV downloads open safely in a spreadsheet (issue 32, CSV injection).

A planner's zone file whose zone is named like the classic payload is chosen as the
clickable zones; the relevance page's download (the zone pairs a viewer sees in private
mode) must then quote that name with a leading ``'`` instead of handing a spreadsheet a
formula. The other downloads share the helper and are tried in
``tests/services/test_csv_cells.py``.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

pytest.importorskip("streamlit")

from tests.app.test_pages import RELEVANCE, no_exception, run_app
from tests.app.test_private_mode import downloads  # noqa: F401 (a fixture)
from tests.app.test_zone_polygons import districts_geojson
from tests.services.test_csv_cells import EVIL, formula_cells
from vrvm.trips.home import Home


def test_the_relevance_download_quotes_a_zone_named_like_a_formula(
    vrvm_home,
    monkeypatch,
    downloads,  # noqa: F811
):
    document = json.loads(districts_geojson())
    for feature in document["features"]:
        if feature["properties"]["district"] == "D1":
            feature["properties"]["district"] = EVIL  # the id leads the zone's label
    Home(vrvm_home).zones.add("districts", json.dumps(document).encode(), id_property="district")
    monkeypatch.setenv("VRVM_PRIVATE_MODE", "always")  # the synthetic city, seen as a viewer
    monkeypatch.setenv("VRVM_PRIVATE_MIN_TRIPS", "2")
    at = run_app()
    no_exception(at)
    at.selectbox(key="settings_zone_choice").set_value("districts").run()
    no_exception(at)
    downloads.clear()
    at.switch_page(RELEVANCE).run()
    no_exception(at)
    table = next(f.value for f in at.dataframe if "origin zone" in f.value.columns)
    assert table["origin zone"].str.startswith(EVIL).any()  # on the page, as named
    data = next(d for d in downloads if d.startswith(b"origin zone"))
    text = data.decode("utf-8")
    assert formula_cells(text) == []
    shown = pd.read_csv(pd.io.common.StringIO(text))
    assert shown["origin zone"].str.startswith("'" + EVIL).any()
    assert shown["trips"].dtype.kind == "i" and len(shown) == len(table)
