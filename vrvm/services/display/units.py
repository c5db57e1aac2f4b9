"""Units of the scores shown: every metric's label, unit and value, in seconds or minutes.

The engine scores in seconds (:func:`vrvm.evaluate_distribution`: ``crps_s``,
``mae_s``, ...), the app shows minutes and the CLI either (``--units``). Every score
shown anywhere gets its label and unit from :data:`METRICS` here: times in the chosen
unit, NLL in nats, coverage and MAPE in %, counts bare.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "METRICS",
    "TIME_UNITS",
    "check_time_units",
    "format_metric",
    "metric_label",
    "metric_unit",
    "metric_value",
]

TIME_UNITS: Mapping[str, float] = {"s": 1.0, "min": 60.0}
"""Seconds per unit of each time unit a score can be shown in."""

METRICS: Mapping[str, tuple[str, str]] = {
    "n": ("trips scored", "count"),
    "crps_s": ("CRPS", "time"),
    "mae_s": ("MAE", "time"),
    "rmse_s": ("RMSE", "time"),
    "bias_s": ("bias", "time"),
    "mean_width_s": ("interval width", "time"),
    "mape_pct": ("MAPE", "%"),
    "nll": ("NLL", "nats"),
    "coverage": ("interval coverage", "share"),
}
"""Each metric's key in the engine's results -> (label, kind of quantity).

Kinds: ``"time"`` (stored in seconds, shown in the chosen unit), ``"share"`` (stored as
a fraction, shown in %), ``"%"``, ``"nats"`` and ``"count"`` (no unit).
"""

_KIND_UNIT = {"share": "%", "%": "%", "nats": "nats", "count": ""}
_DECIMALS = {"s": 1, "min": 2, "%": 1, "nats": 3, "": 0}


def check_time_units(units: str) -> str:
    """``units`` if it is a time unit of :data:`TIME_UNITS`, else a ValueError naming them.

    Examples
    --------
    >>> check_time_units("min")
    'min'
    >>> check_time_units("h")
    Traceback (most recent call last):
    ...
    ValueError: units must be 's' or 'min', got 'h'
    """
    if units not in TIME_UNITS:
        raise ValueError(f"units must be 's' or 'min', got {units!r}")
    return units


def _kind(name: str) -> str:
    try:
        return METRICS[name][1]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(METRICS)}") from None


def metric_unit(name: str, units: str = "min") -> str:
    """The unit metric ``name`` is shown in (``""`` for counts).

    Examples
    --------
    >>> metric_unit("crps_s"), metric_unit("mae_s", "s"), metric_unit("nll")
    ('min', 's', 'nats')
    >>> metric_unit("coverage"), metric_unit("n")
    ('%', '')
    """
    kind = _kind(name)
    return check_time_units(units) if kind == "time" else _KIND_UNIT[kind]


def metric_value(name: str, value: float | None, units: str = "min") -> float | None:
    """``value`` of metric ``name`` (as the engine stores it) in its shown unit.

    Examples
    --------
    >>> metric_value("crps_s", 150.0), metric_value("coverage", 0.875)
    (2.5, 87.5)
    >>> metric_value("nll", 6.1, "s"), metric_value("mae_s", None)
    (6.1, None)
    """
    kind = _kind(name)
    if value is None:
        return None
    if kind == "time":
        return float(value) / TIME_UNITS[check_time_units(units)]
    if kind == "share":
        return 100.0 * float(value)
    return value


def metric_label(name: str, units: str = "min", *, label: str | None = None) -> str:
    """The column or row name of metric ``name``: its label and unit in brackets.

    Examples
    --------
    >>> metric_label("crps_s"), metric_label("rmse_s", "s", label="RMSE of median")
    ('CRPS (min)', 'RMSE of median (s)')
    >>> metric_label("nll"), metric_label("n")
    ('NLL (nats)', 'trips scored')
    """
    unit = metric_unit(name, units)  # checks the name
    text = label or METRICS[name][0]
    return f"{text} ({unit})" if unit else text


def format_metric(
    name: str, value: float | None, units: str = "s", *, decimals: int | None = None
) -> str:
    """``value`` of metric ``name`` as text with its unit (``"n/a"`` when missing).

    Parameters
    ----------
    name : str
        A key of :data:`METRICS` (``"crps_s"``, ``"nll"``, ``"coverage"``, ...).
    value : float or None
        As the engine stores it: seconds, nats, a fraction for coverage.
    units : {"s", "min"}, default="s"
        Unit of times (``vrvm evaluate --units``).
    decimals : int, optional
        Digits after the point (default: 1 for s and %, 2 for min, 3 for nats).

    Examples
    --------
    >>> format_metric("crps_s", 176.83), format_metric("crps_s", 176.83, "min")
    ('176.8 s', '2.95 min')
    >>> format_metric("nll", 6.1234), format_metric("coverage", 0.9), format_metric("nll", None)
    ('6.123 nats', '90.0 %', 'n/a')
    >>> format_metric("n", 1200)
    '1,200'
    """
    shown = metric_value(name, value, units)
    if shown is None:
        return "n/a"
    unit = metric_unit(name, units)
    digits = _DECIMALS[unit] if decimals is None else int(decimals)
    number = f"{shown:,.{digits}f}"
    return f"{number} {unit}" if unit else number
