"""Relevance vectors, ELBO curves and the noise sentence."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vrvm.services.analyst.relevance import (
    elbo_curves,
    filter_relevance,
    member_table,
    noise_sentence,
    relevance_colors,
    relevance_table,
)


def test_relevance_table_and_filters(tiny_model):
    table = relevance_table(tiny_model)
    assert len(table) == int(tiny_model.n_relevance_.sum())
    np.testing.assert_allclose(table["travel_min"], table["travel_time_s"] / 60)
    assert (table["distance_km"] >= 0).all()
    one = filter_relevance(table, members=[1])
    assert set(one["member"]) == {1} and len(one) == tiny_model.n_relevance_[1]
    rush = filter_relevance(table, hours=(7, 9))
    assert rush["hour"].between(7, 9).all()
    night = filter_relevance(table, hours=(22, 3))
    assert night["hour"].isin([22, 23, 0, 1, 2, 3]).all()
    assert len(filter_relevance(table)) == len(table)


def test_relevance_colours_by_weight_and_width(tiny_model):
    table = relevance_table(tiny_model)
    colours, legend = relevance_colors(table, "weight")
    assert colours.shape == (len(table), 4) and len(legend) >= 2
    colours, legend = relevance_colors(table, "width")
    assert [label for label, _ in legend] == ["width 1.5", "width 3"]
    with pytest.raises(ValueError):
        relevance_colors(table, "colour")
    empty, no_legend = relevance_colors(table.iloc[:0], "weight")
    assert empty.shape == (0, 4) and no_legend == []


def test_elbo_curves_member_table_and_noise(tiny_model):
    curves = elbo_curves(tiny_model)
    assert set(curves["member"]) == {0, 1}
    for m, member in enumerate(tiny_model.members_):
        np.testing.assert_allclose(curves.loc[curves["member"] == m, "elbo"], member.elbo_)
    members = member_table(tiny_model)
    assert members["relevance_vectors"].tolist() == tiny_model.n_relevance_.tolist()
    s = tiny_model.members_[0].noise_std_
    assert members["noise_pct"][0] == pytest.approx(100 * (math.exp(s) - 1))
    sentence = noise_sentence(tiny_model)
    assert "log-seconds" in sentence
    assert tiny_model.noise_scale_coef_.any()  # the default distance scale
    g = tiny_model.noise_scale_at([0.5, 2.0, 10.0])
    assert f"{g[0]:.2f} times at 0.5 km" in sentence and f"{g[2]:.2f} times at 10 km" in sentence
    a = tiny_model.twin_scale_  # the default twin scales
    assert a > 0 and f"two spreads of equal weight, {math.exp(-a):.2f} and" in sentence
