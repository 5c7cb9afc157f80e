"""Routes: ``/resource_providers`` and ``/resource_providers/{uuid}``.

Representation of a provider, per microversion::

    {"uuid", "name", "generation",
     "links": [self, inventories, usages, aggregates (1.1+), traits (1.6+), allocations (1.11+)],
     "parent_provider_uuid", "root_provider_uuid"}            # the last two from 1.14

``POST`` answers 201 with a ``location`` header and no body before 1.20, then 200 with the
provider (and the header). ``GET /resource_providers`` filters: ``name``, ``uuid``,
``member_of`` (1.3), ``resources`` (1.4), ``in_tree`` (1.14), ``required`` (1.18); any other
parameter is a 400.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from fastapi import APIRouter, Request, Response

from placement_numa.api import microversion as mv
from placement_numa.api import query
from placement_numa.api.deps import DatabaseDep, JsonBody, VersionDep, body_doc, validate
from placement_numa.api.limits import check_resource_classes, get_limits
from placement_numa.api.responses import (
    PlacementJSONResponse,
    json_bytes_response,
    json_response,
    newest,
    no_content,
)
from placement_numa.api.schemas.resource_providers import (
    CreateProviderV1_0,
    CreateProviderV1_14,
    UpdateProviderV1_0,
    UpdateProviderV1_14,
)
from placement_numa.db.repositories.providers import ProviderRow
from placement_numa.domain.filters import MemberOf, ProviderFilters, RequiredTraits
from placement_numa.services import providers as service

__all__ = ["router", "serialize_provider", "provider_url"]

router = APIRouter(tags=["resource providers"])


def provider_url(request: Request, uuid: str) -> str:
    """The provider's path, under the application's mount point."""
    return f"{request.scope.get('root_path', '')}/resource_providers/{uuid}"


def serialize_provider(
    request: Request, provider: ProviderRow, version: mv.Microversion
) -> dict[str, Any]:
    """A provider as Placement shows it at ``version`` (links and tree fields as they appeared)."""
    url = provider_url(request, provider.uuid)
    relations = ["inventories", "usages"]
    if version >= mv.AGGREGATES:
        relations.append("aggregates")
    if version >= mv.TRAITS:
        relations.append("traits")
    if version >= mv.PROVIDER_ALLOCATIONS_LINK:
        relations.append("allocations")
    data: dict[str, Any] = {
        "uuid": provider.uuid,
        "name": provider.name,
        "generation": provider.generation,
        "links": [{"rel": "self", "href": url}]
        + [{"rel": rel, "href": f"{url}/{rel}"} for rel in relations],
    }
    if version >= mv.NESTED_PROVIDERS:
        data["parent_provider_uuid"] = provider.parent_provider_uuid
        data["root_provider_uuid"] = provider.root_provider_uuid
    return data


def _modified(provider: ProviderRow) -> datetime | None:
    return provider.updated_at or provider.created_at


def _allowed_params(version: mv.Microversion) -> set[str]:
    allowed = {"name", "uuid"}
    if version >= mv.PROVIDER_MEMBER_OF:
        allowed.add("member_of")
    if version >= mv.PROVIDER_RESOURCES_FILTER:
        allowed.add("resources")
    if version >= mv.NESTED_PROVIDERS:
        allowed.add("in_tree")
    if version >= mv.PROVIDER_REQUIRED:
        allowed.add("required")
    return allowed


def _filters(request: Request, version: mv.Microversion) -> ProviderFilters:
    """Parse and validate the query string of ``GET /resource_providers`` in Placement's order."""
    items = request.query_params.multi_items()
    query.check_allowed_params((key for key, _ in items), _allowed_params(version))
    last: dict[str, str] = {key: value for key, value in items}
    for key in ("uuid", "in_tree"):
        if key in last:
            query.check_uuid_param(key, last[key])
    member_of = MemberOf()
    if "member_of" in last:
        member_of = query.parse_member_of(request.query_params.getlist("member_of"), version)
    required = RequiredTraits()
    if "required" in last:
        required = query.parse_required(request.query_params.getlist("required"), version)
    resources: tuple[tuple[str, int], ...] = ()
    if "resources" in last:
        resources = tuple(query.parse_resources(last["resources"]).items())
        check_resource_classes(len(resources), get_limits(request), "resources")
    return ProviderFilters(
        name=last.get("name") or None,
        uuid=last.get("uuid") or None,
        in_tree=query.parse_in_tree(last["in_tree"]) if last.get("in_tree") else None,
        member_of=member_of,
        required=required,
        resources=resources,
    )


@router.get("/resource_providers", summary="List resource providers")
def list_resource_providers(
    request: Request, version: VersionDep, database: DatabaseDep
) -> Response:
    """``{"resource_providers": [provider, ...]}`` matching every filter given (in creation
    order). Query parameters: ``name``, ``uuid``; ``member_of`` (1.3: ``<agg>``, ``in:<agg>,...``;
    repeated 1.24; ``!`` 1.32); ``resources`` (1.4: ``VCPU:2,MEMORY_MB:512``, providers with room
    for each amount); ``in_tree`` (1.14: provider uuid); ``required`` (1.18: ``A,!B`` with ``!``
    1.22, ``in:A,B`` and repeats 1.39). 400 for unknown parameters, resource classes or traits.
    """
    filters = _filters(request, version)
    if request.query_params:
        found = service.list_providers(database, filters=filters)
        return json_response(
            {"resource_providers": [serialize_provider(request, p, version) for p in found]},
            version,
            last_modified=newest(_modified(p) for p in found),
        )
    # The whole list: encoded once per fleet revision (every committed write bumps it, in any
    # worker), so repeated listings cost one tiny statement and a copy.
    key = (service.fleet_revision(database), version, request.scope.get("root_path", ""))
    cached = getattr(request.app.state, "provider_list_cache", None)
    if cached is None or cached[0] != key:
        found = service.list_providers(database, filters=filters)
        body = orjson.dumps(
            {"resource_providers": [serialize_provider(request, p, version) for p in found]}
        )
        cached = (key, body, newest(_modified(p) for p in found))
        request.app.state.provider_list_cache = cached
    return json_bytes_response(cached[1], version, last_modified=cached[2])


@router.post(
    "/resource_providers",
    summary="Create a resource provider",
    status_code=200,
    openapi_extra=body_doc(CreateProviderV1_14),
    response_model=None,
)
def create_resource_provider(
    request: Request, version: VersionDep, database: DatabaseDep, body: JsonBody
) -> Response:
    """Create a provider (``uuid`` generated when absent; ``parent_provider_uuid`` from 1.14).

    201 with a ``location`` header before 1.20; 200 with the provider from 1.20. 400 for a bad
    body, an empty name or an unknown parent; 409 ``placement.duplicate_name`` when the name or
    uuid is taken.
    """
    parent_uuid: str | None = None
    if version >= mv.NESTED_PROVIDERS:
        data14 = validate(CreateProviderV1_14, body)
        name, uuid, parent_uuid = data14.name, data14.uuid, data14.parent_provider_uuid
    else:
        data = validate(CreateProviderV1_0, body)
        name, uuid = data.name, data.uuid
    provider = service.create_provider(database, name=name, uuid=uuid, parent_uuid=parent_uuid)
    location = str(request.base_url).rstrip("/") + f"/resource_providers/{provider.uuid}"
    if version < mv.POST_PROVIDER_RETURNS_BODY:
        return Response(status_code=201, headers={"location": location})
    return json_response(
        serialize_provider(request, provider, version),
        version,
        last_modified=_modified(provider),
        headers={"location": location},
    )


@router.get("/resource_providers/{uuid}", summary="Show a resource provider")
def get_resource_provider(
    uuid: str, request: Request, version: VersionDep, database: DatabaseDep
) -> PlacementJSONResponse:
    """The provider. 404 when it does not exist."""
    provider = service.get_provider(database, uuid=uuid)
    return json_response(
        serialize_provider(request, provider, version), version, last_modified=_modified(provider)
    )


@router.put(
    "/resource_providers/{uuid}",
    summary="Update a resource provider",
    openapi_extra=body_doc(UpdateProviderV1_14),
)
def update_resource_provider(
    uuid: str, request: Request, version: VersionDep, database: DatabaseDep, body: JsonBody
) -> PlacementJSONResponse:
    """Rename a provider and (1.14+) set its parent.

    Before 1.37 a parent can only be set where there was none; from 1.37 a provider (with its
    subtree) may move under any provider outside its subtree, or become a root with ``null``.
    The generation is unchanged. 404 unknown provider; 400 bad body, unknown parent, refused
    re-parenting or loop; 409 ``placement.duplicate_name``.
    """
    service.get_provider(database, uuid=uuid)  # 404 before body errors, as Placement
    parent: str | None | object = service.UNSET
    if version >= mv.NESTED_PROVIDERS:
        data14 = validate(UpdateProviderV1_14, body)
        name = data14.name
        if data14.parent_given():
            parent = data14.parent_provider_uuid
    else:
        name = validate(UpdateProviderV1_0, body).name
    provider = service.update_provider(
        database,
        uuid=uuid,
        name=name,
        parent_uuid=parent,  # type: ignore[arg-type]
        allow_reparenting=version >= mv.REPARENTING,
    )
    return json_response(
        serialize_provider(request, provider, version), version, last_modified=_modified(provider)
    )


@router.delete("/resource_providers/{uuid}", summary="Delete a resource provider", status_code=204)
def delete_resource_provider(uuid: str, database: DatabaseDep) -> Response:
    """Delete a provider with its inventories, traits and aggregate links. 404 unknown; 409
    ``placement.resource_provider.cannot_delete_parent`` with children,
    ``placement.resource_provider.inuse`` with allocations."""
    service.delete_provider(database, uuid=uuid)
    return no_content()
