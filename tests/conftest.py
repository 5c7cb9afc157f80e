"""Shared fixtures: one real database per backend and test session, a real app over it.

``api`` is the usual entry point: an HTTP client over the real app (admin token, microversion
``latest`` unless a test passes ``version=``), on a database reset before each test. Tests run
once per backend: ``sqlite``, ``postgresql``, ``mysql`` (MariaDB).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from placement_numa.app import create_app, prepare_database
from placement_numa.settings import Settings
from tests.backends import (
    BACKENDS,
    TestDatabase,
    drop_database,
    reachable_database,
    reset_rows,
)


@pytest.fixture(scope="session", params=BACKENDS)
def test_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestDatabase]:
    """A fresh, migrated database on one backend for the whole session (dropped afterwards)."""
    backend: str = request.param
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    db = reachable_database(backend, tmp_path_factory.mktemp(backend), worker)
    try:
        prepare_database(Settings(database_url=db.url))
        yield db
    finally:
        drop_database(db)


@pytest.fixture(scope="session")
def app(test_database: TestDatabase) -> Iterator[FastAPI]:
    """The real application on ``test_database`` (migrations already applied)."""
    application = create_app(
        Settings(database_url=test_database.url, auto_migrate=False, auth_strategy="noauth2")
    )
    yield application
    application.state.database.dispose()


@pytest.fixture
def backend(test_database: TestDatabase) -> str:
    """The name of the backend this test runs on."""
    return test_database.backend


class PlacementAPI:
    """A thin client: admin token (noauth2; roles admin and service unless ``token=`` is
    given), ``OpenStack-API-Version`` per call (``version=``)."""

    def __init__(self, client: TestClient, default_version: str = "latest") -> None:
        self.client = client
        self.default_version = default_version

    def request(
        self,
        method: str,
        url: str,
        *,
        version: str | None = None,
        json: Any = None,
        headers: dict[str, str] | None = None,
        token: str | None = "admin",
        **kwargs: Any,
    ) -> httpx.Response:
        all_headers = {"openstack-api-version": f"placement {version or self.default_version}"}
        if token is not None:
            all_headers["x-auth-token"] = token
        if token == "admin":
            # The suite's usual caller is both operator and compute service (Placement's new
            # defaults keep POST /reshaper for the service role); tests of identities pass
            # their own token and x-roles.
            all_headers["x-roles"] = "admin,service"
        all_headers.update(headers or {})
        return self.client.request(method, url, json=json, headers=all_headers, **kwargs)

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("PUT", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("DELETE", url, **kwargs)


@pytest.fixture
def api(app: FastAPI) -> Iterator[PlacementAPI]:
    """An HTTP client over the real app, on a freshly reset database."""
    with app.state.database.write() as conn:
        reset_rows(conn)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield PlacementAPI(client)
