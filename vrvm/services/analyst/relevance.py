"""What the model learned: the training trips kept as relevance vectors, convergence, noise.

Each relevance vector is a training trip whose kernel columns kept a non-zero weight;
:func:`relevance_table` lists them per member, :func:`elbo_curves` shows how each member
converged and :func:`noise_sentence` says how much spread the model leaves unexplained.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from vrvm.services.display.colours import (
    WEIGHT_PALETTE,
    WIDTH_PALETTE,
    binned_colors,
    legend_entries,
)
from vrvm.trips.model.travel_time import TravelTimeModel
from vrvm.trips.places.geo import haversine_km

__all__ = [
    "elbo_curves",
    "filter_relevance",
    "member_columns",
    "member_table",
    "noise_sentence",
    "relevance_colors",
    "relevance_table",
]


def relevance_table(model: TravelTimeModel) -> pd.DataFrame:
    """One row per (member, relevance-vector trip), with minutes and distance.

    The columns of :meth:`TravelTimeModel.relevance_trips` plus ``travel_min`` and
    ``distance_km`` (straight line).
    """
    table = model.relevance_trips()
    table["travel_min"] = table["travel_time_s"] / 60.0
    table["distance_km"] = haversine_km(
        table["origin_lat"], table["origin_lon"], table["dest_lat"], table["dest_lon"]
    )
    return table


def filter_relevance(
    table: pd.DataFrame,
    *,
    members: Sequence[int] | None = None,
    hours: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Rows of chosen members whose start hour lies in ``hours`` (inclusive; wraps).

    Examples
    --------
    >>> t = pd.DataFrame({"member": [0, 1, 1], "hour": [7, 8, 23]})
    >>> filter_relevance(t, members=[1], hours=(22, 8))["hour"].tolist()
    [8, 23]
    """
    mask = np.ones(len(table), dtype=bool)
    if members is not None:
        mask &= table["member"].isin(list(members)).to_numpy()
    if hours is not None:
        lo, hi = int(hours[0]), int(hours[1])
        hour = table["hour"].to_numpy()
        mask &= (hour >= lo) & (hour <= hi) if lo <= hi else (hour >= lo) | (hour <= hi)
    return table.loc[mask].reset_index(drop=True)


def relevance_colors(
    table: pd.DataFrame, by: str = "weight"
) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Arc colours by |weight| (quantile bins) or by kernel width (one colour per width)."""
    if by == "weight":
        values = table["weight"].to_numpy(float)
        if values.size == 0:
            return np.empty((0, 4), dtype=np.int64), []
        edges = np.unique(np.quantile(values, np.linspace(0, 1, len(WEIGHT_PALETTE) + 1)))
        if edges.size < 2:
            edges = np.array([values.min(), values.min() + 1.0])
        colours = binned_colors(values, edges, WEIGHT_PALETTE, alpha=150)
        return colours, legend_entries(edges, WEIGHT_PALETTE, lambda v: f"{v:.3g}")
    if by == "width":
        values = table["width"].to_numpy(float)
        widths = np.unique(values[np.isfinite(values)])
        if widths.size == 0:
            return np.tile([150, 150, 150, 200], (len(values), 1)), []
        edges = np.append(widths, widths[-1] + 1.0)
        colours = binned_colors(values, edges, WIDTH_PALETTE, alpha=150)
        legend = legend_entries(edges, WIDTH_PALETTE, lambda v: f"{v:.3g}")
        legend = [(f"width {w:.3g}", colour) for w, (_, colour) in zip(widths, legend, strict=True)]
        return colours, legend
    raise ValueError(f"colour arcs 'by' must be 'weight' or 'width', got {by!r}")


def elbo_curves(model: TravelTimeModel) -> pd.DataFrame:
    """Each member's ELBO per iteration (long format: ``member``, ``iteration``, ``elbo``)."""
    frames = []
    for m, member in enumerate(model.members_):
        elbo = np.asarray(member.elbo_, dtype=float)
        frames.append(
            pd.DataFrame({"member": m, "iteration": np.arange(1, elbo.size + 1), "elbo": elbo})
        )
    return (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["member", "iteration", "elbo"])
    )


def member_table(model: TravelTimeModel) -> pd.DataFrame:
    """Per member: relevance vectors, shard size, noise and the noise as a multiplicative spread.

    For a log-target model the noise standard deviation s is on log-seconds, so a
    trip's noise is a factor exp(+-s): ``noise_pct`` = 100 (exp(s) - 1).
    """
    rows = []
    shard = model.shard_sizes_
    for m, member in enumerate(model.members_):
        s = float(member.noise_std_)
        row = {
            "member": m,
            "relevance_vectors": int(member.n_relevance_),
            "shard_trips": int(shard[m]),
            "noise_std": s,
            "iterations": len(member.elbo_),
        }
        row["noise_pct"] = 100.0 * (math.exp(s) - 1.0) if model.target == "log" else None
        rows.append(row)
    return pd.DataFrame(rows)


def member_columns(model: TravelTimeModel) -> dict[str, str]:
    """Names of :func:`member_table`'s columns as shown, each with its unit.

    Examples
    --------
    >>> from vrvm import TravelTimeModel
    >>> member_columns(TravelTimeModel(target="log"))["noise_std"]
    'noise std (log-seconds)'
    >>> member_columns(TravelTimeModel(target="seconds"))["noise_std"]
    'noise std (s)'
    """
    return {
        "member": "member",
        "relevance_vectors": "relevance vectors",
        "shard_trips": "trips in shard",
        "noise_std": "noise std (log-seconds)" if model.target == "log" else "noise std (s)",
        "iterations": "iterations",
        "noise_pct": "noise spread (± %)",
    }


def noise_sentence(model: TravelTimeModel) -> str:
    """The noise estimate in words."""
    s = np.array([float(m.noise_std_) for m in model.members_])
    if model.target == "log":
        pct = 100.0 * (np.exp(np.median(s)) - 1.0)
        text = (
            f"Noise std {np.median(s):.3f} on log-seconds (median over members, range "
            f"{s.min():.3f}-{s.max():.3f}): an unexplained spread of about ±{pct:.0f} % "
            "of a trip's typical time."
        )
    else:
        text = f"Noise std {np.median(s):.1f} s (median over members)."
    if model.noise_scale_coef_.any():
        km = (0.5, 2.0, 10.0)
        factors = ", ".join(
            f"{g:.2f} times at {k:g} km" for k, g in zip(km, model.noise_scale_at(km), strict=True)
        )
        text += f" The spread is scaled with trip distance ({factors})."
    if model.twin_scale_ > 0:
        low, high = np.exp(-model.twin_scale_), np.exp(model.twin_scale_)
        text += (
            f" Each member predicts with two spreads of equal weight, {low:.2f} and "
            f"{high:.2f} times its own: a sharper middle and heavier tails, for trips "
            "that are sometimes much slower than usual."
        )
    return text
