"""What a progress report says: the step a long fit or prediction is at, its time left.

A long fit reports ``progress(done, total, elapsed_s, phase)`` (four positional
arguments): ``phase`` a short name, each phase counting its own ``done`` of ``total``
steps, ``elapsed_s`` counting from the start of the whole work. The fit of
:class:`~vrvm.trips.model.travel_time.TravelTimeModel` has the phases :data:`PHASES`
("reading": the first pass over the data's parts; "location": the boosting fits of
the location stage; "members": ensemble members fitted; "statistics": the second
pass over the parts; "offsets": the third, for the zone-pair offsets); ``vrvm
predict`` reports "queries". :class:`TimeLeft` keeps where each phase started and estimates the
seconds it has left; :func:`describe_step` and :func:`describe_progress` say it in
words, for the command line's bar and the dashboard's ``st.progress`` alike
(:meth:`TimeLeft.say`). The estimate is computed here, not by the bar library
(``tqdm`` draws the command line's bar): only the caller knows the work's clock
(``elapsed_s`` counts from the start of the whole work, also before a bar shows) and
where a phase starts, where tqdm times each bar from its own first frame.
"""

from __future__ import annotations

import math

__all__ = [
    "PHASES",
    "TimeLeft",
    "describe_progress",
    "describe_step",
    "format_seconds",
]


PHASES = {
    "reading": ("part", "parts", "read"),
    "location": ("boosting fit", "boosting fits", "done for the location stage"),
    "members": ("member", "members", "trained"),
    "statistics": ("part", "parts", "summed"),
    "offsets": ("part", "parts", "read for the zone-pair offsets"),
    "queries": ("query", "queries", "predicted"),
}
"""Each phase's step, in the singular and the plural, and what was done to it."""


class TimeLeft:
    """The time a phase of work has left, from the pace of its steps so far.

    Feed it every progress report; it remembers when each phase started: at its
    first report with ``done == 0`` if there is one, else at the last report of
    the phase before it (at 0 s for the first phase). The estimate is

        remaining = elapsed_in_phase / done * (total - done),

    the phase's average time per step times the steps left; None before the first
    step of a phase (no pace yet) and 0 once ``done >= total``.

    Examples
    --------
    >>> clock = TimeLeft()
    >>> clock.update(0, 8, 2.0, "members") is None  # the phase starts at 2 s
    True
    >>> clock.update(2, 8, 12.0, "members")  # 5 s per member, 6 left
    30.0
    >>> clock.update(8, 8, 42.0, "members")
    0.0
    >>> clock.update(1, 4, 46.0, "statistics")  # started when members ended, at 42 s
    12.0
    """

    def __init__(self) -> None:
        self.phase: str | None = None
        self.phase_started_s = 0.0
        self._last_s = 0.0

    def update(self, done: int, total: int, elapsed_s: float, phase: str = "") -> float | None:
        """Record a report; the estimated seconds left in its phase (None: not known yet)."""
        if phase != self.phase:
            self.phase = phase
            self.phase_started_s = elapsed_s if done <= 0 else self._last_s
        self._last_s = elapsed_s
        return self.remaining_s(done, total, elapsed_s)

    def say(
        self, done: int, total: int, elapsed_s: float, phase: str = "", *, what: str = ""
    ) -> str:
        """Record a report and say it, as the dashboard's progress bars do.

        Examples
        --------
        >>> TimeLeft().say(3, 8, 41.0, "members")
        'Member 3 of 8 trained (41 s, about 1 min 08 s left)'
        >>> TimeLeft().say(8, 8, 96.0, "members", what="Full retrain")
        'Full retrain: member 8 of 8 trained (1 min 36 s)'
        """
        remaining = self.update(done, total, elapsed_s, phase)
        step = describe_step(done, total, phase)
        step = f"{what}: {step}" if what else step[:1].upper() + step[1:]
        return f"{step} ({describe_progress(elapsed_s, remaining)})"

    def remaining_s(self, done: int, total: int, elapsed_s: float) -> float | None:
        """Estimated seconds left in the current phase at ``done`` of ``total`` steps."""
        if total > 0 and done >= total:
            return 0.0
        if done <= 0 or total <= 0:
            return None
        in_phase = max(elapsed_s - self.phase_started_s, 0.0)
        return in_phase / done * (total - done)


def format_seconds(seconds: float) -> str:
    """A duration as people say it: ``0.4 s``, ``41 s``, ``3 min 20 s``, ``2 h 05 min``.

    Examples
    --------
    >>> format_seconds(0.42), format_seconds(41.4), format_seconds(200), format_seconds(7500)
    ('0.4 s', '41 s', '3 min 20 s', '2 h 05 min')
    """
    if not math.isfinite(seconds):
        return "unknown"
    if seconds < 9.95:
        return f"{max(seconds, 0.0):.1f} s"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        minutes, secs = divmod(seconds, 60)
        return f"{minutes} min {secs:02d} s" if secs else f"{minutes} min"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes:02d} min"


def describe_step(done: int, total: int, phase: str) -> str:
    """What a phase has done, in words: ``member 3 of 8 trained``.

    Examples
    --------
    >>> describe_step(3, 8, "members")
    'member 3 of 8 trained'
    >>> describe_step(120000, 1000000, "queries"), describe_step(2, 5, "sorting")
    ('120,000 of 1,000,000 queries predicted', 'sorting: 2 of 5 done')
    """
    if phase not in PHASES:
        return f"{phase}: {done:,} of {total:,} done" if phase else f"{done:,} of {total:,} done"
    one, many, verb = PHASES[phase]
    if total >= 1000:
        return f"{done:,} of {total:,} {many} {verb}"
    return f"{one} {done:,} of {total:,} {verb}"


def describe_progress(elapsed_s: float, remaining_s: float | None) -> str:
    """``41 s, about 55 s left``; without the estimate when there is none yet or none left.

    Examples
    --------
    >>> describe_progress(41.0, 55.2)
    '41 s, about 55 s left'
    >>> describe_progress(3.0, None), describe_progress(96.0, 0.0)
    ('3.0 s', '1 min 36 s')
    """
    said = format_seconds(elapsed_s)
    if remaining_s is None or remaining_s <= 0:
        return said
    return f"{said}, about {format_seconds(remaining_s)} left"
