"""What the command line prints: tables written atomically, progress, reports, metrics."""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import IO, Any

import pandas as pd

from vrvm.services.analyst.demo import DEMO_DAY, DEMO_DEPARTURES, DEMO_LEVEL
from vrvm.services.display.csv_cells import safe_cells
from vrvm.services.display.progress import TimeLeft, describe_progress
from vrvm.services.display.units import format_metric, metric_label, metric_value
from vrvm.trips.files.cleaning import CleaningReport
from vrvm.trips.store.durable import atomic_write
from vrvm.trips.synthetic import SYNTHETIC_CITY_NAME, SYNTHETIC_CITY_TZ

_CSV_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz"}


def write_table(frame: pd.DataFrame, out: str, stdout: IO[str]) -> None:
    """Write CSV (Parquet for ``.parquet``/``.pq``, compressed for ``.gz``...) atomically.

    ``out="-"`` writes CSV to ``stdout``.
    """
    if out == "-":
        safe_cells(frame).to_csv(stdout, index=False)
        return
    path = Path(out)
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    else:
        compression = _CSV_COMPRESSION.get(suffix)
        safe = safe_cells(frame)  # names a spreadsheet would run as formulas, quoted
        atomic_write(path, lambda tmp: safe.to_csv(tmp, index=False, compression=compression))


class ProgressBar:
    """Progress on a stream, with the time left: a bar redrawn on terminals, lines else.

    Called as ``progress(done, total, elapsed_s, phase)`` (the protocol of
    :meth:`vrvm.TravelTimeModel.fit`); every phase gets its own bar, with the time so
    far and the estimate of the time left in the phase
    (:class:`~vrvm.services.display.progress.TimeLeft`)::

        members [############------------------] 3/8  41 s, about 1 min 08 s left

    On a terminal ``tqdm`` draws the bar in place and ends its line when the phase is
    done; the bar narrows on a narrow terminal so that the line never wraps and the time
    left stays whole, and a terminal that hangs up (EIO) silences it instead of stopping
    the work. Elsewhere (a log file, a pipe) each report is one line, ``members: 3/8 done
    (41 s, about 1 min 08 s left)``, at most one every ``every_s`` seconds besides the
    last of each phase. Nothing is shown before ``delay_s`` seconds (work that ends
    sooner shows nothing).

    Notes
    -----
    What is said stays vrvm's: the times are the work's own clock (``elapsed_s``, from
    the start of the whole fit) and the pace of the current phase (:class:`TimeLeft`),
    which tqdm cannot know (it times each bar from its own first frame and smooths the
    rate over recent steps); tqdm draws the bar, the count and that text. The lines for
    logs stay vrvm's too: tqdm writes carriage-return frames, not one line per report.
    A frame costs 0.1-0.3 ms with tqdm against 0.005-0.01 ms before (BENCHMARKS.md, "CLI
    progress"): nothing beside the one frame per batch of queries or per fitted member.
    """

    def __init__(self, stream: IO[str], width: int = 30, *, every_s: float = 0.0, delay_s=0.0):
        self.stream = stream
        self.width = width
        self.every_s = every_s
        self.delay_s = delay_s
        self.interactive = bool(getattr(stream, "isatty", lambda: False)())
        self.time_left = TimeLeft()
        self._bar = None  # the phase's terminal bar (tqdm), while it is open
        self._shown_s = -math.inf

    def __call__(self, done: int, total: int, elapsed_s: float, phase: str = "members") -> None:
        new_phase = phase != self.time_left.phase
        remaining = self.time_left.update(done, total, elapsed_s, phase)
        finished = total > 0 and done >= total
        if elapsed_s < self.delay_s and not (finished and self._shown_s > -math.inf):
            return
        if not finished and elapsed_s - self._shown_s < self.every_s and not new_phase:
            return
        self._shown_s = elapsed_s
        timing = describe_progress(elapsed_s, remaining)
        count = f"{done:,}/{total:,}" if total > 0 else f"{done:,}"
        if not self.interactive:
            self.stream.write(f"{phase}: {count} done ({timing})\n")
            self.stream.flush()
            return
        if new_phase:
            self.close()
        if self._bar is None:
            self._bar = _terminal_bar(self.stream, phase, done, total, self.width, count, timing)
        else:
            self._bar.show(done, count, timing, draw=not finished)
        if finished:
            self.close()  # draws the last frame and ends its line

    def close(self) -> None:
        """End a bar left unfinished (work stopped early), so later output starts afresh."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@functools.cache
def _terminal_bar_class() -> type:
    """tqdm's bar, drawing the count and the timing vrvm computed; imported on first use."""
    from tqdm import tqdm  # only when a terminal shows a bar: its import takes 5-12 ms
    from tqdm.utils import disp_len

    class TerminalBar(tqdm):
        monitor_interval = 0  # no monitor thread: vrvm reports every step itself

        def __init__(self, count: str, timing: str, *, bar_width: int, **kwargs) -> None:
            self.count, self.timing, self.bar_width = count, timing, bar_width
            super().__init__(**kwargs)

        @property
        def format_dict(self):
            # The text vrvm computed, and a width that leaves it whole: the bar gives way
            # on a narrow terminal (tqdm would cut the end of the line, the time left).
            text = disp_len(f"{self.desc} [] {self.count}  {self.timing}")
            room = _columns(self.fp)
            if self.total is None:
                ncols = room
            elif room is None:
                ncols = text + self.bar_width
            else:
                ncols = text + max(1, min(self.bar_width, room - text))
            shown = {"count": self.count, "timing": self.timing, "ncols": ncols}
            return {**super().format_dict, **shown}

        def display(self, msg=None, pos=None):
            # close() draws the bar again before ending its line: draw each frame once.
            shown = self.__str__() if msg is None else msg
            if shown == getattr(self, "_shown", None):
                return True
            self._shown = shown
            return super().display(msg=shown, pos=pos)

        def show(self, done: int, count: str, timing: str, *, draw: bool = True) -> None:
            self.n, self.count, self.timing = done, count, timing
            if draw:
                self.refresh()

    return TerminalBar


def _terminal_bar(stream: IO[str], phase: str, done: int, total: int, width: int, count, timing):
    """A bar drawing ``phase [###---] count  timing`` on ``stream``, from ``done`` on."""
    return _terminal_bar_class()(
        count,
        timing,
        bar_width=width,
        desc=phase,
        total=total if total > 0 else None,
        initial=done,
        file=stream,
        bar_format="{desc} [{bar}] {count}  {timing}" if total > 0 else "{desc} {count}  {timing}",
        ascii="-#",  # filled '#', empty '-', on any terminal
        position=0,  # one bar at a time, at the cursor: no cursor movement
        nrows=20,  # tqdm's default; its own reading says 0 rows on some pseudo-terminals
        leave=True,
        mininterval=0,  # ProgressBar decides when to draw
    )


def _columns(stream) -> int | None:
    """The width a line may take on ``stream``'s terminal (tqdm's ``ncols``), None: unknown.

    Read at every frame (the terminal may be resized). Not tqdm's ``dynamic_ncols``: a
    pseudo-terminal that reports a size of 0 x 0 (``script``, some CI runners) gives it
    -1 columns and -1 rows, and then tqdm draws nothing at all.
    """
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):  # not a file, or not a terminal
        return None
    return columns - 1 if columns > 1 else None  # a full last column wraps on some


def print_report(report: CleaningReport, what: str, stderr: IO[str]) -> None:
    stderr.write(f"{what}: {report.summary()}\n")


def holdout_summary(metrics: dict[str, Any], units: str = "s") -> str:
    coverage = {entry["level"]: entry["coverage"] for entry in metrics["intervals"]}
    holdout = metrics["holdout"]
    return (
        f"held out {holdout['n_test']:,} trips ({holdout['fraction']:.0%}, split seed "
        f"{holdout['seed']}): CRPS {format_metric('crps_s', metrics['crps_s'], units)}, "
        f"NLL {format_metric('nll', metrics['nll'])}, 90% interval coverage "
        f"{format_metric('coverage', coverage[0.9])}"
    )


def format_metrics(
    metrics: dict[str, Any], model_label: str, test_path: str, model, units: str = "s"
) -> str:
    """The scores of ``vrvm evaluate`` as a table; times in ``units`` (s or min)."""

    def num(name: str, value, fmt: str) -> str:
        shown = metric_value(name, value, units)
        return "n/a" if shown is None else format(shown, fmt)

    time_fmt = ".1f" if units == "s" else ".2f"
    lines = [
        f"model: {model_label} ({len(model.members_)} members, target {model.target})",
        f"test data: {test_path} ({metrics['n']:,} trips)",
        "",
        f"{'point error':<22}{'median':>12}{'mean':>12}",
    ]
    for key, fmt in (
        ("rmse_s", time_fmt),
        ("mae_s", time_fmt),
        ("mape_pct", ".2f"),
        ("bias_s", "+" + time_fmt),
    ):
        label = metric_label(key, units)
        lines.append(
            f"  {label:<20}{num(key, metrics['median'][key], fmt):>12}"
            f"{num(key, metrics['mean'][key], fmt):>12}"
        )
    width_label = f"mean width ({units})"
    lines += [
        "",
        f"{metric_label('nll'):<22}{num('nll', metrics['nll'], '.4f'):>12}",
        f"{metric_label('crps_s', units):<22}{num('crps_s', metrics['crps_s'], time_fmt):>12}",
        "",
        f"{'central interval':<22}{'coverage':>12}{width_label:>16}",
    ]
    for entry in metrics["intervals"]:
        lines.append(
            f"  {entry['level']:<20.0%}{entry['coverage']:>12.1%}"
            f"{num('mean_width_s', entry['mean_width_s'], time_fmt):>16}"
        )
    pit = metrics["pit"]
    lines += ["", "PIT histogram (flat = calibrated; 1.00 = expected share):"]
    edges = pit["bin_edges"]
    for i, (count, density) in enumerate(zip(pit["counts"], pit["density"], strict=True)):
        bar = "#" * round(20 * (density or 0.0))
        shown = "n/a" if density is None else format(density, ".2f")
        lines.append(f"  {edges[i]:.2f}-{edges[i + 1]:.2f} {count:>8,} {shown:>6} {bar}")
    return "\n".join(lines)


def percent(p: float) -> str:
    """A probability as a whole percentage, never rounding to a certainty it is not."""
    if p > 0.995:
        return ">99%"
    if p < 0.005:
        return "<1%"
    return f"{p:.0%}"


def format_demo_table(examples: pd.DataFrame) -> str:
    width = max(len("trip"), *(len(t) for t in examples["trip"]))
    weekday = pd.Timestamp(DEMO_DAY).day_name()
    tail = round(100 * (1 - DEMO_LEVEL) / 2)
    level = f"{DEMO_LEVEL:.0%}"
    lines = [
        f"Example predictions for {SYNTHETIC_CITY_NAME}: SYNTHETIC trips made up by vrvm,",
        f"not a real place. Departures on {weekday} {DEMO_DAY}, city clock "
        f"({SYNTHETIC_CITY_TZ}); in minutes:",
        f"median and {level} interval ({tail}th-{100 - tail}th percentile) of the "
        "predicted travel time;",
        "T: a deadline, the 08:15 median plus a minute, rounded up to whole 5 min;",
        "P(<=T): the chance to arrive within T; km: straight-line distance.",
        "",
        f"{'trip':<{width}}  {'km':>5}  {'departure':<13}{'median':>7}  "
        f"{f'{level} interval':>12}  {'T':>3}  P(<=T)",
    ]
    labels = dict(DEMO_DEPARTURES)
    previous = None
    for row in examples.itertuples():
        first = row.trip != previous
        previous = row.trip
        lines.append(
            f"{row.trip if first else '':<{width}}  "
            f"{f'{row.distance_km:.1f}' if first else '':>5}  "
            f"{f'{row.departure} ({labels[row.departure]})':<13}"
            f"{row.median_min:>7.1f}  {f'{row.lo_min:.1f}-{row.hi_min:.1f}':>12}  "
            f"{f'{row.deadline_min:.0f}' if first else '':>3}  {percent(row.p_within):>6}"
        )
    return "\n".join(lines)
