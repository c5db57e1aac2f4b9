"""How to read a trip file (:class:`ReadOptions`), and named recipes that remember it.

A file whose layout vrvm does not know is read by saying what its columns mean (the
roles of :mod:`vrvm.trips.files.layouts`) and how its times are written
(:mod:`vrvm.trips.files.formats`). :class:`ReadOptions` holds those answers in one object
that the CLI, the upload page and Python pass to :func:`~vrvm.trips.files.reader.read_trips`.
A :class:`RecipeBook` keeps them under a name in the data home, keyed by the file's
header, so the next file with the same columns is read without asking again.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vrvm.trips.files.formats import TimeFormats
from vrvm.trips.files.layouts import ROLES, SCHEMAS, normalise_column
from vrvm.trips.places.timezones import check_zone
from vrvm.trips.store.durable import atomic_write_json

__all__ = ["ReadOptions", "Recipe", "RecipeBook", "header_key"]

_NAME = re.compile(r"^[\w .,()-]{1,80}$")


@dataclass(frozen=True)
class ReadOptions:
    """Everything :func:`~vrvm.trips.files.reader.read_trips` needs to know about a file's layout.

    Parameters
    ----------
    schema : str, default="auto"
        ``"auto"`` or one of :data:`~vrvm.trips.files.layouts.SCHEMAS`.
    tz : str or None
        IANA zone of times without an offset (default: the city a recognised layout
        names, else the zone where the trips are; see
        :mod:`vrvm.trips.files.layouts`).
    column_map : dict of str to str
        Role -> column of the file.
    date_format, clock_format, weekday_format : str or None
        See :mod:`vrvm.trips.files.formats`.
    zones : str or None
        Name of a zone file kept in the data home, for trips given by zone ids.

    Examples
    --------
    >>> options = ReadOptions(column_map={"start_date": "day", "start_clock": "time"},
    ...                       date_format="dayfirst", clock_format="hours")
    >>> ReadOptions.from_dict(options.to_dict()) == options
    True
    >>> ReadOptions(column_map={"pickup": "x"})
    Traceback (most recent call last):
    ...
    ValueError: column_map: unknown role 'pickup'; roles are origin_lat, origin_lon, \
dest_lat, dest_lon, origin_zone, dest_zone, start_time, start_date, start_clock, \
start_hour, start_minute, weekday, travel_time_s, travel_time_min, end_time
    """

    schema: str = "auto"
    tz: str | None = None
    column_map: dict[str, str] = field(default_factory=dict)
    date_format: str | None = None
    clock_format: str | None = None
    weekday_format: str | None = None
    zones: str | None = None

    def __post_init__(self):
        if self.schema != "auto" and self.schema not in SCHEMAS:
            raise ValueError(
                f"schema must be 'auto' or one of {list(SCHEMAS)}, got {self.schema!r}"
            )
        check_zone(self.tz)
        column_map = dict(self.column_map or {})
        for role, column in column_map.items():
            if role not in ROLES:
                raise ValueError(f"column_map: unknown role {role!r}; roles are {', '.join(ROLES)}")
            if not isinstance(column, str) or not column.strip():
                raise ValueError(f"column_map: role {role!r} needs a column name, got {column!r}")
        object.__setattr__(self, "column_map", column_map)
        TimeFormats(self.date_format or "auto", self.clock_format or "auto", self.weekday_format)

    def read_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`read_trips` (``zones`` excluded: it names a file)."""
        return {
            "schema": self.schema,
            "tz": self.tz,
            "column_map": dict(self.column_map) or None,
            "date_format": self.date_format,
            "clock_format": self.clock_format,
            "weekday_format": self.weekday_format,
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return asdict(self)

    def cli_args(self) -> list[str]:
        """The options of ``vrvm train`` (and every command that reads trips) that say
        the same: ``--map ROLE=COLUMN`` per role, then the formats, zone and schema.

        ``zones`` names a zone file of a data home, which the CLI takes as a path:
        it is left out.

        Examples
        --------
        >>> ReadOptions(column_map={"start_date": "day", "start_clock": "Time"},
        ...             date_format="dayfirst", tz="America/New_York").cli_args()
        ['--map', 'start_date=day', '--map', 'start_clock=Time', '--date-format', \
'dayfirst', '--tz', 'America/New_York']
        """
        args: list[str] = []
        for role, column in self.column_map.items():
            args += ["--map", f"{role}={column}"]
        for flag, value in (
            ("--date-format", self.date_format),
            ("--clock-format", self.clock_format),
            ("--weekday-format", self.weekday_format),
            ("--tz", self.tz),
        ):
            if value:
                args += [flag, value]
        if self.schema != "auto":
            args += ["--schema", self.schema]
        return args

    def command_line(self, path: str, command: str = "train") -> str:
        """``vrvm COMMAND PATH`` with :meth:`cli_args`, quoted for a POSIX shell.

        Examples
        --------
        >>> ReadOptions(column_map={"start_clock": "Pick up time"}).command_line("my trips.csv")
        "vrvm train 'my trips.csv' --map 'start_clock=Pick up time'"
        """
        return shlex.join(["vrvm", command, str(path), *self.cli_args()])

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReadOptions:
        """The options saved by :meth:`to_dict` (unknown keys are refused)."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"read options: unknown field(s) {unknown}")
        return cls(**dict(data))


def header_key(columns: Iterable[object]) -> str:
    """The identity of a header: its normalised column names, sorted, joined.

    Examples
    --------
    >>> header_key(["Pickup Date", "fare"]) == header_key(["fare", "pickup_date"])
    True
    """
    return "|".join(sorted(normalise_column(c) for c in columns))


@dataclass(frozen=True)
class Recipe:
    """Read options saved under a name for files with one header."""

    name: str
    header: str
    columns: list[str]
    options: ReadOptions
    saved_at: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "header": self.header,
            "columns": list(self.columns),
            "options": self.options.to_dict(),
            "saved_at": self.saved_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Recipe:
        return cls(
            name=str(data["name"]),
            header=str(data["header"]),
            columns=[str(c) for c in data["columns"]],
            options=ReadOptions.from_dict(data["options"]),
            saved_at=str(data["saved_at"]),
        )


class RecipeBook:
    """Named read recipes in one JSON file (written atomically).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> book = RecipeBook(pathlib.Path(tempfile.mkdtemp()) / "recipes.json")
    >>> columns = ["day", "time", "secs", "a", "b", "c", "d"]
    >>> _ = book.save("my city", columns, ReadOptions(date_format="dayfirst"))
    >>> book.find(["secs", "time", "day", "a", "b", "c", "d"]).name
    'my city'
    >>> book.find(["other"]) is None, [r.name for r in book.list()]
    (True, ['my city'])
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def list(self) -> list[Recipe]:
        """Every recipe, in the order they were saved."""
        if not self.path.is_file():
            return []
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return [Recipe.from_dict(entry) for entry in data["recipes"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{self.path}: the saved read recipes are damaged ({exc})") from None

    def find(self, columns: Iterable[object]) -> Recipe | None:
        """The recipe saved for this header (the latest if several), or None."""
        key = header_key(columns)
        found = [r for r in self.list() if r.header == key]
        return found[-1] if found else None

    def save(self, name: str, columns: Iterable[object], options: ReadOptions) -> Recipe:
        """Save ``options`` under ``name`` for files with these ``columns``.

        A recipe with the same name or header is replaced.
        """
        name = str(name).strip()
        if not _NAME.match(name):
            raise ValueError(
                "a recipe name is 1-80 letters, digits, spaces or . , ( ) - _; got " + repr(name)
            )
        columns = [str(c) for c in columns]
        recipe = Recipe(
            name=name,
            header=header_key(columns),
            columns=columns,
            options=options,
            saved_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        kept = [r for r in self.list() if r.name != name and r.header != recipe.header]
        self._write([*kept, recipe])
        return recipe

    def remove(self, name: str) -> bool:
        """Remove the recipe called ``name``; whether there was one."""
        recipes = self.list()
        kept = [r for r in recipes if r.name != name]
        if len(kept) == len(recipes):
            return False
        self._write(kept)
        return True

    def _write(self, recipes: list[Recipe]) -> None:
        atomic_write_json(self.path, {"recipes": [r.to_dict() for r in recipes]})
