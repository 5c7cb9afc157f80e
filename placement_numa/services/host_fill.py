"""Fill one host with copies of a flavor, as ``POST /allocation_candidates/claim`` would.

The capacity count (``services.capacity``) is reached by placing instances one after another,
each where the claim path would place it, on a copy of the host that each placement consumes
(cells, pages, CPUs, devices); nothing is written.

Why one host at a time is exact for the claim path: a claim writes the best-ranked candidate
of the fleet (``services.claims``: ties of EQUAL rank key shuffled), and the best candidate of
the fleet is the best candidate of its own host. A host's rank keys (NUMA width, KEP-3545
distance, KEP-2902 spread of its own free CPUs, cell tie-break) and its fits depend on that
host's tree only, so the sequence of placements a host receives is "its best candidate, again
and again, until none is left", whatever the order in which the fleet's hosts are filled. A
host's count is therefore the length of that sequence, and the fleet's count their sum.
(Sharing providers break the independence: see ``host_fleet``.)

Each step runs the same search as the claim (``numa_candidates.plan_candidates`` over the
flavor's one ``SearchPlan``, ``limit=1``) on a one-host snapshot (``host_fleet``) whose usage
carries the placements made so far.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from placement_numa.engine import FleetSnapshot, SnapshotEngine, StaticFleetSource
from placement_numa.engine.fleet import InventoryTuple, ProviderTuple
from placement_numa.numa.engine_rank import CellIndex
from placement_numa.numa.translate import SearchPlan
from placement_numa.services import numa_candidates
from placement_numa.services.numa_search import RankedCandidate

__all__ = ["HostFill", "host_fleet", "fill_host", "best_on"]

# usage added by the placements so far: (provider database id, resource class) -> amount
Taken = Mapping[tuple[int, str], int]


@dataclass(frozen=True)
class HostFill:
    """What filling one host gave: ``count`` instances placed (``capped``: stopped at the cap,
    more may fit), ``placements``: each one's ``((provider uuid, resource class, amount),
    ...)``, and ``fleet``: the one-host snapshot after the last placement (for ``limited_by``)."""

    root: str
    count: int
    capped: bool
    placements: tuple[tuple[tuple[str, str, int], ...], ...]
    fleet: FleetSnapshot


def _members(fleet: FleetSnapshot, root: int) -> list[int]:
    """Providers of ``root``'s tree plus the trees of the sharing providers anchored there."""
    members = list(fleet.tree[root])
    for sharing in fleet.shared_into.get(root, ()):
        sharing_root = fleet.providers[sharing].root
        if sharing_root != root:
            members.extend(i for i in fleet.tree[sharing_root] if i not in members)
    return members


def host_fleet(fleet: FleetSnapshot, root: int, taken: Taken) -> FleetSnapshot:
    """A snapshot of ``root``'s tree alone (index ``root`` of ``fleet``) with ``taken`` added to
    its usage; the trees of sharing providers anchored at ``root`` come along, so a shared pool
    is counted as if this host alone drew from it (the fleet total then overstates what the
    pool gives: documented in ``doc/source/numa/capacity.rst``)."""
    providers: list[ProviderTuple] = []
    inventories: list[InventoryTuple] = []
    usages: list[tuple[int, str, int]] = []
    traits: list[tuple[int, str]] = []
    aggregates: list[tuple[int, str]] = []
    infos = fleet.providers
    for i in _members(fleet, root):
        p = infos[i]
        parent = infos[p.parent].id if p.parent >= 0 else None
        providers.append((p.id, p.uuid, parent, infos[p.root].id))
        for rc, inv in p.inventories.items():
            inventories.append(
                (p.id, rc, inv.total, inv.reserved, inv.min_unit, inv.max_unit, inv.step_size,
                 inv.allocation_ratio)
            )  # fmt: skip
            used = inv.used + taken.get((p.id, rc), 0)
            if used:
                usages.append((p.id, rc, used))
        traits.extend((p.id, t) for t in p.traits)
        aggregates.extend((p.id, a) for a in p.aggregates)
    one = FleetSnapshot.build(fleet.revision, providers, inventories, usages, traits, aggregates)
    one.resource_class_names = fleet.resource_class_names
    one.trait_names = fleet.trait_names
    one.trait_order = fleet.trait_order
    return one


def best_on(host: FleetSnapshot, plan: SearchPlan, index: CellIndex) -> RankedCandidate | None:
    """The candidate a claim would write on ``host`` (the first of the claim's search)."""
    found = numa_candidates.plan_candidates(
        database=None,
        engine=SnapshotEngine(StaticFleetSource(host)),
        plan=plan,
        options=replace(plan.request.options, limit=1),
        index=index,
    )
    return found[0] if found else None


def fill_host(
    fleet: FleetSnapshot,
    root: int,
    *,
    plan: SearchPlan,
    index: CellIndex,
    cap: int,
    added: Taken | None = None,
) -> HostFill:
    """Place copies of the flavor of ``plan`` (searched under its request's options) on the
    host ``root`` (an index of ``fleet``) one after another until none fits or ``cap`` are
    placed (see the module docstring). ``index``: cell ids, distances, host names, as the
    claim's search reads them; ``added``: usage to add first (by provider database id and
    class; negative frees). Pure: ``fleet`` is not changed."""
    taken: dict[tuple[int, str], int] = dict(added or {})
    placements: list[tuple[tuple[str, str, int], ...]] = []
    host = host_fleet(fleet, root, taken)
    while len(placements) < cap:
        best = best_on(host, plan, index)
        if best is None:
            break
        placed = []
        for provider, rc, amount in best.candidate.allocations:
            info = host.providers[provider]
            taken[(info.id, rc)] = taken.get((info.id, rc), 0) + amount
            placed.append((info.uuid, rc, amount))
        placements.append(tuple(placed))
        host = host_fleet(fleet, root, taken)
    return HostFill(
        root=fleet.uuids[root],
        count=len(placements),
        capped=len(placements) >= cap,
        placements=tuple(placements),
        fleet=host,
    )
