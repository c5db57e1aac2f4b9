"""Resource limits of reading a trip file: the header's width and what compressed data expands to.

A hostile (or broken) file can keep a reader busy for minutes: a header with a
million columns (pandas' header handling grows faster than linearly in the number of
columns), or a few megabytes of gzip that expand to gigabytes (a zip bomb). Both are
refused here, early and cheaply, with a message naming the file, the measure and the
limit:

- :func:`check_header` looks at the first :attr:`ReadLimits.header_bytes` of the
  (decompressed) text, before any parser: the first line must end there and have at
  most :attr:`ReadLimits.max_columns` fields.
- :class:`GuardedStream` decompresses incrementally and counts as it goes: more than
  :attr:`ReadLimits.max_expanded_bytes` in all, or, once past
  :attr:`ReadLimits.ratio_after_bytes`, more than :attr:`ReadLimits.max_ratio` bytes
  out per compressed byte read so far, stops the read. The parser reads through it, so
  the limits hold for every read (files on disk, bytes, the CLI and uploads) without a
  second pass over the data. The decompressing streams (pyarrow's
  :class:`~pyarrow.CompressedInputStream` for gzip and bz2, :mod:`lzma`, :mod:`zipfile`)
  have no such limit of their own: the counting is done here, around them.
- :func:`check_rows` stops a read that holds more than :attr:`ReadLimits.max_data_rows`
  data rows (off by default; uploads set it): the reader parses CSV text in batches of
  :attr:`ReadLimits.batch_bytes` and counts the rows as it goes, never parsing more
  than one row beyond the limit.

All raise :class:`LimitExceeded` (its ``limit`` names the field of
:class:`ReadLimits` that was passed), which the reader turns into its
``TripFileError``.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

__all__ = ["GuardedStream", "LimitExceeded", "ReadLimits", "check_header", "check_rows"]

MAX_COLUMNS = 1_000
"""Fields a header may have (trip exports have a few dozen; Chicago's has 23)."""
HEADER_BYTES = 2**20
"""Bytes of text in which the header must end (1 MiB)."""
MAX_EXPANDED_BYTES = 20 * 2**30
"""What a compressed file may expand to (20 GiB): far more than a table that fits in
memory, so it stops only what the ratio does not; uploads use a stricter cap."""
MAX_RATIO = 100.0
"""Decompressed bytes per compressed byte (CSV trip exports compress 3 to 20-fold)."""
RATIO_AFTER_BYTES = 100 * 2**20
"""Decompressed bytes (100 MiB) before the ratio is judged: small files may compress
very well without harm."""
CHUNK_BYTES = 2**20
"""Bytes decompressed per step of a check (1 MiB)."""
BATCH_BYTES = 8 * 2**20
"""Bytes of CSV text parsed at once (8 MiB): what one batch of rows costs in memory is
a small multiple of this, whatever the size of the file."""

_MIB = 2**20


class LimitExceeded(Exception):
    """A file beyond a read limit; the message names the file, the measure and the limit.

    Deliberately not a ``ValueError`` or ``OSError``: raised from inside the parser's
    reads, it must pass through the handlers that reword parse errors.

    Attributes
    ----------
    limit : str or None
        The field of :class:`ReadLimits` that was passed (``"max_data_rows"``...).
    """

    def __init__(self, message: str, *, limit: str | None = None):
        super().__init__(message)
        self.limit = limit


@dataclass(frozen=True)
class ReadLimits:
    """Limits of one read; the defaults are the module's constants.

    Parameters
    ----------
    max_columns : int, default=1000
        Fields the header may have.
    header_bytes : int, default=1 MiB
        Bytes of (decompressed) text in which the header must end; a later row longer
        than this (an unclosed quote, a file that is not CSV) is refused too.
    max_expanded_bytes : int, default=20 GiB
        Bytes a compressed file may expand to.
    max_ratio : float, default=100
        Decompressed bytes per compressed byte read, judged once past
        ``ratio_after_bytes``.
    ratio_after_bytes : int, default=100 MiB
        Decompressed bytes before the ratio is judged.
    max_data_rows : int or None, default=None
        Data rows (lines after the header, blank ones included) a read may hold;
        ``None``: no limit. Counted while the text is parsed: a read stops at the
        first row beyond the limit.
    batch_bytes : int, default=8 MiB
        Bytes of CSV text parsed at once; the memory a read needs beyond the rows
        it keeps is a small multiple of this.

    Examples
    --------
    >>> ReadLimits(max_data_rows=1000).max_data_rows
    1000
    >>> ReadLimits(max_data_rows=0)
    Traceback (most recent call last):
    ...
    ValueError: max_data_rows must be a positive integer or None, got 0
    """

    max_columns: int = MAX_COLUMNS
    header_bytes: int = HEADER_BYTES
    max_expanded_bytes: int = MAX_EXPANDED_BYTES
    max_ratio: float = MAX_RATIO
    ratio_after_bytes: int = RATIO_AFTER_BYTES
    max_data_rows: int | None = None
    batch_bytes: int = BATCH_BYTES

    def __post_init__(self):
        for name in (
            "max_columns",
            "header_bytes",
            "max_expanded_bytes",
            "ratio_after_bytes",
            "batch_bytes",
        ):
            if not _positive_int(getattr(self, name)):
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if self.max_data_rows is not None and not _positive_int(self.max_data_rows):
            raise ValueError(
                f"max_data_rows must be a positive integer or None, got {self.max_data_rows!r}"
            )
        if not self.max_ratio > 1:
            raise ValueError(f"max_ratio must be a number above 1, got {self.max_ratio!r}")


def _positive_int(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= 1


def check_rows(n_rows: int, limits: ReadLimits, name: str) -> None:
    """Refuse a read that holds more than ``limits.max_data_rows`` data rows.

    Raises
    ------
    LimitExceeded
        With ``limit="max_data_rows"``, naming the file and the limit.

    Examples
    --------
    >>> check_rows(1000, ReadLimits(max_data_rows=1000), "t.csv")
    >>> check_rows(1001, ReadLimits(max_data_rows=1000), "t.csv")
    Traceback (most recent call last):
    ...
    vrvm.trips.files._limits.LimitExceeded: t.csv has more than 1,000 data rows, the limit of \
this read (ReadLimits.max_data_rows); read it in parts, or raise the limit
    """
    limit = limits.max_data_rows
    if limit is not None and n_rows > limit:
        raise LimitExceeded(
            f"{name} has more than {limit:,} data rows, the limit of this read "
            "(ReadLimits.max_data_rows); read it in parts, or raise the limit",
            limit="max_data_rows",
        )


def _size(n_bytes: float) -> str:
    """Bytes as the dashboard states sizes (MB of 2**20 bytes; GB from 10 GB up; KB of
    1,024 bytes below 1 MB)."""
    if n_bytes >= 10 * 2**30:
        return f"{n_bytes / 2**30:.4g} GB"
    if n_bytes < _MIB:
        return f"{n_bytes / 1024:.4g} KB"
    return f"{n_bytes / _MIB:.4g} MB"


# The first line as a CSV parser sees it: quoted fields may hold delimiters and line
# breaks. Both alternatives consume at least one byte, so matching is linear.
_FIRST_LINE = re.compile(rb'(?:[^"\r\n]+|"[^"]*")*')
_QUOTED = re.compile(rb'"[^"]*"')
_DELIMITERS = (b",", b";", b"\t", b"|")


def check_header(
    head: bytes,
    at_end: bool,
    limits: ReadLimits,
    name: str,
    *,
    expected: str = "a trip file has a few dozen",
) -> None:
    """Refuse a header that is too wide or does not end within ``limits.header_bytes``.

    Parameters
    ----------
    head : bytes
        The first ``limits.header_bytes`` of the text (fewer if the file is shorter).
    at_end : bool
        True if ``head`` is the whole text (a header without a line break is then
        complete).
    limits : ReadLimits
    name : str
        The file, for messages.
    expected : str
        What the message says a file of this kind has.

    Raises
    ------
    LimitExceeded
        If the first line has more than ``limits.max_columns`` fields (counted on the
        raw bytes with each delimiter :func:`read_trips` knows, outside quotes), or does
        not end within ``limits.header_bytes``.
    """
    line = _FIRST_LINE.match(head).group()
    ended = len(line) < len(head) and head[len(line) : len(line) + 1] in (b"\r", b"\n")
    complete = ended or (at_end and len(line) == len(head))
    bare = _QUOTED.sub(b"", line)
    n_fields = 1 + max(bare.count(d) for d in _DELIMITERS)
    if n_fields > limits.max_columns:
        count = f"{n_fields:,}" if complete else f"at least {n_fields:,}"
        where = "" if complete else f" in its first {_size(len(head))} (and no line break yet)"
        raise LimitExceeded(
            f"{name}: its header has {count} columns{where}, more than the limit of "
            f"{limits.max_columns:,}; {expected}",
            limit="max_columns",
        )
    if not complete and len(head) >= limits.header_bytes:
        raise LimitExceeded(
            f"{name}: its first line (the header) does not end within the first "
            f"{_size(limits.header_bytes)}, the limit for a header; expected a CSV text "
            "file with a header row",
            limit="header_bytes",
        )


class GuardedStream(io.RawIOBase):
    """A decompressing binary stream that stops once it expands too far.

    Parameters
    ----------
    inner : binary file-like
        The decompressed stream (pyarrow's for gzip and bz2, :mod:`lzma`'s, or a zip
        member), with ``readinto``.
    compressed : binary file-like
        The compressed stream ``inner`` reads from; its ``tell()`` says how many
        compressed bytes were consumed (for the ratio).
    limits : ReadLimits
    name : str
        The file, for messages.
    owned : sequence of closables
        Closed with the stream (the zip archive, the file on disk).
    """

    def __init__(self, inner, compressed, limits: ReadLimits, name: str, owned=()):
        super().__init__()
        self._inner = inner
        self._compressed = compressed
        self._limits = limits
        self._name = name
        self._owned = (inner, *owned)
        self.expanded = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._inner.readinto(buffer)
        self.expanded += n
        self._check()
        return n

    def _check(self) -> None:
        limits = self._limits
        if self.expanded > limits.max_expanded_bytes:
            raise LimitExceeded(
                f"{self._name} expands to more than {_size(limits.max_expanded_bytes)} when "
                "decompressed, the limit for a compressed file; decompress it first if "
                "it really is that large",
                limit="max_expanded_bytes",
            )
        if self.expanded > limits.ratio_after_bytes:
            consumed = max(self._compressed.tell(), 1)
            ratio = self.expanded / consumed
            if ratio > limits.max_ratio:
                raise LimitExceeded(
                    f"{self._name} expands {ratio:,.0f}-fold when decompressed "
                    f"({_size(self.expanded)} from {_size(consumed)} so far), above the "
                    f"limit of {limits.max_ratio:g}-fold: a zip bomb, or data too "
                    "repetitive to be a trip file",
                    limit="max_ratio",
                )

    def close(self) -> None:
        if not self.closed:
            for item in reversed(self._owned):
                item.close()
        super().close()

    def drain(self) -> int:
        """Read to the end in :data:`CHUNK_BYTES` steps; the bytes it expands to."""
        while self.read(CHUNK_BYTES):
            pass
        return self.expanded
