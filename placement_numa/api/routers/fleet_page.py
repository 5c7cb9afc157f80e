"""Routes (extension): the fleet in a browser, server-rendered HTML (issue 31).

* ``GET /numa/fleet``: the catalogue's flavors and how many more fit, the fleet's stranded
  capacity, the aggregates, and one page of hosts with their NUMA cells. Query parameters
  (each at most once; anything else is a 400 ``placement.query.bad_value`` in Placement's
  error format): ``aggregate`` (an aggregate uuid, or ``none`` for hosts in no aggregate),
  ``sort`` (``name``, ``free_pcpu``, ``free_vcpu``, ``free_memory_mb``, ``stranded_pcpu``, or
  ``fits`` with ``flavor=<a catalogue flavor>``: how many more of it fit),
  ``order`` (``asc``/``desc``), ``page`` (from 1), ``per_page`` (1 to 200, default 50);
* ``GET /numa/fleet/hosts/{uuid}``: one compute node (root provider uuid): its cells and its
  guests (consumers) cell by cell; 404 for an unknown uuid or a provider that is not a root.

Both are behind the policy rule of ``/metrics`` (``placement:metrics``, admin by default) and,
like every route, authenticated (``x-auth-token``). The flavor catalogue is ``[metrics]
flavors_file``; its answers are computed once per fleet revision.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from placement_numa.api.cell_index_dep import CellIndexDep
from placement_numa.api.deps import DatabaseDep
from placement_numa.api.engine_dep import EngineDep
from placement_numa.api.numa_body import aliases_for
from placement_numa.api.pages.fleet_html import render_fleet
from placement_numa.api.pages.host_html import render_host
from placement_numa.engine import FleetSnapshot
from placement_numa.errors import QueryBadValue
from placement_numa.services import fleet_page as service
from placement_numa.services.capacity import FlavorCapacity, fleet_capacity
from placement_numa.services.flavor_catalogue import CatalogueError, load_catalogue
from placement_numa.services.fleet_host_page import host_guests, root_of

__all__ = ["router", "FLEET_ROUTES"]

router = APIRouter(tags=["fleet page (extension)"])
FLEET_ROUTES = ("/numa/fleet", "/numa/fleet/hosts/{uuid}")
_KEYS = ("aggregate", "sort", "order", "page", "per_page", "flavor")
_MAX_PAGE = 1_000_000


def _bad(text: str) -> QueryBadValue:
    return QueryBadValue(f"Invalid query string parameters: {text}")


def _whole(name: str, value: str, low: int, high: int) -> int:
    if not value.isdigit() or not low <= int(value) <= high:
        raise _bad(f"{name} must be a whole number from {low} to {high}, not {value[:40]!r}")
    return int(value)


def parse_fleet_query(request: Request, flavors: tuple[str, ...] = ()) -> service.FleetQuery:
    """The ``FleetQuery`` of the request's query string (``flavors``: the catalogue's names,
    which ``flavor`` must be one of, with ``sort=fits`` and only then). Raises
    ``QueryBadValue`` (400) for an unknown or repeated parameter or a bad value."""
    seen: dict[str, str] = {}
    for key, value in request.query_params.multi_items():
        if key not in _KEYS:
            raise _bad(f"{key[:40]!r} is not one of {', '.join(_KEYS)}")
        if key in seen:
            raise _bad(f"{key} is given more than once")
        seen[key] = value
    sort = seen.get("sort", "name")
    if sort not in service.SORT_KEYS:
        raise _bad(f"sort must be one of {', '.join(service.SORT_KEYS)}")
    order = seen.get("order", "asc")
    if order not in ("asc", "desc"):
        raise _bad("order must be asc or desc")
    flavor = seen.get("flavor")
    if (sort == "fits") != (flavor is not None) or (flavor is not None and flavor not in flavors):
        raise _bad(
            "sort=fits takes flavor=<a flavor of the catalogue>, and flavor only goes with it"
        )
    aggregate = seen.get("aggregate")
    if aggregate is not None and not (0 < len(aggregate) <= 64):
        raise _bad("aggregate must be an aggregate uuid or 'none'")
    return service.FleetQuery(
        aggregate=aggregate,
        sort=sort,
        descending=order == "desc",
        page=_whole("page", seen.get("page", "1"), 1, _MAX_PAGE),
        per_page=_whole(
            "per_page", seen.get("per_page", str(service.DEFAULT_PER_PAGE)), 1, service.MAX_PER_PAGE
        ),
        flavor=flavor,
    )


def _catalogue(request: Request, engine: Any, index_cache: Any, database: Any) -> Any:
    """The app's ``CatalogueCache`` for ``[metrics] flavors_file`` (``None`` when none is set
    or it cannot be read: the page says so)."""
    state = request.app.state
    cached = getattr(state, "fleet_page_catalogue", None)
    if cached is not None:
        return cached or None
    path = getattr(state.settings, "metrics_flavors_file", None)
    try:
        flavors = load_catalogue(path) if path is not None else None
    except CatalogueError:
        flavors = None
    if not flavors:
        state.fleet_page_catalogue = False
        return None
    asks = [replace(a, aliases=aliases_for(state, a.flavor)) for a in flavors]

    def compute(fleet: FleetSnapshot) -> list[FlavorCapacity]:
        index = index_cache.get(database, fleet.revision)
        return fleet_capacity(engine=engine, index=index, flavors=asks, fleet=fleet)

    state.fleet_page_catalogue = service.CatalogueCache(compute, [a.name for a in asks])
    return state.fleet_page_catalogue


@router.get("/numa/fleet", response_class=HTMLResponse, include_in_schema=False)
def get_fleet(
    request: Request, database: DatabaseDep, engine: EngineDep, index_cache: CellIndexDep
) -> HTMLResponse:
    """The fleet page (module docstring)."""
    catalogue = _catalogue(request, engine, index_cache, database)
    query = parse_fleet_query(request, catalogue.flavors if catalogue is not None else ())
    fleet = engine.snapshot()
    index = index_cache.get(database, fleet.revision)
    page = service.fleet_page(fleet, index, query, catalogue)
    return HTMLResponse(render_fleet(page))


@router.get("/numa/fleet/hosts/{uuid}", response_class=HTMLResponse, include_in_schema=False)
def get_fleet_host(
    uuid: str,
    request: Request,
    database: DatabaseDep,
    engine: EngineDep,
    index_cache: CellIndexDep,
) -> HTMLResponse:
    """A compute node's page (module docstring). Raises ``ResourceProviderNotFound`` (404)."""
    if request.query_params:
        raise _bad("this page takes none")
    fleet = engine.snapshot()
    root = root_of(fleet, uuid)
    index = index_cache.get(database, fleet.revision)
    catalogue = _catalogue(request, engine, index_cache, database)
    kept = catalogue.get(fleet) if catalogue is not None else None
    host = service.host_row(fleet, index, root, kept)
    return HTMLResponse(render_host(host, host_guests(database, fleet, index, root)))
