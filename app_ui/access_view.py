"""Who is using the dashboard: the session's role, signing in and out, the raw-view switch.

The role is decided by :func:`vrvm.services.access.policy.decide_access` from plain data: the
deployment's sign-in options (environment and ``.streamlit/secrets.toml``), what
``st.user`` holds (OpenID Connect) and whether this session signed in with the analyst
passphrase. That sign-in is kept server-side in the session as a :class:`_Signed`
object, which no widget value sent by a browser can be.

A wrong security setting locks the dashboard instead of opening it
(:attr:`SignInOptions.problems`): every page says so at the top, naming the setting,
nobody can sign in or change anything, and viewers still see every answer.

State keys: ``access_signed`` (the passphrase sign-in of this session),
``access_form`` with ``access_name`` and ``access_passphrase`` (the sign-in form),
``access_refused`` (the last refusal, shown once), ``access_raw`` (an analyst's switch
to individual trips on real data).
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Mapping
from dataclasses import dataclass

import streamlit as st

from vrvm.services.access import policy as access_svc
from vrvm.services.access.policy import Access, SignInOptions
from vrvm.services.display.text import plain_markdown
from vrvm.services.versions.models import data_home

logger = logging.getLogger(__name__)

SIGNED = "access_signed"
REFUSED = "access_refused"
RAW = "access_raw"


@dataclass(frozen=True)
class _Signed:
    """A passphrase sign-in of this session (a Python object in server-side state)."""

    name: str


_AUTH_NEEDS = ("redirect_uri", "cookie_secret")


def _oidc_settings() -> tuple[bool, tuple[str, ...]]:
    """Whether ``.streamlit/secrets.toml`` configures OpenID Connect, and what is wrong.

    An ``[auth]`` section without a non-blank ``redirect_uri`` and ``cookie_secret`` is
    a problem, not "no sign-in": it must not leave the dashboard open to everyone.
    """
    if not st.secrets.load_if_toml_exists() or "auth" not in st.secrets:
        return False, ()
    section = st.secrets.get("auth")
    if not isinstance(section, Mapping):
        return False, ("`[auth]` in .streamlit/secrets.toml is not a section",)
    missing = [name for name in _AUTH_NEEDS if not str(section.get(name) or "").strip()]
    if missing:
        return False, (
            f"`[auth]` in .streamlit/secrets.toml has no {' and no '.join(missing)}: "
            "expected both for OpenID Connect (or remove the section)",
        )
    return True, ()


_LOGGED: set[tuple[str, ...]] = set()


def settings_error(exc: ValueError) -> None:
    """A wrong sign-in or privacy setting: say which, and stop the page (fail closed)."""
    st.error(
        f"The access settings are wrong, so the dashboard does not start: "
        f"{plain_markdown(exc)}. See docs/security.md.",
        icon=":material/lock:",
    )
    st.stop()


def options() -> SignInOptions:
    """This deployment's sign-in options, locked when a security setting is wrong.

    The problems are logged once per process (the server's start-up message).
    """
    oidc, problems = _oidc_settings()
    sign_in = SignInOptions.from_environment(oidc=oidc, problems=problems)
    if sign_in.locked and sign_in.problems not in _LOGGED:
        _LOGGED.add(sign_in.problems)
        logger.error(
            "the dashboard is locked (nobody can sign in or change anything): %s",
            "; ".join(sign_in.problems),
        )
    return sign_in


def locked_error(sign_in: SignInOptions) -> None:
    """At the top of every page: the dashboard is locked, and which settings are wrong."""
    if not sign_in.locked:
        return
    problems = "\n".join(f"- {plain_markdown(problem)}" for problem in sign_in.problems)
    st.error(
        "**The access settings are wrong, so the dashboard is locked:** nobody can sign "
        "in as an analyst or change anything; every answer can still be read. Fix the "
        "settings, then restart the dashboard:\n\n"
        f"{problems}\n\nSee docs/security.md.",
        icon=":material/lock:",
    )


def current(sign_in: SignInOptions | None = None) -> Access:
    """The access of this session (recomputed on every call: it is cheap)."""
    sign_in = options() if sign_in is None else sign_in
    signed = st.session_state.get(SIGNED)
    name = signed.name if isinstance(signed, _Signed) else None
    return access_svc.decide_access(
        sign_in, user=st.user.to_dict() if sign_in.oidc else None, passphrase_name=name
    )


def _sign_out(access: Access) -> None:
    access_svc.sign_out(data_home(), access)
    st.session_state.pop(SIGNED, None)
    st.session_state.pop(RAW, None)
    if access.how == "oidc":
        st.logout()


def sidebar_status(access: Access, sign_in: SignInOptions) -> None:
    """Who is signed in, and the way to sign out (in the sidebar of every page); when a
    setting is wrong, :func:`locked_error` above the page."""
    if not sign_in.configured:
        return
    locked_error(sign_in)
    with st.sidebar:
        if sign_in.locked:
            st.caption(":material/lock: Viewer: the dashboard is locked (see above).")
        elif access.is_analyst:
            st.caption(
                f":material/verified_user: Analyst: **{plain_markdown(access.who)}** "
                f"({'organisation account' if access.how == 'oidc' else 'passphrase'})"
            )
            st.button("Sign out", key="access_sign_out", on_click=_sign_out, args=(access,))
        else:
            st.caption(
                ":material/visibility: Viewer: you can look at every answer. Analysts "
                "sign in on the *Retrain & publish* page."
            )
        st.divider()


def _passphrase_form(sign_in: SignInOptions) -> None:
    with st.form("access_form", border=True):
        st.markdown("**Sign in with the analyst passphrase**")
        name = st.text_input(
            "Your name (recorded in the audit log)", key="access_name", max_chars=80
        )
        passphrase = st.text_input("Passphrase", type="password", key="access_passphrase")
        submitted = st.form_submit_button("Sign in", type="primary")
    if not submitted:
        return
    with st.spinner("Checking the passphrase"):
        access, waited = access_svc.sign_in_with_passphrase(data_home(), sign_in, name, passphrase)
    if access is None:
        st.session_state[REFUSED] = (
            "That passphrase is not right. Each failed attempt makes the next one wait "
            f"longer (this one waited {waited:g} s)."
        )
    else:
        st.session_state[SIGNED] = _Signed(access.who)
    st.rerun()


def sign_in_panel(access: Access, sign_in: SignInOptions) -> None:
    """How to sign in as an analyst; the buttons and form of the configured ways."""
    st.info(
        "**Analysts only.** Adding trips, training, publishing, activating and deleting "
        "need an analyst's sign-in. Viewers can use the Predict, Plan and Relevance "
        "vectors pages.",
        icon=":material/lock:",
    )
    if sign_in.locked:
        return  # the error above the page says why nobody can sign in
    if access.note:
        st.warning(plain_markdown(access.note) + ".", icon=":material/person_off:")
    refused = st.session_state.pop(REFUSED, None)
    if refused:
        st.error(refused, icon=":material/block:")
    if sign_in.oidc and importlib.util.find_spec("authlib") is None:
        st.error(
            "OpenID Connect is configured in `.streamlit/secrets.toml`, but Authlib is not "
            'installed: `pip install -e ".[auth]"` (docs/security.md).',
            icon=":material/key_off:",
        )
    elif sign_in.oidc:
        st.markdown("Sign in with your organisation's account (OpenID Connect):")
        if st.button("Sign in with your organisation", key="access_oidc", type="primary"):
            st.login()
    if sign_in.passphrase is not None:
        _passphrase_form(sign_in)


def open_warning() -> None:
    """No sign-in is configured: say plainly who can change the model."""
    st.warning(
        "**No sign-in is configured:** anyone who can open this dashboard can add and "
        "delete trips, train, publish and activate models. Set `VRVM_ANALYST_PASSPHRASE` "
        "or configure OpenID Connect before sharing it (docs/security.md).",
        icon=":material/lock_open:",
    )


def raw_switch(can_switch: bool) -> bool:
    """An analyst's sidebar switch to individual trips on real data; its value."""
    if not can_switch:
        return False
    with st.sidebar:
        return st.toggle(
            "Show individual trips",
            key=RAW,
            help="Analysts only: observed trips as dots and relevance vectors at their "
            "trips' coordinates and start times. Off, every page shows what viewers see: "
            "aggregates of at least k trips and zone centres.",
        )
