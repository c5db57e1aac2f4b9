"""The dashboard on a read-only data home: every page loads, and nothing is written.

The home has no write bits (the tests run as root, whom the bits would not stop; vrvm
honours them anyway), or ``VRVM_READ_ONLY=1`` is set on a writable one. Every path of
the home (kind, size, mtime, mode) is snapshotted before and after the pages run: no
lock file, no heal, no derived cache, no audit line.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tests.conftest import TINY_DEMO_ENV

REPO = Path(__file__).resolve().parents[2]
PAGES = [None, "pages/1_Relevance_vectors.py", "pages/2_Retrain.py"]
TIMEOUT = 90

if str(REPO) not in sys.path:  # `streamlit run` puts the app's folder on the path
    sys.path.insert(0, str(REPO))


def _snapshot(home: Path) -> dict[str, tuple]:
    found = {}
    for path in [home, *home.rglob("*")]:
        info = path.lstat()
        size = 0 if stat.S_ISDIR(info.st_mode) else info.st_size
        found[str(path.relative_to(home))] = (size, info.st_mtime_ns, info.st_mode)
    return found


def _chmod_tree(home: Path, writable: bool) -> None:
    for path in [home, *home.rglob("*")]:
        mode = path.lstat().st_mode
        os.chmod(path, (mode | 0o200) if writable else (mode & ~0o222))


@pytest.mark.parametrize("how", ["chmod", "VRVM_READ_ONLY"])
def test_every_page_loads_from_a_read_only_home_and_writes_nothing(
    how, tiny_home, tmp_path, monkeypatch
):
    home = tmp_path / "home"
    shutil.copytree(tiny_home, home)
    for derived in (home / "training").glob("*.derived"):
        shutil.rmtree(derived)  # so that the pages would write their caches if they could
    (home / "models" / "versions" / ".tmp-v0009-0badc0de").mkdir()  # a crash's leftover
    monkeypatch.setenv("VRVM_HOME", str(home))
    for name, value in TINY_DEMO_ENV.items():
        monkeypatch.setenv(name, value)
    if how == "chmod":
        _chmod_tree(home, writable=False)
    else:
        monkeypatch.setenv("VRVM_READ_ONLY", "1")
    before = _snapshot(home)
    try:
        for page in PAGES:
            at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT).run()
            if page is not None:
                at = at.switch_page(page).run()
            assert not at.exception, [e.value for e in at.exception]
            assert not at.error, [e.value for e in at.error]
        after = _snapshot(home)
    finally:
        _chmod_tree(home, writable=True)
    assert after == before
    assert (home / "models" / "versions" / ".tmp-v0009-0badc0de").is_dir()  # reported only
