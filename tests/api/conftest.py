"""Fixtures of the API tests: the app over a writable copy of the tiny demo home."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from vrvm.api import ApiSettings, create_app


@pytest.fixture
def make_client(vrvm_home):
    """``make_client(**settings)``: a started TestClient over the tiny home."""
    clients = []

    def make(**values):
        values.setdefault("home", vrvm_home)
        values.setdefault("check_every_s", 0.05)
        client = TestClient(create_app(ApiSettings(**values)))
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client):
    return make_client()


@pytest.fixture
def zones(client):
    """The served zones, busiest first."""
    found = client.get("/v1/zones").json()["zones"]
    return sorted(found, key=lambda z: -z["trip_ends"])
