"""``vrvm arrive-by``, run in-process through vrvm.cli.main on the tiny demo model."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from vrvm.cli import main
from vrvm.services.answers import schedule
from vrvm.services.map.places import Place
from vrvm.trips.home import Home
from vrvm.trips.model.travel_time import TravelTimeModel

ORIGIN = (-39.984969, -30.001111)  # Downtown Synthetica
DEST = (-40.084852, -29.812487)  # Synthetica International Airport


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def model_dir(tiny_home):
    return str(Home(tiny_home).models.active_path())


def where(point: tuple[float, float]) -> str:
    return f"{point[0]},{point[1]}"


def expected(model_dir: str, prob: float, hours: float = 3.0) -> schedule.ArriveBy:
    model = TravelTimeModel.load(model_dir)
    origin, dest = (Place(lat, lon, None, "x", kind="point") for lat, lon in (ORIGIN, DEST))
    deadline = pd.Timestamp("2016-05-03 09:00", tz=model.tz_)
    return schedule.arrive_by(model, origin, dest, deadline, prob, search_hours=hours)


def test_arrive_by_prints_the_answer_quantiles_and_indices(model_dir, tmp_path):
    curve = tmp_path / "curve.csv"
    status, out, err = run(
        "arrive-by",
        model_dir,
        f"--origin={where(ORIGIN)}",
        f"--destination={where(DEST)}",
        "--deadline",
        "2016-05-03 09:00",
        "--prob",
        "0.9",
        "--curve",
        str(curve),
    )
    assert status == 0, err
    answer = expected(model_dir, 0.9)
    lines = out.splitlines()
    assert lines[0] == (
        f"Leave (-39.98497, -30.00111) by {answer.departure.floor('min'):%H:%M} to be at "
        "(-40.08485, -29.81249) by 09:00 with 90 % probability."
    )
    assert f"latest departure {answer.departure.isoformat()}" in lines[1]
    assert f"{100 * answer.prob_at_departure:.2f} %" in lines[1]
    for row in answer.arrival_table().itertuples(index=False):
        assert f"{row.minutes:>8.1f}  {row.arrival}" in out
    assert f"Planning time index {answer.indices.planning_time_index:>6.2f}" in out
    assert "Misery index" in out and "Free-flow time" in out
    written = pd.read_csv(curve)
    assert (
        len(written) == 181 and (written["latest_departure"] == answer.departure.isoformat()).all()
    )
    assert "wrote the curve (181 departures)" in err


def test_no_departure_meets_p_exits_1_with_the_reason(model_dir):
    status, out, err = run(
        "arrive-by",
        model_dir,
        f"--origin={where(ORIGIN)}",
        f"--destination={where(DEST)}",
        "--deadline",
        "2016-05-03 09:00",
        "--prob",
        "0.999",
        "--search-hours",
        "1",
    )
    answer = expected(model_dir, 0.999, 1.0)
    assert not answer.found  # the premise: the airport is over an hour away at p = 99.9 %
    assert status == 1 and err == ""
    assert out.splitlines()[0] == answer.reason
    assert "(the best departure searched)" in out


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--origin", "41.9", "type a latitude and a longitude"),
        ("--prob", "1.5", "expected a probability such as 0.95"),
        ("--deadline", "tomorrow-ish", "expected a date and time"),
        ("--search-hours", "30", "expected a number of hours in (0, 24]"),
    ],
)
def test_bad_arguments_are_usage_errors(model_dir, option, value, message):
    argv = {
        "--origin": where(ORIGIN),
        "--destination": where(DEST),
        "--deadline": "2016-05-03 09:00",
    }
    argv[option] = value
    status, out, err = run(
        "arrive-by", model_dir, *(f"{name}={text}" for name, text in argv.items())
    )
    assert status == 2 and out == ""
    assert message in err


def test_a_missing_model_is_a_runtime_error(tmp_path):
    status, _, err = run(
        "arrive-by",
        str(tmp_path / "nothing"),
        f"--origin={where(ORIGIN)}",
        f"--destination={where(DEST)}",
        "--deadline=2016-05-03 09:00",
    )
    assert status == 1 and err.startswith("vrvm: error:")
