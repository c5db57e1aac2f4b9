"""Dates, clocks and weekdays as trip files write them: the formats, their detection, reading.

Trip files split the start of a trip in many ways: one timestamp, a date column and a
clock column, or an hour, a minute and a weekday with no calendar date at all. This
module reads each part; :mod:`vrvm.trips.files.parsing` puts them together.

Dates (``date_format``)
-----------------------
``"auto"`` (default)
    Detected from the values: ISO (``2016-03-16``, ``2016/03/16``), day-first or
    month-first (``16-3-2016``, ``3/16/2016``, ``16.03.16``; separators ``/ - .``,
    two- or four-digit years), Unix seconds or milliseconds (numbers). Day-first and
    month-first are told apart by the values that read only one way (a day above 12
    in the first or second place). When every date reads both ways (all days and
    months at most 12) the reader **never guesses**: it raises
    :class:`TimeFormatError` naming the column and both readings.
``"iso"``, ``"dayfirst"``, ``"monthfirst"``, ``"unix_s"``, ``"unix_ms"``
    That reading, stated.
a strftime pattern such as ``"%d-%m-%Y"`` or ``"%d/%m/%Y %H:%M"``
    Exactly that (for a ``start_time`` column, the pattern covers date and clock).

Clocks (``clock_format``)
-------------------------
``"hh:mm"``: ``HH:MM``, ``HH:MM:SS`` or ``HH:MM:SS.fff``, also 12-hour with ``AM``/``PM``;
``"hours"``: decimal hours (``14.65`` is 14:39); ``"seconds"``: seconds since midnight;
``"auto"``: text with a colon is ``hh:mm``; numbers are hours when none exceeds 24 and
seconds when one exceeds 2359; numbers in between could be seconds or ``HHMM`` and are
an error that asks which.

Weekdays (``weekday_format``)
-----------------------------
``"names"`` (``Monday``, ``mon``, ``Tue``, ...; English, any case); ``"iso"`` (Monday = 1
... Sunday = 7); ``"sunday1"`` (Sunday = 1 ... Saturday = 7, as the Chicago portal's
``trip_start_day``); ``"monday0"`` (Monday = 0 ... Sunday = 6, as pandas). Names are
read without being told; numbers need their numbering stated, because files differ
and a wrong guess shifts every weekend by a day.

Formats that do not fit
-----------------------
A format that reads a column only in part is worse than none: the rows that read may be
read wrongly (month-first on day-first dates swaps day and month wherever the day is at
most 12). Formats are therefore checked after a read
(:func:`vrvm.trips.files.parsing.check_formats`): more than :data:`UNREADABLE_SHARE` of a
column unreadable, or a stated day-first (month-first) order that some values
contradict, raises :class:`FormatMismatchError` naming the failing rows and the formats
that read them.

Reading: pandas, pattern by pattern
-----------------------------------
Dates and clocks are read by ``pandas.to_datetime(values, format=PATTERN, exact=True,
errors="coerce")``, one explicit strptime pattern at a time, each on the values the
ones before left:

- ISO ``%Y-%m-%d``; day-first ``%d-%m-%Y``, ``%d-%m-%y``; month-first ``%m-%d-%Y``,
  ``%m-%d-%y`` (each with ``-``, ``/`` or ``.``; ``%y``: 69-99 is 19xx, 00-68 is 20xx);
- clocks ``%H:%M``, ``%H:%M:%S``, ``%H:%M:%S.%f``, ``%I:%M %p``, ``%I:%M:%S %p``,
  ``%I:%M:%S.%f %p``; a clock after a date follows it after white space or a ``T``.

The patterns of one kind read disjoint texts, so a value has one reading per order and
the order of the tries changes only the time (the pattern that reads most of the
first 20 values goes first). What pandas does not do stays here, each for a guarantee:

- *the order of a column*. Each order's patterns read every value, and the column's
  order follows from the values that read only one way; pandas' ``dayfirst`` is a
  preference that falls back silently, and ``format="mixed"`` decides value by value:
  both would guess.
- *seconds 60 and 61*. ``%S`` takes them and pandas moves them to the next minute
  (``8:15:60`` is 08:16:00): they are unreadable here, as before.
- *half-day suffixes*. ``%p`` reads ``AM``/``PM`` after white space; ``1:05pm`` and
  ``1:05 p.m.`` are rewritten for it (one regular expression, on the values no
  pattern read).
- *years past 2262*. pandas coerces what nanoseconds do not hold to NaT (unreadable,
  counted against :data:`UNREADABLE_SHARE`, never wrapped); inside that span, dates
  outside 1970-2100 read and are then dropped as ``out_of_range_time``
  (:mod:`vrvm.trips.files.time_range`).
- *numbers*: decimal hours, seconds since midnight, numbered weekdays and Unix times
  are arithmetic on numbers, not text to parse.

Compared with the regular expressions and date arithmetic this replaced, fractions stop
at nanoseconds (pandas' ``%M`` and ``%S`` would also read one digit, ``8:5`` as 08:05;
a guard keeps such clocks unread, as before, since a cut value is likelier than a
one-digit minute), and a date with one- or three-digit years or two different
separators (``16-3/2016``) no longer reads; a value that reads neither way
(``31-2-2016``) is unreadable and no longer counts as a sign of day-first order.

Every reader factorises its column first (a date or clock column holds few distinct
values), so the work grows with the distinct values, not the rows. Measured against the
regular expressions and arithmetic this replaced (best of 5, both in one process, 2
cores; ``BENCHMARKS.md``, "Dates and clocks read by pandas"): 100,000 distinct dates
with a 12-hour clock (``03/16/2016 02:39:07 PM``) 1.26 s before, 0.72 s now; with a
24-hour clock 1.10 s and 0.70 s; 86,400 clocks 0.79 s and 0.34 s; what a file read in
batches gathers about 100,000 values (:func:`date_text_flags`) 5.8 s and 1.1 s; peak
memory 65 and 25 MiB. Dates alone are on a par (a year's 366 dates 5 ms and 6 ms, a
century's 36,500 138 ms and 144 ms): pandas is kept there too, one reading for both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "CLOCK_FORMATS",
    "DATE_FORMATS",
    "UNREADABLE_SHARE",
    "WEEKDAY_FORMATS",
    "FormatMismatchError",
    "TimeFormatError",
    "TimeFormats",
    "check_clock_format",
    "check_date_format",
    "check_weekday_format",
    "date_text_flags",
    "detect_clock_format",
    "parse_clock_s",
    "parse_date_text",
    "parse_weekday",
    "unix_unit",
]

DATE_FORMATS: tuple[str, ...] = ("auto", "iso", "dayfirst", "monthfirst", "unix_s", "unix_ms")
"""Named date formats; any strftime pattern (with ``%``) is accepted too."""

CLOCK_FORMATS: tuple[str, ...] = ("auto", "hh:mm", "hours", "seconds")
"""Clock formats of a ``start_clock`` column."""

WEEKDAY_FORMATS: tuple[str, ...] = ("names", "iso", "sunday1", "monday0")
"""How a ``weekday`` column writes the day (see the module docs)."""

# numbering -> (its smallest number, the Monday = 0 index of the day with that number)
_WEEKDAY_FIRST = {"iso": (1, 0), "sunday1": (1, 6), "monday0": (0, 0)}
_WEEKDAY_LABEL = {
    "names": "day names",
    "iso": "ISO numbers (Monday = 1)",
    "sunday1": "numbers with Sunday = 1",
    "monday0": "numbers with Monday = 0",
}
_DAY_NAMES = {
    **{d: i for i, d in enumerate(("mon", "tue", "wed", "thu", "fri", "sat", "sun"))},
    **{
        d: i
        for i, d in enumerate(
            ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
        )
    },
    "tues": 1,
    "wednes": 2,
    "thur": 3,
    "thurs": 3,
}

_SECONDS_PER_DAY = 86_400.0
# |unix seconds| beyond 1e10 is past the year 2286: such numbers are milliseconds.
_UNIX_MS_FROM = 1e11
_UNIX_MS_UPTO = 1e14
_NAT = np.datetime64("NaT", "ns")

_SEPARATORS = ("-", "/", ".")
# The strptime patterns of each date order. Patterns of one order read disjoint texts (a
# separator, a four-digit %Y or a two-digit %y: 69-99 -> 19xx, 00-68 -> 20xx), so at most
# one reads a value and the order in which they are tried does not change the reading.
_DATE_PATTERNS = {
    "iso": tuple(f"%Y{sep}%m{sep}%d" for sep in _SEPARATORS),
    "dayfirst": tuple(f"%d{sep}%m{sep}{year}" for sep in _SEPARATORS for year in ("%Y", "%y")),
    "monthfirst": tuple(f"%m{sep}%d{sep}{year}" for sep in _SEPARATORS for year in ("%Y", "%y")),
}
# Clock patterns, as disjoint: a second or not, a fraction or not, a half-day suffix or not.
_CLOCK_PATTERNS = (
    "%H:%M",
    "%H:%M:%S",
    "%H:%M:%S.%f",
    "%I:%M %p",
    "%I:%M:%S %p",
    "%I:%M:%S.%f %p",
)
# What strptime's %p does not take: "pm" without a space before, "p.m.", "p. m.".
_HALF_DAY = re.compile(r"\s*([AaPp])\.?\s*[Mm]\.?$")
# strptime takes seconds 60 and 61 (leap seconds) and moves them to the next minute.
_LEAP_SECONDS = (":60", ":61")
# A minute or a second written with one digit (``8:5``, ``8:05:7``): strptime reads it,
# but a clock so written is more often cut short than meant; unread, as before pandas.
_ONE_DIGIT_FIELD = re.compile(r":\d(?!\d)")
_TWELVE_DAYS = np.timedelta64(12, "D")  # a date up to the 12th: its day could be a month
_PROBE = 20  # values on which the patterns are tried first, to try the best fit first
_PROBE_FROM = 256  # ... when there are more values than this (a try has a fixed cost)
_CLOCK_DAY = np.datetime64("1900-01-01", "ns")  # the day strptime gives a clock alone


class TimeFormatError(ValueError):
    """A date, clock or weekday column whose format cannot be told from its values.

    Attributes
    ----------
    column : str
        The column of the file.
    option : str
        The argument that settles it: ``"date_format"``, ``"clock_format"`` or
        ``"weekday_format"`` (``--date-format`` ... in the CLI).
    choices : list of str
        The values of ``option`` that would read the column.
    """

    def __init__(self, message: str, *, column: str, option: str, choices: Sequence[str]):
        super().__init__(message)
        self.column = column
        self.option = option
        self.choices = list(choices)


UNREADABLE_SHARE = 0.01
"""Largest share of a time column's values that its format may leave unreadable (1 %);
above it (and with more than one such value) the read is refused
(:class:`FormatMismatchError`), never trained on."""


class FormatMismatchError(ValueError):
    """A format (stated or detected) that does not fit its column: the read is refused.

    Raised when a date, clock or weekday format leaves more than
    :data:`UNREADABLE_SHARE` of a column's values unreadable, when the values show that
    a stated day-first or month-first order is the wrong one, or when a travel-time
    column read in seconds (minutes) gives implausible speeds that the other unit does
    not. Nothing of the file is kept: training on the rows that happened to read would
    be a silent wrong answer (a month-first reading of day-first dates keeps the days
    up to 12, with day and month swapped).

    Attributes
    ----------
    source : str
        The file.
    column : str
        The column of the file.
    option : str
        What settles it: ``"date_format"``, ``"clock_format"``, ``"weekday_format"``
        (``--date-format`` ... in the CLI) or ``"unit"`` (map the column to
        ``travel_time_s`` or ``travel_time_min``).
    used : str
        The format (or unit) that was used.
    choices : list of str
        The values of ``option`` that read the failing values (may be empty).
    rows : list of int
        Up to five failing rows (row numbers as the cleaning report gives them).
    values : list of str
        Their values, as in the file.
    share : float
        The share of the column's values that failed (0 to 1).
    """

    def __init__(
        self,
        message: str,
        *,
        source: str,
        column: str,
        option: str,
        used: str,
        choices: Sequence[str] = (),
        rows: Sequence[int] = (),
        values: Sequence[str] = (),
        share: float = float("nan"),
    ):
        super().__init__(message)
        self.source, self.column, self.option, self.used = source, column, option, used
        self.choices, self.rows, self.values = list(choices), list(rows), list(values)
        self.share = share

    def __reduce__(self):  # picklable across processes despite the keyword arguments
        fields = ("source", "column", "option", "used", "choices", "rows", "values", "share")
        return (_rebuild_mismatch, (str(self), {name: getattr(self, name) for name in fields}))


def _rebuild_mismatch(message: str, fields: dict) -> FormatMismatchError:
    return FormatMismatchError(message, **fields)


def check_date_format(value: str | None) -> str:
    """``value`` if it names a date format or is a strftime pattern; ``None`` -> ``"auto"``.

    Examples
    --------
    >>> check_date_format("%d-%m-%Y"), check_date_format(None)
    ('%d-%m-%Y', 'auto')
    >>> check_date_format("european")
    Traceback (most recent call last):
    ...
    ValueError: date_format must be one of ['auto', 'iso', 'dayfirst', 'monthfirst', \
'unix_s', 'unix_ms'] or a strftime pattern such as '%d-%m-%Y', got 'european'
    """
    if value is None:
        return "auto"
    if isinstance(value, str) and (value in DATE_FORMATS or "%" in value):
        return value
    raise ValueError(
        f"date_format must be one of {list(DATE_FORMATS)} or a strftime pattern such as "
        f"'%d-%m-%Y', got {value!r}"
    )


def check_clock_format(value: str | None) -> str:
    """``value`` if it is one of :data:`CLOCK_FORMATS`; ``None`` -> ``"auto"``."""
    if value is None:
        return "auto"
    if value not in CLOCK_FORMATS:
        raise ValueError(f"clock_format must be one of {list(CLOCK_FORMATS)}, got {value!r}")
    return value


def check_weekday_format(value: str | None) -> str | None:
    """``value`` if it is one of :data:`WEEKDAY_FORMATS` or None (names, else ask)."""
    if value is not None and value not in WEEKDAY_FORMATS:
        raise ValueError(f"weekday_format must be one of {list(WEEKDAY_FORMATS)}, got {value!r}")
    return value


@dataclass(frozen=True)
class TimeFormats:
    """How a file writes its dates, clocks and weekdays (each ``auto`` by default).

    Examples
    --------
    >>> TimeFormats(date_format="dayfirst", clock_format="hours")
    TimeFormats(date_format='dayfirst', clock_format='hours', weekday_format=None)
    >>> TimeFormats(clock_format="HHMM")
    Traceback (most recent call last):
    ...
    ValueError: clock_format must be one of ['auto', 'hh:mm', 'hours', 'seconds'], got 'HHMM'
    """

    date_format: str = "auto"
    clock_format: str = "auto"
    weekday_format: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "date_format", check_date_format(self.date_format))
        object.__setattr__(self, "clock_format", check_clock_format(self.clock_format))
        object.__setattr__(self, "weekday_format", check_weekday_format(self.weekday_format))

    @classmethod
    def coerce(cls, value: TimeFormats | Mapping | None) -> TimeFormats:
        """A TimeFormats from itself, a dict of its fields or None."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            return cls(**value)
        raise TypeError(f"formats must be a TimeFormats or a dict, got {type(value).__name__}")

    @property
    def strftime(self) -> str | None:
        """The date format when it is a strftime pattern."""
        return self.date_format if "%" in self.date_format else None


def _factorised(values: pd.Series) -> tuple[np.ndarray, pd.Series]:
    """Codes (-1 for missing) and the distinct values as stripped text."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    text = pd.Series(uniques, dtype=object).astype("string").str.strip()
    return codes, text


def _take(values: np.ndarray, codes: np.ndarray, fill) -> np.ndarray:
    out = np.full(len(codes), fill, dtype=values.dtype)
    ok = codes >= 0
    out[ok] = values[codes[ok]]
    return out


def _numbers(text: pd.Series) -> np.ndarray:
    return pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def _example(text: pd.Series, mask: np.ndarray) -> str:
    found = text[mask]
    return str(found.iloc[0]) if len(found) else ""


# ------------------------------------------------------------ strptime, pattern by pattern
def _text_array(text: pd.Series | np.ndarray) -> np.ndarray:
    """Text as an object array, None where missing (less pandas overhead per try)."""
    if isinstance(text, pd.Series):
        return text.to_numpy(dtype=object, na_value=None)
    return np.asarray(text, dtype=object)


def _strptime(text: np.ndarray, pattern: str) -> np.ndarray:
    """``text`` read by the strptime ``pattern``, whole (NaT where it does not fit)."""
    # cache=False: the values are distinct already (factorised), a cache only costs.
    read = pd.to_datetime(text, format=pattern, exact=True, errors="coerce", cache=False)
    read = np.asarray(read, dtype="datetime64[ns]").copy()
    if "%M" in pattern:  # minutes and seconds are written with two digits
        at = np.flatnonzero(~np.isnat(read))
        short = [_ONE_DIGIT_FIELD.search(text[i]) is not None for i in at]
        read[at[np.asarray(short, dtype=bool)]] = _NAT
    if "%S" in pattern:  # a clock has no second 60 or 61: unread, not moved a minute on
        # They land on the next minute's second 0 or 1: only those are looked at.
        at = np.flatnonzero(read - read.astype("datetime64[m]") < np.timedelta64(2, "s"))
        leap = [any(second in text[i] for second in _LEAP_SECONDS) for i in at]
        read[at[np.asarray(leap, dtype=bool)]] = _NAT
    return read


def _first_fit(text: pd.Series | np.ndarray, patterns: Sequence[str]) -> np.ndarray:
    """Each value read by the one of ``patterns`` that fits it whole (NaT where none does).

    ``patterns`` read disjoint sets of texts, so the order in which they are tried changes
    only the time taken (each try costs about as much whether it reads or not): for more
    than :data:`_PROBE_FROM` values they are tried in the order of how many of the first
    :data:`_PROBE` values they read, each on the values the ones before left. Half-day
    suffixes that ``%p`` does not read (``1:05pm``, ``1:05 p.m.``) are written as it reads
    them for a second round of the ``%p`` patterns, on the values still unread.
    """
    text = _text_array(text)
    out = np.full(len(text), _NAT)
    todo = pd.notna(text) & (text != "")
    if not todo.any():
        return out
    if np.count_nonzero(todo) > _PROBE_FROM:
        patterns = _by_fit(text[np.flatnonzero(todo)[:_PROBE]], patterns)
    for pattern in patterns:
        _read_rest(text, pattern, out, todo)
    twelve = [pattern for pattern in patterns if "%p" in pattern]
    if twelve and todo.any():
        at = np.flatnonzero(todo)
        text = text.copy()
        text[at] = [_HALF_DAY.sub(r" \1M", value) for value in text[at]]
        for pattern in twelve:
            _read_rest(text, pattern, out, todo)
    return out


def _by_fit(probe: np.ndarray, patterns: Sequence[str]) -> list[str]:
    """``patterns``, those that read most of ``probe`` first."""
    fits = [np.count_nonzero(~np.isnat(_strptime(probe, pattern))) for pattern in patterns]
    return [patterns[i] for i in np.argsort(fits, kind="stable")[::-1]]


def _read_rest(text: np.ndarray, pattern: str, out: np.ndarray, todo: np.ndarray) -> None:
    """Read the values still ``todo`` with ``pattern``, in place."""
    at = np.flatnonzero(todo)
    if len(at):
        read = _strptime(text[at], pattern)
        ok = ~np.isnat(read)
        out[at[ok]] = read[ok]
        todo[at[ok]] = False


# ----------------------------------------------------------------------------- clocks
def _clock_text_s(text: pd.Series | np.ndarray) -> np.ndarray:
    """``HH:MM[:SS[.fff]] [AM|PM]`` -> seconds since midnight (NaN if not a clock)."""
    read = _first_fit(text, _CLOCK_PATTERNS)
    return (read - _CLOCK_DAY) / np.timedelta64(1, "s")  # NaT -> NaN


def parse_clock_s(values: pd.Series, clock_format: str = "auto", *, column: str = "") -> np.ndarray:
    """A clock column -> seconds since local midnight (float64, NaN where unreadable).

    Parameters
    ----------
    values : pandas.Series
        The column as read (text or numbers).
    clock_format : {"auto", "hh:mm", "hours", "seconds"}, default="auto"
        See the module docs.
    column : str
        The column's name, for messages.

    Returns
    -------
    numpy.ndarray
        Seconds in [0, 86400).

    Raises
    ------
    TimeFormatError
        In ``"auto"`` mode, for whole numbers between 25 and 2359 that could be
        seconds or ``HHMM``.

    Examples
    --------
    >>> import pandas as pd
    >>> parse_clock_s(pd.Series(["08:15", "8:15:30.5", "12:05 AM", "1:30 pm", "25:00"]))
    array([29700. , 29730.5,   300. , 48600. ,     nan])
    >>> parse_clock_s(pd.Series([14.65, 0.5]))  # decimal hours
    array([52740.,  1800.])
    >>> parse_clock_s(pd.Series([52740, 90]), "seconds")
    array([52740.,    90.])
    """
    clock_format = check_clock_format(clock_format)
    codes, text = _factorised(values)
    if clock_format == "auto":
        clock_format = _detect_clock_format(text, column)
    if clock_format == "hh:mm":
        seconds = _clock_text_s(text)
    else:
        numbers = _numbers(text.str.replace(",", ".", regex=False))
        scale, top = (3600.0, 24.0) if clock_format == "hours" else (1.0, _SECONDS_PER_DAY)
        with np.errstate(invalid="ignore"):
            seconds = np.where((numbers >= 0) & (numbers < top), numbers * scale, np.nan)
        seconds = np.round(seconds, 6)  # 14.65 h is 52740 s, not 52739.99999999999
    return _take(np.asarray(seconds, dtype=np.float64), codes, np.nan)


def detect_clock_format(values: pd.Series, *, column: str = "") -> str:
    """The clock format of a column: ``"hh:mm"``, ``"hours"`` or ``"seconds"``.

    Raises :class:`TimeFormatError` where the numbers could be seconds or ``HHMM``.

    Examples
    --------
    >>> import pandas as pd
    >>> detect_clock_format(pd.Series([8.25, 17.5])), detect_clock_format(pd.Series(["8:15"]))
    ('hours', 'hh:mm')
    """
    return _detect_clock_format(_factorised(values)[1], column)


CLOCK_WORDS = {
    "hh:mm": "HH:MM clock",
    "hours": "decimal hours",
    "seconds": "seconds since midnight",
}
"""How each clock format is said in reports."""


def _detect_clock_format(text: pd.Series, column: str) -> str:
    if len(text) == 0:
        return "hh:mm"
    if text.str.contains(":", regex=False).mean() > 0.5:
        return "hh:mm"
    numbers = _numbers(text.str.replace(",", ".", regex=False))
    finite = numbers[np.isfinite(numbers)]
    if len(finite) == 0:
        return "hh:mm"  # nothing readable: every row is reported as unreadable
    top = float(finite.max())
    if top <= 24:
        return "hours"
    if top > 2359:
        return "seconds"
    hhmm = bool(np.all((finite == np.round(finite)) & (finite % 100 < 60)))
    if not hhmm:
        return "seconds"
    raise TimeFormatError(
        f"column {column!r}: the clock values are numbers up to {top:g}, which could be "
        f"seconds since midnight ({top:g} s is {_hhmm(top)}) or hours and minutes written "
        f"as HHMM ({int(top) // 100:02d}:{int(top) % 100:02d}); say which with "
        "clock_format='seconds' (--clock-format seconds), or convert them to HH:MM",
        column=column,
        option="clock_format",
        choices=["seconds"],
    )


def _hhmm(seconds: float) -> str:
    return f"{int(seconds) // 3600:02d}:{int(seconds) % 3600 // 60:02d}"


# ------------------------------------------------------------------------------ dates
def unix_unit(numbers: np.ndarray, date_format: str = "auto") -> str:
    """``"s"`` or ``"ms"``: the unit of Unix times in ``numbers`` (stated or detected).

    Detected: milliseconds when the median magnitude is at least 1e11 (in seconds
    that would be after the year 5000), else seconds.

    Examples
    --------
    >>> import numpy as np
    >>> unix_unit(np.array([1.4516e9])), unix_unit(np.array([1.4516e12, np.nan]))
    ('s', 'ms')
    """
    if date_format in ("unix_s", "unix_ms"):
        return date_format[5:]
    finite = np.abs(numbers[np.isfinite(numbers)])
    if len(finite) and _UNIX_MS_FROM <= np.median(finite) < _UNIX_MS_UPTO:
        return "ms"
    return "s"


def _date_and_clock(text: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each value cut at its first run of white space (or a ``T``) into date and clock."""
    date = _text_array(text).copy()
    clock = np.full(len(date), None, dtype=object)
    for i in np.flatnonzero(pd.notna(date)):  # str.split in a loop: twice pandas' speed
        parts = date[i].split(None, 1)
        if len(parts) == 2:
            date[i], clock[i] = parts
        elif "T" in date[i]:  # 16-03-2016T14:39
            date[i], _, clock[i] = date[i].partition("T")
    return date, clock


def _dates_read(date: np.ndarray, orders: Sequence[str]) -> dict[str, np.ndarray]:
    """Per order, the midnight of each date text that order reads (NaT where it does not).

    No text reads both as ISO and another way (``%Y`` has four digits, ``%d`` and ``%m``
    at most two), and a date read day-first (month-first) with a day above 12 has no
    month-first (day-first) reading, there being no month 13: each order is tried only
    on the texts the orders tried before leave possible, first the order that reads most
    of the first values.
    """
    given = pd.notna(date)
    orders = list(dict.fromkeys(orders))
    if np.count_nonzero(given) > _PROBE_FROM:
        probe = date[np.flatnonzero(given)[:_PROBE]]
        fits = [np.count_nonzero(~np.isnat(_first_fit(probe, _DATE_PATTERNS[o]))) for o in orders]
        orders = [orders[i] for i in np.argsort(fits, kind="stable")[::-1]]
    read: dict[str, np.ndarray] = {}
    for order in orders:
        maybe = given.copy()
        for done, days in read.items():
            if order == "iso" or done == "iso":
                maybe &= np.isnat(days)
            else:
                maybe &= np.isnat(days) | (days - days.astype("datetime64[M]") < _TWELVE_DAYS)
        read[order] = np.full(len(date), _NAT)
        read[order][maybe] = _first_fit(date[maybe], _DATE_PATTERNS[order])
    return read


def _clock_after_date(clock: np.ndarray) -> np.ndarray:
    """The clock after a date in seconds: 0 where there is none, NaN where unreadable."""
    seconds = np.zeros(len(clock))
    given = pd.notna(clock) & (clock != "")
    if given.any():
        seconds[given] = _clock_text_s(clock[given])
    return seconds


def date_text_flags(text: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What decides the order of text dates, and what reads, per value of stripped text.

    Returns boolean arrays: the date reads as ISO, it reads day-first, it reads
    month-first, the clock after it (if any) reads. :func:`parse_date_text` decides over
    a column with these; a file read in batches gathers them batch by batch
    (:class:`vrvm.trips.files._survey.TimeSurvey`).

    Examples
    --------
    >>> import pandas as pd
    >>> text = pd.Series(["16-3-2016", "3/4/2016 8:00", "2016-03-16", "x 25:00"])
    >>> [a.tolist() for a in date_text_flags(text)]
    [[False, False, True, False], [True, True, False, False], [False, True, False, False], \
[True, True, True, False]]
    """
    date, clock = _date_and_clock(text)
    read = _dates_read(date, tuple(_DATE_PATTERNS))
    clock_ok = np.isfinite(_clock_after_date(clock))
    iso, day_first, month_first = (~np.isnat(read[order]) for order in _DATE_PATTERNS)
    return iso, day_first, month_first, clock_ok


def parse_date_text(
    values: pd.Series,
    date_format: str = "auto",
    *,
    column: str = "",
    order_hint: str | None = None,
    evidence: dict[str, bool] | None = None,
) -> tuple[np.ndarray, np.ndarray, str]:
    """Text dates, optionally followed by a clock, -> midnight of the date and the clock.

    Each order reads with its strptime patterns (``pandas.to_datetime(...,
    format=..., exact=True)``): ISO ``%Y-%m-%d``, day-first ``%d-%m-%Y`` and ``%d-%m-%y``,
    month-first ``%m-%d-%Y`` and ``%m-%d-%y``, each with ``-``, ``/`` or ``.``; the clock
    after the date (after white space or a ``T``) as :func:`parse_clock_s` reads
    ``hh:mm``.

    Parameters
    ----------
    values : pandas.Series
        Text such as ``16-3-2016``, ``03/16/2016 02:30:00 PM`` or ``2016-03-16``.
    date_format : str, default="auto"
        ``"auto"``, ``"iso"``, ``"dayfirst"`` or ``"monthfirst"`` (strftime patterns
        and Unix numbers are read by the caller, :mod:`vrvm.trips.files.parsing`).
    column : str
        The column's name, for messages.
    order_hint : {"dayfirst", "monthfirst"} or None
        The layout's known order (the Chicago portal writes month-first dates), used
        when the values alone cannot tell.
    evidence : dict or None
        If given, ``evidence["dayfirst"]`` (``["monthfirst"]``) is set to True when a
        value reads only day-first (month-first), for a check of a stated order.

    Returns
    -------
    dates : numpy.ndarray of datetime64[ns]
        Midnight of each date (NaT where unreadable).
    clock_s : numpy.ndarray of float64
        The clock after the date in seconds (0 where there is none; NaN where it is
        there but unreadable).
    order : str
        The order used: ``"iso"``, ``"dayfirst"`` or ``"monthfirst"``.

    Raises
    ------
    TimeFormatError
        If the dates read both day-first and month-first and nothing says which.

    Examples
    --------
    >>> import pandas as pd
    >>> dates, clock, order = parse_date_text(pd.Series(["16-3-2016", "1-4-2016 14:30"]))
    >>> [str(d)[:10] for d in dates], clock.tolist(), order
    (['2016-03-16', '2016-04-01'], [0.0, 52200.0], 'dayfirst')
    >>> parse_date_text(pd.Series(["3/4/2016", "5/6/2016"]), column="day")
    Traceback (most recent call last):
    ...
    vrvm.trips.files.formats.TimeFormatError: column 'day': dates such as '3/4/2016' read both \
day-first (3 April 2016) and month-first (March 4, 2016), and no value tells which; give \
date_format='dayfirst' or 'monthfirst' (--date-format), or a strftime pattern such as \
'%d/%m/%Y'
    """
    codes, text = _factorised(values)
    date, clock = _date_and_clock(text)
    order = date_format if date_format in _DATE_PATTERNS else None
    both = ("dayfirst", "monthfirst")
    if order is None:
        read = _dates_read(date, tuple(_DATE_PATTERNS))
    elif evidence is not None and order in both:  # stated: the other order only checks it
        read = _dates_read(date, both)
    else:
        read = _dates_read(date, (order,))
    if evidence is not None and all(name in read for name in both):
        day, month = ~np.isnat(read["dayfirst"]), ~np.isnat(read["monthfirst"])
        for name, only in (("dayfirst", day & ~month), ("monthfirst", month & ~day)):
            evidence[name] = evidence.get(name, False) or bool(only.any())
    if order is None:
        order = _date_order(text, read, column, order_hint)
    dates = read[order]
    return (
        _take(dates, codes, _NAT),
        _take(_clock_after_date(clock), codes, np.nan),
        order,
    )


def _date_order(
    text: pd.Series, read: dict[str, np.ndarray], column: str, order_hint: str | None
) -> str:
    """The order of a column of text dates, from what each order reads: never a guess."""
    if not np.isnat(read["iso"]).all():
        return "iso"
    day, month = ~np.isnat(read["dayfirst"]), ~np.isnat(read["monthfirst"])
    day_only, month_only = day & ~month, month & ~day
    if day_only.any() and month_only.any():
        raise TimeFormatError(
            f"column {column!r} mixes day-first dates (such as "
            f"{_example(text, day_only)!r}) and month-first dates (such as "
            f"{_example(text, month_only)!r}); give date_format (--date-format) for "
            "the reading that is right, and the other rows are reported as unreadable",
            column=column,
            option="date_format",
            choices=["dayfirst", "monthfirst"],
        )
    if day_only.any() or not month.any():  # nothing read: every row is reported
        return "dayfirst"
    if month_only.any():
        return "monthfirst"
    if order_hint is not None:
        return order_hint
    at = int(np.flatnonzero(day & month)[0])
    day_first, month_first = (
        pd.Timestamp(read["dayfirst"][at]),
        pd.Timestamp(read["monthfirst"][at]),
    )
    raise TimeFormatError(
        f"column {column!r}: dates such as {str(text.iloc[at])!r} read both day-first "
        f"({day_first.day} {day_first.month_name()} {day_first.year}) and month-first "
        f"({month_first.month_name()} {month_first.day}, {month_first.year}), and no value "
        "tells which; give date_format='dayfirst' or 'monthfirst' (--date-format), or a "
        "strftime pattern such as '%d/%m/%Y'",
        column=column,
        option="date_format",
        choices=["dayfirst", "monthfirst"],
    )


# --------------------------------------------------------------------------- weekdays
def parse_weekday(
    values: pd.Series, weekday_format: str | None = None, *, column: str = ""
) -> tuple[np.ndarray, str]:
    """A weekday column -> day index, Monday = 0 ... Sunday = 6 (-1 where unreadable).

    Parameters
    ----------
    values : pandas.Series
        Day names or numbers.
    weekday_format : {"names", "iso", "sunday1", "monday0"} or None
        How the days are written; None reads names and asks about numbers.
    column : str
        The column's name, for messages.

    Returns
    -------
    index : numpy.ndarray of int8
    label : str
        How the column was read, for the cleaning report.

    Raises
    ------
    TimeFormatError
        For numbers without a stated numbering.

    Examples
    --------
    >>> import pandas as pd
    >>> parse_weekday(pd.Series(["Mon", "sunday", "Tue", "x"]))[0].tolist()
    [0, 6, 1, -1]
    >>> parse_weekday(pd.Series([1, 7, 2]), "sunday1")[0].tolist()
    [6, 5, 0]
    >>> parse_weekday(pd.Series([1, 7, 2]), column="weekday")
    Traceback (most recent call last):
    ...
    vrvm.trips.files.formats.TimeFormatError: column 'weekday' holds day numbers (1 to 7); say how \
they are numbered: weekday_format='iso' (Monday = 1), 'sunday1' (Sunday = 1, as the Chicago \
portal) or 'monday0' (Monday = 0, as pandas); --weekday-format in the CLI
    """
    weekday_format = check_weekday_format(weekday_format)
    codes, text = _factorised(values)
    numbers = _numbers(text)
    if weekday_format is None:
        is_number = np.isfinite(numbers)
        if is_number.sum() > 0.5 * max(len(text), 1):
            low, high = np.nanmin(numbers), np.nanmax(numbers)
            raise TimeFormatError(
                f"column {column!r} holds day numbers ({low:g} to {high:g}); say how they "
                "are numbered: weekday_format='iso' (Monday = 1), 'sunday1' (Sunday = 1, as "
                "the Chicago portal) or 'monday0' (Monday = 0, as pandas); --weekday-format "
                "in the CLI",
                column=column,
                option="weekday_format",
                choices=["iso", "sunday1", "monday0"],
            )
        weekday_format = "names"
    if weekday_format == "names":
        keys = text.str.lower().str.rstrip(".")
        index = keys.map(_DAY_NAMES).to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        low, first_index = _WEEKDAY_FIRST[weekday_format]
        whole = np.isfinite(numbers) & (numbers == np.round(numbers))
        with np.errstate(invalid="ignore"):
            ok = whole & (numbers >= low) & (numbers <= low + 6)
        index = np.where(ok, (numbers - low + first_index) % 7, np.nan)
    index = np.where(np.isfinite(index), index, -1).astype(np.int8)
    return _take(index, codes, np.int8(-1)), _WEEKDAY_LABEL[weekday_format]
