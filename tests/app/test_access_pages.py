"""Who may do what, page by page (AppTest): viewers and analysts with a passphrase
configured, OpenID Connect users from ``st.user``, and the laptop demo without sign-in.

The passphrase's throttle is replaced by one whose ``sleep`` only records the delays,
so a refused sign-in is shown to be slowed without the test sleeping.
"""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest

from tests.app.test_pages import APP, RELEVANCE, RETRAIN, TIMEOUT, _csv, metrics, no_exception
from vrvm import synthetic_city
from vrvm.services.access import policy as access_svc
from vrvm.trips.home import Home

PLAN = "pages/3_Plan.py"
PASSPHRASE = "correct horse battery staple"
ANALYST_ONLY = (
    "retrain_",  # every control of the Retrain page
    "settings_boundary_upload",
    "settings_boundary_choice",
    "settings_boundary_remove",
    "settings_zone_choice",
    "access_raw",
    "ctx_repair",
)


@pytest.fixture
def passphrase(vrvm_home, monkeypatch):
    """The analyst passphrase configured, and a throttle that records its delays."""
    monkeypatch.setenv("VRVM_ANALYST_PASSPHRASE", PASSPHRASE)
    waited: list[float] = []
    monkeypatch.setattr(access_svc, "_THROTTLE", access_svc.SignInThrottle(sleep=waited.append))
    return waited


def _nodes(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _nodes(child)


def widget_keys(at: AppTest) -> set[str]:
    return {n.key for n in _nodes(at._tree) if getattr(n, "key", None)}


def analyst_keys(at: AppTest) -> set[str]:
    return {k for k in widget_keys(at) if k.startswith(ANALYST_ONLY)}


def open_page(page: str, at: AppTest | None = None) -> AppTest:
    if at is None:
        at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    if page != "app.py":
        at.switch_page(page).run()
    no_exception(at)
    return at


def sign_in(at: AppTest, name: str = "Ana", passphrase: str = PASSPHRASE) -> AppTest:
    at.text_input(key="access_name").input(name)
    at.text_input(key="access_passphrase").input(passphrase)
    at.button(key="FormSubmitter:access_form-Sign in").click().run()
    no_exception(at)
    return at


def test_a_viewer_reaches_no_analyst_control(passphrase, vrvm_home):
    at = open_page("app.py")
    for page in ("app.py", RELEVANCE, PLAN, RETRAIN):
        open_page(page, at)
        assert not analyst_keys(at), (page, analyst_keys(at))
    # the Retrain page says how to sign in, and shows nothing else of itself
    assert any("Analysts only" in i.value for i in at.info)
    assert "access_form" in {f.proto.form_id for f in at.get("text_input")}
    assert not at.get("dataframe") and not at.get("file_uploader")
    assert any("Viewer" in c.value for c in at.sidebar.caption)
    # after signing in, the same session reaches them (the check above can fail)
    sign_in(at)
    assert {"retrain_demo", "retrain_upload", "retrain_export_prepare"} <= widget_keys(at)
    assert "settings_boundary_upload" in widget_keys(at)
    assert any("Analyst: **Ana**" in c.value for c in at.sidebar.caption)
    for page in ("app.py", RELEVANCE, PLAN):
        open_page(page, at)
        assert "settings_boundary_upload" in widget_keys(at)


def test_a_control_a_viewer_cannot_see_is_not_accepted_either(passphrase, vrvm_home):
    """A browser that sends the state of the analyst's "add demo trips" button (its id
    taken from an analyst's page) changes nothing for a viewer."""
    analyst = sign_in(open_page(RETRAIN))
    button = next(b for b in analyst.button if b.key == "retrain_demo")
    viewer = open_page(RETRAIN)
    states = viewer._tree.get_widget_states()
    states.widgets.append(WidgetState(id=button.proto.id, trigger_value=True))
    viewer._run(states)
    no_exception(viewer)
    assert len(Home(vrvm_home).trips) == 0
    assert not analyst_keys(viewer)
    # the same button pressed by the analyst does add the trips
    next(b for b in analyst.button if b.key == "retrain_demo").click().run()
    assert len(Home(vrvm_home).trips) == 2000


def test_a_wrong_passphrase_is_refused_and_slowed_and_the_right_one_works(passphrase, vrvm_home):
    at = sign_in(open_page(RETRAIN), passphrase="horse battery")
    assert any("not right" in e.value for e in at.error)
    assert passphrase == [1.0]  # held back one second
    assert not analyst_keys(at)
    # a new session (a reload) does not reset the count: the next failure waits longer
    again = sign_in(open_page(RETRAIN), name="Mallory", passphrase="correct horse")
    assert passphrase == [1.0, 2.0]
    assert not analyst_keys(again)
    sign_in(at, passphrase=PASSPHRASE)
    assert "retrain_demo" in widget_keys(at)
    assert access_svc.sign_in_throttle().failures == 0 and passphrase == [1.0, 2.0]
    first_start, *log = [(e["action"], e["who"]) for e in Home(vrvm_home).audit.entries()]
    assert first_start == ("publish", "vrvm")  # the demo model, published on first start
    assert log == [("sign in refused", "Ana"), ("sign in refused", "Mallory"), ("sign in", "Ana")]
    assert PASSPHRASE not in Home(vrvm_home).audit.path.read_text()
    # signing out ends the analyst's session
    at.sidebar.button(key="access_sign_out").click().run()
    assert not analyst_keys(at)
    assert Home(vrvm_home).audit.entries()[-1]["action"] == "sign out"


def test_the_audit_log_holds_each_action(passphrase, vrvm_home):
    at = sign_in(open_page(RETRAIN))
    at.button(key="retrain_demo").click().run()
    trips = synthetic_city(400, seed=5)
    at.file_uploader(key="retrain_upload").upload("week 2.csv", _csv(trips), "text/csv").run()
    next(b for b in at.button if b.label.startswith("Add 400 trips")).click().run()
    at.checkbox(key="retrain_option_update").uncheck()
    at.number_input(key="retrain_members").set_value(2)
    at.text_input(key="retrain_widths").input("1.5, 3")
    at.number_input(key="retrain_max_basis").set_value(80)
    at.button(key="FormSubmitter:retrain_settings-Train and evaluate").click().run()
    no_exception(at)
    next(b for b in at.button if b.label.startswith("Publish “Full retrain”")).click().run()
    assert Home(vrvm_home).models.active_version() == 2
    at.selectbox(key="retrain_activate_choice").set_value(1).run()
    at.checkbox(key="retrain_activate_confirm").check().run()
    at.button(key="retrain_activate").click().run()
    at.checkbox(key="retrain_clear_confirm").check().run()
    at.button(key="retrain_clear").click().run()
    at.button(key="retrain_export_prepare").click().run()
    no_exception(at)
    assert Home(vrvm_home).models.active_version() == 1 and len(Home(vrvm_home).trips) == 0
    entries = [
        e
        for e in Home(vrvm_home).audit.entries()
        if e["action"] != "sign in" and e["who"] != "vrvm"
    ]
    assert [e["action"] for e in entries] == [
        "upload",
        "upload",
        "train",
        "publish",
        "activate",
        "delete",
        "export",
    ]
    assert {(e["who"], e["how"], e["via"]) for e in entries} == {("Ana", "passphrase", "dashboard")}
    demo, upload, train, publish, activate, delete, export = entries
    assert demo["file"] == "synthetic demo trips" and demo["added"] == 2000
    assert (upload["file"], upload["rows_read"], upload["kept"]) == ("week 2.csv", 400, 400)
    assert train["candidates"] == ["Full retrain"] and train["trips"] == 1920
    assert (publish["version"], publish["kind"]) == (2, "train")
    assert (activate["version"], activate["previous"]) == (1, 2)
    assert delete["trips"] == 2400
    assert export["version"] == 1 and export["snapped"] is True
    assert Home(vrvm_home).audit.check().ok
    # the versions table names who published each version
    versions = next(f.value for f in at.dataframe if "published by" in f.value.columns)
    assert versions.set_index("version").loc[2, "published by"] == "Ana (passphrase)"
    assert versions.set_index("version").loc[1, "published by"] == "vrvm (first start)"
    audit = next(f.value for f in at.dataframe if "action" in f.value.columns)
    assert audit["action"].tolist()[:2] == ["export", "delete"]  # newest first


OIDC = {
    "redirect_uri": "http://localhost:8501/oauth2callback",
    "cookie_secret": "a-long-random-cookie-secret-for-tests",
    "client_id": "vrvm",
    "client_secret": "not-a-secret",
    "server_metadata_url": "https://idp.example.org/.well-known/openid-configuration",
}


def _oidc_retrain(user: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.secrets["auth"] = dict(OIDC)
    at.user = user
    at.run()
    return open_page(RETRAIN, at)


def test_openid_connect_users_listed_as_analysts_sign_in(vrvm_home, monkeypatch):
    monkeypatch.setenv("VRVM_ANALYSTS", "@city.gov")
    ana = {"is_logged_in": True, "email": "ana@city.gov", "email_verified": True, "name": "Ana"}
    at = _oidc_retrain(ana)
    assert "retrain_demo" in widget_keys(at)
    assert any("ana@city.gov" in c.value for c in at.sidebar.caption)
    at.button(key="retrain_demo").click().run()
    entry = Home(vrvm_home).audit.entries()[-1]
    assert (entry["who"], entry["how"]) == ("ana@city.gov", "oidc")
    at.sidebar.button(key="access_sign_out").click().run()  # st.logout()
    assert at.user == {"is_logged_in": False} and not analyst_keys(at)
    assert Home(vrvm_home).audit.entries()[-1]["action"] == "sign out"

    eve = _oidc_retrain({"is_logged_in": True, "email": "eve@example.com"})
    assert not analyst_keys(eve)
    assert any("not listed as an analyst" in w.value for w in eve.warning)

    nobody = _oidc_retrain({"is_logged_in": False})
    assert not analyst_keys(nobody)
    assert "access_oidc" in widget_keys(nobody)  # the organisation's sign-in button
    assert "access_form" not in {f.proto.form_id for f in nobody.get("text_input")}


def test_without_sign_in_the_retrain_page_says_anyone_can_change_the_model(vrvm_home):
    at = open_page(RETRAIN)
    assert any("No sign-in is configured" in w.value for w in at.warning)
    assert {"retrain_demo", "retrain_upload"} <= widget_keys(at)
    at.button(key="retrain_demo").click().run()
    entry = Home(vrvm_home).audit.entries()[-1]
    assert (entry["action"], entry["who"], entry["how"]) == ("upload", "anyone", "open")
    assert metrics(at)["Trips in the store"] == "2,000"


def _locked(at: AppTest, named: str) -> bool:
    """Whether the page says the dashboard is locked, naming the setting."""
    shown = [e.value.replace("\\", "") for e in at.error]  # without Markdown's escapes
    return any("dashboard is locked" in text and named in text for text in shown)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("VRVM_ANALYST_PASSPHRASE", ""),
        ("VRVM_ANALYST_PASSPHRASE", "   "),
        ("VRVM_ANALYST_PASSPHRASE_HASH", ""),
        ("VRVM_ANALYST_PASSPHRASE_HASH", "md5$abc"),
    ],
)
def test_a_blank_or_malformed_passphrase_makes_nobody_an_analyst(
    vrvm_home, monkeypatch, name, value
):
    """Issue 32: a blank passphrase made every visitor an analyst (`anyone/open`). Now
    every page is locked and says why; answers can still be read; no sign-in is
    offered; a viewer's forged "add demo trips" press changes nothing."""
    monkeypatch.setenv(name, value)
    at = open_page("app.py")
    assert _locked(at, f"${name}")
    assert at.get("vega_lite_chart")  # the Predict page still answers
    for page in ("app.py", RELEVANCE, PLAN, RETRAIN):
        open_page(page, at)
        assert _locked(at, f"${name}"), page
        assert not analyst_keys(at), (page, analyst_keys(at))
    assert not any("No sign-in is configured" in w.value for w in at.warning)
    assert "access_form" not in {f.proto.form_id for f in at.get("text_input")}
    assert "access_oidc" not in widget_keys(at)
    # the analyst's button, pressed by the browser anyway (its id from an open demo)
    monkeypatch.delenv(name)
    demo = open_page(RETRAIN)
    button = next(b for b in demo.button if b.key == "retrain_demo")
    monkeypatch.setenv(name, value)
    states = at._tree.get_widget_states()
    states.widgets.append(WidgetState(id=button.proto.id, trigger_value=True))
    at._run(states)
    no_exception(at)
    assert len(Home(vrvm_home).trips) == 0
    assert [e["who"] for e in Home(vrvm_home).audit.entries()] == ["vrvm"]  # the first start


def test_a_wrong_setting_locks_even_with_openid_connect_configured(vrvm_home, monkeypatch):
    """A blank analyst list must not mean "every signed-in user"; an [auth] section
    without its cookie secret must not mean "no sign-in"."""
    monkeypatch.setenv("VRVM_ANALYSTS", " ")
    ana = {"is_logged_in": True, "email": "ana@city.gov", "email_verified": True}
    at = _oidc_retrain(ana)
    assert _locked(at, "$VRVM_ANALYSTS") and not analyst_keys(at)
    monkeypatch.delenv("VRVM_ANALYSTS")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.secrets["auth"] = {**OIDC, "cookie_secret": " "}
    at.run()
    open_page(RETRAIN, at)
    assert _locked(at, "cookie_secret") and not analyst_keys(at)
    assert not any("No sign-in is configured" in w.value for w in at.warning)


def test_a_wrong_privacy_setting_locks_the_dashboard_too(vrvm_home, monkeypatch):
    monkeypatch.setenv("VRVM_PRIVATE_MODE", "")
    at = open_page(RELEVANCE)
    assert _locked(at, "$VRVM_PRIVATE_MODE") and not analyst_keys(at)
    # on the synthetic demo, private mode now applies: zone arcs, no trip rows
    assert any("relevance-zone-arcs" in d.proto.json for d in at.get("deck_gl_json_chart"))
    assert not any("start_time" in f.value.columns for f in at.dataframe)
