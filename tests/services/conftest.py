"""Fixtures of the service tests: an origin and a destination in the tiny demo area."""

from __future__ import annotations

import pytest

from vrvm.services.map.places import place_from_zone


@pytest.fixture(scope="session")
def pair(tiny_area):
    grid = tiny_area.grid
    busiest = grid.sort_values("n_points", ascending=False)["zone"]
    origin = place_from_zone(tiny_area, busiest.iloc[0])
    dest = place_from_zone(tiny_area, busiest.iloc[5])
    return origin, dest
