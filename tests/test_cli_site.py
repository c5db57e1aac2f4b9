"""``vrvm site`` end to end on the tiny model: the sites file, the printed gap, errors."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from vrvm.cli import main
from vrvm.services.planning.siting import SITE_COLUMNS

DEPART = "2024-03-05 08:15"


def run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main([str(a) for a in argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def model_dir(tiny_home):
    from vrvm.trips.home import Home

    return Home(tiny_home).models.active_path()


@pytest.fixture
def files(tiny_area, tmp_path):
    """Eight candidate zones (zone ids), twenty demand points (lat/lon, name, demand)."""
    grid = tiny_area.grid.sort_values("n_points", ascending=False)
    grid[["zone"]].iloc[:8].to_csv(tmp_path / "C.csv", index=False)
    demand = pd.DataFrame(
        {
            "name": [f"d{i}" for i in range(20)],
            "lat": grid["lat"].iloc[:20].to_numpy(),
            "lon": grid["lon"].iloc[:20].to_numpy(),
            "demand": range(1, 21),
        }
    )
    demand.to_csv(tmp_path / "D.csv", index=False)
    grid[["zone"]].iloc[[7]].to_csv(tmp_path / "F.csv", index=False)
    return tmp_path


def test_site_writes_the_chosen_sites(model_dir, files):
    out = files / "S.csv"
    status, stdout, stderr = run(
        "site", model_dir, "--candidates", files / "C.csv", "--demand", files / "D.csv",
        "--bases", 3, "--within", "8min", "--depart", DEPART, "--depart", "2024-03-05 17:30",
        "--out", out, "--assignments", files / "A.csv",
    )  # fmt: skip
    assert status == 0, stderr
    sites = pd.read_csv(out)
    assert list(sites.columns) == SITE_COLUMNS and len(sites) == 3
    assert "objective: demand-weighted P(best base within 8 min)" in stdout
    assert "greedy objective:" in stdout and "gap:" in stdout and "solver: optimal" in stdout
    assert "wrote 3 sites" in stderr
    assignments = pd.read_csv(files / "A.csv")
    assert len(assignments) == 20 and set(assignments["site"]) <= set(sites["id"])
    assert assignments["weight"].tolist() == list(range(1, 21))


def test_site_keeps_fixed_bases(model_dir, files):
    out = files / "S.csv"
    status, _, stderr = run(
        "site", model_dir, "--candidates", files / "C.csv", "--demand", files / "D.csv",
        "--bases", 2, "--within", "480s", "--depart", DEPART, "--fixed", files / "F.csv",
        "--out", out, "--quiet",
    )  # fmt: skip
    assert status == 0, stderr
    sites = pd.read_csv(out)
    assert sites["fixed"].tolist() == [True, False]
    assert sites["id"].iloc[0] == pd.read_csv(files / "F.csv")["zone"].iloc[0]


def test_fewest_bases(model_dir, files):
    out = files / "S.csv"
    status, stdout, stderr = run(
        "site", model_dir, "--candidates", files / "C.csv", "--demand", files / "D.csv",
        "--min-probability", 0.5, "--share", 0.8, "--within", "15min", "--depart", DEPART,
        "--out", out,
    )  # fmt: skip
    assert status == 0, stderr
    assert "share covered:" in stdout and "greedy sites:" in stdout and "gap:" in stdout
    assert len(pd.read_csv(out)) >= 1
    status, _, stderr = run(
        "site", model_dir, "--candidates", files / "C.csv", "--demand", files / "D.csv",
        "--min-probability", 0.99, "--within", "30s", "--depart", DEPART, "--out", out,
    )  # fmt: skip
    assert status == 1
    assert "vrvm: error: no set of sites reaches 100 %" in stderr
    assert "d0" in stderr  # the demand points no candidate reaches are named


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--bases", "0"], "expected a positive integer"),
        (["--bases", "2", "--min-probability", "0.5"], "not allowed with"),
        (["--min-probability", "1.5"], "probability in (0, 1]"),
        (["--bases", "2", "--within", "soon"], "expected a travel time > 0"),
        (["--bases", "2", "--within=-3min"], "expected a travel time > 0"),
        (["--bases", "2", "--within", "0s"], "expected a travel time > 0"),
        (["--bases", "2", "--within", "8"], "minutes or seconds?"),
    ],
)
def test_usage_errors(model_dir, files, extra, message):
    argv = ["site", model_dir, "--candidates", files / "C.csv", "--demand", files / "D.csv",
            "--depart", DEPART, "--out", files / "S.csv"]  # fmt: skip
    if not any(e.startswith("--within") for e in extra):
        argv += ["--within", "8min"]
    status, _, stderr = run(*argv, *extra)
    assert status == 2 and message in stderr
    assert not (files / "S.csv").exists()


def test_share_needs_min_probability(model_dir, files):
    status, _, stderr = run(
        "site", model_dir, "--candidates", files / "C.csv", "--demand", files / "D.csv",
        "--bases", 2, "--share", 0.5, "--within", "8min", "--depart", DEPART,
        "--out", files / "S.csv",
    )  # fmt: skip
    assert status == 2 and "vrvm site: error: --share needs --min-probability" in stderr


def test_data_errors(model_dir, files):
    base = ["site", model_dir, "--candidates", files / "C.csv", "--within", "8min",
            "--depart", DEPART, "--out", files / "S.csv"]  # fmt: skip
    bad = pd.read_csv(files / "D.csv").astype({"demand": object})
    bad.loc[3, "demand"] = "many"
    bad.to_csv(files / "bad.csv", index=False)
    status, _, stderr = run(*base, "--demand", files / "bad.csv", "--bases", 2)
    assert status == 1
    assert "bad.csv: column 'demand': row 5 ('many'): expected a non-negative number" in stderr
    status, _, stderr = run(*base, "--demand", files / "D.csv", "--bases", 9)
    assert status == 1 and "9 bases but only 8 candidate sites" in stderr
    pd.concat([pd.read_csv(files / "C.csv")] * 2).to_csv(files / "twice.csv", index=False)
    status, _, stderr = run(
        "site", model_dir, "--candidates", files / "twice.csv", "--demand", files / "D.csv",
        "--within", "8min", "--depart", DEPART, "--out", files / "S.csv", "--bases", 2,
    )  # fmt: skip
    assert status == 1 and "candidate ids must differ" in stderr
    assert not (files / "S.csv").exists()
