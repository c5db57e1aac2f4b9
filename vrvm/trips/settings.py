"""Numbers read from the environment: how every ``VRVM_*`` number is read, and the retention.

All ``VRVM_*`` numbers are read through :func:`env_int`, so a bad value fails the same
way everywhere: with the variable's name, what it holds and what was expected. The
store's retention is here (``VRVM_KEEP_VERSIONS``); the data home is
:func:`vrvm.trips.home.data_home` (``VRVM_HOME``). The settings that decide who may do
what (the API token, the analyst passphrase, private mode) belong to the app and the
API: :mod:`vrvm.services.access.settings`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["DEFAULT_KEEP_VERSIONS", "KEEP_VERSIONS_ENV", "env_int", "keep_versions"]

KEEP_VERSIONS_ENV = "VRVM_KEEP_VERSIONS"
DEFAULT_KEEP_VERSIONS = 30
"""Model versions a data home keeps besides the active one and those activated by hand
(30 versions of a dashboard-sized model take about 10 MB)."""


def env_int(environ: Mapping[str, str], name: str, default: int, low: int = 1) -> int:
    """The integer in ``environ[name]``, ``default`` when unset or blank.

    Raises
    ------
    ValueError
        Naming the variable, when it holds no integer or one below ``low``.

    Examples
    --------
    >>> env_int({"VRVM_X": " 12 "}, "VRVM_X", 5), env_int({}, "VRVM_X", 5)
    (12, 5)
    >>> env_int({"VRVM_X": "many"}, "VRVM_X", 5)
    Traceback (most recent call last):
    ...
    ValueError: $VRVM_X must be an integer, got 'many'
    """
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"${name} must be an integer, got {raw!r}") from None
    if value < low:
        raise ValueError(f"${name} must be >= {low}, got {value}")
    return value


def keep_versions(environ: Mapping[str, str] | None = None) -> int:
    """How many recent model versions a data home keeps (``VRVM_KEEP_VERSIONS``, 30).

    The active version and every version a user activated by hand are kept besides.

    Examples
    --------
    >>> keep_versions({}), keep_versions({"VRVM_KEEP_VERSIONS": "5"})
    (30, 5)
    """
    environ = os.environ if environ is None else environ
    return env_int(environ, KEEP_VERSIONS_ENV, DEFAULT_KEEP_VERSIONS)
