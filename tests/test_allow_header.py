"""405 and its ``Allow`` header, for every route of the app.

A method a route does not have answers 405 with ``Allow`` listing exactly the methods of the
route the path is, even where the path also matches a template with a parameter
(``/resource_providers/batch`` is not ``/resource_providers/{uuid}``).
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
from fastapi.routing import APIRoute

from placement_numa.api.routers import ROUTERS
from tests.conftest import PlacementAPI

_SAMPLES = {
    "uuid": "5f1d4e7c-3f4e-4a8e-9d2b-0c6f2a9b1e11",
    "consumer_uuid": "7a2c9d4e-1b3f-4c5d-8e6f-9a0b1c2d3e4f",
    "resource_class": "VCPU",
    "name": "CUSTOM_GOLD",
}


def _routes_by_path() -> dict[str, set[str]]:
    """``{route template: its methods}`` over the routers' routes and ``/openapi.json``."""
    found: dict[str, set[str]] = defaultdict(set, {"/openapi.json": {"GET"}})
    for router in ROUTERS:
        for route in router.routes:
            if isinstance(route, APIRoute):
                found[route.path] |= route.methods - {"HEAD"}
    return dict(found)


ROUTES = _routes_by_path()


def _concrete(template: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: _SAMPLES[m.group(1)], template)


@pytest.mark.parametrize("method", ["OPTIONS", "PATCH"])
@pytest.mark.parametrize("template", sorted(ROUTES), ids=sorted(ROUTES))
def test_405_allow_lists_the_methods_of_the_route(
    api: PlacementAPI, template: str, method: str
) -> None:
    response = api.request(method, _concrete(template))
    assert response.status_code == 405, response.text
    assert set(response.headers["allow"].split(", ")) == ROUTES[template]
    assert response.json()["errors"][0]["status"] == 405


def test_batch_is_not_a_provider_uuid(api: PlacementAPI) -> None:
    """The case that was wrong: ``Allow: GET, PUT, DELETE, POST`` (issue 29)."""
    response = api.request("OPTIONS", "/resource_providers/batch")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
