"""Models side by side on the same hold-out trips."""

from __future__ import annotations

import pandas as pd

from vrvm import synthetic_city
from vrvm.services.evaluation import share_inside_bbox


def test_share_inside_bbox(tiny_model):
    assert share_inside_bbox(tiny_model, synthetic_city(200, seed=3)) > 0.9
    chicago = pd.DataFrame(
        {"origin_lat": [41.9], "origin_lon": [-87.6], "dest_lat": [41.8], "dest_lon": [-87.7]}
    )
    assert share_inside_bbox(tiny_model, chicago) == 0.0
