"""Text cells of CSV outputs made safe to open in a spreadsheet (no formula injection).

A spreadsheet opening a CSV file runs a cell that starts with ``=``, ``+``, ``-`` or
``@`` as a formula, and a leading tab or carriage return can hide such a start; a
zone, base or point named ``=cmd|' /C calc'!A0`` would then run a command on the
planner's machine when the download is opened (OWASP, "CSV Injection"). Every CSV
this package writes passes its table through :func:`safe_cells` first, which
prefixes such text with a single quote (``'``), as OWASP recommends: the spreadsheet
shows the text as typed and runs nothing.

Only text is touched. Numeric, boolean and date-time columns are left as they are (a
negative number stays a number), and so is text that is just a number (``-39.98``,
``+1``), which a spreadsheet reads as that number. Column names are cells too and are
treated the same way.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

__all__ = ["FORMULA_STARTS", "safe_cell", "safe_cells"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula (OWASP)."""

_PLAIN_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def safe_cell(value: Any) -> Any:
    """One cell: text a spreadsheet would run, prefixed with ``'``; anything else as is.

    Parameters
    ----------
    value : object
        A cell's value.

    Returns
    -------
    object
        ``"'" + value`` for text starting with one of :data:`FORMULA_STARTS` that is
        not just a number; ``value`` unchanged otherwise.

    Examples
    --------
    >>> safe_cell("=cmd|' /C calc'!A0")
    "'=cmd|' /C calc'!A0"
    >>> safe_cell("@SUM(A1)"), safe_cell("\\t=1+1"), safe_cell("Loop")
    ("'@SUM(A1)", "'\\t=1+1", 'Loop')
    >>> safe_cell("-39.98"), safe_cell(-39.98), safe_cell("-1+2")
    ('-39.98', -39.98, "'-1+2")
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        if not _PLAIN_NUMBER.fullmatch(value):
            return "'" + value
    return value


def _is_text(column: pd.Series) -> bool:
    return (
        column.dtype == object
        or isinstance(column.dtype, pd.StringDtype)
        or (isinstance(column.dtype, pd.CategoricalDtype) and column.cat.categories.dtype == object)
    )


def _renamer(changed: dict[str, str]):
    """``value -> changed[value]`` for text in ``changed``; anything else unchanged."""
    return lambda value: changed.get(value, value) if isinstance(value, str) else value


def safe_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """A table whose text cells and column names are safe to open in a spreadsheet.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table about to be written as CSV.

    Returns
    -------
    pandas.DataFrame
        ``frame`` itself when no cell needs a change (no copy); otherwise a copy in
        which every text cell and column name is passed through :func:`safe_cell`.
        Numeric, boolean and date-time columns are never changed.

    Notes
    -----
    Each column is judged on its distinct values (names repeat in long tables: a
    matrix names each origin once per destination), so the cost grows with the
    distinct names, not with the rows.

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"origin": ["=cmd|' /C calc'!A0", "Loop"], "lon": [-87.6, -87.9]})
    >>> print(safe_cells(table).to_csv(index=False), end="")
    origin,lon
    '=cmd|' /C calc'!A0,-87.6
    Loop,-87.9
    >>> plain = table.iloc[1:]
    >>> safe_cells(plain) is plain  # nothing to change: no copy
    True
    """
    out = frame
    for position in range(frame.shape[1]):
        column = frame.iloc[:, position]
        if not _is_text(column):
            continue
        categorical = isinstance(column.dtype, pd.CategoricalDtype)
        values = column.cat.categories if categorical else pd.unique(column.to_numpy(object))
        changed = {v: safe_cell(v) for v in values if isinstance(v, str)}
        changed = {v: safe for v, safe in changed.items() if safe is not v}
        if not changed:
            continue
        if out is frame:
            out = frame.copy()
        if categorical:
            out.isetitem(position, column.cat.rename_categories(_renamer(changed)))
        else:
            out.isetitem(position, column.map(_renamer(changed)))
    names = [safe_cell(name) for name in frame.columns]
    if any(new is not old for new, old in zip(names, frame.columns, strict=True)):
        if out is frame:
            out = frame.copy()
        out.columns = names
    return out
