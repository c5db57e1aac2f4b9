"""Who may do what: the viewer and analyst roles, analysts' sign-in, and the audit trail.

Planners and stakeholders *look* (role ``viewer``); analysts *change* the model and see
individual trips (role ``analyst``). :data:`PERMISSIONS` lists what each role may do
(``docs/security.md`` shows the same table, and a test keeps them equal).

How analysts sign in is chosen by the deployment (:class:`SignInOptions`):

* **OpenID Connect**, Streamlit's ``st.login`` configured in ``.streamlit/secrets.toml``
  (``[auth]``): a user the identity provider signed in is an analyst when their e-mail
  is listed in ``VRVM_ANALYSTS`` (addresses or ``@domain``; unset: every signed-in
  user). :func:`decide_access` takes the claims as a plain mapping (what ``st.user``
  holds), so it is tested without an identity provider.
* **A shared passphrase**, ``VRVM_ANALYST_PASSPHRASE`` or its scrypt hash
  ``VRVM_ANALYST_PASSPHRASE_HASH`` (:func:`hash_passphrase`), compared in constant time
  (:class:`PassphraseCheck`); every failed attempt makes the next one wait longer,
  process-wide (:class:`SignInThrottle`), so reloading the page does not reset it.
* **Neither** (a laptop demo): everyone is an analyst (``how="open"``), as before.

A wrong security setting (set but blank, malformed, or both passphrase variables; an
``[auth]`` section without what Streamlit needs) never falls back to "neither": the
options are *locked* (:attr:`SignInOptions.problems`), nobody is an analyst and nobody
can sign in, so nothing can be changed from the dashboard until the setting is fixed;
viewers still see every answer.

Everything that changes a data home records who did it in the home's audit log
(:func:`record`; :class:`~vrvm.trips.store.audit.AuditLog`), and the services that change a
store refuse a viewer (:meth:`Access.require`).
"""

from __future__ import annotations

import base64
import getpass
import hashlib
import hmac
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from vrvm.services.access.settings import (
    PASSPHRASE_HASH_ENV,
    analyst_emails,
    analyst_passphrase,
    private_min_trips,
    private_mode,
)
from vrvm.trips.home import MODELS_DIR, Home

__all__ = [
    "ANALYST",
    "PERMISSIONS",
    "VIEWER",
    "Access",
    "AccessDenied",
    "PassphraseCheck",
    "Role",
    "SignInOptions",
    "SignInThrottle",
    "audit_entries",
    "cli_access",
    "dashboard_setting_problems",
    "decide_access",
    "hash_passphrase",
    "home_of",
    "is_listed_analyst",
    "library_access",
    "record",
    "sign_in_throttle",
    "sign_in_with_passphrase",
    "sign_out",
    "verify_passphrase_hash",
]

logger = logging.getLogger(__name__)


class Role(StrEnum):
    """A user's role: viewers look, analysts change the model and see single trips."""

    VIEWER = "viewer"
    ANALYST = "analyst"


VIEWER, ANALYST = Role.VIEWER, Role.ANALYST

PERMISSIONS: dict[str, tuple[Role, str]] = {
    "predict": (VIEWER, "Predict page: a trip's travel-time distribution, reach maps"),
    "plan": (VIEWER, "Plan page: arrive by, fleet coverage, isochrones, OD matrices"),
    "relevance": (
        VIEWER,
        "Relevance vectors page in private mode (zone pairs of at least k trips, no times)",
    ),
    "download_aggregates": (
        VIEWER,
        "Downloads of aggregates: reach maps, isochrones, matrices, the relevance table "
        "per zone pair of at least k trips",
    ),
    "raw_trips": (
        ANALYST,
        "Individual trips on real data: observed trips as dots, relevance vectors at trip "
        "coordinates with their start times",
    ),
    "upload": (ANALYST, "Upload trip files, keep read recipes"),
    "trip_store": (ANALYST, "The trip store: its batches, adding the demo trips"),
    "train": (ANALYST, "Train and evaluate candidate models"),
    "publish": (ANALYST, "Publish a candidate as the active model"),
    "activate": (ANALYST, "Re-activate another model version"),
    "delete": (ANALYST, "Delete every stored trip"),
    "zones": (ANALYST, "Upload, choose and remove zone and boundary files"),
    "export": (ANALYST, "Export a model (snapped to zone centres, or raw)"),
    "audit": (ANALYST, "Read the audit log and who published each version"),
}
"""Each action: the least role allowed to do it, and what it covers."""


class AccessDenied(PermissionError):
    """An action the user's role does not allow (nothing was done)."""


@dataclass(frozen=True)
class Access:
    """What one user may do, and who they are for the audit log.

    Attributes
    ----------
    role : Role
        Viewer or analyst.
    who : str
        Their name for the audit log: an e-mail (OpenID Connect), the name given at a
        passphrase sign-in, the OS user (command line), ``"anyone"`` (no sign-in
        configured) or ``""`` (a viewer).
    how : str
        How they were identified: ``oidc``, ``passphrase``, ``open``, ``os``,
        ``library`` or ``none``.
    via : str
        The interface: ``dashboard``, ``cli``, ``api`` or ``python``.
    note : str
        Why a signed-in user is only a viewer (not listed as an analyst), else ``""``.

    Examples
    --------
    >>> viewer = Access(VIEWER, who="", how="none")
    >>> viewer.may("predict"), viewer.may("delete")
    (True, False)
    >>> try:
    ...     viewer.require("delete")
    ... except AccessDenied as exc:
    ...     print(exc)
    only an analyst may delete every stored trip: sign in as an analyst
    """

    role: Role
    who: str
    how: str
    via: str = "dashboard"
    note: str = field(default="", compare=False)

    @property
    def is_analyst(self) -> bool:
        return self.role is ANALYST

    def may(self, action: str) -> bool:
        """Whether the role allows ``action`` (a key of :data:`PERMISSIONS`)."""
        try:
            least, _ = PERMISSIONS[action]
        except KeyError:
            raise KeyError(f"unknown action {action!r}; one of {sorted(PERMISSIONS)}") from None
        return least is VIEWER or self.role is ANALYST

    def require(self, action: str) -> None:
        """Raise :class:`AccessDenied` unless the role allows ``action``."""
        if not self.may(action):
            what = PERMISSIONS[action][1]
            raise AccessDenied(
                f"only an analyst may {what[0].lower() + what[1:]}: sign in as an analyst"
            )


def os_user() -> str:
    """The operating-system user running this process (``uid <n>`` without a name)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for the uid (a container)
        return f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"


def cli_access() -> Access:
    """The command line acts as an analyst and is recorded as the OS user."""
    return Access(ANALYST, who=os_user(), how="os", via="cli")


def library_access() -> Access:
    """A call from Python that names nobody: recorded as the OS user, ``how="library"``."""
    return Access(ANALYST, who=os_user(), how="library", via="python")


# --------------------------------------------------------------------------- audit


def record(home: str | os.PathLike[str], by: Access | None, action: str, **details: Any) -> None:
    """Append ``action`` by ``by`` (the library's access when None) to the home's audit log.

    Called after the action succeeded. If the log cannot be written the failure is
    logged as an error and the action stands (it already happened): a full disk must
    not turn a finished publish into an error message.
    """
    by = library_access() if by is None else by
    try:
        Home(home).audit.append(action, who=by.who, how=by.how, via=by.via, **details)
    except OSError as exc:
        logger.error("audit log of %s not written (%s by %s): %s", home, action, by.who, exc)


def audit_entries(home: str | os.PathLike[str], *, last: int | None = None) -> list[dict]:
    """The home's audit log entries, oldest first (the ``last`` ones when given)."""
    return Home(home).audit.entries(last=last)


# --------------------------------------------------------------------------- passphrase

_SCRYPT = re.compile(
    r"scrypt\$(?P<n>\d+)\$(?P<r>\d+)\$(?P<p>\d+)\$(?P<salt>[A-Za-z0-9_-]+)\$(?P<key>[A-Za-z0-9_-]+)"
)
_KEY_BYTES = 32


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hash_passphrase(
    passphrase: str, *, n: int = 2**15, r: int = 8, p: int = 1, salt: bytes | None = None
) -> str:
    """The scrypt hash of ``passphrase`` for ``VRVM_ANALYST_PASSPHRASE_HASH``.

    Format ``scrypt$<n>$<r>$<p>$<salt>$<key>``: the cost parameters, a random 16-byte
    salt and the 32-byte key, both URL-safe base64 without padding
    (:func:`hashlib.scrypt`; n = 2^15, r = 8 take about 32 MB and 0.1 s). Make one with
    ``vrvm hash-passphrase`` (it asks twice, without echo).

    Examples
    --------
    >>> stored = hash_passphrase("correct horse", n=2**10, salt=bytes(16))
    >>> stored.startswith("scrypt$1024$8$1$AAAAAAAAAAAAAAAAAAAAAA$")
    True
    >>> verify_passphrase_hash("correct horse", stored), verify_passphrase_hash("wrong", stored)
    (True, False)
    """
    if not isinstance(passphrase, str) or not passphrase.strip():
        raise ValueError("the passphrase is empty")
    salt = secrets.token_bytes(16) if salt is None else bytes(salt)
    key = hashlib.scrypt(
        passphrase.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=256 * n * r, dklen=_KEY_BYTES
    )
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(key)}"


def _parse_hash(stored: str) -> tuple[int, int, int, bytes, bytes]:
    match = _SCRYPT.fullmatch(stored.strip())
    if match is None:
        raise ValueError(
            f"${PASSPHRASE_HASH_ENV} is not a vrvm passphrase hash: expected "
            "scrypt$<n>$<r>$<p>$<salt>$<key> (make one with `vrvm hash-passphrase`)"
        )
    n, r, p = (int(match[k]) for k in ("n", "r", "p"))
    if n < 2**10 or n > 2**20 or n & (n - 1) or not 1 <= r <= 32 or not 1 <= p <= 16:
        raise ValueError(
            f"${PASSPHRASE_HASH_ENV} has cost parameters n={n}, r={r}, p={p}: n must be a "
            "power of two from 1024 to 1048576, r from 1 to 32 and p from 1 to 16"
        )
    salt, key = _unb64(match["salt"]), _unb64(match["key"])
    if len(salt) < 8 or len(key) < 16:
        raise ValueError(f"${PASSPHRASE_HASH_ENV} has a salt or key that is too short")
    return n, r, p, salt, key


def verify_passphrase_hash(passphrase: str, stored: str) -> bool:
    """Whether ``passphrase`` matches a :func:`hash_passphrase` hash (constant time)."""
    n, r, p, salt, key = _parse_hash(stored)
    secret = str(passphrase).encode("utf-8")
    given = hashlib.scrypt(secret, salt=salt, n=n, r=r, p=p, maxmem=256 * n * r, dklen=len(key))
    return hmac.compare_digest(given, key)


@dataclass(frozen=True)
class PassphraseCheck:
    """The configured analyst passphrase: plain (``VRVM_ANALYST_PASSPHRASE``) or hashed.

    Examples
    --------
    >>> check = PassphraseCheck("plain", "correct horse")
    >>> check.matches("correct horse"), check.matches("correct horse "), check.matches("")
    (True, False, False)
    """

    kind: str
    value: str = field(repr=False)

    def __post_init__(self) -> None:
        if self.kind not in ("plain", "hash"):
            raise ValueError(f"passphrase kind must be 'plain' or 'hash', got {self.kind!r}")
        if self.kind == "hash":
            _parse_hash(self.value)  # a bad hash fails at start, not at the first sign-in

    def matches(self, given: str) -> bool:
        """Whether ``given`` is the passphrase, compared in constant time.

        A plain passphrase is compared through SHA-256 digests of equal length, so the
        time taken says nothing about the passphrase's length or any prefix.
        """
        if not isinstance(given, str) or not given:
            return False
        if self.kind == "hash":
            return verify_passphrase_hash(given, self.value)
        digest = hashlib.sha256(given.encode("utf-8")).digest()
        expected = hashlib.sha256(self.value.encode("utf-8")).digest()
        return hmac.compare_digest(digest, expected)


class SignInThrottle:
    """Failed passphrase sign-ins make every next attempt wait longer, process-wide.

    After the k-th failure in a row the answer is held back ``base_s * 2**(k-1)``
    seconds (at most ``max_s``) while a lock is held, so no other attempt, from any
    session, is checked meanwhile: reloading the page or opening many tabs does not
    reset or bypass it. A success resets the count. ``sleep`` and the lock are injected
    by the tests.

    Examples
    --------
    >>> waited = []
    >>> throttle = SignInThrottle(base_s=1.0, max_s=4.0, sleep=waited.append)
    >>> [throttle.attempt(lambda: False) for _ in range(4)]
    [(False, 1.0), (False, 2.0), (False, 4.0), (False, 4.0)]
    >>> throttle.attempt(lambda: True), throttle.failures, waited
    ((True, 0.0), 0, [1.0, 2.0, 4.0, 4.0])
    """

    def __init__(
        self,
        *,
        base_s: float = 1.0,
        max_s: float = 30.0,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self.base_s, self.max_s, self._sleep = float(base_s), float(max_s), sleep
        self._lock = threading.Lock()
        self._failures = 0

    @property
    def failures(self) -> int:
        """Failed attempts since the last success."""
        return self._failures

    def delay_s(self, failures: int | None = None) -> float:
        """Seconds an answer is held back after ``failures`` failures in a row."""
        k = self._failures if failures is None else failures
        return 0.0 if k <= 0 else min(self.max_s, self.base_s * 2.0 ** (k - 1))

    def attempt(self, check: Callable[[], bool]) -> tuple[bool, float]:
        """Run ``check`` under the lock; after a failure wait, still holding it.

        Returns ``(ok, seconds waited)``.
        """
        with self._lock:
            if check():
                self._failures = 0
                return True, 0.0
            self._failures += 1
            delay = self.delay_s()
            self._sleep(delay)
            return False, delay


_THROTTLE = SignInThrottle()


def sign_in_throttle() -> SignInThrottle:
    """This process's throttle of passphrase sign-ins (one for every session)."""
    return _THROTTLE


# --------------------------------------------------------------------------- deciding


def dashboard_setting_problems(environ: Mapping[str, str] | None = None) -> list[str]:
    """What is wrong with the dashboard's security settings, one sentence each.

    Every setting that decides who may do what or what viewers see is read:
    ``VRVM_ANALYST_PASSPHRASE`` or its hash (set but blank, both set, a malformed
    hash), ``VRVM_ANALYSTS``, ``VRVM_PRIVATE_MODE`` and ``VRVM_PRIVATE_MIN_TRIPS``;
    each sentence names the variable and what was expected. Empty when all are right.

    Examples
    --------
    >>> dashboard_setting_problems({})
    []
    >>> for problem in dashboard_setting_problems(
    ...     {"VRVM_ANALYST_PASSPHRASE": " ", "VRVM_PRIVATE_MODE": "on"}
    ... ):
    ...     print(problem)
    $VRVM_ANALYST_PASSPHRASE is set but blank: expected a passphrase (or unset it)
    $VRVM_PRIVATE_MODE must be one of real, always, off; got 'on'
    """
    environ = os.environ if environ is None else environ

    def passphrase() -> None:
        found = analyst_passphrase(environ)
        if found is not None:
            PassphraseCheck(*found)  # a malformed hash is found here, not at sign-in

    problems = []
    for read in (
        passphrase,
        lambda: analyst_emails(environ),
        lambda: private_mode(environ),
        lambda: private_min_trips(environ),
    ):
        try:
            read()
        except ValueError as exc:
            problems.append(str(exc))
    return problems


@dataclass(frozen=True)
class SignInOptions:
    """How analysts sign in to this deployment.

    Attributes
    ----------
    passphrase : PassphraseCheck or None
        The shared passphrase, when one is set.
    oidc : bool
        Whether Streamlit's OpenID Connect sign-in is configured (``[auth]`` in
        ``.streamlit/secrets.toml``).
    analysts : tuple of str
        E-mail addresses and ``@domains`` of analysts among the OIDC users; empty:
        every user the identity provider signs in.
    problems : tuple of str
        What is wrong with the security settings (each naming the setting). When any
        is, the options are locked: nobody is an analyst and nobody can sign in.

    Examples
    --------
    >>> locked = SignInOptions.from_environment({"VRVM_ANALYST_PASSPHRASE": ""})
    >>> locked.locked, locked.configured, locked.passphrase is None
    (True, True, True)
    >>> decide_access(locked).role.value
    'viewer'
    """

    passphrase: PassphraseCheck | None = None
    oidc: bool = False
    analysts: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def locked(self) -> bool:
        """Whether a wrong setting locks the dashboard (no analyst, no sign-in)."""
        return bool(self.problems)

    @property
    def configured(self) -> bool:
        """Whether any sign-in is configured; if not, everyone is an analyst (a demo).

        Locked options count as configured: a wrong setting never opens the dashboard.
        """
        return self.passphrase is not None or self.oidc or self.locked

    @classmethod
    def from_environment(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        oidc: bool = False,
        problems: tuple[str, ...] = (),
    ) -> SignInOptions:
        """The options of ``environ`` (default ``os.environ``); ``oidc`` from the secrets.

        Never raises for a wrong setting: the options come back locked, with
        :func:`dashboard_setting_problems` and the caller's own ``problems`` (those of
        the secrets file) in :attr:`problems`, and without any way to sign in.
        """
        problems = (*problems, *dashboard_setting_problems(environ))
        if problems:
            return cls(problems=tuple(problems))
        found = analyst_passphrase(environ)
        check = None if found is None else PassphraseCheck(*found)
        return cls(passphrase=check, oidc=bool(oidc), analysts=analyst_emails(environ))


def is_listed_analyst(email: str | None, analysts: tuple[str, ...]) -> bool:
    """Whether ``email`` is one of ``analysts`` (addresses or ``@domain``), case-blind.

    Examples
    --------
    >>> is_listed_analyst("Ana@City.gov", ("ana@city.gov",))
    True
    >>> is_listed_analyst("bo@transit.example.org", ("@transit.example.org",))
    True
    >>> is_listed_analyst("eve@transit.example.org.evil.com", ("@transit.example.org",))
    False
    """
    email = str(email or "").strip().lower()
    if "@" not in email:
        return False
    return any(email == entry or (entry[0] == "@" and email.endswith(entry)) for entry in analysts)


def _oidc_analyst(user: Mapping[str, Any], options: SignInOptions) -> tuple[bool, str, str]:
    """``(is analyst, who, note)`` of a signed-in OIDC user."""
    email = user.get("email")
    name = str(email or user.get("name") or user.get("sub") or "signed-in user")
    if not options.analysts:
        return True, name, ""
    if user.get("email_verified") is False:
        return False, name, f"{name} is signed in, but the address is not verified"
    if not is_listed_analyst(email, options.analysts):
        return False, name, f"{name} is signed in, but is not listed as an analyst"
    return True, name, ""


def decide_access(
    options: SignInOptions,
    *,
    user: Mapping[str, Any] | None = None,
    passphrase_name: str | None = None,
) -> Access:
    """The role of one dashboard session.

    Parameters
    ----------
    options : SignInOptions
        The deployment's sign-in options.
    user : mapping, optional
        What ``st.user`` holds: ``is_logged_in`` and the identity provider's claims
        (``email``, ``email_verified``, ``name``, ``sub``).
    passphrase_name : str, optional
        The name given at a successful passphrase sign-in of this session (kept
        server-side in the session), None when there was none.

    Returns
    -------
    Access
        Viewer for everyone when the options are locked (a wrong setting); analyst for
        everyone without sign-in options (``how="open"``); else analyst when signed in
        through OIDC and listed (or no list is set) or with the passphrase (when one is
        configured); viewer otherwise.

    Examples
    --------
    >>> decide_access(SignInOptions()).how
    'open'
    >>> options = SignInOptions(oidc=True, analysts=("@city.gov",))
    >>> decide_access(options, user={"is_logged_in": True, "email": "ana@city.gov"}).role.value
    'analyst'
    >>> decide_access(options, user={"is_logged_in": True, "email": "x@gmail.com"}).role.value
    'viewer'
    >>> decide_access(options, user={"is_logged_in": False}).role.value
    'viewer'
    """
    if options.locked:
        return Access(VIEWER, who="", how="none", note="the access settings are wrong")
    if not options.configured:
        return Access(ANALYST, who="anyone", how="open")
    note = ""
    if options.oidc and user and user.get("is_logged_in") is True:
        analyst, who, note = _oidc_analyst(user, options)
        if analyst:
            return Access(ANALYST, who=who, how="oidc")
    if options.passphrase is not None and passphrase_name is not None:
        return Access(ANALYST, who=passphrase_name or "analyst", how="passphrase")
    return Access(VIEWER, who="", how="none", note=note)


_NAME_LIMIT = 80


def sign_in_with_passphrase(
    home: str | os.PathLike[str],
    options: SignInOptions,
    name: str,
    passphrase: str,
    *,
    throttle: SignInThrottle | None = None,
) -> tuple[Access | None, float]:
    """Check a passphrase sign-in; returns ``(access or None, seconds it was held back)``.

    The check runs through the process's :class:`SignInThrottle`, so a failure waits
    (and makes the next one wait longer); success and failure go to the audit log with
    the name given (never the passphrase).

    Raises
    ------
    AccessDenied
        When no passphrase is configured.
    """
    if options.passphrase is None:
        raise AccessDenied("no analyst passphrase is configured")
    throttle = sign_in_throttle() if throttle is None else throttle
    who = " ".join(str(name or "").split())[:_NAME_LIMIT] or "analyst"
    ok, waited = throttle.attempt(lambda: options.passphrase.matches(passphrase))
    if not ok:
        attempt = Access(VIEWER, who=who, how="passphrase")
        record(home, attempt, "sign in refused", failures=throttle.failures)
        return None, waited
    access = Access(ANALYST, who=who, how="passphrase")
    record(home, access, "sign in")
    return access, waited


def sign_out(home: str | os.PathLike[str], access: Access) -> None:
    """Record that an analyst signed out."""
    if access.how in ("passphrase", "oidc"):
        record(home, access, "sign out")


def home_of(path: str | os.PathLike[str]) -> Path:
    """The data home a model store at ``path`` belongs to (``home/models`` -> ``home``)."""
    path = Path(path)
    return path.parent if path.name == MODELS_DIR else path
