"""End to end in a real browser: ``streamlit run app.py`` driven by headless Chromium.

Clicks two zones on the deck.gl map canvas (positions computed from the deck's initial
view, as deck.gl projects it), waits for the predictive density, and saves a
screenshot to ``test-output/e2e_predict.png``. Skipped without Chromium at
/usr/bin/chromium unless ``CI`` is set, in which case a missing browser is a failure
(``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from vrvm import TravelTimeModel, dashboard

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "test-output"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--enable-unsafe-swiftshader",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@pytest.fixture
def chromium():
    if not os.path.exists(CHROMIUM):
        message = (
            f"Chromium is not installed at {CHROMIUM}; install it with "
            "`apt-get install -y chromium` (.ci/run does this)"
        )
        if os.environ.get("CI"):
            pytest.fail(message + " and CI is set, so the browser test must run")
        pytest.skip(message)
    return pytest.importorskip("playwright.sync_api")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(vrvm_home, tmp_path):
    """``streamlit run app.py`` on a free port over the tiny model; stopped afterwards."""
    port = _free_port()
    log = open(tmp_path / "streamlit.log", "wb")  # closed in the finally below
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=REPO,
        env={**os.environ, "VRVM_HOME": str(vrvm_home)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, so we stop exactly it
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(
                        "streamlit did not start:\n"
                        + (tmp_path / "streamlit.log").read_text(errors="replace")
                    )
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=10)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
        log.close()


def _two_zones(home: Path, width: float, height: float) -> list[tuple[str, float, float]]:
    """Two zones well inside the canvas, far apart: (label, x, y) in canvas pixels."""
    model = TravelTimeModel.load(dashboard.model_store(home).active_path())
    area = dashboard.build_service_area(model, trips=dashboard.load_training_trips(home, model))
    grid = area.grid
    x, y = dashboard.lnglat_to_pixel(
        area.view, grid["lat"], grid["lon"], width_px=width, height_px=height
    )
    inside = (x > 50) & (x < width - 60) & (y > 50) & (y < height - 50)
    first = int(np.flatnonzero(inside)[np.argmax(grid["n_points"].to_numpy()[inside])])
    far = inside & (np.hypot(x - x[first], y - y[first]) > 0.3 * min(width, height))
    second = int(np.flatnonzero(far)[np.argmax(grid["n_points"].to_numpy()[far])])
    return [(grid["label"][i], float(x[i]), float(y[i])) for i in (first, second)]


def _click_zone(page, canvas, label: str, x: float, y: float, attempts: int = 3) -> None:
    """Hover, then click a zone until the app shows it as selected.

    deck.gl picks the object under the pointer on hover; on a loaded machine (software
    WebGL sharing two cores with the server) a click can land before the pick, so it is
    repeated, waiting each time for the zone's label to appear in the OD inputs.
    """
    selected = "label => [...document.querySelectorAll('input')].some(e => e.value === label)"
    for attempt in range(attempts):
        canvas.hover(position={"x": x, "y": y})
        page.wait_for_timeout(300 * (attempt + 1))
        canvas.click(position={"x": x, "y": y})
        try:
            page.wait_for_function(selected, arg=label, timeout=15_000)
            return
        except Exception:
            if attempt == attempts - 1:
                raise


def test_click_two_zones_and_read_the_forecast(chromium, server, vrvm_home):
    OUTPUT.mkdir(exist_ok=True)
    with chromium.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(server)
            canvas = page.locator("canvas").first
            canvas.wait_for(timeout=30_000)
            page.get_by_text("Click a zone for the origin").wait_for(timeout=30_000)
            page.wait_for_timeout(1500)  # deck.gl draws its first frame
            box = canvas.bounding_box()
            zones = _two_zones(vrvm_home, box["width"], box["height"])
            for label, x, y in zones:
                _click_zone(page, canvas, label, x, y)
            page.get_by_text("Predictive distribution of the travel time").wait_for(timeout=45_000)
            assert page.get_by_text("P(arrive within 15 min)").count() >= 1
            page.mouse.move(0, 0)
            page.wait_for_timeout(500)
            page.screenshot(path=OUTPUT / "e2e_predict.png")
            # the coverage map from the same origin: redrawing the map re-sends the
            # last selection, which must not count as a new click
            page.get_by_text("Reach from an origin").click()
            page.get_by_text("Download GeoJSON").wait_for(timeout=45_000)
            origin = page.get_by_label("Origin (A)").input_value()
            assert origin == zones[0][0]
        finally:
            browser.close()
    assert (OUTPUT / "e2e_predict.png").stat().st_size > 10_000
