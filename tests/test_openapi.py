"""The served OpenAPI document equals the exported api-spec/openapi.json."""

from __future__ import annotations

import json

from placement_numa.api.openapi_responses import RESPONSE_BODIES
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


def _walk(node: object) -> list[dict[str, object]]:
    """Every JSON object inside ``node``."""
    if isinstance(node, dict):
        return [node] + [d for value in node.values() for d in _walk(value)]
    if isinstance(node, list):
        return [d for value in node for d in _walk(value)]
    return []


def test_document_names_every_status_the_service_answers() -> None:
    """Issue 29: 406 for an unacceptable microversion everywhere, 404 where a route is newer
    than 1.0 (no header means 1.0) or has a path parameter, 405 for DELETE of all inventories
    (before 1.5), and the version header on every operation."""
    document = json.loads(DEFAULT_PATH.read_text())
    for path, item in document["paths"].items():
        for method, operation in item.items():
            codes = set(operation["responses"])
            assert {"400", "406"} <= codes, (method, path)
            names = {p["name"] for p in operation.get("parameters", [])}
            assert "OpenStack-API-Version" in names, (method, path)
            if operation["x-min-microversion"] != "1.0" or "{" in path:
                assert "404" in codes, (method, path)
    inventories = document["paths"]["/resource_providers/{uuid}/inventories"]
    assert "405" in inventories["delete"]["responses"]


def test_schemas_use_json_schema_words() -> None:
    """pydantic's ``ge``/``le`` become ``minimum``/``maximum``; a map whose keys have a pattern
    refuses other keys (as the service does)."""
    document = json.loads(DEFAULT_PATH.read_text())
    for node in _walk(document["components"]) + _walk(document["paths"]):
        if node.get("type") in ("integer", "number"):
            assert not {"ge", "le", "gt", "lt"} & set(node), node
        if "patternProperties" in node and "properties" not in node:
            assert node.get("additionalProperties") is False, node
    total = document["components"]["schemas"]["InventoryRecordBody"]["properties"]["total"]
    assert (total["minimum"], total["maximum"]) == (1, 2**31 - 1)


def test_integral_floats_are_integers_within_json_safe_range(api: PlacementAPI) -> None:
    """JSON Schema's integers: ``5.0`` is one (Placement's jsonschema agrees), ``2**53`` is past
    the documented bound (400, never a 500 or an overflow in the database)."""
    uuid = "5f1d4e7c-3f4e-4a8e-9d2b-0c6f2a9b1e11"
    assert api.post("/resource_providers", json={"name": "n", "uuid": uuid}).status_code == 200
    path = f"/resource_providers/{uuid}/aggregates"
    ok = api.put(path, json={"aggregates": [], "resource_provider_generation": 0.0})
    assert ok.status_code == 200, ok.text
    for generation in (2**53, 2.0**70, 1.5):
        response = api.put(
            path, json={"aggregates": [], "resource_provider_generation": generation}
        )
        assert response.status_code == 400, (generation, response.text)


def test_placement_success_bodies_are_described() -> None:
    """Every operation of ``api/openapi_responses.py`` documents its 2xx JSON body (FastAPI
    alone writes ``{}``), so schemathesis's response-schema check has something to check."""
    document = json.loads(DEFAULT_PATH.read_text())
    for method, path in RESPONSE_BODIES:
        responses = document["paths"][path][method]["responses"]
        bodies = [
            r["content"]["application/json"]["schema"]
            for code, r in responses.items()
            if code.startswith("2") and "content" in r
        ]
        assert bodies and all(bodies), (method, path)
