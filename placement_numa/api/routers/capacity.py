"""Route (extension): ``POST /allocation_candidates/capacity`` — how many more of each flavor fit.

Body: ``api/schemas/capacity.py``. Each flavor is placed on a copy of the fleet one instance
after another, where ``POST /allocation_candidates/claim`` would place it, until nothing fits
(``services/capacity.py``); nothing is written. Microversion 1.36+, as ``POST
/allocation_candidates``. Response (200)::

    {"capacity": [{"flavor": "m1.pinned", "total": 412,
                   "hosts": [{"host": "cn1", "uuid": "<root provider uuid>", "count": 3,
                              "capped": false,
                              "limited_by": [{"reason": "short", "resource_class": "PCPU",
                                              "cell": 0, "free": 2, "requested": 4}]}]}]}

``stranded``: per resource class, the free capacity of the hosts in scope, the part of it no
flavor of the request can use (on cells, or hosts, where none of them has a candidate) and
the ratio of the two (``services/stranded.py``)::

    "stranded": {"free": {"PCPU": 812, ...}, "stranded": {"PCPU": 96, ...},
                 "fragmentation": {"PCPU": 0.118227, ...},
                 "places": [{"host": "cn7", "uuid": "...", "cell": 1, "cell_provider": "...",
                             "stranded": {"PCPU": 6, "MEMORY_MB": 2048}}, ...]}

``places`` (omitted with ``"hosts": false``) lists each host and cell where something is
stranded, most stranded CPUs first (``cell`` null: outside the cells).

``hosts`` lists every host in scope, most room first (omitted with ``"hosts": false``);
``limited_by`` says what stops the host from taking one more: per resource class and host
cell (``cell`` null: outside the cells, e.g. ``DISK_GB``) the best free amount against what
one guest cell asks, or ``reason`` ``arrangement`` (each class fits somewhere, not together)
or ``cap`` (``max_per_host`` reached). Errors: 400 for a bad body, flavor
(``placement_numa.flavor.invalid``) or scope parameter.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from placement_numa.api import microversion as mv
from placement_numa.api.deps import validate as validate_body
from placement_numa.api.numa_route import NumaRoute, NumaRouteDep, numa_post
from placement_numa.api.query import parse_in_tree, parse_member_of, parse_required
from placement_numa.api.responses import PlacementJSONResponse, json_response
from placement_numa.api.schemas.capacity import CapacityBody
from placement_numa.domain.filters import RequiredTraits
from placement_numa.engine import FleetSnapshot
from placement_numa.numa.engine_rank import CellIndex
from placement_numa.numa.request import NumaOptions
from placement_numa.services import capacity as service
from placement_numa.services.capacity_limits import Shortfall
from placement_numa.services.stranded import Stranded, stranded

__all__ = ["router"]

router = APIRouter(tags=["allocation candidates"])


def _scope(data: CapacityBody, version: mv.Microversion) -> service.CapacityScope:
    return service.CapacityScope(
        in_tree=parse_in_tree(data.in_tree) if data.in_tree is not None else None,
        member_of=parse_member_of(data.member_of, version),
        required=(
            parse_required([data.required], version)
            if data.required is not None
            else RequiredTraits()
        ),
    )


def _asks(route: NumaRoute, data: CapacityBody) -> list[service.FlavorAsk]:
    return [route.flavor_ask(body, f"flavor-{n}") for n, body in enumerate(data.flavors, start=1)]


def _host(host: service.HostCapacity) -> dict[str, Any]:
    limits = (Shortfall("cap"),) if host.capped else host.limited_by
    return {
        "host": host.host,
        "uuid": host.uuid,
        "count": host.count,
        "capped": host.capped,
        "limited_by": [s.as_json() for s in limits],
    }


@numa_post(
    router,
    "/allocation_candidates/capacity",
    summary="How many more instances of each flavor fit, per host and in all (extension)",
    body=CapacityBody,
    body_text="flavors to count and the hosts in scope",
    responses={200: {"description": "Per flavor: the total, and per host the count and limits"}},
)
def post_capacity(route: NumaRouteDep) -> PlacementJSONResponse:
    """Count, per flavor, the instances that still fit, placing them one after another as
    ``/allocation_candidates/claim`` would (``services/capacity.py``); writes nothing."""
    data = validate_body(CapacityBody, route.body)
    scope = _scope(data, route.version)
    asks = _asks(route, data)
    fleet, index = route.indexed_fleet()
    answers = service.fleet_capacity(
        engine=route.engine,
        index=index,
        flavors=asks,
        options=NumaOptions(
            prefer_closest=data.prefer_closest_numa_nodes,
            distribute=data.distribute_cpus_across_numa,
            topology_policy=data.topology_policy,
        ),
        scope=scope,
        cap=data.max_per_host,
        fleet=fleet,
    )
    lost = stranded(fleet, service.scoped_roots(fleet, scope), answers)
    rendered = []
    for answer in answers:
        item: dict[str, Any] = {"flavor": answer.flavor, "total": answer.total}
        if data.hosts:
            item["hosts"] = [_host(h) for h in answer.hosts]
        rendered.append(item)
    summary = lost.as_json()
    if data.hosts:
        summary["places"] = _places(fleet, index, lost)
    return json_response({"capacity": rendered, "stranded": summary}, route.version, cache=False)


def _places(fleet: FleetSnapshot, index: CellIndex, lost: Stranded) -> list[dict[str, Any]]:
    """Where capacity is stranded: per host and cell (``cell`` null: outside the cells), most
    stranded CPUs first."""
    ordered = sorted(
        lost.places.items(),
        key=lambda item: (-item[1].get("PCPU", 0) - item[1].get("VCPU", 0), item[0]),
    )
    found = []
    for (root, owner), amounts in ordered:
        uuid = fleet.uuids[root]
        inside = owner != root
        found.append(
            {
                "host": index.host_names.get(uuid, uuid),
                "uuid": uuid,
                "cell": index.cell_ids.get(fleet.uuids[owner]) if inside else None,
                "cell_provider": fleet.uuids[owner] if inside else None,
                "stranded": amounts,
            }
        )
    return found
