"""Numbers as short text, the same way in links, file names and table columns."""

from __future__ import annotations

__all__ = ["format_number"]


def format_number(value: float) -> str:
    """A number as short text: at most 6 decimals, no trailing zeros.

    Examples
    --------
    >>> format_number(8.0), format_number(-39.98), format_number(0.1234567)
    ('8', '-39.98', '0.123457')
    """
    return f"{value:.6f}".rstrip("0").rstrip(".")
