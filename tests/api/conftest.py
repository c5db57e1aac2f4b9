"""Fixtures of the API tests: the app over a writable copy of the tiny demo home."""

from __future__ import annotations

import socket
import threading

import pytest
import uvicorn
from fastapi.testclient import TestClient

from tests._waiting import START_S, wait_until
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


@pytest.fixture
def serve_on_localhost():
    """``serve_on_localhost(app)``: a real uvicorn server of ``app`` on 127.0.0.1 (in a
    thread), started (lifespan included); returns its base URL.

    Unlike the TestClient, it speaks HTTP/1.1 over a real socket, so keep-alive
    connections, resets and uvicorn's own error handling are what a client sees.
    """
    running = []

    def serve(app) -> str:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        running.append((server, thread, sock))
        wait_until(
            lambda: server.started or not thread.is_alive(),
            START_S,
            "the server on 127.0.0.1 to start (its model loaded)",
        )
        if not server.started:
            pytest.fail("the server on 127.0.0.1 stopped while starting")
        return f"http://127.0.0.1:{sock.getsockname()[1]}"

    yield serve
    for server, thread, sock in running:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@pytest.fixture
def live_server(vrvm_home, serve_on_localhost):
    """The API over the tiny home on a real uvicorn server on 127.0.0.1: its base URL."""
    return serve_on_localhost(create_app(ApiSettings(home=vrvm_home, check_every_s=0.05)))


@pytest.fixture(scope="module")
def tiny_client(tiny_home):
    """A test client of the tiny home, served as it is (nothing is written): one per
    module, for tests that only read answers."""
    with TestClient(create_app(ApiSettings(home=tiny_home, check_every_s=0.05))) as client:
        yield client


@pytest.fixture(scope="module")
def tiny_served(tiny_home):
    """What the tiny home serves (model, area): the services' side of a comparison."""
    from vrvm.services.answers.live import LiveModel

    return LiveModel(tiny_home).current()
