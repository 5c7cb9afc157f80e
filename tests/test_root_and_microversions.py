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


@pytest.mark.parametrize(
    ("token", "roles", "status"),
    [
        ("demo", None, 403),
        ("admin:admin", None, 200),
        ("demo:proj", "admin,member", 200),
        ("admin", "reader", 403),
    ],
    ids=["user", "admin-user-with-project", "x-roles-admin", "x-roles-replace"],
)
def test_noauth2_roles(api: PlacementAPI, token: str, roles: str | None, status: int) -> None:
    headers = {"x-roles": roles} if roles else {}
    assert api.get("/resource_providers", token=token, headers=headers).status_code == status


def test_bad_version_reported_before_policy(api: PlacementAPI) -> None:
    assert api.get("/resource_providers", token="demo", version="0.9").status_code == 406


def test_405_lists_every_method_of_the_path(api: PlacementAPI) -> None:
    response = api.delete("/resource_providers")
    assert response.status_code == 405
    assert set(response.headers["allow"].split(", ")) == {"GET", "POST"}
    assert "The method DELETE is not allowed" in response.json()["errors"][0]["detail"]


def test_body_without_content_type_is_400(api: PlacementAPI) -> None:
    response = api.post("/resource_providers", content=b"a provider please")
    assert response.status_code == 400
    assert "content-type header required" in response.json()["errors"][0]["detail"]


def test_unknown_route_with_other_accept_is_404(api: PlacementAPI) -> None:
    assert api.get("/no_such_thing", headers={"accept": "text/plain"}).status_code == 404


def test_root_cache_headers_from_1_15(api: PlacementAPI) -> None:
    assert "cache-control" not in api.get("/", version="1.14").headers
    response = api.get("/", version="1.15")
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["last-modified"].endswith(" GMT")


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


@pytest.mark.parametrize(
    ("accept", "media"),
    [
        ("text/html", "text/html"),
        ("text/plain", "text/plain"),
        ("application/json", "application/json"),
        ("*/*", "application/json"),
    ],
    ids=["html", "plain", "json", "any"],
)
def test_error_media_follows_accept(api: PlacementAPI, accept: str, media: str) -> None:
    response = api.get("/", version="0.5", headers={"accept": accept})
    assert response.status_code == 406
    assert response.headers["content-type"].startswith(media)
    assert "Unacceptable version header: 0.5" in response.text
