"""The heap settings for numerical tasks in Dask workers (vrvm.engine._malloc)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from tests._waiting import START_S
from vrvm.engine import _malloc


@pytest.fixture
def calls(monkeypatch):
    made = []
    monkeypatch.setattr(_malloc, "_mallopt", lambda: lambda p, v: made.append((p, v)) or 1)
    return made


def test_nothing_changes_without_the_trim_variable(monkeypatch, calls):
    monkeypatch.delenv(_malloc.TRIM_ENV, raising=False)
    with _malloc.heap_for_numerics():
        pass
    assert calls == []


def test_the_first_task_raises_the_thresholds_and_the_last_restores_them(monkeypatch, calls):
    monkeypatch.setenv(_malloc.TRIM_ENV, "65536")
    raised = [(-3, 32 * 2**20), (-1, 64 * 2**20)]
    restored = [(-1, 65536), (-3, 128 * 1024)]
    with _malloc.heap_for_numerics():
        assert calls == raised
        with _malloc.heap_for_numerics():  # nested: nothing more
            assert calls == raised
        assert calls == raised  # another user is still inside
    assert calls == raised + restored


def test_concurrent_tasks_share_one_setting(monkeypatch, calls):
    monkeypatch.setenv(_malloc.TRIM_ENV, "65536")
    inside = threading.Barrier(4)

    def task():
        with _malloc.heap_for_numerics():
            inside.wait(timeout=START_S)  # all four inside at once

    threads = [threading.Thread(target=task) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=START_S)
    assert len(calls) == 4  # set once, restored once
    assert calls[2:] == [(-1, 65536), (-3, 128 * 1024)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_real_glibc_accepts_the_settings():
    code = (
        "from vrvm.engine import _malloc\n"
        "assert _malloc._mallopt() is not None\n"
        "with _malloc.heap_for_numerics():\n"
        "    import numpy as np; np.ones((2000, 2000)).sum()\n"
        "print('ok')\n"
    )
    env = {**os.environ, _malloc.TRIM_ENV: "65536"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == b"ok", done.stderr.decode()
