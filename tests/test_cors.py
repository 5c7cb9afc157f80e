"""CORS from [cors] (oslo.middleware's options and filter); without it, no CORS at all."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from placement_numa.app import create_app
from placement_numa.settings import Settings

ORIGIN = "http://valid.example.com"


def _client(tmp_path: Path, conf: str) -> TestClient:
    path = tmp_path / "placement.conf"
    path.write_text(conf)
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'cors.sqlite'}",
        auth_strategy="noauth2",
        config_file=path,
    )
    return TestClient(create_app(settings), raise_server_exceptions=False)


@pytest.fixture
def cors_on(tmp_path: Path) -> Iterator[TestClient]:
    with _client(
        tmp_path, f"[cors]\nallowed_origin = {ORIGIN}\nallow_headers = openstack-api-version\n"
    ) as client:
        yield client


@pytest.fixture
def cors_off(tmp_path: Path) -> Iterator[TestClient]:
    with _client(tmp_path, "[placement]\n") as client:
        yield client


def test_preflight_from_an_allowed_origin(cors_on: TestClient) -> None:
    response = cors_on.options(
        "/",
        headers={
            "origin": ORIGIN,
            "access-control-request-method": "GET",
            "access-control-request-headers": "openstack-api-version",
        },
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == ORIGIN
    assert response.headers["access-control-allow-headers"] == "openstack-api-version"


@pytest.mark.parametrize("path", ["/", "/resource_providers"])
def test_preflight_from_another_origin_gets_no_cors_header(cors_on: TestClient, path: str) -> None:
    response = cors_on.options(
        path,
        headers={"origin": "http://invalid.example.com", "access-control-request-method": "GET"},
    )
    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers


def test_simple_requests(cors_on: TestClient) -> None:
    allowed = cors_on.get("/", headers={"origin": ORIGIN})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == ORIGIN
    other = cors_on.get("/", headers={"origin": "http://invalid.example.com"})
    assert "access-control-allow-origin" not in other.headers
    # an error response carries the header too, and keeps Placement's error body
    refused = cors_on.get("/resource_providers", headers={"origin": ORIGIN})
    assert refused.status_code == 401
    assert refused.headers["access-control-allow-origin"] == ORIGIN
    assert refused.json()["errors"][0]["status"] == 401


def test_unconfigured_service_has_no_cors(cors_off: TestClient) -> None:
    preflight = cors_off.options(
        "/", headers={"origin": ORIGIN, "access-control-request-method": "GET"}
    )
    assert preflight.status_code == 405
    response = cors_off.get("/", headers={"origin": ORIGIN})
    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers
