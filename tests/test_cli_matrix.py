"""``vrvm matrix`` on real files: Parquet and CSV out, zone ids, bad rows, atomic writes."""

from __future__ import annotations

import gzip
import io
import json
import math

import h3
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from vrvm import synthetic_city
from vrvm.cli import _matrix as cli_matrix
from vrvm.cli import main
from vrvm.services.answers import matrix

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
def files(tmp_path):
    """Six origins without names and four named destinations, as CSV."""
    trips = synthetic_city(10, seed=21)
    origins = pd.DataFrame({"lat": trips["origin_lat"][:6], "lon": trips["origin_lon"][:6]})
    destinations = pd.DataFrame(
        {
            "name": ["depot", "school", "clinic, east", "park"],
            "lat": trips["dest_lat"][6:10].to_numpy(),
            "lon": trips["dest_lon"][6:10].to_numpy(),
        }
    )
    origins.to_csv(tmp_path / "O.csv", index=False)
    destinations.to_csv(tmp_path / "D.csv", index=False)
    return tmp_path / "O.csv", tmp_path / "D.csv"


def expected(model_dir, origins, destinations, **options) -> pd.DataFrame:
    from vrvm import TravelTimeModel

    model = TravelTimeModel.load(model_dir)
    return matrix.matrix_frame(
        model,
        matrix.read_points(origins),
        matrix.read_points(destinations),
        DEPART,
        **options,
    )


def test_parquet_out_is_every_pair_of_the_service(model_dir, files, tmp_path):
    origins, destinations = files
    out = tmp_path / "M.parquet"
    status, stdout, err = run(
        "matrix", model_dir, "--origins", origins, "--destinations", destinations,
        "--depart", DEPART, "--quantiles", "0.5,0.9", "--prob-within", "600", "--out", out,
    )  # fmt: skip
    assert status == 0, err
    assert stdout == ""
    assert "6 origins x 4 destinations = 24 pairs, leaving Tue 2024-03-05 08:15" in err
    assert "wrote 24 pairs to" in err
    table = pd.read_parquet(out)
    assert list(table.columns) == [
        "origin",
        "destination",
        "mean_s",
        "median_s",
        "q0.5_s",
        "q0.9_s",
        "p_within_600s",
    ]
    assert table["origin"].tolist() == np.repeat(np.arange(2, 8), 4).tolist()  # row numbers
    assert table["destination"].tolist()[:4] == ["depot", "school", "clinic, east", "park"]
    want = expected(model_dir, origins, destinations, quantiles=[0.5, 0.9], thresholds_s=[600])
    pd.testing.assert_frame_equal(table, want, rtol=1e-13)
    assert not list(tmp_path.glob("*.tmp*")) and not list(tmp_path.glob(".*"))


def test_batches_are_row_groups_of_one_file(model_dir, files, tmp_path, monkeypatch):
    origins, destinations = files
    monkeypatch.setattr(matrix, "MATRIX_BATCH_PAIRS", 5)
    out = tmp_path / "M.parquet"
    status, _, err = run(
        "matrix", model_dir, "--origins", origins, "--destinations", destinations,
        "--depart", DEPART, "--out", out, "--quiet",
    )  # fmt: skip
    assert status == 0 and err == ""
    assert pq.ParquetFile(out).num_row_groups == math.ceil(24 / 5)
    pd.testing.assert_frame_equal(
        pd.read_parquet(out), expected(model_dir, origins, destinations), rtol=1e-13
    )


@pytest.mark.parametrize("name", ["M.csv", "M.csv.gz"])
def test_csv_out(model_dir, files, tmp_path, name):
    origins, destinations = files
    out = tmp_path / name
    status, _, err = run(
        "matrix", model_dir, "--origins", origins, "--destinations", destinations,
        "--depart", DEPART, "--prob-within", "900,1200.5", "--out", out,
    )  # fmt: skip
    assert status == 0, err
    if name.endswith(".gz"):
        assert gzip.open(out).read(6) == b"origin"
    table = pd.read_csv(out)
    assert list(table.columns)[-2:] == ["p_within_900s", "p_within_1200.5s"]
    assert table["destination"][2] == "clinic, east"  # quoted in the file
    want = expected(model_dir, origins, destinations, thresholds_s=[900, 1200.5])
    pd.testing.assert_frame_equal(table, want, rtol=1e-15)


def test_csv_on_stdout(model_dir, files):
    origins, destinations = files
    status, stdout, err = run(
        "matrix", model_dir, "--origins", origins, "--destinations", destinations,
        "--depart", DEPART, "-q",
    )  # fmt: skip
    assert status == 0 and err == ""
    table = pd.read_csv(io.StringIO(stdout))
    assert len(table) == 24 and list(table.columns)[:4] == [
        "origin",
        "destination",
        "mean_s",
        "median_s",
    ]


def test_h3_zone_ids(model_dir, files, tmp_path):
    origins, destinations = files
    points = matrix.read_points(origins)
    cells = [
        h3.latlng_to_cell(lat, lon, 9)
        for lat, lon in zip(points["lat"], points["lon"], strict=True)
    ]
    pd.DataFrame({"zone": cells}).to_csv(tmp_path / "Z.csv", index=False)
    out = tmp_path / "M.parquet"
    status, _, err = run(
        "matrix", model_dir, "--origins", tmp_path / "Z.csv", "--destinations", destinations,
        "--depart", DEPART, "--out", out,
    )  # fmt: skip
    assert status == 0, err
    table = pd.read_parquet(out)
    assert table["origin"].tolist() == np.repeat(cells, 4).tolist()
    lat, lon = np.array([h3.cell_to_latlng(c) for c in cells]).T
    centres = pd.DataFrame({"name": cells, "lat": lat, "lon": lon})
    centres.to_csv(tmp_path / "C.csv", index=False)
    pd.testing.assert_frame_equal(
        table, expected(model_dir, tmp_path / "C.csv", destinations), rtol=1e-13
    )


def test_zone_file_ids(model_dir, files, tmp_path):
    origins, destinations = files
    points = matrix.read_points(origins)
    features = []
    for k, (lat, lon) in enumerate(zip(points["lat"], points["lon"], strict=True)):
        ring = [[lon - 0.002, lat - 0.002], [lon + 0.002, lat - 0.002], [lon + 0.002, lat + 0.002],
                [lon - 0.002, lat + 0.002], [lon - 0.002, lat - 0.002]]  # fmt: skip
        features.append(
            {
                "type": "Feature",
                "properties": {"code": 100 + k},
                "geometry": {"type": "Polygon", "coordinates": [ring]},
            }
        )
    geojson = tmp_path / "zones.geojson"
    geojson.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    pd.DataFrame({"zone": [100, 103, 105]}).to_csv(tmp_path / "Z.csv", index=False)
    out = tmp_path / "M.parquet"
    status, _, err = run(
        "matrix", model_dir, "--origins", tmp_path / "Z.csv", "--destinations", destinations,
        "--depart", DEPART, "--zones", f"{geojson}:code", "--out", out,
    )  # fmt: skip
    assert status == 0, err
    assert pd.read_parquet(out)["origin"].tolist() == np.repeat(["100", "103", "105"], 4).tolist()
    # an id the zone file does not have
    pd.DataFrame({"zone": [100, 999]}).to_csv(tmp_path / "Z.csv", index=False)
    status, _, err = run(
        "matrix", model_dir, "--origins", tmp_path / "Z.csv", "--destinations", destinations,
        "--depart", DEPART, "--zones", f"{geojson}:code", "--out", out,
    )  # fmt: skip
    assert status == 1
    assert "Z.csv: column 'zone': row 3 ('999'): expected an id of the zone file" in err


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "lat,lon\n41.9,-87.6\nnorth,-87.6\n",
            "column 'lat': row 3 ('north'): expected a latitude",
        ),
        ("lat,lon\n41.9,\n", "column 'lon': row 2 (''): expected a longitude"),
        ("latitude,longitude,name\n41.9,-87.6,\n", "column 'name': row 2 (''): expected a value"),
        ("x,y\n1,2\n", "expected columns lat and lon (degrees) with an optional name, or a zone"),
        ("zone\nnot-a-cell\n", "column 'zone': row 2 ('not-a-cell'): expected an H3 cell id"),
        ("lat,lon\n", "no rows"),
    ],
)
def test_bad_rows_are_one_line_errors_naming_file_row_and_column(
    model_dir, files, tmp_path, text, message
):
    _, destinations = files
    (tmp_path / "bad.csv").write_text(text)
    out = tmp_path / "M.parquet"
    status, _, err = run(
        "matrix", model_dir, "--origins", tmp_path / "bad.csv", "--destinations", destinations,
        "--depart", DEPART, "--out", out,
    )  # fmt: skip
    assert status == 1
    assert err.startswith("vrvm: error: ") and err.count("\n") == 1
    assert f"bad.csv: {message}" in err
    assert not out.exists()


def test_missing_files(model_dir, files, tmp_path):
    origins, _ = files
    status, _, err = run(
        "matrix", model_dir, "--origins", origins, "--destinations", tmp_path / "nope.csv",
        "--depart", DEPART, "--out", tmp_path / "M.parquet",
    )  # fmt: skip
    assert status == 1 and "nope.csv: no such file" in err


@pytest.mark.parametrize(
    "option, value",
    [
        ("--quantiles", "0.9,1.5"),
        ("--quantiles", "0.9,0.9"),
        ("--prob-within", "-5"),
        ("--prob-within", "ten"),
        ("--depart", "tuesday morning"),
    ],
)
def test_usage_errors_exit_2(model_dir, files, option, value):
    origins, destinations = files
    argv = ["matrix", model_dir, "--origins", origins, "--destinations", destinations]
    argv += ["--depart", DEPART, option, value] if option != "--depart" else [option, value]
    status, _, err = run(*argv)
    assert status == 2 and "expected" in err


def test_a_failure_midway_leaves_the_old_file(model_dir, files, tmp_path, monkeypatch):
    origins, destinations = files
    out = tmp_path / "M.parquet"
    out.write_bytes(b"old")
    calls = []

    def failing(*args, **kwargs):
        for table in matrix.iter_matrix(*args, **kwargs):
            calls.append(len(table))
            yield table
            raise MemoryError("simulated")

    monkeypatch.setattr(cli_matrix, "iter_matrix", failing)
    monkeypatch.setattr(matrix, "MATRIX_BATCH_PAIRS", 5)
    status, _, err = run(
        "matrix", model_dir, "--origins", origins, "--destinations", destinations,
        "--depart", DEPART, "--out", out,
    )  # fmt: skip
    assert status == 1 and "simulated" in err
    assert calls == [5]
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["D.csv", "M.parquet", "O.csv"]


def test_progress_with_time_left_on_large_matrices(model_dir, files, tmp_path, monkeypatch):
    origins, destinations = files
    monkeypatch.setattr(cli_matrix, "MATRIX_PROGRESS_PAIRS", 20)
    monkeypatch.setattr(matrix, "MATRIX_BATCH_PAIRS", 8)
    status, _, err = run(
        "matrix", model_dir, "--origins", origins, "--destinations", destinations,
        "--depart", DEPART, "--out", tmp_path / "M.parquet",
    )  # fmt: skip
    assert status == 0, err
    lines = [line for line in err.splitlines() if line.startswith("pairs: ")]
    assert lines[0].startswith("pairs: 0/24 done") and lines[-1].startswith("pairs: 24/24 done")


class _ClosedPipe(io.StringIO):
    """A standard output whose reader has gone (``vrvm matrix ... --out - | head``)."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_pipe_ends_quietly(model_dir, files):
    origins, destinations = files
    err = io.StringIO()
    argv = ["matrix", model_dir, "--origins", origins, "--destinations", destinations]
    argv += ["--depart", DEPART, "-q"]
    status = main([str(a) for a in argv], stdout=_ClosedPipe(), stderr=err)
    assert status == 141 and err.getvalue() == ""


@pytest.mark.parametrize("out", ["M.csv", "-"])
def test_names_a_spreadsheet_would_run_are_quoted_in_csv(model_dir, files, tmp_path, out):
    """Issue 32 (CSV injection): a point named like a formula is written with a leading
    quote in CSV, as OWASP recommends, and verbatim in Parquet; numbers stay numbers."""
    origins, _ = files
    evil = "=cmd|' /C calc'!A0"
    named = pd.DataFrame({"name": [evil, "-2+3"], "lat": [0.0, 0.0], "lon": [0.0, 0.0]})
    points = pd.read_csv(origins)[:2]
    named[["lat", "lon"]] = points[["lat", "lon"]].to_numpy()
    named.to_csv(tmp_path / "E.csv", index=False)
    target = out if out == "-" else tmp_path / out
    status, stdout, err = run(
        "matrix", model_dir, "--origins", tmp_path / "E.csv", "--destinations", origins,
        "--depart", DEPART, "-q", "--out", target,
    )  # fmt: skip
    assert status == 0, err
    text = stdout if out == "-" else target.read_text()
    assert not any(line.startswith(("=", "-2+3")) for line in text.splitlines())
    table = pd.read_csv(io.StringIO(text))
    assert table["origin"].unique().tolist() == ["'" + evil, "'-2+3"]
    want = expected(model_dir, tmp_path / "E.csv", origins)
    pd.testing.assert_frame_equal(table.drop(columns="origin"), want.drop(columns="origin"))
    status, _, err = run(
        "matrix", model_dir, "--origins", tmp_path / "E.csv", "--destinations", origins,
        "--depart", DEPART, "-q", "--out", tmp_path / "M.parquet",
    )  # fmt: skip
    assert status == 0, err
    assert pd.read_parquet(tmp_path / "M.parquet")["origin"][0] == evil


@pytest.fixture(scope="module")
def weekday_model_dir(tmp_path_factory):
    """A small model of weekday trips alone."""
    from vrvm import TravelTimeModel

    trips = synthetic_city(900, seed=2)
    weekdays = trips[trips["start_time"].dt.weekday < 5]
    model = TravelTimeModel(n_members=2, kernel_widths=[1.5], max_basis=40, random_state=0)
    return model.fit(weekdays).save(tmp_path_factory.mktemp("weekdays") / "m")


@pytest.mark.parametrize(
    ("depart", "window", "words"),
    [
        ("2024-03-09 08:15", None, "24 of 24 pairs depart on a weekend, but none of the "),
        (
            "2024-03-08 23:50",
            "30",
            "the departure window ends on a weekend (Sat 00:20), but none of the training "
            "trips did: the model answers for the pairs that leave then with what it learned "
            "on weekdays",
        ),
        ("2024-03-05 08:15", "30", None),
    ],
)
def test_a_matrix_on_a_kind_of_day_the_model_never_saw_says_so(
    weekday_model_dir, files, tmp_path, depart, window, words
):
    origins, destinations = files
    argv = ["matrix", weekday_model_dir, "--origins", origins, "--destinations", destinations]
    argv += ["--depart", depart, "--out", tmp_path / "M.csv"]
    argv += ["--window", window] if window else []
    status, _, err = run(*argv)
    assert status == 0, err
    if words is None:
        assert "warning" not in err
    else:
        assert f"vrvm: warning: {words}" in err
