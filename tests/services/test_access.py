"""Roles, sign-in and the audit trail of the services (no Streamlit here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vrvm.services.access import policy as access
from vrvm.services.access.policy import (
    ANALYST,
    PERMISSIONS,
    VIEWER,
    Access,
    AccessDenied,
    PassphraseCheck,
    SignInOptions,
    SignInThrottle,
    decide_access,
    hash_passphrase,
    sign_in_with_passphrase,
    verify_passphrase_hash,
)
from vrvm.services.analyst import store_admin
from vrvm.services.versions import models
from vrvm.trips.home import Home

ROOT = Path(__file__).resolve().parents[2]
VIEWER_ACCESS = Access(VIEWER, who="", how="none")
ANA = Access(ANALYST, who="Ana", how="passphrase")


def test_the_permissions_table_is_the_one_in_docs_security():
    """docs/security.md lists what each role may do: the same rows as PERMISSIONS."""
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| (viewer|analyst) \| (.+?) \|$", text, flags=re.M)
    documented = {action: (role, what) for action, role, what in rows}
    assert documented == {
        action: (role.value, what) for action, (role, what) in PERMISSIONS.items()
    }


def test_viewers_may_look_and_analysts_may_change():
    looks = {a for a, (least, _) in PERMISSIONS.items() if least is VIEWER}
    assert looks == {"predict", "plan", "relevance", "download_aggregates"}
    for action in PERMISSIONS:
        assert ANA.may(action)
        assert VIEWER_ACCESS.may(action) == (action in looks)
    with pytest.raises(KeyError, match="unknown action"):
        ANA.may("launch")


def test_a_hashed_passphrase_verifies_in_constant_time_and_rejects_the_rest():
    stored = hash_passphrase("correct horse battery", n=2**10)
    assert stored.startswith("scrypt$1024$8$1$")
    assert verify_passphrase_hash("correct horse battery", stored)
    assert not verify_passphrase_hash("correct horse batter", stored)
    assert hash_passphrase("x y", n=2**10) != hash_passphrase("x y", n=2**10)  # salted
    check = PassphraseCheck("hash", stored)
    assert check.matches("correct horse battery") and not check.matches("")
    for bad in ("md5$abc", "scrypt$1000$8$1$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAA"):
        with pytest.raises(ValueError, match="VRVM_ANALYST_PASSPHRASE_HASH"):
            PassphraseCheck("hash", bad)
    with pytest.raises(ValueError, match="empty"):
        hash_passphrase("  ")


def test_sign_in_options_come_from_the_environment():
    stored = hash_passphrase("s3cret passphrase", n=2**10)
    options = SignInOptions.from_environment({"VRVM_ANALYST_PASSPHRASE_HASH": stored})
    assert options.configured and options.passphrase.kind == "hash" and not options.locked
    assert not SignInOptions.from_environment({}).configured
    assert SignInOptions.from_environment({}, oidc=True).configured
    both = {"VRVM_ANALYST_PASSPHRASE": "a", "VRVM_ANALYST_PASSPHRASE_HASH": stored}
    assert "not both" in SignInOptions.from_environment(both).problems[0]
    listed = SignInOptions.from_environment({"VRVM_ANALYSTS": "ana"}, oidc=True)
    assert "VRVM_ANALYSTS" in listed.problems[0] and not listed.oidc


STORED = hash_passphrase("s3cret passphrase", n=2**10)


@pytest.mark.parametrize(
    ("environ", "named", "expected"),
    [
        ({"VRVM_ANALYST_PASSPHRASE": ""}, "VRVM_ANALYST_PASSPHRASE", "set but blank"),
        ({"VRVM_ANALYST_PASSPHRASE": " \t"}, "VRVM_ANALYST_PASSPHRASE", "set but blank"),
        ({"VRVM_ANALYST_PASSPHRASE_HASH": ""}, "VRVM_ANALYST_PASSPHRASE_HASH", "blank"),
        ({"VRVM_ANALYST_PASSPHRASE_HASH": "md5$1"}, "VRVM_ANALYST_PASSPHRASE_HASH", "scrypt$"),
        (
            {"VRVM_ANALYST_PASSPHRASE": "", "VRVM_ANALYST_PASSPHRASE_HASH": STORED},
            "VRVM_ANALYST_PASSPHRASE",
            "set but blank",
        ),
        ({"VRVM_ANALYSTS": " "}, "VRVM_ANALYSTS", "set but blank"),
        ({"VRVM_ANALYSTS": ", ,"}, "VRVM_ANALYSTS", "lists nobody"),
        ({"VRVM_ANALYSTS": "ana"}, "VRVM_ANALYSTS", "neither an e-mail"),
        ({"VRVM_PRIVATE_MODE": ""}, "VRVM_PRIVATE_MODE", "set but blank"),
        ({"VRVM_PRIVATE_MODE": "no"}, "VRVM_PRIVATE_MODE", "one of real, always, off"),
        ({"VRVM_PRIVATE_MIN_TRIPS": ""}, "VRVM_PRIVATE_MIN_TRIPS", "set but blank"),
        ({"VRVM_PRIVATE_MIN_TRIPS": "1"}, "VRVM_PRIVATE_MIN_TRIPS", ">= 2"),
        ({"VRVM_PRIVATE_MIN_TRIPS": "5x"}, "VRVM_PRIVATE_MIN_TRIPS", "an integer"),
    ],
)
def test_a_blank_or_malformed_setting_locks_the_dashboard(environ, named, expected):
    """Set but blank or malformed never means "no sign-in": nobody is an analyst, nobody
    can sign in, and the problem names the variable and what was expected."""
    sets_passphrase = any(name.startswith("VRVM_ANALYST_PASSPHRASE") for name in environ)
    good = {} if sets_passphrase else {"VRVM_ANALYST_PASSPHRASE": "a good passphrase"}
    for oidc in (False, True):  # with otherwise good sign-in options, none of them counts
        options = SignInOptions.from_environment(good | environ, oidc=oidc)
        assert options.locked and options.configured
        assert options.passphrase is None and not options.oidc
        (problem,) = options.problems
        assert f"${named}" in problem and expected in problem
        for user in (None, {"is_logged_in": True, "email": "ana@city.gov"}):
            found = decide_access(options, user=user, passphrase_name="Ana")
            assert found.role is VIEWER and found.how == "none"
        with pytest.raises(AccessDenied):
            sign_in_with_passphrase("/nonexistent", options, "Ana", "a good passphrase")


def test_unset_settings_keep_their_documented_meaning():
    assert access.dashboard_setting_problems({}) == []
    assert decide_access(SignInOptions.from_environment({})).how == "open"  # a demo
    secrets = ("`[auth]` has no cookie_secret",)
    locked = SignInOptions.from_environment({}, oidc=False, problems=secrets)
    assert locked.problems == secrets and decide_access(locked).role is VIEWER


@pytest.mark.parametrize(
    ("user", "analysts", "role", "who"),
    [
        (
            {"is_logged_in": True, "email": "ana@city.gov"},
            ("@city.gov",),
            "analyst",
            "ana@city.gov",
        ),
        ({"is_logged_in": True, "email": "Ana@City.gov"}, ("ana@city.gov",), "analyst", None),
        ({"is_logged_in": True, "email": "x@city.gov.evil.org"}, ("@city.gov",), "viewer", ""),
        (
            {"is_logged_in": True, "email": "ana@city.gov", "email_verified": False},
            ("@city.gov",),
            "viewer",
            "",
        ),
        ({"is_logged_in": True, "email": "anyone@else.org"}, (), "analyst", "anyone@else.org"),
        ({"is_logged_in": False, "email": "ana@city.gov"}, (), "viewer", ""),
        ({"email": "test@example.com"}, (), "viewer", ""),  # no is_logged_in: not signed in
        (None, (), "viewer", ""),
    ],
)
def test_the_role_of_an_openid_connect_user(user, analysts, role, who):
    found = decide_access(SignInOptions(oidc=True, analysts=analysts), user=user)
    assert found.role.value == role
    if who is not None:
        assert found.who == who


def test_the_role_with_a_passphrase_and_without_any_sign_in():
    options = SignInOptions(passphrase=PassphraseCheck("plain", "pass phrase"))
    assert decide_access(options).role is VIEWER
    assert decide_access(options, passphrase_name="Ana") == ANA
    assert decide_access(SignInOptions(), passphrase_name=None).how == "open"  # a demo
    # a passphrase sign-in counts only where a passphrase is configured
    assert decide_access(SignInOptions(oidc=True), passphrase_name="Ana").role is VIEWER


def test_failed_sign_ins_wait_longer_for_everyone_until_one_succeeds(tmp_path):
    waited: list[float] = []
    throttle = SignInThrottle(base_s=1.0, max_s=8.0, sleep=waited.append)
    options = SignInOptions(passphrase=PassphraseCheck("plain", "correct horse"))
    for guess in ("a", "b", "c", "d", "e"):
        assert sign_in_with_passphrase(tmp_path, options, "eve", guess, throttle=throttle) == (
            None,
            waited[-1] if waited else 0,
        )
    assert waited == [1.0, 2.0, 4.0, 8.0, 8.0]
    found, wait = sign_in_with_passphrase(
        tmp_path, options, " Ana ", "correct horse", throttle=throttle
    )
    assert found == ANA and wait == 0.0 and throttle.failures == 0
    log = Home(tmp_path).audit.entries()
    assert [e["action"] for e in log] == ["sign in refused"] * 5 + ["sign in"]
    assert log[-2]["failures"] == 5 and "correct horse" not in Home(tmp_path).audit.path.read_text()


def test_the_throttle_waits_holding_its_lock_so_no_other_attempt_is_checked():
    """The delay is served with the process-wide lock held: an attempt from another
    session (thread) cannot be checked before it ends. Checked without sleeping."""
    held = []
    throttle = SignInThrottle(sleep=lambda s: held.append(throttle._lock.locked()))
    throttle.attempt(lambda: False)
    assert held == [True] and not throttle._lock.locked()


def test_services_refuse_a_viewer_and_record_an_analyst(vrvm_home):
    with pytest.raises(AccessDenied, match="sign in as an analyst"):
        store_admin.add_demo_trips(vrvm_home, by=VIEWER_ACCESS)
    assert len(Home(vrvm_home).trips) == 0
    store_admin.add_demo_trips(vrvm_home, by=ANA)
    with pytest.raises(AccessDenied):
        store_admin.clear_trips(vrvm_home, by=VIEWER_ACCESS)
    with pytest.raises(AccessDenied):
        models.activate_version(vrvm_home, 1, by=VIEWER_ACCESS)
    assert len(Home(vrvm_home).trips) == 2000
    store_admin.clear_trips(vrvm_home, by=ANA)
    models.activate_version(vrvm_home, 1, by=ANA)
    entries = Home(vrvm_home).audit.entries()[1:]  # after the first start's publish
    assert [(e["action"], e["who"]) for e in entries] == [
        ("upload", "Ana"),
        ("delete", "Ana"),
        ("activate", "Ana"),
    ]
    assert entries[1]["trips"] == 2000 and entries[2]["previous"] == 1


def test_a_call_from_python_is_recorded_as_the_os_user(vrvm_home):
    store_admin.add_demo_trips(vrvm_home)
    entry = Home(vrvm_home).audit.entries()[-1]
    assert (entry["who"], entry["how"], entry["via"]) == (access.os_user(), "library", "python")


def test_an_unwritable_audit_log_does_not_undo_the_action(vrvm_home, caplog):
    (vrvm_home / "audit.jsonl").unlink()
    (vrvm_home / "audit.jsonl").mkdir()  # a folder where the log should be
    assert "Added" in store_admin.add_demo_trips(vrvm_home, by=ANA)
    assert len(Home(vrvm_home).trips) == 2000
    assert "audit log" in caplog.text
