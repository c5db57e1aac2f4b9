"""Opening a trip file: what it is (Parquet, or CSV text and its compression), its header.

A trip file comes as a path, bytes or an upload. :func:`open_source` sniffs what it is
once (Parquet by its ``PAR1`` marker; gzip, bz2, xz and zip by theirs; binary data is
refused), and :class:`Source` hands out fresh handles on its text, decompressed through
the expansion guard of :mod:`vrvm.trips.files._limits`. :func:`read_csv_header` checks the
header on raw bytes before pandas reads it and finds the delimiter. The errors of a
file that cannot be read are here too (:class:`TripFileError`, :class:`ZonesNeededError`;
their public home is :mod:`vrvm.trips.files.reader`); compressed data found damaged while
it is read is one of them, naming the file.

Decompression (:func:`decompressing`) is pyarrow's (:class:`pyarrow.CompressedInputStream`)
for gzip and bz2, the codecs it has; xz stays with :mod:`lzma` and zip with :mod:`zipfile`
(pyarrow has no xz codec, and a zip file is an archive, not a stream). CPU seconds through
the expansion guard (``benchmarks/bench_read_memory.py --cases expand_...``, 3 runs, 2
cores shared), pyarrow against :mod:`gzip` and :mod:`bz2`: the gzip of 1,000,000 trips
(20 MB, 73 MiB of text) 0.4-0.5 s against 0.5-0.6 s, the first 100 MiB of a gzip bomb
before the guard stops it 0.2-0.3 s against 0.4-0.5 s; bz2 (the same libbz2) 4.0-7.0 s
against 5.4-7.9 s, its bomb 1.2-1.3 s against 0.9-1.2 s; a few MB more at the peak. One
difference: pyarrow refuses bytes after the last stream (zero padding, or anything after
a bz2 stream) as damaged data, where :mod:`gzip` and :mod:`bz2` ignored them.
"""

from __future__ import annotations

import io
import lzma
import os
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa

from vrvm.trips.files._limits import GuardedStream, LimitExceeded, ReadLimits, check_header
from vrvm.trips.files.layouts import Layout

if TYPE_CHECKING:  # read only for zone-id trips; shapely loads on first use
    from vrvm.trips.places.zone_files import ZoneFile


class TripFileError(ValueError):
    """A file that cannot be read as a trip table; the message names the file and says
    what was expected.

    Attributes
    ----------
    limit : str or None
        For a file beyond a resource limit, the field of :class:`ReadLimits` it passed
        (``"max_data_rows"``, ``"max_ratio"``...), so that a caller can say how to
        raise that limit; None otherwise.
    """

    __module__ = "vrvm.trips.files.reader"  # where users import it from

    def __init__(self, message: str, *, limit: str | None = None):
        super().__init__(message)
        self.limit = limit


class ZonesNeededError(ValueError):
    """Trips given by zone ids, read without the zone file that names them.

    Attributes
    ----------
    columns : list of str
        The file's columns (for a form that asks for the zone file).
    """

    __module__ = "vrvm.trips.files.reader"  # where users import it from

    def __init__(self, message: str, *, columns: list[str]):
        super().__init__(message)
        self.columns = columns


PARQUET_MAGIC = b"PAR1"
COMPRESSION_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"BZh": "bz2",
    b"\xfd7zXZ\x00": "xz",
    b"PK\x03\x04": "zip",
}
EXPECTED = "expected a CSV text file with a header row, or a Parquet file"


@dataclass
class Source:
    name: str
    kind: str  # "csv" or "parquet"
    path: str | None
    data: bytes | None
    compression: str | None
    limits: ReadLimits = field(default_factory=ReadLimits)

    def handle(self):
        # A fresh handle per read: the header and the body are read separately.
        return self.path if self.path is not None else io.BytesIO(self.data)

    @contextmanager
    def text(self) -> Iterator:
        """A fresh handle on the CSV text, decompressed through the expansion guard.

        pandas reads it with ``compression=None``; a limit passed while it reads, or
        compressed data found damaged, becomes a :class:`TripFileError`.
        """
        if self.compression is None:
            handle = self.handle()
        else:
            handle = guarded(self.path if self.path is not None else self.data, self)
        try:
            yield handle
        except LimitExceeded as exc:
            raise TripFileError(str(exc), limit=exc.limit) from None
        except DAMAGED as exc:
            if self.compression is None:
                raise
            raise damaged(self.name, exc) from None
        finally:
            if not isinstance(handle, str):
                handle.close()


def open_source(path_or_buffer, source: str | None, limits: ReadLimits | None = None) -> Source:
    path: str | None = None
    data: bytes | None = None
    if limits is not None and not isinstance(limits, ReadLimits):
        raise TypeError(f"limits must be a ReadLimits or None, got {type(limits).__name__}")
    limits = limits or ReadLimits()
    if isinstance(path_or_buffer, str | os.PathLike):
        path = os.fspath(path_or_buffer)
        name = source or path
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{name}: no such file")
        with open(path, "rb") as fh:
            head = fh.read(8192)
    elif isinstance(path_or_buffer, bytes | bytearray | memoryview):
        data = bytes(path_or_buffer)
        name = source or "<bytes>"
        head = data[:8192]
    elif hasattr(path_or_buffer, "read"):
        name = source or str(getattr(path_or_buffer, "name", None) or "<buffer>")
        # Read from the start even if the object was read before (Streamlit keeps the
        # same upload object across reruns).
        if getattr(path_or_buffer, "seekable", lambda: False)():
            path_or_buffer.seek(0)
        content = path_or_buffer.read()
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        head = data[:8192]
    else:
        raise TypeError(
            "path_or_buffer must be a path, bytes or a file-like object, got "
            f"{type(path_or_buffer).__name__}"
        )

    if not head.strip():
        raise TripFileError(f"{name} is empty: {EXPECTED}")
    suffix = Path(path or name).suffix.lower()
    if head.startswith(PARQUET_MAGIC):
        return Source(name, "parquet", path, data, None, limits)
    if suffix in (".parquet", ".pq"):
        raise TripFileError(
            f"{name} has a Parquet file extension but is not a Parquet file (it does not "
            f"start with the 'PAR1' marker): {EXPECTED}"
        )
    for magic, compression in COMPRESSION_MAGIC.items():
        if head.startswith(magic):
            return Source(name, "csv", path, data, compression, limits)
    if b"\x00" in head:
        raise TripFileError(
            f"{name} looks like binary data, not text: {EXPECTED} (export an Excel "
            "workbook as CSV first; save UTF-16 text as UTF-8)"
        )
    return Source(name, "csv", path, data, None, limits)


def short_error(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


READ_ERRORS = (
    pd.errors.ParserError,
    pd.errors.EmptyDataError,
    UnicodeError,
    ValueError,
    OSError,
    EOFError,
)


def check_csv_header(src: Source) -> None:
    """Refuse a header too wide or too long from its raw bytes, before pandas reads it."""
    limit = src.limits.header_bytes
    try:
        with src.text() as handle:
            if isinstance(handle, str):
                with open(handle, "rb") as fh:
                    head = fh.read(limit + 1)
            else:
                head = handle.read(limit + 1)
    except DAMAGED as err:
        raise TripFileError(
            f"{src.name} could not be read as CSV ({short_error(err)}): {EXPECTED}"
        ) from None
    try:
        check_header(head[:limit], len(head) <= limit, src.limits, src.name)
    except LimitExceeded as exc:
        raise TripFileError(str(exc), limit=exc.limit) from None


def read_csv_header(src: Source) -> tuple[list[str], str]:
    """Return the header and the delimiter (',' unless the header says otherwise)."""
    check_csv_header(src)
    # Same options as the body read, so the header names match its columns exactly.
    options = {"compression": None, "encoding_errors": "replace", "skipinitialspace": True}
    try:
        with src.text() as handle:
            header = pd.read_csv(handle, nrows=0, **options).columns
        sep = ","
        if len(header) == 1:
            # A single column usually means another delimiter (European exports use ';').
            for candidate in (";", "\t", "|"):
                if candidate in str(header[0]):
                    sep = candidate
                    with src.text() as handle:
                        header = pd.read_csv(handle, nrows=0, sep=sep, **options).columns
                    break
    except pd.errors.EmptyDataError:
        raise TripFileError(f"{src.name} is empty: {EXPECTED}") from None
    except TripFileError:  # a limit passed while pandas read (src.text())
        raise
    except READ_ERRORS as err:
        raise TripFileError(
            f"{src.name} could not be read as CSV ({short_error(err)}): {EXPECTED}"
        ) from None
    if len(header) < 2:
        raise TripFileError(
            f"{src.name} does not look like a table: its first line has a single field "
            f"{str(header[0])[:60]!r}; {EXPECTED}"
        )
    return [str(c) for c in header], sep


def no_data_rows(src: Source) -> TripFileError:
    return TripFileError(f"{src.name} has a header but no data rows: {EXPECTED}")


def zones_needed(src: Source, layout: Layout, columns: list[str]) -> ZonesNeededError:
    zone_columns = [layout.mapping[r] for r in ("origin_zone", "dest_zone") if r in layout.mapping]
    return ZonesNeededError(
        f"{src.name}: trips are given by zone ids ({', '.join(map(repr, zone_columns))}, "
        f"layout {layout.schema}: {layout.label}); give the zone file whose polygons "
        "those ids name: zones=ZoneFile.read(path, id_property=...) in Python, "
        "--zones FILE.geojson:ID_PROPERTY in the CLI",
        columns=[str(c) for c in columns],
    )


def file_columns(src: Source) -> list[str]:
    if src.kind == "parquet":
        import pyarrow.parquet as pq

        try:
            return [str(c) for c in pq.ParquetFile(src.handle()).schema_arrow.names]
        except Exception as err:  # pyarrow raises several unrelated types
            raise TripFileError(
                f"{src.name} could not be read as Parquet ({short_error(err)}): {EXPECTED}"
            ) from None
    return read_csv_header(src)[0]


def as_zone_file(zones) -> ZoneFile | None:
    if zones is None:
        return None
    from vrvm.trips.places.zone_files import ZoneFile

    if isinstance(zones, ZoneFile):
        return zones
    if isinstance(zones, str | os.PathLike):
        return ZoneFile.read(zones)
    raise TypeError(f"zones must be a ZoneFile, a path or None, got {type(zones).__name__}")


ARROW_CODECS = ("gzip", "bz2")
"""Compressions that pyarrow decompresses (it has no xz codec; zip is an archive)."""


def compressed_stream(path_or_data, compression: str | None):
    """The compressed bytes of a path or of bytes, as the stream that decompresses them
    reads them; its ``tell()`` counts the compressed bytes consumed (for the ratio)."""
    if compression in ARROW_CODECS:
        if isinstance(path_or_data, str):
            return pa.OSFile(path_or_data, "rb")
        return pa.BufferReader(path_or_data)
    if isinstance(path_or_data, str):
        return open(path_or_data, "rb")
    return io.BytesIO(path_or_data)


def decompressing(data, compression: str | None, name: str):
    """A binary stream of the decompressed content of ``data`` (``data`` itself if plain).

    ``data`` is bytes or the stream :func:`compressed_stream` gives (a zip archive is
    read from it).
    """
    is_bytes = isinstance(data, bytes | bytearray)
    buffer = compressed_stream(data, compression) if is_bytes else data
    if compression in ARROW_CODECS:
        return pa.CompressedInputStream(buffer, compression)
    if compression == "zip":
        try:
            archive = zipfile.ZipFile(buffer)
        except zipfile.BadZipFile as exc:
            raise TripFileError(f"{name}: the zip archive is damaged ({exc})") from None
        members = [i for i in archive.infolist() if not i.is_dir()]
        if len(members) != 1:
            archive.close()
            raise TripFileError(
                f"{name}: a zip archive must hold exactly one CSV file, this one holds "
                f"{len(members)}"
            )
        return archive.open(members[0])
    return lzma.LZMAFile(buffer) if compression == "xz" else buffer


# pyarrow's codecs raise OSError (pa.ArrowIOError) for damaged data; ArrowException
# covers the rest of what they may raise.
DAMAGED = (OSError, EOFError, zlib.error, lzma.LZMAError, zipfile.BadZipFile, pa.ArrowException)


def damaged(name: str, exc: BaseException) -> TripFileError:
    return TripFileError(f"{name}: the compressed data is damaged ({short_error(exc)})")


def guarded(path_or_data, src: Source) -> GuardedStream:
    """The decompressed text of a compressed file or bytes, read through the guard."""
    compressed = compressed_stream(path_or_data, src.compression)
    try:
        inner = decompressing(compressed, src.compression, src.name)
    except BaseException:
        compressed.close()
        raise
    return GuardedStream(inner, compressed, src.limits, src.name, owned=(compressed,))


def sniff_compression(head: bytes) -> str | None:
    return next((kind for magic, kind in COMPRESSION_MAGIC.items() if head.startswith(magic)), None)
