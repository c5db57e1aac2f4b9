"""A read-only data home is served as committed and never written.

Read-only is made three ways: ``chmod -R a-w`` (which the tests, run as root, could
write through: vrvm honours the missing write bits anyway), ``VRVM_READ_ONLY=1`` on a
writable home, and ``vrvm serve --read-only``. Each test snapshots every path of the
home (kind, size, mtime, mode) before and after serving, listing versions, auditing
and loading the dashboard, and asserts that nothing changed: no lock file, no healing,
no cache, no log line. A home that needs healing (a publish killed before activation
or before its audit entry) is reported, not repaired, and what is committed is served.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests._waiting import START_S, wait_until
from vrvm import synthetic_city
from vrvm.cli import main
from vrvm.services.answers.live import LiveModel
from vrvm.trips.home import READ_ONLY_ENV, Home
from vrvm.trips.store._faults import CRASH_ENV
from vrvm.trips.store.durable import StorageError

pytestmark = pytest.mark.skipif(os.name != "posix", reason="permission bits and SIGKILL")

TIMEOUT_S = 120
_VRVM = (sys.executable, "-m", "vrvm")


def _snapshot(home: Path) -> dict[str, tuple]:
    """Every path under ``home``: kind, size, modification time and mode."""
    found = {}
    for path in [home, *home.rglob("*")]:
        info = path.lstat()
        kind = "dir" if stat.S_ISDIR(info.st_mode) else "file"
        size = 0 if kind == "dir" else info.st_size
        found[str(path.relative_to(home))] = (kind, size, info.st_mtime_ns, info.st_mode)
    return found


def _chmod_tree(home: Path, writable: bool) -> None:
    for path in [home, *home.rglob("*")]:
        mode = path.lstat().st_mode
        os.chmod(path, (mode | 0o200) if writable else (mode & ~0o222))


@pytest.fixture
def crashed_home(tiny_home, tmp_path):
    """A copy of the tiny home where ``vrvm update`` was killed after committing
    version 2 and before activating it: healing would activate it and audit it."""
    home = tmp_path / "home"
    shutil.copytree(tiny_home, home)
    for derived in (home / "training").glob("*.derived"):
        shutil.rmtree(derived)  # so that serving would write its caches if it could
    trips = tmp_path / "few.csv"
    synthetic_city(5, seed=99).to_csv(trips, index=False)
    environ = {**os.environ, CRASH_ENV: "model_store.committed"}
    environ.pop(READ_ONLY_ENV, None)
    result = subprocess.run(
        [sys.executable, "-m", "vrvm", "update", str(home / "models"), str(trips)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert list((home / "models" / "journal").iterdir())  # the publish's journal entry
    return home


@pytest.fixture
def read_only_home(crashed_home):
    """``crashed_home`` with every write bit removed (restored afterwards)."""
    _chmod_tree(crashed_home, writable=False)
    yield crashed_home
    _chmod_tree(crashed_home, writable=True)


def test_the_reason_is_found_and_a_bad_setting_is_refused(tmp_path):
    assert Home(tmp_path).read_only_reason({}) is None
    assert Home(tmp_path).read_only_reason({READ_ONLY_ENV: "yes"}) == "VRVM_READ_ONLY is set"
    assert Home(tmp_path).read_only_reason({READ_ONLY_ENV: "0"}) is None
    with pytest.raises(ValueError, match="VRVM_READ_ONLY='sometimes': expected 1, true"):
        Home(tmp_path).read_only_reason({READ_ONLY_ENV: "sometimes"})
    (tmp_path / "models").mkdir()
    os.chmod(tmp_path / "models", 0o555)
    try:  # a store without write bits makes the whole home read-only, even for root
        assert Home(tmp_path).read_only_reason({}) == (
            f"{tmp_path / 'models'}: the folder has no write permission"
        )
    finally:
        os.chmod(tmp_path / "models", 0o755)


def test_healing_a_read_only_home_reports_and_writes_nothing(read_only_home):
    before = _snapshot(read_only_home)
    report = Home(read_only_home).heal()
    said = "not repaired (the folder has no write permission): models: "
    assert report[0] == said + "version 2 was committed but not made active"
    assert [r.startswith(said + ".tmp-v0002-") for r in report[1:]] == [True]  # its staging
    assert _snapshot(read_only_home) == before
    store = Home(read_only_home).models
    assert store.active_version() == 1  # what is committed is served
    with pytest.raises(StorageError, match="the data home is read-only"):
        store.activate(2)  # any write is refused before touching anything
    assert _snapshot(read_only_home) == before


def test_versions_and_audit_on_a_read_only_home_list_and_write_nothing(read_only_home):
    before = _snapshot(read_only_home)
    out, err = io.StringIO(), io.StringIO()
    assert main(["versions", str(read_only_home), "--json"], stdout=out, stderr=err) == 0
    table = json.loads(out.getvalue())
    assert [(r["version"], r["state"]) for r in table] == [(2, "never activated"), (1, "active")]
    assert "not repaired" in err.getvalue() and "version 2 was committed" in err.getvalue()
    # the crash left version 2 without its audit entry, and the home cannot be repaired
    err = io.StringIO()
    assert main(["audit", str(read_only_home)], stdout=io.StringIO(), stderr=err) == 1
    assert "version 2 has no publish entry" in err.getvalue()
    err = io.StringIO()
    assert main(["versions", str(read_only_home), "--activate", "2"], stderr=err) == 1
    assert "the data home is read-only" in err.getvalue()
    assert _snapshot(read_only_home) == before


def test_the_live_model_serves_a_read_only_home_without_caching(crashed_home, monkeypatch):
    # the contrast first: a writable home gets its derived caches and its heal
    writable = crashed_home.parent / "writable"
    shutil.copytree(crashed_home, writable)
    LiveModel(writable).current()
    assert list((writable / "training").glob("*.derived/*"))
    assert Home(writable).models.active_version() == 2
    monkeypatch.setenv(READ_ONLY_ENV, "1")
    before = _snapshot(crashed_home)
    served = LiveModel(crashed_home).current()
    assert served.version == 1 and served.area.support is not None
    assert _snapshot(crashed_home) == before


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except OSError:
        return 0, b""


@pytest.mark.slow_process
@pytest.mark.parametrize("how", ["chmod", "--read-only"])
def test_vrvm_serve_answers_from_a_read_only_home_and_writes_nothing(crashed_home, how):
    environ = {k: v for k, v in os.environ.items() if k not in (CRASH_ENV, READ_ONLY_ENV)}
    flags = ["--read-only"] if how == "--read-only" else []
    if how == "chmod":
        _chmod_tree(crashed_home, writable=False)
    before = _snapshot(crashed_home)
    port = _free_port()
    process = subprocess.Popen(
        [*_VRVM, "serve", "--home", str(crashed_home), *flags, "--port", str(port)],
        env=environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: _get(base + "/readyz")[0] == 200,
            START_S,
            "vrvm serve ready on the read-only home (/readyz 200)",
            poll_s=0.1,
            process=process,
            details=lambda: (
                process.communicate(timeout=30)[1] if process.poll() is not None else ""
            ),
        )
        status, body = _get(base + "/v1/models")
        assert status == 200
        models = json.loads(body)
        assert json.dumps(models).count('"active": true') == 1
        zones = json.loads(_get(base + "/v1/zones")[1])["zones"]
        assert zones and all(z["trip_ends"] >= 0 for z in zones)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    after = _snapshot(crashed_home)
    _chmod_tree(crashed_home, writable=True)
    assert "served read-only" in err and "not repaired" in err, err
    assert after == before


def test_serve_refuses_a_read_only_home_without_a_model(tmp_path, capsys):
    home = tmp_path / "empty"
    home.mkdir()
    os.chmod(home, 0o555)
    try:
        assert main(["serve", "--home", str(home)]) == 1
    finally:
        os.chmod(home, 0o755)
    err = capsys.readouterr().err
    assert "no model is active" in err and "read-only" in err
    assert list(home.iterdir()) == []


def _runs_as_nobody() -> bool:
    """Whether this (root) process can run the interpreter as the user ``nobody``."""
    if os.geteuid() != 0:
        return False
    try:
        probe = subprocess.run(
            [sys.executable, "-c", "import vrvm"], user="nobody", capture_output=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError, KeyError):
        return False
    return probe.returncode == 0


def test_a_user_whom_permission_bits_stop_lists_versions_without_a_traceback(crashed_home):
    if os.geteuid() == 0 and not _runs_as_nobody():
        pytest.skip("running as root and the interpreter cannot be run as nobody")
    _chmod_tree(crashed_home, writable=False)
    for path in [crashed_home, *crashed_home.parents]:  # let `nobody` reach the home
        if path == Path("/") or path.stat().st_mode & 0o005 == 0o005:
            break
        os.chmod(path, path.stat().st_mode | 0o005)
    before = _snapshot(crashed_home)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "vrvm", "versions", str(crashed_home)],
            user="nobody" if os.geteuid() == 0 else None,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr and "not repaired" in result.stderr
        assert _snapshot(crashed_home) == before
    finally:
        _chmod_tree(crashed_home, writable=True)


def test_a_read_only_setting_on_a_writable_home_writes_nothing_even_a_sign_in(
    crashed_home, monkeypatch
):
    from vrvm.services.access.policy import ANALYST, Access, record

    monkeypatch.setenv(READ_ONLY_ENV, "1")
    before = _snapshot(crashed_home)
    assert Home(crashed_home).heal()  # reported
    record(crashed_home, Access(ANALYST, who="ana", how="passphrase", via="dashboard"), "sign in")
    assert _snapshot(crashed_home) == before
    assert [e["action"] for e in Home(crashed_home).audit.entries()] == ["publish"]
