"""The first start trains the demo model in a thread of its own: a page run that stops
(a reload, another page, a timeout) neither cancels it nor starts it again."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from app_ui import context
from tests.conftest import TINY_DEMO_ENV
from vrvm.trips.home import Home

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    home = tmp_path / "fresh"
    monkeypatch.setenv("VRVM_HOME", str(home))
    for name, value in TINY_DEMO_ENV.items():
        monkeypatch.setenv(name, value)
    return home


def test_the_job_trains_once_and_reports_its_progress(fresh_home):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing for the terminal (joblib's cancellations)
        job = context._FirstStart(fresh_home)
        assert job.done.wait(120)
    assert job.error is None and job.version == 1
    (done, total, _, phase), stages = job.snapshot()
    assert done == total and phase == "members"
    assert stages  # what the page writes under the bar


def test_a_page_run_that_stops_leaves_the_training_going(fresh_home):
    """A page that stops waiting (here AppTest's timeout, in a browser a reload or
    another page) does not stop the training; the next run finds the model trained once."""
    context._first_start_job.clear()
    stopped = AppTest.from_file(APP, default_timeout=0.2)
    with pytest.raises(RuntimeError, match="timed out"):
        stopped.run()
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Travel time, with its uncertainty"
    assert [v.version for v in Home(fresh_home).models.versions()] == [1]
