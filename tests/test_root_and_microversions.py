"""The version document, microversion negotiation, auth and the error format."""

from __future__ import annotations

import pytest

from tests.conftest import PlacementAPI


def test_root_needs_no_token_and_names_max_version(api: PlacementAPI) -> None:
    response = api.get("/", token=None)
    assert response.status_code == 200
    version = response.json()["versions"][0]
    assert version["id"] == "v1.0"
    assert version["min_version"] == "1.0"
    assert version["max_version"] == "1.39"
    assert response.headers["x-openstack-request-id"].startswith("req-")


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, "placement 1.0"),
        ("placement latest", "placement 1.39"),
        ("placement 1.14", "placement 1.14"),
        ("compute 2.1, placement 1.20", "placement 1.20"),
    ],
    ids=["absent", "latest", "explicit", "among-services"],
)
def test_negotiation(api: PlacementAPI, header: str | None, expected: str) -> None:
    headers = {} if header is None else {"openstack-api-version": header}
    response = api.client.get("/", headers=headers)
    assert response.headers["openstack-api-version"] == expected
    assert response.headers["vary"] == "openstack-api-version"


def test_unsupported_version_is_406_with_bounds(api: PlacementAPI) -> None:
    response = api.get("/", version="1.40")
    assert response.status_code == 406
    error = response.json()["errors"][0]
    assert error["min_version"] == "1.0"
    assert error["max_version"] == "1.39"


def test_malformed_version_is_400(api: PlacementAPI) -> None:
    response = api.get("/", version="1.a")
    assert response.status_code == 400
    assert response.json()["errors"][0]["status"] == 400


def test_token_required(api: PlacementAPI) -> None:
    response = api.get("/resource_providers", token=None)
    assert response.status_code == 401
    assert response.json()["errors"][0]["title"] == "Unauthorized"


def test_non_admin_token_forbidden(api: PlacementAPI) -> None:
    assert api.get("/resource_providers", token="demo").status_code == 403


def test_unknown_route_is_placement_404(api: PlacementAPI) -> None:
    response = api.get("/no_such_thing", version="1.23")
    assert response.status_code == 404
    error = response.json()["errors"][0]
    assert error["code"] == "placement.undefined_code"
    assert error["request_id"] == response.headers["x-openstack-request-id"]


def test_error_code_absent_before_1_23(api: PlacementAPI) -> None:
    response = api.get("/no_such_thing", version="1.22")
    assert "code" not in response.json()["errors"][0]


def test_accept_without_json_is_406(api: PlacementAPI) -> None:
    response = api.get("/", headers={"accept": "text/plain"})
    assert response.status_code == 406
