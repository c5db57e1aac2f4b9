"""Fixtures shared by the trip-model tests."""

from __future__ import annotations

import pytest

import vrvm.trips.model._ensemble as ensemble


@pytest.fixture
def member_weights(monkeypatch):
    """The sample weight of every member fit, in the order they are fitted."""
    seen = []
    real = ensemble._fit_member

    def recording(index, X, y, d, params, weight=None):
        seen.append(weight)
        return real(index, X, y, d, params, weight)

    monkeypatch.setattr(ensemble, "_fit_member", recording)
    return seen
