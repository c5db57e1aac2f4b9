"""A dashboard killed during its first start restarts into a healed home, leaving no process.

``streamlit run app.py`` over an empty data home, opened in headless Chromium so that
the first start trains the demo model (four members in two loky worker processes).
Once the workers are busy the server is killed with SIGKILL, as by the OOM killer or
``kill -9``. Every process it started (found by a token in their environment, which
survives re-parenting) must be gone within a few seconds. A second server on the same
home must then heal it, train again and show the Predict page.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tools.browser import CHROMIUM, CHROMIUM_ARGS, REPO, free_port

psutil = pytest.importorskip("psutil", reason="psutil (a dependency of dask.distributed)")

from tools.processes import TOKEN_ENV, tagged  # noqa: E402 (after the skip for psutil)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux process semantics"),
]

FIRST_START = {  # big enough that training lasts several seconds on two workers
    "VRVM_DEMO_TRIPS": "20000",
    "VRVM_DEMO_MEMBERS": "4",
    "VRVM_DEMO_MAX_BASIS": "400",
    "VRVM_DEMO_WIDTHS": "1.5, 3",
    "VRVM_N_JOBS": "2",
}
RESTART = {**FIRST_START, "VRVM_DEMO_TRIPS": "3000", "VRVM_DEMO_MEMBERS": "2"}


@pytest.fixture
def chromium():
    if not os.path.exists(CHROMIUM):
        message = f"Chromium is not installed at {CHROMIUM} (apt-get install -y chromium)"
        if os.environ.get("CI"):
            pytest.fail(message + " and CI is set, so the browser test must run")
        pytest.skip(message)
    return pytest.importorskip("playwright.sync_api")


def _start(home: Path, env: dict, token: str, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless"]
    command += ["true", "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env={**os.environ, **env, "VRVM_HOME": str(home), TOKEN_ENV: token},
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
            return process, f"http://127.0.0.1:{port}"
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.2)
    process.kill()
    pytest.fail("streamlit did not start:\n" + log.read_text(errors="replace"))


def _stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=10)


def test_a_dashboard_killed_mid_training_leaves_no_process_and_restarts_healed(chromium, tmp_path):
    home = tmp_path / "home"
    token = secrets.token_hex(8)
    server, url = _start(home, FIRST_START, token, tmp_path / "first.log")
    with chromium.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(url)
            page.get_by_text("First start").first.wait_for(timeout=30_000)
            # wait until the members train in worker processes, then kill the server
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and len(tagged(token)) < 3:
                time.sleep(0.2)
            workers = len(tagged(token)) - 1
            assert workers >= 2, (tmp_path / "first.log").read_text(errors="replace")
            time.sleep(1.0)  # mid-member
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=10)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and tagged(token):
                time.sleep(0.2)
            left = [f"{q.pid}: {' '.join(q.cmdline())[:100]}" for q in tagged(token)]
            assert left == [], f"{len(left)} processes outlived the killed dashboard"
            assert not (home / "models" / "active.json").exists()  # nothing was published

            # a second start on the same home heals it and trains again
            token2 = secrets.token_hex(8)
            server2, url2 = _start(home, RESTART, token2, tmp_path / "second.log")
            try:
                page.goto(url2)
                # the first visit opens on a busy trip with its answer and what to click next
                page.get_by_text("Click any zone to start a new trip").wait_for(timeout=90_000)
                assert (home / "models" / "active.json").exists()
                assert not list(home.rglob(".tmp-*"))
            finally:
                _stop(server2)
        finally:
            browser.close()
            for proc in tagged(token):  # only reached when the test already failed
                proc.kill()
