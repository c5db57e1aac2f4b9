"""A dashboard killed during its first start restarts into a healed home, leaving no process.

``streamlit run app.py`` over an empty data home, opened in headless Chromium so that
the first start trains the demo model (the location stage's folds, then four
members, in two loky worker processes). Once the workers run, with the fit's progress
on the page, the server is killed with SIGKILL, as by the OOM killer or ``kill -9``. Every
process it started (found by a token in their environment, which survives re-parenting)
must then be gone (``benchmarks/bench_worker_leak.py`` measures how soon). A second
server on the same home must then heal it, train again and show the Predict page.
Every wait is on a condition (a page text, the server's health, the processes left)
with a deadline generous enough for a busy machine.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tools.browser import CHROMIUM, CHROMIUM_ARGS, REPO, free_port

psutil = pytest.importorskip("psutil", reason="psutil (a dependency of dask.distributed)")

from tests._waiting import START_S, wait_until  # noqa: E402 (after the skip for psutil)
from tools.processes import TOKEN_ENV, tagged  # noqa: E402

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.slow_process,
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
# Seconds for the orphans to go: the watchdog polls every 0.5 s once a worker has
# loaded Python and joblib (3-10 s at load 11 on two cores); well under loky's idle
# timeout (300 s), which would end an idle orphan without any watchdog.
GONE_S = 90.0
PAGE_MS = 1000 * START_S  # a page text that needs a start, a fit or a model load
# The first start's bar while the fit runs: before the workers start, the location
# stage's boosting fits, the members (a phase lasting 1-20 s depending on the load)
FITTING = re.compile(r"Preparing|Boosting fit \d of 6|Member [0-3] of 4 trained")


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

    def healthy() -> bool:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5)
            return True
        except OSError:
            return False

    try:
        wait_until(
            healthy,
            START_S,
            "streamlit's health check",
            poll_s=0.2,
            process=process,
            details=lambda: log.read_text(errors="replace"),
        )
    except AssertionError:
        _stop(process)
        raise
    return process, f"http://127.0.0.1:{port}"


def _stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=60)


def _command_lines(token: str) -> dict[int, str]:
    """pid -> command line of the live processes carrying ``token``."""
    found = {}
    for proc in tagged(token):
        try:
            found[proc.pid] = " ".join(proc.cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def test_a_dashboard_killed_mid_training_leaves_no_process_and_restarts_healed(chromium, tmp_path):
    home = tmp_path / "home"
    token = secrets.token_hex(8)
    server, url = _start(home, FIRST_START, token, tmp_path / "first.log")
    with chromium.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(url)
            page.get_by_text("First start").first.wait_for(timeout=PAGE_MS)

            def workers() -> list[str]:
                return [c for c in _command_lines(token).values() if "popen_loky" in c]

            # kill the server once its fit runs in worker processes (the location stage's
            # folds, then the members), with the fit's progress on the page
            wait_until(
                lambda: len(workers()) >= 2,
                START_S,
                "two worker processes fitting the demo model",
                poll_s=0.1,
                process=server,
                details=lambda: (tmp_path / "first.log").read_text(errors="replace"),
            )
            page.get_by_text(FITTING).first.wait_for(timeout=PAGE_MS)
            assert not (home / "models" / "active.json").exists()  # still fitting
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=60)

            def described() -> str:
                left = [f"{pid}: {line[:100]}" for pid, line in _command_lines(token).items()]
                return f"{len(left)} processes outlived the killed dashboard:\n" + "\n".join(left)

            wait_until(
                lambda: not tagged(token),
                GONE_S,
                "no process of the killed dashboard left",
                poll_s=0.2,
                details=described,
            )
            assert not (home / "models" / "active.json").exists()  # nothing was published

            # a second start on the same home heals it and trains again
            token2 = secrets.token_hex(8)
            server2, url2 = _start(home, RESTART, token2, tmp_path / "second.log")
            try:
                page.goto(url2)
                # the first visit opens on a busy trip with its answer and what to click next
                page.get_by_text("Click any zone to start a new trip").wait_for(timeout=PAGE_MS)
                assert (home / "models" / "active.json").exists()
                assert not list(home.rglob(".tmp-*"))
            finally:
                _stop(server2)
        finally:
            browser.close()
            for proc in tagged(token):  # only reached when the test already failed
                proc.kill()
