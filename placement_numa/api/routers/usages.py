"""Routes: usages.

* ``GET /resource_providers/{uuid}/usages``: ``{"resource_provider_generation": n,
  "usages": {resource_class: used}}`` over every inventoried class;
* ``GET /usages?project_id=&user_id=`` (1.9+): ``{"usages": {resource_class: used}}``; from 1.38
  grouped by consumer type, ``{"usages": {consumer_type: {resource_class: used,
  "consumer_count": n}}}``, optionally filtered by ``consumer_type`` (a name, ``all`` or
  ``unknown``).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from placement_numa.api import microversion as mv
from placement_numa.api.deps import DatabaseDep, VersionDep, require_version
from placement_numa.api.responses import json_response
from placement_numa.api.schemas.usages import parse_usages_query
from placement_numa.services import usages as service

__all__ = ["router"]

router = APIRouter(tags=["usages"])


@router.get("/resource_providers/{uuid}/usages", summary="Usages of a resource provider")
def get_provider_usages(uuid: str, version: VersionDep, database: DatabaseDep) -> Response:
    """Usage per inventoried resource class of provider ``uuid`` (404 when unknown)."""
    generation, usages = service.for_provider(database=database, provider_uuid=uuid)
    return json_response({"resource_provider_generation": generation, "usages": usages}, version)


@router.get(
    "/usages",
    summary="Usages of a project (and user)",
    dependencies=[Depends(require_version(mv.USAGES))],
)
def get_usages(request: Request, version: VersionDep, database: DatabaseDep) -> Response:
    """Summed usages of ``project_id`` (and ``user_id``); grouped by consumer type from 1.38."""
    query = parse_usages_query(
        dict(request.query_params), consumer_types=version >= mv.CONSUMER_TYPES
    )
    if version >= mv.CONSUMER_TYPES:
        grouped = service.for_project_by_consumer_type(
            database=database,
            project_id=query.project_id,
            user_id=query.user_id,
            consumer_type=query.consumer_type,
        )
        return json_response({"usages": grouped}, version)
    usages = service.for_project(
        database=database, project_id=query.project_id, user_id=query.user_id
    )
    return json_response({"usages": usages}, version)
