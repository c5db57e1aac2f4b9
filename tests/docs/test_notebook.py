"""The example notebook ``docs/notebook.ipynb``: it runs from top to bottom on the Chicago
data, its answers have the documented shape, and the stored copy stays small and clean.

The notebook is executed in a temporary copy with :mod:`nbclient` (kernel ``python3``,
installed by ``ipykernel`` with the ``dev`` extra), so the outputs stored in the
repository are never rewritten by a test run. One cell is appended to the copy that
prints, as JSON, the facts the checks below read from the kernel's own objects (the
matrix's columns, the isochrones' areas, the arrive-by departure), rather than parsing
the notebook's printed text.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbclient import NotebookClient

REPO_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO_ROOT / "docs" / "notebook.ipynb"
CELL_TIMEOUT_S = 600
"""Per cell: training takes about 15 s on 2 cores; the rest a few seconds each."""
MAX_STORED_BYTES = 400_000

FACTS_CELL = """\
import json

print(json.dumps({
    "matrix_columns": list(matrix.columns),
    "matrix_rows": len(matrix),
    "matrix_pairs": int(matrix[["from_id", "to_id"]].drop_duplicates().shape[0]),
    "p50_le_p90": bool((matrix["travel_time_p50"] <= matrix["travel_time_p90"] + 1e-9).all()),
    "iso_columns": list(iso.columns),
    "iso_crs": iso.crs.to_string(),
    "iso_probability": [float(p) for p in iso["probability"]],
    "iso_area_km2": [float(a) for a in iso["area_km2"]],
    "reach_columns": list(reached.columns),
    "reach_rows": len(reached),
    "n_areas": len(areas),
    "p_best_le_p_any": bool(
        (reached["p_best"].dropna() <= reached["p_any"].dropna() + 1e-12).all()
    ),
    "departure": plan.departure.isoformat(),
    "deadline": DEADLINE,
    "prob_on_time": float(plan.prob_on_time),
}))
"""


def _stream_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")


@pytest.mark.slow_process
def test_notebook_runs_on_chicago(shared_data, tmp_path, monkeypatch):
    data = shared_data("chicago_taxi_trips.csv").parent
    shared_data("chicago_community_areas.geojson")
    monkeypatch.setenv("VRVM_SHARED_DATA", str(data))
    # the kernel imports this checkout's vrvm whatever is installed, and keeps its
    # IPython profile out of the user's home
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT), path])))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    copy = tmp_path / "notebook.ipynb"
    shutil.copyfile(NOTEBOOK, copy)
    nb = nbformat.read(copy, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(FACTS_CELL))

    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError naming the cell if any cell fails

    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    facts = json.loads(_stream_text(nb.cells[-1]))

    assert facts["matrix_columns"][:2] == ["from_id", "to_id"]
    for column in ("travel_time_p50", "travel_time_p90", "travel_time_mean", "outside_area"):
        assert column in facts["matrix_columns"]
    assert any(re.fullmatch(r"p_within_\d+min", c) for c in facts["matrix_columns"])
    assert facts["matrix_rows"] == facts["matrix_pairs"] > 0
    assert facts["p50_le_p90"]

    for column in ("probability", "within_min", "area_km2", "geometry"):
        assert column in facts["iso_columns"]
    assert facts["iso_crs"] == "EPSG:4326"
    by_probability = sorted(zip(facts["iso_probability"], facts["iso_area_km2"], strict=True))
    areas_km2 = [a for _, a in by_probability]
    assert areas_km2 == sorted(areas_km2, reverse=True)  # more certain, smaller region
    assert areas_km2[0] > 0

    for column in ("id", "p_best", "p_any", "best_base", "median_min", "geometry"):
        assert column in facts["reach_columns"]
    assert facts["reach_rows"] == facts["n_areas"]
    assert facts["p_best_le_p_any"]

    departure = pd.Timestamp(facts["departure"])
    deadline = pd.Timestamp(facts["deadline"], tz=departure.tz)
    assert departure.tz is not None
    assert departure < deadline
    assert facts["prob_on_time"] >= 0.9 - 1e-9


def test_stored_notebook_is_executed_small_and_clean():
    """The copy in the repository shows its outputs, without errors, absolute paths or
    raw trips, and stays small enough to review."""
    assert NOTEBOOK.stat().st_size < MAX_STORED_BYTES
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count for c in code)
    assert all(c.outputs for c in code)
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    text = json.dumps([o for o in outputs if o.output_type != "display_data"])
    for fragment in (str(REPO_ROOT), str(REPO_ROOT.parent), "/home/", "/root/", "/tmp/"):
        assert fragment not in text
    # the trips' raw columns never appear in an output (aggregates and zone names only)
    for column in ("origin_lat", "dest_lon", "trip_start_timestamp", "pickup_latitude"):
        assert column not in text
