"""The Retrain page refuses a date format that does not fit the file (issue 31): the form
shows which rows failed and the format that reads them, and nothing can be added."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")

from tests.app.test_pages import no_exception, shown
from tests.app.test_upload_page import _fid, _map_nyc_split, _retrain_page, _upload
from tests.trips.test_formats import _day_first_decimal_hour_csv


def test_month_first_on_day_first_dates_is_refused_on_the_page(vrvm_home):
    data = _day_first_decimal_hour_csv().replace("pickup_", "p_").encode()
    at = _upload(_retrain_page(), "nyc_split.csv", data)
    fid = _fid(at)
    _map_nyc_split(at)
    at.text_input(key=f"retrain_tz_{fid}").set_value("UTC")
    at.selectbox(key=f"retrain_date_{fid}").set_value("monthfirst").run()
    no_exception(at)
    live = next(c.value for c in at.caption if c.value.startswith("Preview"))
    assert "month-first dates" in shown(live) and "unreadable" in shown(live)
    next(b for b in at.button if b.label == "Read with these columns").click().run()
    no_exception(at)
    errors = [shown(e.value) for e in at.error]
    assert any("'p_date' read as month-first dates" in e and "dayfirst" in e for e in errors)
    assert any("Nothing was read" in e for e in errors)
    # Nothing to add: no report, no trips, the form stays to correct the format.
    assert not [m for m in at.metric if m.label == "Kept"]
    assert not [
        b
        for b in at.button
        if b.label.startswith("Add ") and "trips" in b.label and "demo" not in b.label
    ]
    assert at.selectbox(key=f"retrain_date_{fid}").value == "monthfirst"
