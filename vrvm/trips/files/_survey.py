"""Format decisions over whole columns, for a trip file read in batches.

A file read in batches (:mod:`vrvm.trips.files.reader`) must read every value as a read of
the whole file does, yet the formats of its time columns are detected on whole columns
(:mod:`vrvm.trips.files.formats`). A :class:`TimeSurvey` gathers, batch by batch, what those
detections look at - never the rows themselves:

* per distinct value, a *signature*: the facts that route it through the parsers and
  that the detections test (a finite number? a valid Unix time in s / in ms? an
  offset, and does it parse? ISO (or the strftime pattern) parses it? does it read as
  an ISO, a day-first, a month-first date, and the clock after it as a clock?). Every
  decision is an "any" over such facts, and every message quotes the first value with
  one, so the first value of each signature is all that is kept;
* the first 100 non-empty values (which decide whether numbers come first);
* counts that settle the median of the Unix numbers exactly (milliseconds or seconds)
  without keeping them (:class:`UnitStats`);
* the distinct values of clock and weekday columns (their detection counts them).

:meth:`TimeSurvey.plans` then runs :func:`~vrvm.trips.files.parsing.parse_columns` itself on
a small *proxy* column - those values in file order - with the numbers-first choice
and the unit given, so that every decision, note and error comes from the same code as
for a whole file. A batch parsed with ``trace=True`` hands the survey what its parse
found, so that only the facts a parse did not look at are looked up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from vrvm.trips.files.formats import (
    _UNIX_MS_FROM,
    _UNIX_MS_UPTO,
    TimeFormatError,
    TimeFormats,
    date_text_flags,
)
from vrvm.trips.files.layouts import Layout
from vrvm.trips.files.parsing import (
    _MAX_UNIX_S,
    _NO_PLAN,
    ColumnPlan,
    ZonePoints,
    _is_number_dtype,
    _numbers_first,
    _offsets_and_iso,
    _to_float,
    parse_columns,
)

__all__ = ["TimeSurvey", "UnitStats"]

_UNIT_THRESHOLDS = (_UNIX_MS_FROM, _UNIX_MS_UPTO)


@dataclass
class UnitStats:
    """Enough of a set of numbers to say exactly whether their median lies in
    [1e11, 1e14) (Unix milliseconds, :func:`~vrvm.trips.files.formats.unix_unit`).

    The median of n sorted values is x[n // 2] (n odd) or the mean of x[n // 2 - 1]
    and x[n // 2] (n even): which side of a threshold it falls on follows from how many
    values lie below it, and, when the two middle values straddle it, from the largest
    value below and the smallest at or above it.
    """

    n: int = 0
    below: list[int] = field(default_factory=lambda: [0, 0])
    max_below: list[float] = field(default_factory=lambda: [-np.inf, -np.inf])
    min_above: list[float] = field(default_factory=lambda: [np.inf, np.inf])

    def add(self, numbers: np.ndarray) -> None:
        values = np.abs(numbers[np.isfinite(numbers)])
        self.n += values.size
        for i, threshold in enumerate(_UNIT_THRESHOLDS):
            low = values < threshold
            self.below[i] += int(low.sum())
            if low.any():
                self.max_below[i] = max(self.max_below[i], float(values[low].max()))
            if not low.all():
                self.min_above[i] = min(self.min_above[i], float(values[~low].min()))

    def _median_at_least(self, i: int) -> bool:
        k, below = self.n // 2, self.below[i]
        if self.n % 2:
            return below <= k
        if below != k:
            return below < k
        return np.mean([self.max_below[i], self.min_above[i]]) >= _UNIT_THRESHOLDS[i]

    def unit(self, date_format: str) -> str:
        if date_format in ("unix_s", "unix_ms"):
            return date_format[5:]
        if self.n and self._median_at_least(0) and not self._median_at_least(1):
            return "ms"
        return "s"


def _first_rows(codes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Row of the first appearance of each code 0, 1, ... (factorised values)."""
    _, first = np.unique(codes, return_index=True)
    return rows[first]


def _keep_first(reps: dict[int, tuple[int, object]], sig, first_rows, values) -> None:
    """Keep the first value of each signature not seen in earlier batches."""
    _, at = np.unique(sig, return_index=True)  # values are in order of appearance
    for i in at:
        reps.setdefault(int(sig[i]), (int(first_rows[i]), values[i]))


def _text_facts(text: pd.Series, formats: TimeFormats, found: dict[str, np.ndarray]) -> None:
    """What the first text readings find in each value (offset, read by it, read as ISO
    or the strftime pattern): the parser's own function looks, so they cannot differ."""
    out, naive, has_offset = _offsets_and_iso(text, formats.strftime)
    found.update(offset=has_offset, offset_ok=~np.isnat(out), as_text=~np.isnat(naive))


def _date_signature(text: pd.Series) -> np.ndarray:
    """Bits 6-9 of a signature: what each date order reads, and whether the clock does."""
    sig = np.zeros(len(text), dtype=np.int64)
    for bit, flag in enumerate(date_text_flags(text.reset_index(drop=True)), start=6):
        sig |= flag.astype(np.int64) << bit
    return sig


class _TimesSurvey:
    """A ``start_time`` or ``end_time`` column, batch by batch (see above)."""

    def __init__(self, formats: TimeFormats):
        self.formats = formats
        self.prefix: list[tuple[int, str]] = []
        self.reps: dict[int, tuple[int, object]] = {}
        self.all_numbers = UnitStats()  # numbers first: every number is a Unix time
        self.unparsed_numbers = UnitStats()  # text first: numbers text cannot read
        self.first: pd.Series | None = None

    def add(
        self, values: pd.Series, rows: np.ndarray, trace: dict[str, np.ndarray] | None = None
    ) -> None:
        if self.first is None:
            self.first = values.iloc[:1].reset_index(drop=True)
        dtype = values.dtype
        if pd.api.types.is_datetime64_any_dtype(dtype):
            return  # read as they are: nothing to decide
        if _is_number_dtype(dtype):
            self.all_numbers.add(values.to_numpy(dtype=np.float64, na_value=np.nan))
            return
        text = values.astype("string").str.strip().reset_index(drop=True)
        todo = text.notna().to_numpy() & (text != "").fillna(False).to_numpy()
        if not todo.any():
            return
        rows = rows[todo]
        text = text[todo].reset_index(drop=True)
        missing = 100 - len(self.prefix)
        if missing > 0:
            self.prefix += list(zip(rows[:missing].tolist(), text[:missing].tolist(), strict=True))
        codes, uniques = pd.factorize(text)
        uniques = pd.Series(uniques, dtype="string")
        facts = None
        if trace:  # what the batch's parse found, per distinct value (it is per value)
            _, first = np.unique(codes, return_index=True)
            facts = {key: found[todo][first] for key, found in trace.items()}
        sig, numbers, read_as_text = self._signature(uniques, facts)
        per_row = numbers[codes]
        self.all_numbers.add(per_row)
        self.unparsed_numbers.add(per_row[~read_as_text[codes]])
        _keep_first(self.reps, sig, _first_rows(codes, rows), uniques.to_numpy(dtype=object))

    def _numbers_first(self) -> bool | None:
        """Whether numbers come first, once the first 100 values settle it."""
        if len(self.prefix) < 100:
            return None
        return _numbers_first(pd.Series([t for _, t in self.prefix], dtype="string"), self.formats)

    def _signature(
        self, text: pd.Series, facts: dict[str, np.ndarray] | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The signature of each distinct value, its number and whether text reads it.

        ``facts`` are what a parse of the batch found; only the rest is looked up, and
        not what the settled order of the parsers never asks (the text of valid Unix
        numbers when numbers come first, the number of text read as ISO otherwise).
        """
        n, settled = len(text), self._numbers_first()
        known = facts or {
            "numbers": np.full(n, np.nan),
            "counted": np.zeros(n, dtype=bool),
            "seen": np.zeros(n, dtype=bool),
        }
        numbers = known["numbers"].copy()
        look = ~known["counted"]
        if settled is False and facts:
            look &= ~(facts["offset_ok"] | facts["as_text"])
        if look.any():
            numbers[look] = pd.to_numeric(text[look], errors="coerce").to_numpy(
                np.float64, na_value=np.nan
            )
        finite = np.isfinite(numbers)
        with np.errstate(invalid="ignore"):
            valid_s = finite & (np.abs(numbers) < _MAX_UNIX_S)
            valid_ms = finite & (np.abs(numbers / 1000.0) < _MAX_UNIX_S)
        seen = known["seen"].copy()
        offset, offset_ok, as_text = (
            (facts["offset"].copy(), facts["offset_ok"].copy(), facts["as_text"].copy())
            if facts
            else (np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool))
        )
        look = ~seen
        if settled is True:
            look &= ~(valid_s & valid_ms)
        if look.any():
            found: dict[str, np.ndarray] = {}
            _text_facts(text[look].reset_index(drop=True), self.formats, found)
            offset[look], offset_ok[look], as_text[look] = (
                found["offset"],
                found["offset_ok"],
                found["as_text"],
            )
            seen |= look
        sig = np.zeros(n, dtype=np.int64)
        for bit, flag in enumerate((finite, valid_s, valid_ms, offset, offset_ok, as_text)):
            sig |= flag.astype(np.int64) << bit
        dates = seen & ~offset & ~as_text
        if self.formats.strftime is None and dates.any():
            sig[dates] |= _date_signature(text[dates])
        return sig, numbers, as_text

    def given(self) -> ColumnPlan:
        if not self.prefix:  # numbers, datetimes, or nothing to read
            return ColumnPlan(numbers_first=False, unit=self.all_numbers.unit(self.date_format))
        sample = pd.Series([text for _, text in self.prefix], dtype="string")
        numbers_first = _numbers_first(sample, self.formats)
        stats = self.all_numbers if numbers_first else self.unparsed_numbers
        return ColumnPlan(numbers_first=numbers_first, unit=stats.unit(self.date_format))

    @property
    def date_format(self) -> str:
        return self.formats.date_format

    def proxy(self) -> pd.Series:
        if not self.prefix and not self.reps:
            return self.first if self.first is not None and len(self.first) else pd.Series([np.nan])
        values = dict(self.prefix)
        for row, value in self.reps.values():
            values.setdefault(row, value)
        return pd.Series([values[row] for row in sorted(values)], dtype=object)


class _DatesSurvey:
    """A ``start_date`` column, batch by batch (see above)."""

    def __init__(self, formats: TimeFormats):
        self.formats = formats
        self.reps: dict[int, tuple[int, object]] = {}
        self.numbers = UnitStats()
        self.first: pd.Series | None = None

    def add(self, values: pd.Series, rows: np.ndarray) -> None:
        if self.first is None:
            self.first = values.iloc[:1].reset_index(drop=True)
        dtype = values.dtype
        if pd.api.types.is_datetime64_any_dtype(dtype) or self.formats.strftime is not None:
            return
        if self.formats.date_format in ("unix_s", "unix_ms") or _is_number_dtype(dtype):
            self.numbers.add(_to_float(values))
            return
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        if len(uniques) == 0:
            return
        text = pd.Series(uniques, dtype=object).astype("string").str.strip()
        known = codes >= 0
        first_rows = _first_rows(codes[known], rows[known])
        _keep_first(self.reps, _date_signature(text), first_rows, text.to_numpy(dtype=object))

    def given(self) -> ColumnPlan:
        return ColumnPlan(unit=self.numbers.unit(self.formats.date_format))

    def proxy(self) -> pd.Series:
        if not self.reps:
            return self.first if self.first is not None and len(self.first) else pd.Series([np.nan])
        return pd.Series([value for _, value in sorted(self.reps.values())], dtype=object)


class _DistinctSurvey:
    """A ``start_clock`` or ``weekday`` column: its distinct values, in file order."""

    def __init__(self, formats: TimeFormats):
        self.values: np.ndarray | None = None

    def add(self, values: pd.Series, rows: np.ndarray) -> None:
        uniques = pd.unique(values.dropna().to_numpy())
        if self.values is None:
            self.values = uniques
        elif values.dtype.kind == "f" and self.values.dtype.kind in "iu":
            self.values = pd.unique(np.concatenate([self.values.astype(np.float64), uniques]))
        else:
            self.values = pd.unique(np.concatenate([self.values, uniques]))

    def given(self) -> ColumnPlan:
        return _NO_PLAN

    def proxy(self) -> pd.Series:
        values = self.values
        return pd.Series(values) if values is not None and len(values) else pd.Series([np.nan])


_SURVEYS = {
    "start_time": _TimesSurvey,
    "end_time": _TimesSurvey,
    "start_date": _DatesSurvey,
    "start_clock": _DistinctSurvey,
    "weekday": _DistinctSurvey,
}


def _no_zone_points(ids: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    return np.full(len(ids), np.nan), np.full(len(ids), np.nan)


class TimeSurvey:
    """What the time columns of a file hold, gathered batch by batch, to take their
    format decisions over whole columns (see the notes above this class).

    Parameters
    ----------
    layout : Layout
    formats : TimeFormats

    Examples
    --------
    Day-first dates that only the last batch tells apart:

    >>> import pandas as pd
    >>> from vrvm.trips.files.layouts import resolve_layout
    >>> columns = ["day", "clock", "a", "b", "c", "d", "secs"]
    >>> roles = dict(zip(["start_date", "start_clock", "origin_lat", "origin_lon",
    ...                   "dest_lat", "dest_lon", "travel_time_s"], columns))
    >>> layout = resolve_layout(columns, "auto", roles, "t.csv")
    >>> survey = TimeSurvey(layout, TimeFormats())
    >>> first = pd.DataFrame({"day": ["3/4/2016", "5/6/2016"], "clock": ["8:00", "9:30"]})
    >>> last = pd.DataFrame({"day": ["25/4/2016"], "clock": ["10:15"]})
    >>> survey.add(first, np.array([2, 3]))
    >>> survey.add(last, np.array([4]))
    >>> plans, notes = survey.plans()
    >>> plans["start_date"].order, plans["start_clock"].clock_format
    ('dayfirst', 'hh:mm')
    >>> notes
    {'start_date': "'day': day-first dates"}
    """

    @staticmethod
    def can_survey(layout: Layout) -> bool:
        """Whether each time role has a column of its own (a column read as two time
        roles at once is only read whole)."""
        columns = [column for role, column in layout.mapping.items() if role in _SURVEYS]
        return len(set(columns)) == len(columns)

    def __init__(self, layout: Layout, formats: TimeFormats):
        self.layout = layout
        self.formats = formats
        self._surveys = {
            role: kind(formats) for role, kind in _SURVEYS.items() if role in layout.mapping
        }

    def add(
        self,
        raw: pd.DataFrame,
        rows: np.ndarray,
        traces: Mapping[str, dict[str, np.ndarray]] | None = None,
    ) -> None:
        """Gather what one batch holds: its raw columns, their row numbers (in file
        order) and, if the batch was parsed with ``trace=True``, ``Parsed.traces``
        (what the parse already found need not be looked up again)."""
        for role, survey in self._surveys.items():
            values = raw[self.layout.mapping[role]]
            if isinstance(survey, _TimesSurvey):
                survey.add(values, rows, (traces or {}).get(role))
            else:
                survey.add(values, rows)

    def plans(
        self, *, zone_points: ZonePoints | None = None, lenient: bool = False
    ) -> tuple[dict[str, ColumnPlan], dict[str, str]]:
        """The decisions per time role and the notes a whole-file read would give.

        Raises :class:`~vrvm.trips.files.formats.TimeFormatError` as that read would; with
        ``lenient`` (a batch read before the rest of the file is seen) a format that
        cannot be told yet is guessed instead (the first of the error's choices).
        """
        mapping = self.layout.mapping
        given = {role: survey.given() for role, survey in self._surveys.items()}
        proxies = {mapping[role]: survey.proxy() for role, survey in self._surveys.items()}
        length = max((len(p) for p in proxies.values()), default=1)
        frame = pd.DataFrame(
            {
                column: (
                    proxies[column]
                    .iloc[np.arange(length) % len(proxies[column])]
                    .reset_index(drop=True)
                    if column in proxies
                    else pd.Series(np.full(length, np.nan))
                )
                for column in dict.fromkeys(mapping.values())
            }
        )
        points = zone_points or _no_zone_points
        for _ in range(3 * len(given) + 1):  # each retry settles one more role
            try:
                parsed = parse_columns(frame, self.layout, "UTC", self.formats, points, plans=given)
            except TimeFormatError as exc:
                role = next((r for r in given if mapping[r] == exc.column), None)
                if not lenient or role is None:
                    raise
                guess = {"date_format": "order"}.get(exc.option, exc.option)
                given[role] = replace(given[role], **{guess: exc.choices[0]})
                continue
            plans = {
                role: replace(
                    parsed.plans.get(role, _NO_PLAN),
                    numbers_first=given[role].numbers_first,
                    unit=given[role].unit,
                )
                for role in given
            }
            return plans, parsed.notes
        raise AssertionError("unreachable: every retry fixes one decision")
