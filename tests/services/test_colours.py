"""Colours and legends."""

from __future__ import annotations

import numpy as np

from vrvm.services.display.colours import binned_colors, nice_edges


def test_binned_colours_and_nice_edges():
    edges = nice_edges(np.array([2.0, 13.0]), 4)
    assert edges[0] <= 2 and edges[-1] > 13
    colours = binned_colors(np.array([0.1, 0.6, np.nan]), [0, 0.5, 1], [(0, 0, 0), (255, 255, 255)])
    assert colours[0, :3].tolist() == [0, 0, 0] and colours[1, :3].tolist() == [255, 255, 255]
    assert colours[2].tolist() == [160, 160, 160, 90]
