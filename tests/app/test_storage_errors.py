"""A data home that cannot be written: every page says which path, why and what to do.

The tests run as root, which ignores permission bits, so an unwritable home is made by
putting it under a regular file (mkdir fails with ENOTDIR), and a full disk by making
the atomic write's fsync raise ENOSPC.
"""

from __future__ import annotations

import errno
import sys
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tests.conftest import TINY_DEMO_ENV
from vrvm.trips.store import durable

REPO = Path(__file__).resolve().parents[2]
PAGES = [None, "pages/1_Relevance_vectors.py", "pages/2_Retrain.py"]
TIMEOUT = 60

if str(REPO) not in sys.path:  # `streamlit run` puts the app's folder on the path
    sys.path.insert(0, str(REPO))


@pytest.fixture
def demo_env(monkeypatch):
    """The tiny demo model's settings, so a first start that can write takes seconds."""
    for name, value in TINY_DEMO_ENV.items():
        monkeypatch.setenv(name, value)


def _run(page: str | None = None) -> AppTest:
    """Run the Predict page, then switch to ``page`` (as a reader following a link)."""
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT).run()
    return at if page is None else at.switch_page(page).run()


def _the_error(at: AppTest) -> str:
    """The page's one error, as the reader sees it (Markdown escapes removed)."""
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 1, [e.value for e in at.error]
    return at.error[0].value.replace("\\", "")


@pytest.mark.parametrize("page", PAGES)
def test_a_home_under_a_file_is_named_with_the_file_and_what_to_do(page, tmp_path, monkeypatch):
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    home = afile / "home"
    monkeypatch.setenv("VRVM_HOME", str(home))
    at = _run(page)
    assert _the_error(at) == (
        f"Cannot write {home}: {afile} is a file, not a folder; set VRVM_HOME to a writable folder."
    )
    assert afile.read_text() == "not a folder"
    # the page stopped there: no model, no title, and the next run says the same
    assert not at.title
    assert _the_error(at.run()).startswith(f"Cannot write {home}: ")


def test_a_home_that_is_a_file(tmp_path, monkeypatch):
    afile = tmp_path / "afile"
    afile.write_text("")
    monkeypatch.setenv("VRVM_HOME", str(afile))
    message = _the_error(_run())
    assert message == (
        f"Cannot write {afile}: {afile} is a file, not a folder; "
        "set VRVM_HOME to a writable folder."
    )


def test_a_full_disk_on_first_start_names_the_file_and_says_free_space(
    tmp_path, monkeypatch, demo_env
):
    def no_space(path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(durable, "_fsync_file", no_space)
    home = tmp_path / "home"
    monkeypatch.setenv("VRVM_HOME", str(home))
    at = _run()
    message = _the_error(at)
    assert message.startswith(f"Cannot write {home}{'/'}")
    assert message.endswith(
        ": no space left on device; free some space, or set VRVM_HOME to a folder on another disk."
    )
    assert ".tmp-" not in message and "Errno" not in message
    assert [s.label for s in at.status] == ["First start failed: cannot write the data home"]
    # nothing half-written was left: no model, no temporary files
    assert not list(home.rglob(".tmp-*"))
    assert not list((home / "models").rglob("model.json"))
