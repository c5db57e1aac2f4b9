"""Drive the real app in headless Chromium: the end-to-end test and the screenshots.

:func:`streamlit_server` runs ``streamlit run app.py`` over a given ``VRVM_HOME`` on a
free port; :func:`two_zones` and :func:`click_zone` pick an origin and a destination on
the deck.gl map the way a planner does, at the screen pixels :func:`lnglat_to_pixel`
computes from the deck's initial view. Playwright pages are passed in by the callers
(``tests/app/test_e2e_browser.py``, ``tools/screenshots.py``), which import Playwright
themselves; nothing here is used by the app.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

from vrvm import TravelTimeModel
from vrvm.services import models
from vrvm.services.area import (
    ViewState,
    build_service_area,
    load_zone_choice,
    mercator_x,
    mercator_y,
    zone_choice,
)

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"  # Debian's package (apt-get install -y chromium)
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(
    home: Path, log_path: Path, *, timeout_s: float = 60.0, env: dict[str, str] | None = None
):
    """``streamlit run app.py`` over ``home``; yields its URL once healthy, stops it after.

    ``env`` adds to the server's environment (an analyst passphrase, say). The server's
    output goes to ``log_path``. Raises RuntimeError with that log when the
    server exits or is not healthy within ``timeout_s`` (a first start trains the demo
    model first).
    """
    port = free_port()
    with open(log_path, "wb") as log:
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
            env={**os.environ, **(env or {}), "VRVM_HOME": str(home)},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so we stop exactly it
        )
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        log.flush()
                        raise RuntimeError(
                            "streamlit did not start:\n"
                            + Path(log_path).read_text(errors="replace")
                        ) from None
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


def lnglat_to_pixel(
    view: ViewState, lat, lon, *, width_px: float, height_px: float
) -> tuple[np.ndarray, np.ndarray]:
    """Screen pixel (from the map's top-left corner) of points in the initial view.

    The inverse of what deck.gl's ``MapView`` draws (pitch 0, bearing 0).

    Examples
    --------
    >>> v = ViewState(41.8, -87.7, 10.0)
    >>> x, y = lnglat_to_pixel(v, 41.8, -87.7, width_px=800, height_px=600)
    >>> float(x), float(y)
    (400.0, 300.0)
    """
    scale = 2.0**view.zoom
    x = (mercator_x(lon) - mercator_x(view.longitude)) * scale
    y = (mercator_y(np.asarray(lat, dtype=float)) - mercator_y(view.latitude)) * scale
    return width_px / 2.0 + x, height_px / 2.0 + y


def two_zones(home: Path, width: float, height: float) -> list[tuple[str, float, float]]:
    """Two busy zones well inside the map canvas and far apart: (label, x, y) pixels."""
    _, path = models.active_model_path(home)
    model = TravelTimeModel.load(path)
    chosen = zone_choice(home)  # the planner's polygons, when they are the zones
    zones = load_zone_choice(home, chosen.name) if chosen else None
    area = build_service_area(model, trips=models.load_training_trips(home, model), zones=zones)
    grid = area.grid
    x, y = lnglat_to_pixel(area.view, grid["lat"], grid["lon"], width_px=width, height_px=height)
    inside = (x > 50) & (x < width - 60) & (y > 50) & (y < height - 50)
    first = int(np.flatnonzero(inside)[np.argmax(grid["n_points"].to_numpy()[inside])])
    far = inside & (np.hypot(x - x[first], y - y[first]) > 0.3 * min(width, height))
    second = int(np.flatnonzero(far)[np.argmax(grid["n_points"].to_numpy()[far])])
    return [(grid["label"][i], float(x[i]), float(y[i])) for i in (first, second)]


def click_zone(
    page, canvas, label: str, x: float, y: float, attempts: int = 3, hover_ms: int = 300
) -> None:
    """Hover, then click a zone until the app shows it as selected.

    deck.gl picks the object under the pointer on hover; on a loaded machine (software
    WebGL sharing two cores with the server) a click can land before the pick, so it is
    repeated, waiting each time for the zone's label to appear in the OD inputs.
    """
    selected = "label => [...document.querySelectorAll('input')].some(e => e.value === label)"
    for attempt in range(attempts):
        canvas.hover(position={"x": x, "y": y})
        page.wait_for_timeout(hover_ms * (attempt + 1))
        canvas.click(position={"x": x, "y": y})
        try:
            page.wait_for_function(selected, arg=label, timeout=15_000)
            return
        except Exception:
            if attempt == attempts - 1:
                raise
