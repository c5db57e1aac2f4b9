"""Shared test fixtures.

Real data sets live in ``../shared/data`` beside the repository (never copied into it).
A test that needs one asks for the ``shared_data`` fixture: it is skipped with a clear
reason when the folder is absent, and fails instead when ``VRVM_REQUIRE_SHARED_DATA=1``
(as CI sets it), so a missing data folder can never turn CI green silently.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("VRVM_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def _require(name: str) -> Path:
    path = SHARED_DATA / name
    if path.is_file():
        return path
    message = (
        f"shared data file {path} is not available (tests read real data from "
        "../shared/data beside the repository)"
    )
    if os.environ.get("VRVM_REQUIRE_SHARED_DATA") == "1":
        pytest.fail(message + " and VRVM_REQUIRE_SHARED_DATA=1 demands it")
    pytest.skip(message)


@pytest.fixture
def shared_data():
    """Return a function ``name -> Path`` for a file in ``../shared/data``."""
    return _require
