"""``vrvm export``, ``vrvm audit``, ``vrvm hash-passphrase``, and the OS user the command
line records for what it changes in a data home."""

from __future__ import annotations

import io
import json

import numpy as np

from tests.test_cli import run
from vrvm import TravelTimeModel, synthetic_city
from vrvm.services.access.policy import os_user, verify_passphrase_hash
from vrvm.services.versions.models import versions_table
from vrvm.trips.home import Home


def test_export_snaps_by_default_at_a_measured_cost_and_records_who(vrvm_home, tmp_path):
    status, out, err = run("export", str(vrvm_home), "--out", str(tmp_path / "shared"))
    assert status == 0, err
    assert "exported with its relevance vectors at the centres of H3 cells" in out
    assert "of its training trips" in out and "CRPS" in out
    original = TravelTimeModel.load(Home(vrvm_home).models.active_path())
    shared = TravelTimeModel.load(tmp_path / "shared")
    resolution = shared.training_summary_["snapped"]["resolution"]
    assert f"resolution {resolution}" in out
    exact, snapped = original.relevance_trips(), shared.relevance_trips()
    assert not np.isin(exact["origin_lat"], snapped["origin_lat"]).any()
    queries = synthetic_city(100, seed=9)
    ratio = shared.predict(queries) / original.predict(queries)
    assert np.median(np.abs(ratio - 1)) < 0.05
    entry = Home(vrvm_home).audit.entries()[-1]
    assert (entry["action"], entry["who"], entry["how"], entry["via"]) == (
        "export",
        os_user(),
        "os",
        "cli",
    )
    assert entry["snapped"] is True and entry["resolution"] == resolution
    # the cost is measured, so it may come out a hair below zero (snapping smoothed)
    assert -0.01 <= entry["cost"] <= 0.02 or entry["resolution"] == 10


def test_export_raw_and_from_a_model_directory(vrvm_home, tmp_path):
    status, out, _ = run("export", str(vrvm_home), "--out", str(tmp_path / "raw"), "--raw")
    assert status == 0 and "exported raw" in out
    raw = TravelTimeModel.load(tmp_path / "raw")
    original = TravelTimeModel.load(Home(vrvm_home).models.active_path())
    assert raw.relevance_trips().equals(original.relevance_trips())
    model_dir = str(Home(vrvm_home).models.active_path())
    status, out, _ = run("export", model_dir, "--out", str(tmp_path / "a"), "--resolution", "9")
    assert status == 0 and "cost not measured" in out
    trips = tmp_path / "test.csv"
    synthetic_city(300, seed=3).to_csv(trips, index=False)
    status, out, _ = run(
        "export", model_dir, "--out", str(tmp_path / "b"), "--score-on", str(trips)
    )
    assert status == 0 and "% CRPS on 300 trips of" in out
    status, _, err = run("export", model_dir, "--out", str(tmp_path / "c"), "--version", "1")
    assert status == 1 and "--version needs a home" in err


def test_update_and_activate_record_the_os_user(vrvm_home, tmp_path):
    trips = tmp_path / "new.csv"
    synthetic_city(200, seed=12).to_csv(trips, index=False)
    assert run("update", str(vrvm_home), str(trips))[0] == 0
    assert run("versions", str(vrvm_home), "--activate", "1")[0] == 0
    publish, activate = Home(vrvm_home).audit.entries()[-2:]
    # one audit shape whatever the door (services.versions.models.publish_model)
    assert (publish["action"], publish["kind"], publish["version"], publish["source"]) == (
        "publish",
        "update",
        2,
        "new.csv",
    )
    assert (publish["parent"], publish["trips"], publish["via"]) == (1, 200, "cli")
    assert (activate["action"], activate["version"], activate["previous"]) == ("activate", 1, 2)
    assert {publish["who"], activate["who"]} == {os_user()}
    assert versions_table(vrvm_home).set_index("version").loc[2, "published by"] == (
        f"{os_user()} (os)"
    )
    status, out, _ = run("versions", str(vrvm_home))
    assert status == 0 and "published by" in out


def test_audit_prints_the_log_and_finds_a_broken_chain(vrvm_home, tmp_path):
    run("export", str(vrvm_home), "--out", str(tmp_path / "m"), "--raw")
    status, out, err = run("audit", str(vrvm_home))
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert "publish" in lines[0] and "vrvm (first start" in lines[0]
    assert "export" in lines[1] and os_user() in lines[1]
    status, out, _ = run("audit", str(vrvm_home / "models"), "--json", "--last", "1")
    assert status == 0 and [e["action"] for e in json.loads(out)] == ["export"]
    path = Home(vrvm_home).audit.path
    path.write_text(path.read_text().replace('"vrvm"', '"mallory"', 1))
    status, _, err = run("audit", str(vrvm_home))
    assert status == 1 and "chain of entries breaks at line(s) [2]" in err


def test_hash_passphrase_reads_stdin_and_refuses_short_ones(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("correct horse battery staple\n"))
    status, out, err = run("hash-passphrase")
    assert status == 0 and "VRVM_ANALYST_PASSPHRASE_HASH" in err
    assert verify_passphrase_hash("correct horse battery staple", out.strip())
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    status, _, err = run("hash-passphrase")
    assert status == 1 and "at least 12" in err
