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
