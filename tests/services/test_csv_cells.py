"""CSV outputs never hand a spreadsheet a formula (issue 32: OWASP "CSV Injection").

Each door that writes CSV is tried with a zone or base named like the classic payload;
the cells must come back quoted with ``'`` while every number stays a number.
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest

from vrvm.cli._output import write_table
from vrvm.services.answers import matrix
from vrvm.services.display.csv_cells import FORMULA_STARTS, safe_cell, safe_cells
from vrvm.services.map.places import busiest_zones, place_from_zone
from vrvm.services.planning.coverage import coverage_csv, coverage_grid
from vrvm.services.planning.fleet import fleet_coverage, rank_new_base, zone_demand
from vrvm.services.planning.fleet_files import bases_csv, candidates_csv, fleet_csv, read_bases_csv

EVIL = "=cmd|' /C calc'!A0"
DEPARTURE = pd.Timestamp("2024-03-05 08:15")


def formula_cells(text: str) -> list[str]:
    """The cells of CSV ``text`` that a spreadsheet would run (plain numbers excepted)."""
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    return [c for c in cells if c.startswith(FORMULA_STARTS) and safe_cell(c) != c]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (EVIL, "'" + EVIL),
        ("+SUM(A1:A2)", "'+SUM(A1:A2)"),
        ("-2+3", "'-2+3"),
        ("@HYPERLINK(x)", "'@HYPERLINK(x)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("Loop", "Loop"),
        ("a=b", "a=b"),
        ("", ""),
        ("-39.98", "-39.98"),  # text that is a number: a spreadsheet reads the number
        ("+1e3", "+1e3"),
        (-39.98, -39.98),
        (None, None),
    ],
)
def test_safe_cell(value, expected):
    assert safe_cell(value) == expected


def test_safe_cells_quotes_text_and_names_never_numbers():
    frame = pd.DataFrame(
        {
            "name": [EVIL, "Loop", None, "-5"],
            "kind": pd.Categorical(["@x", "ok", "@x", "ok"]),
            "text": pd.array(["+x", "y", pd.NA, "z"], dtype="string"),
            "lon": [-87.6, -87.9, np.nan, -1.0],
            "n": [-1, 2, 3, -4],
            EVIL: [True, False, True, False],
            "when": pd.to_datetime(["2024-03-05"] * 4),
        }
    )
    safe = safe_cells(frame)
    assert safe["name"].tolist()[:2] == ["'" + EVIL, "Loop"] and safe["name"][3] == "-5"
    assert safe["kind"].tolist() == ["'@x", "ok", "'@x", "ok"]
    assert safe["text"].tolist()[:2] == ["'+x", "y"]
    assert list(safe.columns)[5] == "'" + EVIL
    for column in ("lon", "n", "when"):
        pd.testing.assert_series_equal(safe[column], frame[column])
    assert frame["name"][0] == EVIL  # the caller's table is not changed
    text = safe.to_csv(index=False)
    assert formula_cells(text) == [] and formula_cells(frame.to_csv(index=False))
    assert pd.read_csv(io.StringIO(text))["lon"].iloc[0] == -87.6
    plain = frame[["lon", "n"]]
    assert safe_cells(plain) is plain


def _named_points(area, zones, names):
    points = matrix.zone_points(area, zones)
    points["label"] = names
    return points


def test_matrix_and_points_downloads(tiny_model, tiny_area):
    zones = busiest_zones(tiny_area, 3)
    points = _named_points(tiny_area, zones, [EVIL, "-Loop", "@home"])
    frame = matrix.matrix_frame(tiny_model, points, points, DEPARTURE, thresholds_s=[900])
    text = matrix.matrix_csv(frame).decode()
    assert formula_cells(text) == []
    table = pd.read_csv(io.StringIO(text))
    assert table["origin"].unique().tolist() == ["'" + EVIL, "'-Loop", "'@home"]
    pd.testing.assert_frame_equal(table.drop(columns=["origin", "destination"]),
                                  frame.drop(columns=["origin", "destination"]))  # fmt: skip
    assert frame["origin"][0] == EVIL  # Parquet and JSON keep the names as given
    assert pd.read_parquet(io.BytesIO(matrix.matrix_parquet(frame)))["origin"][0] == EVIL
    listed = matrix.points_csv(points).decode()
    assert formula_cells(listed) == [] and listed.splitlines()[1].startswith("'=cmd|")


def test_coverage_download(tiny_model, tiny_area):
    zone = busiest_zones(tiny_area, 1)[0]
    origin = place_from_zone(tiny_area, zone)
    grid = coverage_grid(tiny_model, tiny_area, origin, DEPARTURE, 15.0)
    grid["label"] = grid["label"].astype(object)
    grid.loc[grid.index[0], "label"] = EVIL  # a zone so named in a planner's boundary file
    text = coverage_csv(grid, origin, DEPARTURE, 15.0).decode()
    assert formula_cells(text) == []
    table = pd.read_csv(io.StringIO(text))
    assert table["label"][0] == "'" + EVIL
    assert table["origin_lon"][0] == pytest.approx(origin.lon, abs=1e-4)  # still a number


def test_fleet_downloads_of_an_uploaded_base(tiny_model, tiny_area):
    zones = busiest_zones(tiny_area, 2)
    rows = [tiny_area.grid.iloc[tiny_area.zone_index[z]] for z in zones]
    upload = "name,lat,lon\n" + "".join(
        f'"{name}",{row.lat},{row.lon}\n' for name, row in zip([EVIL, "+1+1"], rows, strict=True)
    )
    bases = read_bases_csv(upload.encode(), tiny_area, source="bases.csv")
    assert bases["name"].tolist() == [EVIL, "+1+1"]
    demand, _ = zone_demand(tiny_area)
    cov = fleet_coverage(tiny_model, tiny_area, bases, DEPARTURE, 10)
    ranking = rank_new_base(tiny_model, tiny_area, cov, demand, top=3)
    for text in (
        bases_csv(cov, demand).decode(),
        fleet_csv(cov, demand).decode(),
        candidates_csv(ranking, cov, "any").decode(),
    ):
        assert formula_cells(text) == [], text[:300]
    named = pd.read_csv(io.BytesIO(bases_csv(cov, demand)))
    assert named["name"].tolist() == ["'" + EVIL, "'+1+1"]
    assert named["lat"].tolist() == pytest.approx([row.lat for row in rows], abs=1e-4)
    best = pd.read_csv(io.BytesIO(fleet_csv(cov, demand)))["best_base"]
    assert set(best) <= {"'" + EVIL, "'+1+1"} and best.notna().all()


@pytest.mark.parametrize("name", ["out.csv", "out.csv.gz", "-"])
def test_cli_tables(tmp_path, name):
    frame = pd.DataFrame({"zone": [EVIL, "7"], "lon": [-87.6, -1.5]})
    stdout = io.StringIO()
    write_table(frame, name if name == "-" else str(tmp_path / name), stdout)
    if name == "-":
        text = stdout.getvalue()
    else:
        text = pd.read_csv(tmp_path / name).to_csv(index=False)
    assert formula_cells(text) == [] and "'" + EVIL in text
    assert pd.read_csv(io.StringIO(text))["lon"].tolist() == [-87.6, -1.5]
    write_table(frame, str(tmp_path / "out.parquet"), stdout)
    assert pd.read_parquet(tmp_path / "out.parquet")["zone"][0] == EVIL  # not a spreadsheet
