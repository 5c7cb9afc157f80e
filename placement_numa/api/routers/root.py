"""Route ``GET /``: the version document (no authentication)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from placement_numa.api import microversion as mv
from placement_numa.api.deps import VersionDep
from placement_numa.api.responses import PlacementJSONResponse, json_response

__all__ = ["router", "version_document"]

router = APIRouter(tags=["versions"])


def version_document() -> dict[str, Any]:
    """``{"versions": [{"id": "v1.0", "min_version": "1.0", "max_version": "1.39", ...}]}``."""
    return {
        "versions": [
            {
                "id": "v1.0",
                "max_version": str(mv.MAX_VERSION),
                "min_version": str(mv.MIN_VERSION),
                "status": "CURRENT",
                "links": [{"rel": "self", "href": ""}],
            }
        ]
    }


@router.get("/", summary="List API versions", response_class=PlacementJSONResponse)
def get_root(version: VersionDep) -> PlacementJSONResponse:
    """The version document: the one API version ``v1.0`` with min and max microversions.

    Needs no ``x-auth-token``. Clients use ``max_version`` to pick the microversion they speak.
    From 1.15 the response carries ``last-modified`` (now) and ``cache-control: no-cache``.
    """
    return json_response(version_document(), version)
