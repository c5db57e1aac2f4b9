"""Colours and legends: one palette per meaning, binned fills and their legend entries.

Origin and destination take the Okabe-Ito blue and vermilion, distinguishable with the
common colour-vision deficiencies; sequential palettes colour maps by time, probability,
weight or width. Every colour is RGB here; :func:`rgba` and :func:`hex_colour` convert.
Zones whose answer rests on thin data are :func:`faded` (paler and see-through), with
:data:`THIN_SWATCH` as their legend swatch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "DEST_RGB",
    "ORIGIN_RGB",
    "PROBABILITY_EDGES",
    "PROBABILITY_PALETTE",
    "THIN_SWATCH",
    "TIME_PALETTE",
    "WEIGHT_PALETTE",
    "WIDTH_PALETTE",
    "binned_colors",
    "faded",
    "hex_colour",
    "legend_entries",
    "nice_edges",
    "rgba",
]

ORIGIN_RGB = (0, 114, 178)
DEST_RGB = (213, 94, 0)
TIME_PALETTE = [
    (255, 255, 204),
    (199, 233, 180),
    (127, 205, 187),
    (65, 182, 196),
    (44, 127, 184),
    (37, 52, 148),
]
PROBABILITY_PALETTE = [  # sequential greens: the zones reached with >= 90 % stand out
    (240, 240, 240),
    (199, 233, 192),
    (161, 217, 155),
    (65, 171, 93),
    (0, 109, 44),
]
PROBABILITY_EDGES = (0.0, 0.5, 0.8, 0.9, 0.95, 1.0)
WEIGHT_PALETTE = [(254, 224, 139), (253, 174, 97), (244, 109, 67), (215, 48, 39), (165, 0, 38)]
WIDTH_PALETTE = [(199, 233, 192), (116, 196, 118), (49, 163, 84), (0, 109, 44), (0, 68, 27)]
FADE_TOWARDS = (235, 235, 235)
FADE_SHARE = 0.6
FADE_ALPHA = 90
THIN_SWATCH = "repeating-linear-gradient(135deg, #d0d0d0 0 2px, #f4f4f4 2px 5px)"
"""CSS background of the legend swatch of faded (thin-data) zones: pale, hatched."""


def rgba(rgb: tuple[int, int, int], alpha: int) -> list[int]:
    """``[r, g, b, alpha]`` as plain ints (what deck.gl layers take)."""
    return [int(rgb[0]), int(rgb[1]), int(rgb[2]), int(alpha)]


def hex_colour(rgb: tuple[int, int, int]) -> str:
    """``"#rrggbb"`` (what plotly and CSS take).

    Examples
    --------
    >>> hex_colour(ORIGIN_RGB)
    '#0072b2'
    """
    r, g, b = (int(v) for v in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def nice_edges(values: np.ndarray, n_bins: int = 6) -> np.ndarray:
    """Rounded, increasing bin edges spanning ``values`` (for a legend in minutes).

    Examples
    --------
    >>> nice_edges(np.array([3.2, 7.9, 18.4, 41.0]), 4).tolist()
    [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    """
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return np.linspace(0.0, 1.0, n_bins + 1)
    lo, hi = float(values.min()), float(values.max())
    raw_step = max((hi - lo) / n_bins, 1e-9)
    magnitude = 10 ** math.floor(math.log10(raw_step))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw_step)
    start = math.floor(lo / step) * step
    stop = math.ceil(hi / step) * step
    if stop <= hi:
        stop += step
    return np.arange(start, stop + 0.5 * step, step)


def _stretched(palette: Sequence[tuple[int, int, int]], n_bins: int) -> np.ndarray:
    """The palette's colours for ``n_bins`` bins, stretched when the numbers differ."""
    pick = np.round(np.linspace(0, len(palette) - 1, n_bins)).astype(int)
    return np.asarray(palette, dtype=np.int64)[pick]


def binned_colors(
    values: np.ndarray,
    edges: Sequence[float],
    palette: Sequence[tuple[int, int, int]],
    *,
    alpha: int = 180,
) -> np.ndarray:
    """RGBA colour of each value by bin (``edges`` increasing); NaN is grey.

    The palette is stretched over the bins when their numbers differ.
    """
    values = np.asarray(values, dtype=float)
    edges = np.asarray(edges, dtype=float)
    n_bins = len(edges) - 1
    bins = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, n_bins - 1)
    colours = _stretched(palette, n_bins)[bins]
    rgba = np.column_stack([colours, np.full(values.size, alpha)])
    rgba[~np.isfinite(values)] = (160, 160, 160, 90)
    return rgba


def faded(fill: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """RGBA fills with the ``mask`` rows paler and more transparent (thin data).

    Each masked colour moves ``FADE_SHARE`` of the way towards light grey and its
    alpha drops to ``FADE_ALPHA``, so the colour's bin stays recognisable.

    Examples
    --------
    >>> faded(np.array([[0, 100, 200, 180], [0, 100, 200, 180]]), np.array([False, True]))
    array([[  0, 100, 200, 180],
           [141, 181, 221,  90]])
    """
    out = np.array(fill, dtype=np.int64, copy=True)
    mask = np.asarray(mask, dtype=bool)
    rgb = out[mask, :3].astype(float)
    out[mask, :3] = np.round(rgb + FADE_SHARE * (np.asarray(FADE_TOWARDS) - rgb)).astype(np.int64)
    out[mask, 3] = np.minimum(out[mask, 3], FADE_ALPHA)
    return out


def legend_entries(
    edges: Sequence[float], palette: Sequence[tuple[int, int, int]], fmt: Callable[[float], str]
) -> list[tuple[str, str]]:
    """``(label, "#rrggbb")`` per bin, for a legend beside the map."""
    colours = _stretched(palette, len(edges) - 1)
    return [
        (f"{fmt(lo)} - {fmt(hi)}", hex_colour(rgb))
        for lo, hi, rgb in zip(edges[:-1], edges[1:], colours, strict=True)
    ]
