"""Take the dashboard screenshots in ``assets/`` from the real app in headless Chromium.

    python benchmarks/screenshots.py [--home DIR] [--out assets]

Starts ``streamlit run app.py`` on a free port with ``VRVM_HOME=DIR`` (default: a
temporary copy-free directory, so the first start trains the demo model), then:

* Predict: clicks two zones on the map (positions computed from the deck's initial
  view), waits for the density chart -> ``predict.png``; switches to the coverage map
  -> ``coverage.png``;
* Relevance vectors -> ``relevance.png``;
* Retrain: adds the synthetic demo trips, trains a small candidate and waits for the
  hold-out evaluation -> ``retrain.png`` (in a scratch copy of the home, so the given
  home's store is not changed).

Needs Chromium at /usr/bin/chromium (``apt-get install chromium``) and Playwright.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(home: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "VRVM_HOME": str(home)}
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
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
            return process
        except OSError:
            time.sleep(0.3)
    stop_server(process)
    raise RuntimeError("streamlit did not start")


def stop_server(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(process.pid, signal.SIGKILL)


def click_targets(home: Path, width: float, height: float) -> list[tuple[str, float, float]]:
    """Two zones of the app's map, as (label, x, y) canvas pixels."""
    import numpy as np

    from vrvm import TravelTimeModel
    from vrvm import dashboard as svc

    store = svc.model_store(home)
    model = TravelTimeModel.load(store.active_path())
    area = svc.build_service_area(model, trips=svc.load_training_trips(home, model))
    grid = area.grid
    x, y = svc.lnglat_to_pixel(
        area.view, grid["lat"], grid["lon"], width_px=width, height_px=height
    )
    inside = (x > 40) & (x < width - 60) & (y > 40) & (y < height - 40)
    busiest = grid.index[inside][np.argmax(grid.loc[inside, "n_points"].to_numpy())]
    distance = np.hypot(x - x[busiest], y - y[busiest])
    far = np.where(inside & (distance > 0.35 * min(width, height)), grid["n_points"], -1)
    second = int(np.argmax(far))
    return [(grid["label"][i], float(x[i]), float(y[i])) for i in (busiest, second)]


def click_zone(page, canvas, label: str, x: float, y: float) -> None:
    """Click a zone and wait until the page shows it in the origin/destination list.

    deck.gl picks the object under the pointer on hover; hovering first makes the
    click reliably select it.
    """
    canvas.hover(position={"x": x, "y": y})
    page.wait_for_timeout(400)
    canvas.click(position={"x": x, "y": y})
    page.wait_for_function(
        "label => [...document.querySelectorAll('input')].some(e => e.value === label)",
        arg=label,
        timeout=30_000,
    )


def shoot(page, path: Path) -> None:
    """Screenshot the whole page: Streamlit scrolls inside a container, so the viewport
    is first made as tall as the content."""
    # no tooltip or hover highlight in the picture: hover an empty corner of the map
    canvas = page.locator("canvas").first
    if canvas.count():
        box = canvas.bounding_box()
        page.mouse.move(box["x"] + 3, box["y"] + 3)
        page.wait_for_timeout(300)
    page.mouse.move(0, 0)
    height = page.evaluate(
        "() => { const main = document.querySelector('[data-testid=\"stMainBlockContainer\"]');"
        " return main ? main.getBoundingClientRect().height + 40 : 1000; }"
    )
    page.set_viewport_size({"width": 1440, "height": int(min(max(height, 1000), 4000)) + 20})
    page.wait_for_timeout(2500)
    page.screenshot(path=path)
    page.set_viewport_size({"width": 1440, "height": 1000})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "assets")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    scratch = Path(tempfile.mkdtemp(prefix="vrvm-shots-"))
    home = args.home or scratch / "home"
    args.out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    server = start_server(home, port)
    url = f"http://127.0.0.1:{port}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            # a weekday morning peak, through a shared link
            page.goto(f"{url}/?t=2024-03-05T08:15&thr=20")
            page.wait_for_selector("canvas", timeout=180_000)
            page.wait_for_timeout(2500)
            canvas = page.locator("canvas").first
            box = canvas.bounding_box()
            targets = click_targets(home, box["width"], box["height"])
            for label, x, y in targets:
                click_zone(page, canvas, label, x, y)
            page.get_by_text("Predictive distribution of the travel time").wait_for(timeout=30_000)
            page.wait_for_timeout(2500)
            shoot(page, args.out / "predict.png")

            page.get_by_text("Reach from an origin").click()
            page.get_by_text("Download GeoJSON").wait_for(timeout=30_000)
            page.wait_for_timeout(2500)
            shoot(page, args.out / "coverage.png")

            page.goto(f"{url}/Relevance_vectors")
            page.wait_for_selector("canvas", timeout=60_000)
            page.get_by_text("ELBO per iteration").wait_for(timeout=30_000)
            page.wait_for_timeout(3000)
            shoot(page, args.out / "relevance.png")
            browser.close()
        stop_server(server)

        # Retrain in a scratch copy so the given home's trip store stays as it was.
        retrain_home = scratch / "retrain-home"
        if home != retrain_home:
            shutil.copytree(home, retrain_home, dirs_exist_ok=True)
        port = free_port()
        server = start_server(retrain_home, port)
        url = f"http://127.0.0.1:{port}"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.goto(f"{url}/Retrain")
            page.get_by_role("button", name="Add 2,000 synthetic demo trips").click()
            page.get_by_text("Added 2,000 synthetic demo trips").wait_for(timeout=60_000)
            members = page.get_by_label("Ensemble members")
            members.fill("3")
            page.get_by_role("button", name="Train and evaluate").click()
            page.get_by_text("Hold-out evaluation").wait_for(timeout=180_000)
            page.wait_for_timeout(3000)
            shoot(page, args.out / "retrain.png")
            browser.close()
    finally:
        stop_server(server)
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"screenshots written to {args.out}")


if __name__ == "__main__":
    main()
