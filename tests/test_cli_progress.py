"""The command line's progress: the bar with the time left, for fits and for predictions."""

from __future__ import annotations

import gzip
import io
import os
import re

import numpy as np
import pandas as pd
import pytest

import vrvm.cli._reading as cli_reading
from vrvm.cli import main
from vrvm.cli._output import ProgressBar
from vrvm.trips.synthetic import synthetic_city


class Terminal(io.StringIO):
    def isatty(self):
        return True


def run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main([str(a) for a in argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------------------- the bar
def test_bar_redraws_with_the_time_left_on_a_terminal():
    stream = Terminal()
    bar = ProgressBar(stream, width=8)
    bar(0, 8, 1.0, "members")
    bar(3, 8, 41.0, "members")
    bar(8, 8, 97.0, "members")
    first = "members [--------] 0/8  1.0 s"
    second = "members [###-----] 3/8  41 s, about 1 min 07 s left"  # 40 s for 3, 5 left
    last = "members [########] 8/8  1 min 37 s"
    assert stream.getvalue() == (f"\r{first}\r{second}\r{last}{' ' * (len(second) - len(last))}\n")


def test_a_new_phase_starts_a_new_line_on_a_terminal():
    stream = Terminal()
    bar = ProgressBar(stream, width=4)
    bar(1, 2, 5.0, "reading")
    bar(1, 8, 9.0, "members")  # the reading bar never finished
    bar.close()
    lines = stream.getvalue().split("\n")
    assert lines[0] == "\rreading [##--] 1/2  5.0 s, about 5.0 s left"
    assert lines[1] == "\rmembers [----] 1/8  9.0 s, about 28 s left"  # 4 s each
    assert lines[2] == ""  # close() ended the unfinished bar


def test_one_line_per_step_elsewhere():
    stream = io.StringIO()
    bar = ProgressBar(stream)
    for done in (1, 2):
        bar(done, 2, 10.0 * done, "members")
    bar(1, 1, 25.0, "statistics")
    assert stream.getvalue().splitlines() == [
        "members: 1/2 done (10 s, about 10 s left)",
        "members: 2/2 done (20 s)",
        "statistics: 1/1 done (25 s)",
    ]


def test_lines_can_be_spaced_out_and_held_back():
    stream = io.StringIO()
    bar = ProgressBar(stream, every_s=10.0)
    for elapsed in range(0, 30, 2):
        bar(elapsed, 30, float(elapsed), "queries")
    bar(30, 30, 30.0, "queries")  # the last step is always said
    shown = [int(line.split(":")[1].split("/")[0]) for line in stream.getvalue().splitlines()]
    assert shown == [0, 10, 20, 30]
    quick = io.StringIO()
    bar = ProgressBar(quick, delay_s=2.0)
    bar(1, 2, 0.5, "queries")
    bar(2, 2, 1.0, "queries")  # done before the delay: nothing shown
    assert quick.getvalue() == ""


def test_unknown_totals_show_counts_only():
    stream = Terminal()
    bar = ProgressBar(stream)
    bar(1200, 0, 3.0, "queries")
    assert stream.getvalue() == "\rqueries 1,200  3.0 s"
    bar.close()
    assert stream.getvalue() == "\rqueries 1,200  3.0 s\n"


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
@pytest.mark.parametrize("columns", [0, 50])
def test_the_bar_fits_the_terminal_and_keeps_the_time_left(columns):
    # 50 columns: the bar narrows so the line does not wrap; 0 x 0, as some
    # pseudo-terminals report (script, CI runners): the bar is drawn all the same.
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 0, columns, 0, 0))
    with open(slave, "w", encoding="utf-8") as stream:
        bar = ProgressBar(stream)
        bar(2, 5, 2.0, "queries")
        bar(5, 5, 5.0, "queries")
    # the slave end is closed: read what it wrote until the pseudo-terminal says EOF (EIO
    # on Linux); one read may return only part of it
    chunks = []
    for _ in range(100):
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    text = b"".join(chunks).decode()
    frames = [f.rstrip() for f in text.replace("\r\n", "\n").split("\r") if f.strip()]
    if columns:
        assert frames[0] == "queries [####------] 2/5  2.0 s, about 3.0 s left"
        assert max(len(f) for f in frames) < columns
    else:
        assert frames[0] == f"queries [{'#' * 12}{'-' * 18}] 2/5  2.0 s, about 3.0 s left"
    assert frames[-1].startswith("queries [") and frames[-1].endswith("] 5/5  5.0 s")


# ------------------------------------------------------------------------------- train
def test_train_shows_each_phase_with_the_time_left(tmp_path):
    synthetic_city(600, seed=1).to_csv(tmp_path / "t.csv", index=False)
    args = ("--members", "3", "--widths", "1,2", "--max-basis", "60", "--seed", "0")
    status, _, err = run("train", tmp_path / "t.csv", "--out", tmp_path / "m", *args)
    assert status == 0, err
    lines = [line for line in err.splitlines() if line.startswith("members:")]
    # the phase's start (0/3: its clock starts there), then each member with the time left
    assert [line.split(" done")[0] for line in lines] == [f"members: {i}/3" for i in range(4)]
    assert re.fullmatch(r"members: 1/3 done \(.+ s, about .+ left\)", lines[1])
    assert "left" not in lines[-1]
    status, _, err = run("train", tmp_path / "t.csv", "--out", tmp_path / "q", *args, "-q")
    assert status == 0 and "members" not in err


# ----------------------------------------------------------------------------- predict
@pytest.fixture
def tiny_model_dir(tiny_home):
    from vrvm.trips.home import Home

    return Home(tiny_home).models.active_path()


@pytest.fixture
def queries(tmp_path):
    path = tmp_path / "q.csv"
    synthetic_city(1500, seed=9).to_csv(path, index=False)
    return path


def test_predict_of_a_small_file_shows_no_progress_but_its_rate(tiny_model_dir, queries, tmp_path):
    status, _, err = run("predict", tiny_model_dir, queries, "--out", tmp_path / "p.csv")
    assert status == 0, err
    assert re.fullmatch(
        r"wrote 1,500 predictions to \S+p\.csv in [\d.]+ s \([\d,]+ queries/s\)\n", err
    )


def test_predict_of_a_large_file_shows_its_progress(tiny_model_dir, queries, tmp_path, monkeypatch):
    monkeypatch.setattr(cli_reading, "PREDICT_PROGRESS_BYTES", 1)  # every file is large
    monkeypatch.setattr(cli_reading, "PREDICT_BATCH_BYTES", 16384)  # several batches
    status, _, err = run("predict", tiny_model_dir, queries, "--out", tmp_path / "p.parquet")
    assert status == 0, err
    lines = err.splitlines()
    assert lines[0].startswith("queries: 0/1,500 done (")
    assert lines[-2].startswith("queries: 1,500/1,500 done (") and "left" not in lines[-2]
    assert lines[-1].startswith("wrote 1,500 predictions")
    status, _, err = run("predict", tiny_model_dir, queries, "--out", tmp_path / "p.csv", "-q")
    assert status == 0 and "queries:" not in err


def test_predict_shows_a_bar_on_a_terminal_once_it_takes_a_while(
    tiny_model_dir, queries, tmp_path, monkeypatch
):
    monkeypatch.setattr(cli_reading, "PREDICT_PROGRESS_DELAY_S", 0.0)
    monkeypatch.setattr(cli_reading, "PREDICT_BATCH_BYTES", 16384)
    err = Terminal()
    status = main(
        ["predict", str(tiny_model_dir), str(queries), "--out", str(tmp_path / "p.csv")],
        stdout=io.StringIO(),
        stderr=err,
    )
    assert status == 0
    text = err.getvalue()
    assert text.startswith("\rqueries [")
    assert "] 1,500/1,500  " in text and "\nwrote 1,500 predictions" in text


def test_rows_are_counted_for_the_progress(tmp_path):
    trips = synthetic_city(300, seed=2)
    trips.to_csv(tmp_path / "q.csv", index=False)
    trips.to_parquet(tmp_path / "q.parquet", index=False)
    text = (tmp_path / "q.csv").read_bytes()
    (tmp_path / "q.csv.gz").write_bytes(gzip.compress(text))
    (tmp_path / "no_end.csv").write_bytes(text.rstrip(b"\n"))  # no line break at the end
    for name in ("q.csv", "q.parquet", "q.csv.gz", "no_end.csv"):
        assert cli_reading.count_query_rows(str(tmp_path / name)) == 300, name
    assert cli_reading.count_query_rows(str(tmp_path / "missing.csv")) == 0


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_predictions_do_not_depend_on_the_threads(
    tiny_model_dir, queries, tmp_path, monkeypatch, suffix
):
    monkeypatch.setattr(cli_reading, "PREDICT_BATCH_BYTES", 8192)
    tables = []
    for threads in (1, 3):
        monkeypatch.setattr(cli_reading, "PREDICT_THREADS", threads)
        out = tmp_path / f"p{threads}{suffix}"
        status, _, err = run("predict", tiny_model_dir, queries, "--out", out)
        assert status == 0, err
        tables.append(pd.read_parquet(out) if suffix == ".parquet" else pd.read_csv(out))
    pd.testing.assert_frame_equal(tables[0], tables[1])
    assert tables[0]["row"].tolist() == list(range(2, 1502))


def test_queries_without_a_travel_time_column_are_written_once(
    tiny_model_dir, tmp_path, monkeypatch
):
    path = tmp_path / "q.parquet"
    synthetic_city(500, seed=4).drop(columns="travel_time_s").to_parquet(path, index=False)
    rewrites = []
    monkeypatch.setattr(cli_reading, "_drop_scores_csv", lambda *a: rewrites.append(a))
    for out in ("p.parquet", "p.csv"):
        status, _, err = run("predict", tiny_model_dir, path, "--out", tmp_path / out)
        assert status == 0, err
    table = pd.read_parquet(tmp_path / "p.parquet")
    assert "crps" not in table.columns and "crps" not in pd.read_csv(tmp_path / "p.csv")
    assert rewrites == [] and np.isfinite(table["median_s"]).all()
