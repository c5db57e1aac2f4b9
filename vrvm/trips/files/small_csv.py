"""Small CSV tables (a fleet's bases, demand per zone) read as text under the reader's limits.

A small table from an upload is as untrusted as a trip file and gets the same bounds
(:mod:`vrvm.trips.files._limits`, :class:`~vrvm.trips.files.reader.ReadLimits`), checked before
pandas sees a byte: :func:`check_csv_header` counts the raw header's columns (a
million-column header kept pandas busy for minutes and gigabytes), and
:func:`read_small_csv` also caps the size, the data rows (counted while the text is
parsed, a block of rows at a time) and the time the parse may take. Every refusal is a
:class:`SmallCsvError` naming the file, the measure and the limit.

pandas parses, not pyarrow's CSV reader, though pyarrow is quicker on these files
(``benchmarks/bench_uploads.py --pyarrow``, 3 runs: a 10,000-row demand file 0.007-0.013 s
against 0.032-0.039 s here, a row of 1,000,000 fields refused in 0.035-0.041 s against
0.07-0.18 s): tens of milliseconds, for a guarantee lost. pyarrow numbers rows without
the blank lines, so a refused row would name the wrong line after one (or, keeping blank
lines, reads them as rows of empty cells, which pandas skips); it refuses a row with
fewer fields than the header, which pandas fills; and it parses blocks of bytes, where
the row and time limits are checked every :data:`ROWS_PER_BLOCK` rows.
"""

from __future__ import annotations

import io
import time

import numpy as np
import pandas as pd

from vrvm.trips.files._limits import LimitExceeded, ReadLimits, check_header, check_rows

__all__ = ["SmallCsvError", "check_csv_header", "check_row_widths", "read_small_csv"]

ROWS_PER_BLOCK = 20_000
"""Rows parsed at once; the row and time limits are checked after each block."""


class SmallCsvError(ValueError):
    """A small CSV table that cannot be read; the message is meant for the user.

    Attributes
    ----------
    limit : str or None
        The limit that was passed (a field of :class:`ReadLimits`, ``"max_bytes"`` or
        ``"max_seconds"``), None for a file that is not CSV text.
    """

    def __init__(self, message: str, *, limit: str | None = None):
        super().__init__(message)
        self.limit = limit


def check_csv_header(
    data: bytes, limits: ReadLimits, *, source: str, expected: str = "a table has a few"
) -> None:
    """Refuse a header too wide, or not ending within ``limits.header_bytes``, on raw bytes.

    The reader's own check (:func:`vrvm.trips.files.reader.read_trips` makes it on every trip
    file): fields are counted outside quotes with each delimiter it knows, in the first
    ``limits.header_bytes`` of ``data`` only, before any parser runs.

    Parameters
    ----------
    data : bytes
        The file's (uncompressed) bytes.
    limits : ReadLimits
        ``max_columns`` and ``header_bytes`` apply.
    source : str
        The file's name in messages.
    expected : str
        What the message says a file of this kind has.

    Raises
    ------
    SmallCsvError
        With ``limit`` ``"max_columns"`` or ``"header_bytes"``.

    Examples
    --------
    >>> check_csv_header(b"zone,demand\\n1,2\\n", ReadLimits(max_columns=5), source="d.csv")
    >>> check_csv_header(b"a," * 9 + b"a\\n", ReadLimits(max_columns=5), source="d.csv")
    Traceback (most recent call last):
    ...
    vrvm.trips.files.small_csv.SmallCsvError: d.csv: its header has 10 columns, more than the \
limit of 5; a table has a few
    """
    head = data[: limits.header_bytes + 1]
    try:
        check_header(
            head[: limits.header_bytes],
            len(head) <= limits.header_bytes,
            limits,
            source,
            expected=expected,
        )
    except LimitExceeded as exc:
        raise SmallCsvError(str(exc), limit=exc.limit) from None


def read_small_csv(
    data: bytes,
    *,
    source: str,
    limits: ReadLimits,
    max_bytes: int,
    max_seconds: float,
    expected: str = "a table has a few",
) -> pd.DataFrame:
    """Every cell of a small CSV table as text, within size, header, row and time limits.

    UTF-8 text (a byte-order mark is dropped); the delimiter is ``;`` when the header
    holds semicolons and no comma, else ``,``. Empty cells are ``""``.

    Parameters
    ----------
    data : bytes
        The file's bytes.
    source : str
        The file's name in messages.
    limits : ReadLimits
        ``max_columns`` and ``header_bytes`` (:func:`check_csv_header`) and
        ``max_data_rows`` (counted a block of :data:`ROWS_PER_BLOCK` rows at a time;
        at most one block beyond the limit is parsed) apply.
    max_bytes : int
        Largest file read.
    max_seconds : float
        Parsing stops (refused) once it has taken longer, checked after each block.
    expected : str
        What a refusal of the header says a file of this kind has.

    Raises
    ------
    SmallCsvError
        Empty, too large, a header too wide or too long, too many rows, too slow (its
        ``limit`` says which), not UTF-8, or not CSV (pandas' message).

    Examples
    --------
    >>> limits = ReadLimits(max_columns=10, max_data_rows=100)
    >>> read_small_csv(b"zone;demand\\nA;1\\n", source="d.csv", limits=limits,
    ...                max_bytes=1000, max_seconds=5.0)
      zone demand
    0    A      1
    >>> read_small_csv(b"x" * 2000, source="d.csv", limits=limits, max_bytes=1000,
    ...                max_seconds=5.0)
    Traceback (most recent call last):
    ...
    vrvm.trips.files.small_csv.SmallCsvError: d.csv is 2,000 bytes, above the limit of 1,000 bytes \
for this file
    """
    if not data:
        raise SmallCsvError(f"{source} is empty")
    if len(data) > max_bytes:
        raise SmallCsvError(
            f"{source} is {len(data):,} bytes, above the limit of {max_bytes:,} bytes for "
            "this file",
            limit="max_bytes",
        )
    check_csv_header(data, limits, source=source, expected=expected)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SmallCsvError(
            f"{source} is not UTF-8 text (byte {exc.start} cannot be read)"
        ) from None
    header = text.split("\n", 1)[0]
    sep = ";" if ";" in header and "," not in header else ","
    check_row_widths(data, sep, source=source)
    rows_cap = None if limits.max_data_rows is None else limits.max_data_rows + 1
    started = time.monotonic()
    blocks, n_rows = [], 0
    try:
        reader = pd.read_csv(
            io.StringIO(text),
            sep=sep,
            dtype=str,
            keep_default_na=False,
            chunksize=ROWS_PER_BLOCK,
            nrows=rows_cap,
        )
        with reader:
            for block in reader:
                blocks.append(block)
                n_rows += len(block)
                check_rows(n_rows, limits, source)
                _check_time(started, max_seconds, source, n_rows)
    except LimitExceeded as exc:
        raise SmallCsvError(str(exc), limit=exc.limit) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise SmallCsvError(f"{source} cannot be read as CSV: {exc}") from None
    if not blocks:  # a header and no rows: pandas yields no block
        return pd.read_csv(io.StringIO(header), sep=sep, dtype=str, keep_default_na=False)
    return pd.concat(blocks, ignore_index=True) if len(blocks) > 1 else blocks[0]


def check_row_widths(data: bytes, sep: str, *, source: str) -> None:
    """Refuse a row with more fields than the header, counted on the raw bytes.

    pandas would take the extra fields of the first data row as an index (a row of a
    million fields kept it busy for minutes), and those of a later row make its error.
    Delimiters and line breaks inside quotes do not count (a quote toggles, so ``""``
    inside a quoted field does not either). Vectorised with numpy: about 10 bytes of
    memory per byte of ``data``, for the small files this module reads.

    Raises
    ------
    SmallCsvError
        Naming the first such line (the header is line 1), its fields and the header's.

    Examples
    --------
    >>> check_row_widths(b'a,b\\n"x,y",2\\n3\\n', ",", source="t.csv")
    >>> check_row_widths(b"a,b\\n1,2\\n1,2,3\\n", ",", source="t.csv")
    Traceback (most recent call last):
    ...
    vrvm.trips.files.small_csv.SmallCsvError: t.csv, line 3: 3 fields, more than the header's 2
    """
    a = np.frombuffer(data, dtype=np.uint8)
    outside = (np.cumsum(a == ord('"'), dtype=np.int32) & 1) == 0
    # a line ends at "\n", or at a "\r" not followed by one (old Mac files)
    cr_alone = a == ord("\r")
    cr_alone[:-1] &= a[1:] != ord("\n")
    line = np.cumsum(outside & ((a == ord("\n")) | cr_alone), dtype=np.int32)
    fields = 1 + np.bincount(line[outside & (a == ord(sep))], minlength=int(line[-1]) + 1)
    wide = np.flatnonzero(fields > fields[0])
    if wide.size:
        raise SmallCsvError(
            f"{source}, line {int(wide[0]) + 1}: {int(fields[wide[0]]):,} fields, more than "
            f"the header's {int(fields[0]):,}",
            limit="max_columns",
        )


def _check_time(started: float, max_seconds: float, source: str, n_rows: int) -> None:
    elapsed = time.monotonic() - started
    if elapsed > max_seconds:
        raise SmallCsvError(
            f"{source}: reading it took more than {max_seconds:g} s (stopped after "
            f"{n_rows:,} rows); send a smaller file",
            limit="max_seconds",
        )
