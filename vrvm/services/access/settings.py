"""Security settings read from the environment: the API token, analysts' sign-in, private mode.

The HTTP API's token (``VRVM_API_TOKEN``), who may sign in as an analyst
(``VRVM_ANALYST_PASSPHRASE``, ``VRVM_ANALYST_PASSPHRASE_HASH``, ``VRVM_ANALYSTS``) and what
viewers see of the trips (``VRVM_PRIVATE_MODE``, ``VRVM_PRIVATE_MIN_TRIPS``; see
``docs/security.md``). They belong to the dashboard and the API, not to the trip layer;
numbers are read through :func:`vrvm.trips.settings.env_int` like every ``VRVM_*`` number.

The security settings (:data:`SECURITY_ENVS`) fail closed: unset, each keeps its
documented meaning; set, it must hold a well-formed value, and a blank one (only
whitespace) is an error, never "not configured". A blank ``VRVM_API_TOKEN`` or
``VRVM_ANALYST_PASSPHRASE`` must not open the API or the dashboard, as it did before.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from vrvm.trips.settings import env_int

__all__ = [
    "ANALYSTS_ENV",
    "API_TOKEN_ENV",
    "DEFAULT_PRIVATE_MIN_TRIPS",
    "PASSPHRASE_ENV",
    "PASSPHRASE_HASH_ENV",
    "PRIVATE_MIN_TRIPS_ENV",
    "PRIVATE_MODES",
    "PRIVATE_MODE_ENV",
    "SECURITY_ENVS",
    "analyst_emails",
    "analyst_passphrase",
    "api_token",
    "private_min_trips",
    "private_mode",
]

API_TOKEN_ENV = "VRVM_API_TOKEN"
"""The bearer token ``vrvm serve`` requires (unset: none; set but blank: an error)."""
PASSPHRASE_ENV = "VRVM_ANALYST_PASSPHRASE"
"""The shared analyst passphrase of the dashboard (unset: none; set but blank: an error)."""
PASSPHRASE_HASH_ENV = "VRVM_ANALYST_PASSPHRASE_HASH"
"""Its scrypt hash instead (``vrvm hash-passphrase`` makes one); never both."""
ANALYSTS_ENV = "VRVM_ANALYSTS"
"""Who of the users an identity provider signs in is an analyst: e-mail addresses and
``@domain`` entries, separated by commas or spaces (unset: every signed-in user)."""
PRIVATE_MODE_ENV = "VRVM_PRIVATE_MODE"
"""When viewers see trips only in aggregate: ``real`` (default), ``always`` or ``off``."""
PRIVATE_MODES = ("real", "always", "off")
PRIVATE_MIN_TRIPS_ENV = "VRVM_PRIVATE_MIN_TRIPS"
"""k: the fewest trips behind any observed-trip figure a viewer sees."""
DEFAULT_PRIVATE_MIN_TRIPS = 5
SECURITY_ENVS = (
    API_TOKEN_ENV,
    PASSPHRASE_ENV,
    PASSPHRASE_HASH_ENV,
    ANALYSTS_ENV,
    PRIVATE_MODE_ENV,
    PRIVATE_MIN_TRIPS_ENV,
)
"""The settings that decide who may do what: set, each must hold a well-formed value."""


def _set_value(environ: Mapping[str, str], name: str, expected: str) -> str | None:
    """``environ[name]`` as it is, None when unset; a blank value is an error.

    A security setting that is set but blank is a mistake (an empty line in a service
    file, a secret store that returned nothing): it must not mean "unset".
    """
    raw = environ.get(name)
    if raw is None:
        return None
    if not raw.strip():
        raise ValueError(f"${name} is set but blank: expected {expected} (or unset it)")
    return raw


def api_token(environ: Mapping[str, str] | None = None) -> str | None:
    """The HTTP API's bearer token from :data:`API_TOKEN_ENV`, None when unset.

    Surrounding whitespace is dropped; what is left must be printable ASCII without
    spaces (what a client can send in ``Authorization: Bearer <token>``).

    Raises
    ------
    ValueError
        Naming the variable, when it is set but blank or holds other characters: a
        token nobody can send would otherwise leave the API open or closed by accident.

    Examples
    --------
    >>> api_token({"VRVM_API_TOKEN": " s3cret "}), api_token({})
    ('s3cret', None)
    >>> api_token({"VRVM_API_TOKEN": " "})
    Traceback (most recent call last):
    ...
    ValueError: $VRVM_API_TOKEN is set but blank: expected a bearer token (or unset it)
    """
    environ = os.environ if environ is None else environ
    raw = _set_value(environ, API_TOKEN_ENV, "a bearer token")
    if raw is None:
        return None
    token = raw.strip()
    if not all(33 <= ord(c) <= 126 for c in token):
        raise ValueError(
            f"${API_TOKEN_ENV} holds spaces or characters that are not printable ASCII: "
            "expected a token a client can send in 'Authorization: Bearer <token>'"
        )
    return token


def analyst_passphrase(environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """The configured analyst passphrase as ``("plain", value)`` or ``("hash", value)``.

    None when neither :data:`PASSPHRASE_ENV` nor :data:`PASSPHRASE_HASH_ENV` is set.
    The plain value is used as it is (no stripping: spaces may be part of a
    passphrase); the hash is stripped (its format is checked by
    :class:`vrvm.services.access.policy.PassphraseCheck`).

    Raises
    ------
    ValueError
        When both are set (which one counts would be a guess), or either is set but
        blank (which must not mean "no sign-in": everyone would be an analyst).

    Examples
    --------
    >>> analyst_passphrase({"VRVM_ANALYST_PASSPHRASE": "correct horse"})
    ('plain', 'correct horse')
    >>> analyst_passphrase({}) is None
    True
    >>> analyst_passphrase({"VRVM_ANALYST_PASSPHRASE": "a", "VRVM_ANALYST_PASSPHRASE_HASH": "b"})
    Traceback (most recent call last):
    ...
    ValueError: set $VRVM_ANALYST_PASSPHRASE or $VRVM_ANALYST_PASSPHRASE_HASH, not both
    >>> analyst_passphrase({"VRVM_ANALYST_PASSPHRASE": ""})
    Traceback (most recent call last):
    ...
    ValueError: $VRVM_ANALYST_PASSPHRASE is set but blank: expected a passphrase (or unset it)
    """
    environ = os.environ if environ is None else environ
    plain = _set_value(environ, PASSPHRASE_ENV, "a passphrase")
    hashed = _set_value(environ, PASSPHRASE_HASH_ENV, "a hash made by `vrvm hash-passphrase`")
    if plain is not None and hashed is not None:
        raise ValueError(f"set ${PASSPHRASE_ENV} or ${PASSPHRASE_HASH_ENV}, not both")
    if hashed is not None:
        return "hash", hashed.strip()
    return None if plain is None else ("plain", plain)


def analyst_emails(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The addresses and ``@domains`` of :data:`ANALYSTS_ENV`, lower-cased.

    Empty when unset (every user the identity provider signs in is an analyst); set, it
    must list at least one entry: a blank list must not mean "everyone".

    Examples
    --------
    >>> analyst_emails({"VRVM_ANALYSTS": "Ana@City.gov, @transit.example.org"})
    ('ana@city.gov', '@transit.example.org')
    >>> analyst_emails({})
    ()
    >>> analyst_emails({"VRVM_ANALYSTS": "not-an-address"})
    Traceback (most recent call last):
    ...
    ValueError: $VRVM_ANALYSTS: 'not-an-address' is neither an e-mail address nor an @domain
    """
    environ = os.environ if environ is None else environ
    expected = "e-mail addresses and @domains, separated by commas or spaces"
    raw = _set_value(environ, ANALYSTS_ENV, expected)
    if raw is None:
        return ()
    entries = raw.replace(",", " ").lower().split()
    if not entries:
        raise ValueError(f"${ANALYSTS_ENV} lists nobody ({raw!r}): expected {expected}")
    for entry in entries:
        _, at, domain = entry.rpartition("@")
        if not at or not domain or "." not in domain:
            raise ValueError(
                f"${ANALYSTS_ENV}: {entry!r} is neither an e-mail address nor an @domain"
            )
    return tuple(entries)


def private_mode(environ: Mapping[str, str] | None = None) -> str:
    """When viewers see trips only in aggregate (:data:`PRIVATE_MODE_ENV`).

    ``real`` (the default): on models of real data, not on the synthetic demo;
    ``always``: on every model; ``off``: never (viewers see individual trips).

    Examples
    --------
    >>> private_mode({}), private_mode({"VRVM_PRIVATE_MODE": " Always "})
    ('real', 'always')
    >>> private_mode({"VRVM_PRIVATE_MODE": "sometimes"})
    Traceback (most recent call last):
    ...
    ValueError: $VRVM_PRIVATE_MODE must be one of real, always, off; got 'sometimes'
    """
    environ = os.environ if environ is None else environ
    raw = _set_value(environ, PRIVATE_MODE_ENV, f"one of {', '.join(PRIVATE_MODES)}")
    value = "real" if raw is None else raw.strip().lower()
    if value not in PRIVATE_MODES:
        raise ValueError(
            f"${PRIVATE_MODE_ENV} must be one of {', '.join(PRIVATE_MODES)}; "
            f"got {environ.get(PRIVATE_MODE_ENV)!r}"
        )
    return value


def private_min_trips(environ: Mapping[str, str] | None = None) -> int:
    """k, the fewest trips behind an observed-trip figure a viewer sees (default 5).

    Examples
    --------
    >>> private_min_trips({}), private_min_trips({"VRVM_PRIVATE_MIN_TRIPS": "10"})
    (5, 10)
    """
    environ = os.environ if environ is None else environ
    _set_value(environ, PRIVATE_MIN_TRIPS_ENV, "an integer >= 2")
    return env_int(environ, PRIVATE_MIN_TRIPS_ENV, DEFAULT_PRIVATE_MIN_TRIPS, low=2)
