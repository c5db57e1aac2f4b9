"""Take the dashboard screenshots in ``assets/`` from the real app in headless Chromium.

    python tools/screenshots.py [--home DIR] [--out assets]
    python tools/screenshots.py --city ../shared/data/nyc_taxi_2016_sample.csv --prefix nyc \
        [--zones ../shared/data/nyc_taxi_zones.geojson:LocationID]

Starts ``streamlit run app.py`` on a free port with ``VRVM_HOME=DIR`` (default: a
temporary copy-free directory, so the first start trains the demo model), then:

* Predict: clicks two zones on the map (positions computed from the deck's initial
  view), waits for the density chart -> ``predict.png``; switches to the coverage map
  -> ``coverage.png``;
* Plan: each section on its first-visit defaults -> ``plan_arrive.png``,
  ``plan_fleet.png`` (with the ranking for one more base), ``plan_isochrone.png``,
  ``plan_matrix.png`` (``--only-plan``: these alone);
* Relevance vectors -> ``relevance.png``;
* Retrain: adds the synthetic demo trips, trains a small candidate and waits for the
  hold-out evaluation -> ``retrain.png`` (in a scratch copy of the home, so the given
  home's store is not changed).

With ``--city FILE --prefix NAME`` it trains the default model on a real trip file in a
scratch home instead (read with :func:`vrvm.read_trips`, no options) and takes the
Predict and coverage pages of that city -> ``NAME_predict.png``, ``NAME_coverage.png``;
with ``--zones FILE:ID`` the zone file is kept in that home and its polygons are the
clickable zones.

Needs Chromium at /usr/bin/chromium (``apt-get install chromium``) and Playwright.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tools.browser import (  # noqa: E402 (after the path set-up)
    CHROMIUM,
    CHROMIUM_ARGS,
    VEGA_DRAWN,
    click_zone,
    streamlit_server,
    two_zones,
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


def city_home(path: Path, home: Path, zones: str | None = None) -> None:
    """Train the default model on a real trip file and publish it in ``home``; with
    ``zones`` (``FILE:ID_PROPERTY``) keep that zone file and make it the clickable zones."""
    from vrvm import TravelTimeModel, read_trips
    from vrvm.services.map.area import set_zone_choice
    from vrvm.services.versions.models import default_model_name, publish_model
    from vrvm.trips.home import Home

    trips, report = read_trips(path)
    print(report)
    model = TravelTimeModel(name=default_model_name(path.name), random_state=0, n_jobs=2)
    model.fit(trips)
    publish_model(home, model, metrics=None, info={"kind": "train"}, training_trips=trips)
    if zones:
        file, _, id_property = zones.rpartition(":")
        name = Path(file).stem
        Home(home).zones.add(name, Path(file).read_bytes(), id_property=id_property or None)
        set_zone_choice(home, name)


def predict_and_coverage(url: str, home: Path, out: Path, prefix: str = "") -> None:
    """The Predict page with two busy zones picked, then the coverage map."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        # a weekday morning peak, through a shared link
        page.goto(f"{url}/?t=2024-03-05T08:15&thr=20")
        page.wait_for_selector("canvas", timeout=180_000)
        page.wait_for_timeout(3000)  # the map drawn
        canvas = page.locator("canvas").first
        box = canvas.bounding_box()
        for label, x, y in two_zones(home, box["width"], box["height"]):
            # polygons are picked slowly in software WebGL: hover longer before clicking
            click_zone(page, canvas, label, x, y, hover_ms=1200)
            page.wait_for_timeout(3000)  # the rerun redraws the map before the next click
        page.wait_for_function(VEGA_DRAWN, arg=3, timeout=30_000)  # map, density, profile
        page.wait_for_timeout(2500)
        shoot(page, out / f"{prefix}predict.png")

        page.get_by_text("Reach from an origin").click()
        page.get_by_text("Download GeoJSON").wait_for(timeout=30_000)
        page.wait_for_timeout(2500)
        shoot(page, out / f"{prefix}coverage.png")
        browser.close()


def plan_sections(url: str, out: Path, prefix: str = "") -> None:
    """The Plan page's four sections on their first-visit defaults (the fleet section
    with its ranking for one more base) -> ``plan_<section>.png``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(f"{url}/Plan")
        page.get_by_text("Latest departure").first.wait_for(timeout=180_000)
        page.wait_for_selector("canvas", timeout=60_000)
        page.wait_for_timeout(3000)  # the map drawn
        shoot(page, out / f"{prefix}plan_arrive.png")
        page.get_by_text("Fleet coverage").first.click()
        page.get_by_text("Rank the zones for one more base").click()
        page.get_by_text("with a base at").first.wait_for(timeout=120_000)
        page.wait_for_timeout(2500)
        shoot(page, out / f"{prefix}plan_fleet.png")
        page.get_by_text("Probability isochrones").first.click()
        page.get_by_text("Download GeoJSON").wait_for(timeout=60_000)
        page.wait_for_timeout(2500)
        shoot(page, out / f"{prefix}plan_isochrone.png")
        page.get_by_text("OD matrix").first.click()
        page.get_by_text("Download CSV").wait_for(timeout=60_000)
        page.wait_for_timeout(2500)
        shoot(page, out / f"{prefix}plan_matrix.png")
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "assets")
    parser.add_argument("--city", type=Path, default=None, help="a real trip file")
    parser.add_argument("--prefix", default="city", help="file name prefix with --city")
    parser.add_argument("--zones", default=None, help="with --city: FILE.geojson:ID_PROPERTY")
    parser.add_argument(
        "--only-plan", action="store_true", help="only the Plan page's sections (plan_*.png)"
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    if args.city is not None:
        scratch = Path(tempfile.mkdtemp(prefix="vrvm-shots-"))
        try:
            city_home(args.city, scratch / "home", args.zones)
            with streamlit_server(scratch / "home", scratch / "streamlit.log") as url:
                if args.only_plan:
                    plan_sections(url, args.out, f"{args.prefix}_")
                else:
                    predict_and_coverage(url, scratch / "home", args.out, f"{args.prefix}_")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        print(f"screenshots written to {args.out}")
        return

    scratch = Path(tempfile.mkdtemp(prefix="vrvm-shots-"))
    home = args.home or scratch / "home"
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        # the first start trains the demo model: allow for it
        with streamlit_server(home, scratch / "streamlit.log", timeout_s=180) as url:
            plan_sections(url, args.out)
            if args.only_plan:
                return
            predict_and_coverage(url, home, args.out)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1440, "height": 1000})
                page.goto(f"{url}/Relevance_vectors")
                page.wait_for_selector("canvas", timeout=60_000)
                page.get_by_text("ELBO per iteration").wait_for(timeout=30_000)
                page.wait_for_timeout(3000)
                shoot(page, args.out / "relevance.png")
                browser.close()

        # Retrain in a scratch copy so the given home's trip store stays as it was.
        retrain_home = scratch / "retrain-home"
        if home != retrain_home:
            shutil.copytree(home, retrain_home, dirs_exist_ok=True)
        with streamlit_server(retrain_home, scratch / "streamlit-retrain.log") as url:
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
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"screenshots written to {args.out}")


if __name__ == "__main__":
    main()
