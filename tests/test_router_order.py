"""``ROUTERS``' order decides speed only: no request is answered by a route that another
route's position could take from it.

FastAPI tries routes in order and the first that matches a path and method answers, so the
routers a scheduler calls for every boot come first (``api/routers/__init__.py``). That is
only safe while no two routes match one request: each route's template is tried with every
literal segment of every template and with sample values in place of its parameters. Which
methods a 405 lists does not hang on the order either (``tests/test_allow_header.py``).
"""

from __future__ import annotations

import re
from itertools import product

from fastapi.routing import APIRoute
from starlette.routing import Match

from placement_numa.api.routers import ROUTERS, allocation_candidates, allocations

_ROUTES = [route for router in ROUTERS for route in router.routes if isinstance(route, APIRoute)]
_LITERALS = {part for route in _ROUTES for part in route.path.split("/") if "{" not in part}
_VALUES = sorted(_LITERALS - {""}) + [
    "5f1d4e7c-3f4e-4a8e-9d2b-0c6f2a9b1e11",
    "VCPU",
    "CUSTOM_GOLD",
    "1",
]
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def _paths(template: str) -> set[str]:
    """``template`` with each parameter set to each of ``_VALUES`` (every combination)."""
    parameters = re.findall(r"\{\w+\}", template)
    found = set()
    for values in product(_VALUES, repeat=len(parameters)):
        path = template
        for parameter, value in zip(parameters, values, strict=True):
            path = path.replace(parameter, value, 1)
        found.add(path)
    return found


def test_no_two_routes_match_one_request() -> None:
    paths = set().union(*(_paths(route.path) for route in _ROUTES))
    overlapping = []
    for path, method in product(sorted(paths), _METHODS):
        scope = {"type": "http", "path": path, "method": method, "root_path": ""}
        matched = [r.path for r in _ROUTES if r.matches(scope)[0] == Match.FULL]
        if len(matched) > 1:
            overlapping.append((method, path, matched))
    assert len(paths) > len(_ROUTES)
    assert not overlapping


def test_a_schedulers_routes_come_first() -> None:
    """``GET /allocation_candidates`` and ``PUT /allocations/{consumer_uuid}``, the two calls
    of a boot, are tried before every other route."""
    assert ROUTERS[:2] == (allocation_candidates.router, allocations.router)
