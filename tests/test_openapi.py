"""The served OpenAPI document equals the exported api-spec/openapi.json."""

from __future__ import annotations

import json

from placement_numa.openapi_export import DEFAULT_PATH, render_openapi
from tests.conftest import PlacementAPI


def test_exported_document_matches_app() -> None:
    assert DEFAULT_PATH.exists(), "run: placement-numa export-openapi"
    assert DEFAULT_PATH.read_text() == render_openapi(), (
        "api-spec/openapi.json drifted from the app; run: placement-numa export-openapi"
    )


def test_served_document_is_the_exported_one(api: PlacementAPI) -> None:
    response = api.get("/openapi.json", token=None)
    assert response.status_code == 200
    assert response.json() == json.loads(DEFAULT_PATH.read_text())


def test_document_describes_what_the_service_does() -> None:
    """No 422 anywhere (the service answers 400), the query parameters of the GETs that take
    them, the Placement error body on errors, 201 without a body for POST /resource_classes."""
    document = json.loads(DEFAULT_PATH.read_text())
    paths = document["paths"]
    for path, item in paths.items():
        for method, operation in item.items():
            assert "422" not in operation["responses"], (method, path)
            if path != "/":
                assert "400" in operation["responses"], (method, path)
    for path, names in {
        "/resource_providers": {"name", "uuid", "member_of", "resources", "in_tree", "required"},
        "/allocation_candidates": {"resources", "required", "member_of", "limit", "group_policy"},
        "/traits": {"name", "associated"},
        "/usages": {"project_id", "user_id", "consumer_type"},
    }.items():
        documented = {p["name"] for p in paths[path]["get"]["parameters"] if p["in"] == "query"}
        assert names <= documented, (path, names - documented)
    created = paths["/resource_classes"]["post"]["responses"]
    assert list(code for code in created if code.startswith("2")) == ["201"]
    assert "content" not in created["201"]
    assert "content" not in paths["/traits/{name}"]["delete"]["responses"]["204"]
    assert document["components"]["securitySchemes"]["token"]["name"] == "x-auth-token"


def test_docs_assets_are_local(api: PlacementAPI) -> None:
    page = api.get("/docs", token=None)
    assert page.status_code == 200
    assert "cdn" not in page.text and "/docs/assets/swagger-ui-bundle.js" in page.text
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "favicon.png"):
        response = api.get(f"/docs/assets/{asset}", token=None)
        assert response.status_code == 200 and len(response.content) > 500, asset
