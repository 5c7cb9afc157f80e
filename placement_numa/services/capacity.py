"""Use case (extension): how many more of each flavor fit (``POST
/allocation_candidates/capacity``).

For each flavor, every host in scope is filled with copies of it one after another, each
placed where ``POST /allocation_candidates/claim`` would place it (``services.host_fill``: the
same translation, search, ranking and memory/device rules; each placement consumes its cells,
pages, CPUs and devices); nothing is written. A host's ``count`` is the number placed before
none fits (or the ``cap``), the fleet's ``total`` their sum, and ``limited_by`` what stops the
host then (``services.capacity_limits``). Claiming the flavor alone through ``/claim`` on the
same fleet therefore succeeds exactly ``total`` times and then answers 409 ``no_room``.

Work: one fleet search per flavor with no limit, then the claims replayed per host in Python
(``services.fleet_fill``). For plans that widen (``distribute_cpus_across_numa``, the Topology
Manager's ``restricted``/``best-effort``), the reference path: one fleet search finds the hosts
with room for one, then each is filled alone (``services.host_fill``), hosts whose trees, usage
and cell data are alike sharing one fill (``_host_key``). Bounded by the number of flavors
(``MAX_FLAVORS``, the API checks it) and the per-host ``cap``.

The scope (``CapacityScope``) keeps hosts whose compute node (root provider) is in the tree of
``in_tree``, matches ``member_of`` (in one aggregate of each set, in no forbidden one) and
``required`` (every trait, one of each any-of set, no forbidden one), as Placement's filters
read on one provider.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from placement_numa.domain.filters import MemberOf, RequiredTraits
from placement_numa.engine import CandidateEngine, FleetSnapshot, SnapshotEngine, StaticFleetSource
from placement_numa.numa.engine_rank import CellIndex
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.pci_alias import PciAlias
from placement_numa.numa.request import NumaOptions
from placement_numa.numa.resolve import numa_request
from placement_numa.numa.translate import SearchPlan, search_plan
from placement_numa.services import numa_candidates
from placement_numa.services.capacity_limits import Shortfall, limited_by
from placement_numa.services.fleet_fill import fill_fleet, usable_cells
from placement_numa.services.host_fill import HostFill, fill_host, host_fleet
from placement_numa.services.numa_search import numa_cells

__all__ = [
    "CapacityScope",
    "FlavorAsk",
    "HostCapacity",
    "FlavorCapacity",
    "fleet_capacity",
    "scoped_roots",
    "MAX_FLAVORS",
    "DEFAULT_CAP",
    "MAX_CAP",
]

MAX_FLAVORS = 20  # flavors per request
DEFAULT_CAP = 1000  # instances counted per host and flavor by default
MAX_CAP = 10000


@dataclass(frozen=True)
class CapacityScope:
    """Which hosts count (see the module docstring); the empty scope is the whole fleet."""

    in_tree: str | None = None
    member_of: MemberOf = MemberOf()
    required: RequiredTraits = RequiredTraits()


@dataclass(frozen=True)
class FlavorAsk:
    """One flavor to count: its name (the answer's key), the flavor, image properties, the
    ``[pci] alias`` table when it asks for devices."""

    name: str
    flavor: Flavor
    image: ImageProperties | None = None
    aliases: Mapping[str, PciAlias] | None = None


@dataclass(frozen=True)
class HostCapacity:
    """One host: root provider ``uuid`` and name ``host``, ``count`` more instances,
    ``capped`` (the count stopped at the cap), ``limited_by`` (empty when capped)."""

    uuid: str
    host: str
    count: int
    capped: bool
    limited_by: tuple[Shortfall, ...]


@dataclass(frozen=True)
class FlavorCapacity:
    """One flavor's answer: ``total`` over the hosts in scope, per host (every host in scope,
    most first, then by name)."""

    flavor: str
    total: int
    hosts: list[HostCapacity] = field(default_factory=list)
    # provider indices of the NUMA cells and roots some candidate of the flavor uses now
    usable: frozenset[int] = frozenset()


def scoped_roots(fleet: FleetSnapshot, scope: CapacityScope) -> list[int]:
    """Root indices of ``fleet`` in ``scope`` (creation order); ``[]`` for an unknown
    ``in_tree``."""
    roots = fleet.roots
    if scope.in_tree is not None:
        index = fleet.index_by_uuid.get(scope.in_tree)
        if index is None:
            return []
        roots = [fleet.providers[index].root]
    kept = []
    for root in roots:
        info = fleet.providers[root]
        traits, aggregates = info.traits, info.aggregates
        required, member_of = scope.required, scope.member_of
        if required.forbidden & traits or member_of.forbidden & aggregates:
            continue
        if all(s & traits for s in required.required_sets) and all(
            s & aggregates for s in member_of.any_of
        ):
            kept.append(root)
    return kept


def _host_key(fleet: FleetSnapshot, index: CellIndex, root: int) -> tuple[object, ...]:
    """Equal for hosts that fill alike: the look of the tree member by member (the snapshot's
    root profile: shape, traits, aggregates, inventories, usage), the cell ids in member
    order, distances and sockets."""
    uuid = fleet.uuids[root]
    cells = tuple(index.cell_ids.get(fleet.uuids[i]) for i in fleet.tree[root])
    sockets = index.sockets.get(uuid, {})
    matrix = index.distances.get(uuid, {})
    return (
        fleet.root_profiles[root],
        cells,
        tuple((a, tuple(sorted(row.items()))) for a, row in sorted(matrix.items())),
        tuple(sorted(sockets.items())),
        root in fleet.roots_with_sharing and uuid,  # shared pools: never alike
    )


def _first_fits(
    fleet: FleetSnapshot,
    plan: SearchPlan,
    index: CellIndex,
    roots: Sequence[int],
) -> set[int]:
    """Roots that may have room for one: each host's best candidate of one fleet search
    (``diversify``: every NUMA host with a fit comes in the first round), plus, when the
    search stopped at its limit, the hosts without NUMA cells (their fallback candidates
    come after every NUMA fit, so the limit may have cut them off)."""
    limit = len(fleet.roots)
    found = numa_candidates.plan_candidates(
        database=None,
        engine=SnapshotEngine(StaticFleetSource(fleet)),
        plan=plan,
        options=replace(plan.request.options, limit=limit, diversify=True),
        index=index,
    )
    maybe = {r.candidate.anchor for r in found}
    if len(found) >= limit:
        maybe |= {root for root in roots if not numa_cells(fleet, root)}
    return maybe & set(roots)


def _host_by_host(
    fleet: FleetSnapshot,
    plan: SearchPlan,
    index: CellIndex,
    roots: Sequence[int],
    cap: int,
) -> list[tuple[int, int, bool, tuple[Shortfall, ...]]]:
    """``(root, count, capped, limited_by)`` per root, each host filled alone
    (``host_fill``; hosts alike share one fill): the reference path."""
    numa = plan.main
    no_overcommit = numa.topology is not None and numa.topology.memory_not_overcommitted
    fits = _first_fits(fleet, plan, index, roots)
    fills: dict[tuple[object, ...], tuple[int, bool, tuple[Shortfall, ...]]] = {}
    found = []
    for root in roots:
        key = _host_key(fleet, index, root)
        known = fills.get(key)
        if known is None:
            if root in fits:
                filled: HostFill = fill_host(fleet, root, plan=plan, index=index, cap=cap)
                count, capped, host = filled.count, filled.capped, filled.fleet
            else:
                count, capped, host = 0, cap == 0, host_fleet(fleet, root, {})
            limits = () if capped else limited_by(
                host, host.index_by_uuid[fleet.uuids[root]], numa.search_query, index,
                no_overcommit=no_overcommit,
            )  # fmt: skip
            known = fills[key] = (count, capped, limits)
        found.append((root, *known))
    return found


def _all_at_once(
    fleet: FleetSnapshot,
    plan: SearchPlan,
    index: CellIndex,
    roots: Sequence[int],
    cap: int,
) -> tuple[list[tuple[int, int, bool, tuple[Shortfall, ...]]], frozenset[int]] | None:
    """As ``_host_by_host``, from one fleet search (``fleet_fill``), and the usable cells of
    the flavor; ``None`` for a plan it does not replay."""
    answer = fill_fleet(plan, fleet, index, roots, cap)
    if answer is None:
        return None
    filled, usable = answer
    numa = plan.main
    no_overcommit = numa.topology is not None and numa.topology.memory_not_overcommitted
    found = []
    for root in roots:
        one = filled.get(root)
        count, capped, taken = (one.count, one.capped, one.taken) if one else (0, cap == 0, {})
        limits = () if capped else limited_by(
            fleet, root, numa.search_query, index, no_overcommit=no_overcommit, taken=taken
        )  # fmt: skip
        found.append((root, count, capped, limits))
    return found, usable


def _usable(fleet: FleetSnapshot, plan: SearchPlan, index: CellIndex) -> frozenset[int]:
    """``fleet_fill.usable_cells`` of every candidate of ``plan`` now (one unlimited search)."""
    found = numa_candidates.plan_candidates(
        database=None,
        engine=SnapshotEngine(StaticFleetSource(fleet)),
        plan=plan,
        options=replace(plan.request.options, limit=None, diversify=False),
        index=index,
    )
    return usable_cells(fleet, [r.candidate for r in found])


def _count_flavor(
    fleet: FleetSnapshot,
    ask: FlavorAsk,
    options: NumaOptions,
    index: CellIndex,
    roots: Sequence[int],
    cap: int,
    reference: bool,
) -> FlavorCapacity:
    plan = search_plan(numa_request(ask.flavor, ask.image, options, aliases=ask.aliases))
    fast = None if reference else _all_at_once(fleet, plan, index, roots, cap)
    if fast is None:
        found, usable = _host_by_host(fleet, plan, index, roots, cap), _usable(fleet, plan, index)
    else:
        found, usable = fast
    hosts = []
    for root, count, capped, limits in found:
        uuid = fleet.uuids[root]
        hosts.append(HostCapacity(uuid, index.host_names.get(uuid, uuid), count, capped, limits))
    hosts.sort(key=lambda h: (-h.count, h.host))
    return FlavorCapacity(ask.name, sum(h.count for h in hosts), hosts, usable)


def fleet_capacity(
    *,
    engine: CandidateEngine,
    index: CellIndex,
    flavors: Sequence[FlavorAsk],
    options: NumaOptions | None = None,
    scope: CapacityScope | None = None,
    cap: int = DEFAULT_CAP,
    fleet: FleetSnapshot | None = None,
    reference: bool = False,
) -> list[FlavorCapacity]:
    """How many more of each flavor fit (module docstring), in the order of ``flavors``, on
    one snapshot (``fleet``, else ``engine.snapshot()``). ``options``: the claim's options
    (``prefer_closest``, ``distribute``, ``topology_policy``; ``limit`` is ignored); ``index``:
    cell ids, distances, host names; ``cap``: the most instances counted per host (0 to
    ``MAX_CAP``); ``reference``: fill host by host (``host_fill``) even where ``fleet_fill``
    replays the claims from one search (same answer, slower: the tests compare them). Raises
    ``InvalidFlavor`` (400) for a flavor that cannot be translated, ``InvalidAliasConfig``
    (400) through the alias table."""
    if fleet is None:
        fleet = engine.snapshot()
    options = options or NumaOptions()
    roots = scoped_roots(fleet, scope or CapacityScope())
    return [_count_flavor(fleet, ask, options, index, roots, cap, reference) for ask in flavors]
