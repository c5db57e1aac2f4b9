"""The reach map as a PNG for a slide, drawn on the server with matplotlib (no Streamlit).

The browser's map is deck.gl on a canvas, which has no export of its own; this draws
the same zones in the same colours (the grid's hexagon rings, a planner's polygons
from their shapes), the origin, the legend, a title and a footnote, in a local
equirectangular projection (fine at a city's scale). Used by the Reach map's
"Download PNG" button, which calls it only when clicked.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence

import numpy as np

from vrvm.services.map.area import ServiceArea
from vrvm.services.map.places import Place

__all__ = ["reach_map_png"]

_HEX = re.compile(r"#[0-9a-fA-F]{6}")
ORIGIN_COLOUR = "#0072b2"


def _rings(area: ServiceArea, row: int) -> list[list[tuple[float, float]]]:
    """The outer rings, as (lon, lat) pairs, of the zone in grid row ``row``."""
    if area.shapes is None:  # hexagons: the grid's own boundary ring
        return [[tuple(p) for p in area.grid["boundary"].iloc[row]]]
    geometry = area.shapes[row]
    if geometry["type"] == "Polygon":
        return [[tuple(p) for p in geometry["coordinates"][0]]]
    if geometry["type"] == "MultiPolygon":
        return [[tuple(p) for p in polygon[0]] for polygon in geometry["coordinates"]]
    return []


def _swatch(css: str) -> tuple[str, str | None]:
    """A legend entry's colour and hatch: a CSS colour, or the hatched thin-data swatch."""
    if css.startswith("#"):
        return css, None
    found = _HEX.findall(css)
    return (found[-1] if found else "#eeeeee"), "///"


def reach_map_png(
    area: ServiceArea,
    fill: np.ndarray,
    *,
    origin: Place,
    legend: Sequence[tuple[str, str]],
    title: str,
    footnote: str = "",
    width_in: float = 10.0,
    dpi: int = 150,
) -> bytes:
    """The zones filled with ``fill`` (RGBA 0-255, one row per grid row), the origin
    marked A, the legend below, as PNG bytes.

    Examples
    --------
    >>> import h3
    >>> from vrvm.services.map.area import ServiceArea
    >>> import pandas as pd
    >>> cells = ["8a2a1072b59ffff", "8a2a1072b597fff"]
    >>> lat_lng = [h3.cell_to_latlng(c) for c in cells]
    >>> rings = [[(lng, lat) for lat, lng in h3.cell_to_boundary(c)] for c in cells]
    >>> grid = pd.DataFrame({"zone": cells, "lat": [p[0] for p in lat_lng],
    ...                      "lon": [p[1] for p in lat_lng], "label": ["a", "b"],
    ...                      "n_points": [3, 4], "boundary": rings})
    >>> area = ServiceArea(grid=grid, resolution=10, bbox=(0, 0, 0, 0), view=None)
    >>> origin = Place(lat_lng[0][0], lat_lng[0][1], cells[0], "a")
    >>> png = reach_map_png(area, np.array([[0, 114, 178, 255], [230, 159, 0, 255]]),
    ...                     origin=origin, legend=[("near", "#0072b2")], title="Reach")
    >>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.collections import PolyCollection
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    fill = np.asarray(fill, dtype=float)
    if fill.shape != (len(area.grid), 4):
        raise ValueError(
            f"fill must have one RGBA row per zone ({len(area.grid)}), got {fill.shape}"
        )
    lat0 = float(area.grid["lat"].mean())
    squeeze = math.cos(math.radians(lat0))  # degrees of longitude are shorter

    polygons, colours = [], []
    for row in range(len(area.grid)):
        for ring in _rings(area, row):
            polygons.append([(lon * squeeze, lat) for lon, lat in ring])
            colours.append(fill[row] / 255.0)
    xs = np.concatenate([np.asarray(p)[:, 0] for p in polygons])
    ys = np.concatenate([np.asarray(p)[:, 1] for p in polygons])
    aspect = (ys.max() - ys.min()) / max(xs.max() - xs.min(), 1e-9)
    height_in = min(max(width_in * aspect, 4.0), 14.0) + 1.6  # room for the legend

    figure = Figure(figsize=(width_in, height_in), dpi=dpi)
    axes = figure.add_axes((0.02, 0.14, 0.96, 0.78))
    axes.add_collection(
        PolyCollection(polygons, facecolors=colours, edgecolors=(0.55, 0.55, 0.55, 0.6), lw=0.3)
    )
    axes.plot(origin.lon * squeeze, origin.lat, "o", ms=14, mfc=ORIGIN_COLOUR, mec="white", mew=2)
    axes.text(
        origin.lon * squeeze,
        origin.lat,
        "A",
        color="white",
        ha="center",
        va="center",
        fontsize=9,
        fontweight="bold",
    )
    pad_x, pad_y = 0.02 * (xs.max() - xs.min()), 0.02 * (ys.max() - ys.min())
    axes.set_xlim(xs.min() - pad_x, xs.max() + pad_x)
    axes.set_ylim(ys.min() - pad_y, ys.max() + pad_y)
    axes.set_aspect("equal")
    axes.set_axis_off()
    figure.suptitle(title, x=0.02, y=0.985, ha="left", fontsize=13, fontweight="bold")
    handles = []
    for label, css in legend:
        colour, hatch = _swatch(css)
        handles.append(Patch(facecolor=colour, edgecolor="#999999", hatch=hatch, label=label))
    if handles:
        figure.legend(
            handles=handles,
            loc="lower left",
            bbox_to_anchor=(0.02, 0.045),
            ncol=min(len(handles), 4),
            fontsize=8,
            frameon=False,
        )
    if footnote:
        figure.text(0.02, 0.012, footnote, fontsize=7, color="#555555", ha="left", va="bottom")
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=dpi, facecolor="white")
    return out.getvalue()
