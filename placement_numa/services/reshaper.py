"""Reshaping: ``POST /reshaper`` (Placement 1.30+) and planning a NUMA reshape of a compute node.

``reshape`` replaces the inventories of several providers and the allocations of several
consumers in ONE transaction, in Placement's order (``placement/objects/reshaper.py``):

1. each provider named must exist (400 ``placement.resource_provider.not_found``) at the
   generation given (409 ``placement.concurrent_update``); every resource class must exist (400);
2. *interim* inventories: for each provider, the union of its current inventories and the new
   ones (new fields win), so allocations can move before anything disappears;
3. the consumers' new allocations (``allocations.replace_allocations``: consumer generations of
   1.28, consumer types of 1.38, capacity checks; 409 on a mismatch or when they do not fit);
4. *final* inventories, exactly as asked; a class still allocated that would vanish: 409
   ``placement.inventory.inuse``.

Any error rolls the whole transaction back: the database is left exactly as before. Each provider
in ``inventories`` gains one generation per inventory step (two, or one when its new inventory is
empty) plus one if it receives allocations, as in Placement.

``plan`` reads a compute node and returns a ``reshape.Plan`` (nothing is written).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from placement_numa.db.database import Database
from placement_numa.db.repositories import allocations as allocation_repo
from placement_numa.db.repositories import consumers as consumer_repo
from placement_numa.db.repositories import host_trees, names, providers
from placement_numa.db.repositories import inventories as inventory_repo
from placement_numa.db.repositories import numa_distances as distance_repo
from placement_numa.db.repositories import traits as trait_repo
from placement_numa.db.repositories.numa_distances import DistanceRow
from placement_numa.db.repositories.providers import ProviderRow
from placement_numa.domain.allocation import ConsumerAllocation
from placement_numa.domain.inventory import InventoryFields, check_capacity
from placement_numa.errors import (
    BadRequest,
    ConcurrentUpdate,
    Conflict,
    DuplicateName,
    InventoryInUse,
    NotFound,
)
from placement_numa.numa.distances import validate_matrix
from placement_numa.reshape import (
    ConsumerState,
    ConsumerUnplaceable,
    HostState,
    Inventory,
    Plan,
    PlanError,
    ProviderState,
    parse_topology,
    plan_to_flat,
    plan_to_numa,
)
from placement_numa.services.numa_distances import identify_cells

__all__ = ["ProviderInventories", "reshape", "apply_reshape", "plan", "apply_plan", "load_host"]


@dataclass(frozen=True)
class ProviderInventories:
    """The new whole inventory of one provider and the generation the client saw."""

    generation: int
    inventories: Mapping[str, InventoryFields]


def reshape(
    *,
    database: Database,
    inventories: Mapping[str, ProviderInventories],
    allocations: Sequence[ConsumerAllocation],
) -> None:
    """Apply a reshape in one write transaction (see the module docstring for order and errors)."""
    with database.write() as conn:
        apply_reshape(conn, inventories=inventories, allocations=allocations)


def _load_providers(
    conn: Connection, inventories: Mapping[str, ProviderInventories]
) -> dict[str, ProviderRow]:
    found: dict[str, ProviderRow] = {}
    for uuid, wanted in inventories.items():
        provider = providers.get_by_uuid(conn, uuid)
        if provider is None:
            raise BadRequest(
                f"Resource provider {uuid} in inventories not found: No resource provider with"
                f" uuid {uuid} found",
                code="placement.resource_provider.not_found",
            )
        if provider.generation != wanted.generation:
            raise ConcurrentUpdate(
                f"resource provider generation conflict for provider {uuid}: actual:"
                f" {provider.generation}, given: {wanted.generation}"
            )
        found[uuid] = provider
    return found


def _check_classes(
    conn: Connection,
    inventories: Mapping[str, ProviderInventories],
    allocations: Sequence[ConsumerAllocation],
) -> None:
    wanted = {rc for p in inventories.values() for rc in p.inventories}
    wanted |= {rc for a in allocations for res in a.resources.values() for rc in res}
    known = names.resource_class_ids(conn, wanted)
    for rc in sorted(wanted - set(known)):
        raise BadRequest(f"malformed reshaper data: No such resource class {rc}.")


def apply_reshape(
    conn: Connection,
    *,
    inventories: Mapping[str, ProviderInventories],
    allocations: Sequence[ConsumerAllocation],
) -> None:
    """The reshape inside the caller's transaction (which must roll back on any error).

    ``inventories``: ``{provider uuid: ProviderInventories}`` (amounts in each class's unit);
    ``allocations``: every consumer's complete new allocations. Raises ``BadRequest`` (400),
    ``ConcurrentUpdate`` (409, provider or consumer generation), ``Conflict`` (409, allocations
    that do not fit) or ``InventoryInUse`` (409).
    """
    found = _load_providers(conn, inventories)
    _check_classes(conn, inventories, allocations)
    for uuid, wanted in inventories.items():
        for rc, fields in wanted.inventories.items():
            check_capacity(rc, uuid, fields, reserved_may_equal_total=True)
    alloc_ids = [
        p.id
        for p in (providers.get_by_uuid(conn, u) for a in allocations for u in a.resources)
        if p is not None
    ]
    providers.lock_providers(conn, [p.id for p in found.values()] + alloc_ids)

    # Step 2: interim union of current and new inventories.
    for uuid, wanted in inventories.items():
        if not wanted.inventories:
            continue
        provider = found[uuid]
        union = {
            rc: rec.fields for rc, rec in inventory_repo.get_inventories(conn, provider.id).items()
        }
        union.update(wanted.inventories)
        providers.increment_generation(conn, provider, wanted.generation)
        inventory_repo.replace_inventories(conn, provider, union, check_in_use=False)

    # Step 3: the consumers' new allocations.
    if allocations:
        allocation_repo.replace_allocations(conn, allocations)

    # Step 4: the final inventories.
    for uuid, wanted in inventories.items():
        reread = providers.get_by_uuid(conn, uuid)
        assert reread is not None
        providers.increment_generation(conn, reread)
        try:
            inventory_repo.replace_inventories(conn, reread, dict(wanted.inventories))
        except InventoryInUse as exc:
            raise InventoryInUse(f"update conflict: {exc.detail}") from None


# --- planning -------------------------------------------------------------------------------


def load_host(
    conn: Connection, *, host: str | None = None, root_uuid: str | None = None
) -> HostState:
    """The compute node ``host`` (root provider name) or ``root_uuid`` as the planner sees it:
    its tree's providers with inventories and traits, and every consumer with allocations on
    the tree (with all its allocations, generation, project, user and type).

    Raises ``NotFound`` (404) when there is no such provider, ``BadRequest`` when it is not a root.
    """
    provider = host_trees.find_provider(conn, name=host, uuid=root_uuid)
    if provider is None:
        raise NotFound(f"No resource provider {host or root_uuid} found")
    if provider.parent_provider_uuid is not None:
        raise BadRequest(f"Resource provider {provider.name} is not a compute node (root) provider")
    tree = host_trees.tree_providers(conn, provider.root_provider_id)
    trait_map = host_trees.traits_by_provider(conn, [p.id for p in tree])
    states: dict[str, ProviderState] = {}
    consumer_ids: set[str] = set()
    for p in tree:
        invs = inventory_repo.get_inventories(conn, p.id)
        states[p.uuid] = ProviderState(
            uuid=p.uuid,
            name=p.name,
            generation=p.generation,
            parent_uuid=p.parent_provider_uuid,
            inventories={rc: Inventory(**rec.fields.as_dict()) for rc, rec in invs.items()},  # type: ignore[arg-type]
            traits=trait_map.get(p.id, frozenset()),
        )
        consumer_ids |= {row.consumer_uuid for row in allocation_repo.get_by_provider(conn, p.id)}
    consumers = []
    for consumer_uuid in sorted(consumer_ids):
        record = consumer_repo.get_by_uuid(conn, consumer_uuid)
        allocs: dict[str, dict[str, int]] = {}
        for row in allocation_repo.get_by_consumer(conn, consumer_uuid):
            allocs.setdefault(row.resource_provider_uuid, {})[row.resource_class] = row.used
        consumers.append(
            ConsumerState(
                uuid=consumer_uuid,
                project_id=record.project_external_id if record else "",
                user_id=record.user_external_id if record else "",
                generation=record.generation if record else None,
                consumer_type=record.consumer_type if record else None,
                allocations=allocs,
            )
        )
    return HostState(
        root=states[provider.uuid],
        descendants=tuple(s for u, s in states.items() if u != provider.uuid),
        consumers=tuple(consumers),
    )


def plan(
    *,
    database: Database,
    host: str | None,
    root_uuid: str | None,
    direction: str,
    topology: Mapping[str, Any] | None,
    policy: str = "pack",
) -> Plan:
    """Plan a reshape of one compute node without applying it.

    Raises ``NotFound`` (404) for an unknown host, ``BadRequest`` (400) for a missing or invalid
    topology, ``Conflict`` (409, code ``placement_numa.reshape.unplaceable``) naming the consumer
    that fits on no NUMA cell and what it lacked.
    """
    if host is None and root_uuid is None:
        raise BadRequest("Give the compute node as host (its name) or root_provider_uuid.")
    with database.read() as conn:
        state = load_host(conn, host=host, root_uuid=root_uuid)
    return _plan(state, direction, topology, policy)


def _plan(
    state: HostState, direction: str, topology: Mapping[str, Any] | None, policy: str
) -> Plan:
    try:
        if direction == "to_flat":
            return plan_to_flat(state)
        if topology is None:
            raise BadRequest("A to_numa reshape needs a topology.")
        return plan_to_numa(state, parse_topology(topology), policy=policy)  # type: ignore[arg-type]
    except ConsumerUnplaceable as exc:
        raise Conflict(
            str(exc),
            code="placement_numa.reshape.unplaceable",
            extra={"consumer": exc.consumer, "lacking": exc.lacking},
        ) from None
    except PlanError as exc:
        raise BadRequest(str(exc)) from None


def _move_devices(conn: Connection, planned: Plan) -> None:
    """Re-parent the plan's device providers (same tree: the root stays; uuid, inventories and
    allocations stay with the provider)."""
    for move in planned.reparent_providers:
        row = providers.get_by_uuid(conn, move.uuid)
        parent = providers.get_by_uuid(conn, move.parent_provider_uuid)
        assert row is not None and parent is not None
        providers.update_provider(
            conn, row.id, name=row.name, parent_id=parent.id, root_id=row.root_provider_id
        )


def apply_plan(
    *,
    database: Database,
    host: str | None,
    root_uuid: str | None,
    direction: str,
    topology: Mapping[str, Any] | None,
    policy: str = "pack",
) -> Plan:
    """Plan and apply a NUMA reshape of one compute node in ONE transaction: create the cell and
    page-size providers with their traits, move the PCI device providers (under their cells, or
    back under the compute node: ``reshape.devices``), reshape (``apply_reshape``), store the
    distance matrix (to_numa) or remove it and delete the emptied children (to_flat). Returns
    the applied plan.

    Raises what ``plan`` and ``apply_reshape`` raise, and ``DuplicateName`` (409) when a planned
    provider's name or uuid is taken; nothing is written then.
    """
    if host is None and root_uuid is None:
        raise BadRequest("Give the compute node as host (its name) or root_provider_uuid.")
    with database.write() as conn:
        state = load_host(conn, host=host, root_uuid=root_uuid)
        planned = _plan(state, direction, topology, policy)
        root = providers.get_by_uuid(conn, planned.root_provider_uuid)
        assert root is not None
        _create_providers(conn, planned)
        _move_devices(conn, planned)
        _apply_body(conn, planned.body)
        current = distance_repo.get(conn, root.id)
        if planned.direction == "to_flat":
            if current is not None:
                distance_repo.delete_row(conn, root.id, current.generation)
            for uuid in planned.delete_providers:
                child = providers.get_by_uuid(conn, uuid)
                assert child is not None
                providers.delete_provider(conn, child.id)
        elif planned.distances is not None:
            _store_distances(conn, root.id, planned.distances, current)
    return planned


def _create_providers(conn: Connection, planned: Plan) -> None:
    """Create the plan's new providers (cells, page sizes) under their parents, with traits.

    Raises ``DuplicateName`` (409) when a planned provider's name or uuid is taken.
    """
    for new in planned.create_providers:
        taken = providers.uuid_or_name_taken(conn, uuid=new.uuid, name=new.name)
        if taken:
            raise DuplicateName(f"Conflicting resource provider {', '.join(taken)} already exists.")
        parent = providers.get_by_uuid(conn, new.parent_provider_uuid)
        row = providers.insert_provider(conn, uuid=new.uuid, name=new.name, parent=parent)
        trait_repo.set_provider_traits(
            conn, row.id, [trait_repo.ensure(conn, t)[0].id for t in new.traits]
        )
        providers.increment_generation(conn, row)


def _apply_body(conn: Connection, body: Mapping[str, Any]) -> None:
    """Apply a ``POST /reshaper`` body (``inventories`` by provider uuid, ``allocations`` by
    consumer uuid, consumer generations checked) with ``apply_reshape``; raises what it raises."""
    apply_reshape(
        conn,
        inventories={
            uuid: ProviderInventories(
                generation=entry["resource_provider_generation"],
                inventories={
                    rc: InventoryFields(**inv) for rc, inv in entry["inventories"].items()
                },
            )
            for uuid, entry in body["inventories"].items()
        },
        allocations=[
            ConsumerAllocation(
                consumer_uuid=consumer,
                project_id=entry["project_id"],
                user_id=entry["user_id"],
                resources={rp: dict(a["resources"]) for rp, a in entry["allocations"].items()},
                consumer_type=entry.get("consumer_type"),
                consumer_generation=entry["consumer_generation"],
                check_generation=True,
            )
            for consumer, entry in body["allocations"].items()
        ],
    )


def _store_distances(
    conn: Connection,
    root_id: int,
    distances: Mapping[str, Any],
    current: DistanceRow | None,
) -> None:
    """Store the plan's distance matrix (``{"cells": [id, ...], "distances": [[int, ...], ...]}``,
    rows in the order of ``cells``) on the compute node ``root_id``, replacing ``current``."""
    ids = list(distances["cells"])
    rows = distances["distances"]
    raw = {a: dict(zip(ids, row, strict=False)) for a, row in zip(ids, rows, strict=False)}
    tree = [(c.uuid, c.name) for c in distance_repo.numa_cells(conn, [root_id])]
    cells, _ = identify_cells(tree, current.cells if current else None)
    matrix = validate_matrix(raw, cells)
    if current is None:
        distance_repo.insert_row(conn, root_id, matrix, cells=cells)
    else:
        distance_repo.update_row(conn, root_id, current.generation, matrix, cells=cells)
