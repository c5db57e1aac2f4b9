"""Fixtures of every app test."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture(autouse=True)
def _restore_main_module():
    """AppTest runs a page as ``__main__`` and leaves it in ``sys.modules``; restore the
    real one, or later tests that spawn processes (Dask workers re-import ``__main__``
    from its path) would run a page, and train a demo model, in every child."""
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main
