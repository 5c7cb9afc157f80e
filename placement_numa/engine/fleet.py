"""The fleet as the candidate search sees it: an immutable in-memory snapshot.

A ``FleetSnapshot`` holds, per resource provider: its parent and root, depth, traits, aggregates
and per resource class inventory with usage. It is built once from plain rows (the SQL loader lives
in ``placement_numa.db.repositories.fleet``) and tagged with the ``placement_revision`` it reflects;
when the revision moves, the engine derives a new snapshot with the touched trees replaced
(``engine.fleet_patch``; design notes: "fleet state in memory, always fresh"). Nothing here
imports SQLAlchemy or FastAPI.

Providers are addressed by a dense index (``0..n-1``, in database id order), so the search works
on small integers; uuids are only used at the edges. Patched snapshots keep indices stable (new
providers are appended; deleted ones leave unreachable entries).

Capacity follows Placement (``domain.inventory.capacity``): ``int((total - reserved) *
allocation_ratio)``, free is
``capacity - used``; a request of ``amount`` fits one inventory when ``min_unit <= amount <=
max_unit``, ``amount % step_size == 0`` and ``used + amount <= capacity``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import os_traits

from placement_numa.domain.inventory import capacity

__all__ = [
    "InventoryUsage",
    "ProviderInfo",
    "FleetSnapshot",
    "ProviderTuple",
    "InventoryTuple",
    "SHARING_TRAIT",
]

# the trait of a provider that shares its inventory with the trees of its aggregates
SHARING_TRAIT: str = os_traits.MISC_SHARES_VIA_AGGREGATE

# (id, uuid, parent_id | None, root_id)
ProviderTuple = tuple[int, str, "int | None", int]
# (provider_id, resource class name, total, reserved, min_unit, max_unit, step_size, ratio)
InventoryTuple = tuple[int, str, int, int, int, int, int, float]


class InventoryUsage:
    """One inventory record of a provider with its current usage (integer units of the class).

    ``capacity``: ``int((total - reserved) * allocation_ratio)``, as Placement reports it,
    clamped to +-``CAPACITY_LIMIT`` (``domain.inventory.capacity``: a stored ratio of 3e38
    must not break reads, it renders as 2**63 - 1); 0 for a ratio that is not a number.
    Immutable by contract; a plain slotted class (a fleet holds one per provider and class,
    built at every load).
    """

    __slots__ = (
        "total",
        "reserved",
        "min_unit",
        "max_unit",
        "step_size",
        "allocation_ratio",
        "used",
        "capacity",
        "_hash",
    )

    def __init__(
        self,
        total: int,
        reserved: int,
        min_unit: int,
        max_unit: int,
        step_size: int,
        allocation_ratio: float,
        used: int = 0,
    ) -> None:
        self.total = total
        self.reserved = reserved
        self.min_unit = min_unit
        self.max_unit = max_unit
        self.step_size = step_size
        self.allocation_ratio = allocation_ratio
        self.used = used
        self.capacity = capacity(total, reserved, allocation_ratio)
        self._hash = hash(self._key())

    def _key(self) -> tuple[int, int, int, int, int, float, int]:
        return (
            self.total,
            self.reserved,
            self.min_unit,
            self.max_unit,
            self.step_size,
            self.allocation_ratio,
            self.used,
        )

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, InventoryUsage)
            and self._hash == other._hash
            and self._key() == other._key()
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return (
            f"InventoryUsage(total={self.total}, reserved={self.reserved},"
            f" min_unit={self.min_unit}, max_unit={self.max_unit}, step_size={self.step_size},"
            f" allocation_ratio={self.allocation_ratio}, used={self.used})"
        )

    @property
    def free(self) -> int:
        """Capacity left: ``capacity - used`` (negative when usage exceeds a lowered capacity)."""
        return self.capacity - self.used

    def fits(self, amount: int) -> bool:
        """Whether one allocation of ``amount`` fits (min/max unit, step size, capacity)."""
        return (
            self.min_unit <= amount <= self.max_unit
            and amount % self.step_size == 0
            and self.used + amount <= self.capacity
        )


@dataclass(slots=True)
class ProviderInfo:
    """A resource provider in the snapshot (``parent`` is -1 for a root)."""

    index: int
    id: int
    uuid: str
    parent: int
    root: int
    depth: int = 0
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()
    inventories: dict[str, InventoryUsage] = field(default_factory=dict)

    @property
    def sharing(self) -> bool:
        """Whether the provider has ``MISC_SHARES_VIA_AGGREGATE`` (shares via aggregates)."""
        return SHARING_TRAIT in self.traits

    def free(self, resource_class: str) -> int:
        """Free capacity of ``resource_class`` (0 without inventory)."""
        inventory = self.inventories.get(resource_class)
        return inventory.free if inventory is not None else 0


class FleetSnapshot:
    """All providers at one ``revision``, indexed for the candidate search.

    * ``providers[i]``: ``ProviderInfo`` (dense index, database id order). After an incremental
      refresh (``replace_trees``) the list may hold entries of deleted providers; they are in no
      other index (``index_by_uuid``, ``tree``, ``roots``...), so nothing reaches them;
    * ``index_by_uuid`` / ``index_by_id``;
    * ``roots``: root indices in id order; ``tree[root]``: that tree's provider indices, id order;
    * ``sharing_anchors[i]``: for a provider with ``MISC_SHARES_VIA_AGGREGATE`` that is in some
      aggregate, the roots of every tree holding a provider in one of its aggregates (its own
      tree included), as Placement's ``anchors_for_sharing_providers``;
    * ``has_trees``: whether any provider has a parent (pre-1.29 responses depend on it);
    * ``uuids[i]``: provider uuids; ``chains[i]``: ``i`` and its ancestors, nearest first;
    * ``root_profiles[root]``: equal for roots whose trees are alike member by member (shape,
      traits, aggregates, inventories, usage), so a search can replay one tree's answer.
    """

    # profile keys -> ids, shared by the snapshots patched from one full build (append-only;
    # ids are content keys, so equal ids mean equal trees in any of those snapshots)
    _provider_profile_ids: dict[tuple[object, ...], int]
    _root_profile_ids: dict[tuple[object, ...], int]

    def __init__(self, revision: int, providers: list[ProviderInfo]) -> None:
        self.revision = revision
        self.patched_from: int | None = None  # revision of the snapshot this one patched
        # set once ``replace_trees(owned=True)`` started patching this snapshot's indexes in
        # place for its successor: it must not be used any more
        self.handed_over = False
        self.providers = providers
        # names known to the database (``None``: not checked), set by the loader
        self.resource_class_names: frozenset[str] | None = None
        self.trait_names: frozenset[str] | None = None
        # trait name -> database id: provider summaries list traits in id order, as Placement's
        # (``None``: by name)
        self.trait_order: dict[str, int] | None = None
        self.index_by_uuid = {p.uuid: p.index for p in providers}
        self.index_by_id = {p.id: p.index for p in providers}
        self.max_id = max(self.index_by_id, default=0)
        self.tree: dict[int, list[int]] = {}
        for p in providers:
            self.tree.setdefault(p.root, []).append(p.index)
        self.roots = [i for i in range(len(providers)) if providers[i].parent < 0]
        self.uuids = [p.uuid for p in providers]
        self.chains = [chain_of(providers, p.index) for p in providers]
        self.children_count = sum(1 for p in providers if p.parent >= 0)
        self.has_trees = self.children_count > 0
        # Look-alike trees: two roots with the same profile have trees that match any query the
        # same way (same shape, traits, aggregates, inventories and usage, member by member).
        self._provider_profile_ids = {}
        self._root_profile_ids = {}
        self.root_profiles: dict[int, int] = {
            root: self._root_profile(members) for root, members in self.tree.items()
        }
        members: dict[str, set[int]] = {}
        for p in providers:
            for agg in p.aggregates:
                members.setdefault(agg, set()).add(p.index)
        self.aggregate_members = {agg: frozenset(idx) for agg, idx in members.items()}
        self.sharing = frozenset(p.index for p in providers if p.sharing)
        self.sharing_anchors: dict[int, frozenset[int]] = {}
        for i in self.sharing:
            if providers[i].aggregates:
                self.sharing_anchors[i] = self._anchors(i)
        self._index_sharing()
        # resource class -> roots_having(class), filled lazily
        self.class_roots: dict[str, frozenset[int]] = {}
        # what the refresh that made this snapshot replaced (``engine.fleet_patch``): provider
        # indices and roots whose trees changed since ``patched_from`` (empty after a full
        # build, where ``patched_from`` is ``None``); caches above key on these
        self.replaced_providers: frozenset[int] = frozenset()
        self.replaced_roots: frozenset[int] = frozenset()

    def _root_profile(self, members: list[int]) -> int:
        providers = self.providers
        profile_ids = self._provider_profile_ids
        where = {m: k for k, m in enumerate(members)}
        key = (
            tuple(
                profile_ids.setdefault(
                    (p.traits, p.aggregates, tuple(sorted(p.inventories.items()))),
                    len(profile_ids),
                )
                for p in (providers[m] for m in members)
            ),
            tuple(where.get(providers[m].parent, -1) for m in members),
        )
        return self._root_profile_ids.setdefault(key, len(self._root_profile_ids))

    def _anchors(self, sharing: int) -> frozenset[int]:
        providers = self.providers
        members = self.aggregate_members
        return frozenset(
            providers[m].root for agg in providers[sharing].aggregates for m in members[agg]
        )

    def _index_sharing(self) -> None:
        # sharing provider indices anchored at each root
        anchored: dict[int, list[int]] = {}
        for sp, anchors in self.sharing_anchors.items():
            for root in anchors:
                anchored.setdefault(root, []).append(sp)
        self.shared_into = {root: sorted(sps) for root, sps in anchored.items()}
        # roots whose candidates may also be found from another anchor (sharing providers)
        self.roots_with_sharing = frozenset(anchored) | {
            self.providers[i].root for i in self.sharing
        }

    @classmethod
    def build(
        cls,
        revision: int,
        providers: Iterable[ProviderTuple],
        inventories: Iterable[InventoryTuple] = (),
        usages: Iterable[tuple[int, str, int]] = (),
        traits: Iterable[tuple[int, str]] = (),
        aggregates: Iterable[tuple[int, str]] = (),
    ) -> FleetSnapshot:
        """Build a snapshot from plain rows keyed by provider database id.

        ``providers``: ``(id, uuid, parent_id, root_id)``; ``inventories``: ``(provider_id, rc,
        total, reserved, min_unit, max_unit, step_size, allocation_ratio)``; ``usages``:
        ``(provider_id, rc, used)`` (summed or not: amounts add up); ``traits``: ``(provider_id,
        trait name)``; ``aggregates``: ``(provider_id, aggregate uuid)``.
        """
        rows = sorted(providers, key=lambda r: r[0])
        index_of = {row[0]: i for i, row in enumerate(rows)}
        infos = build_infos(rows, index_of, inventories, usages, traits, aggregates)
        set_depths(infos, infos)
        return cls(revision, infos)

    def roots_having(self, resource_class: str) -> frozenset[int]:
        """Roots whose tree has a provider with inventory of ``resource_class``, or at which a
        sharing provider with it is anchored (computed once per snapshot and class; a refresh
        patches it for the trees it replaced)."""
        found = self.class_roots.get(resource_class)
        if found is None:
            providers = self.providers
            roots = {
                providers[i].root
                for i in self.index_by_uuid.values()
                if resource_class in providers[i].inventories
            }
            for sharing in self.sharing:
                if resource_class in providers[sharing].inventories:
                    roots |= self.sharing_anchors.get(sharing, frozenset())
            found = self.class_roots[resource_class] = frozenset(roots)
        return found

    def ancestors(self, index: int) -> tuple[int, ...]:
        """``index`` and its ancestors up to the root, nearest first."""
        return self.chains[index]

    def is_ancestor_or_self(self, ancestor: int, index: int) -> bool:
        """Whether ``ancestor`` is ``index`` or one of its ancestors (indices)."""
        providers = self.providers
        depth = providers[ancestor].depth
        while providers[index].depth > depth:
            index = providers[index].parent
        return index == ancestor

    def summary_resources(self, index: int) -> Mapping[str, InventoryUsage]:
        """The inventories (with usage) of provider ``index``, by resource class."""
        return self.providers[index].inventories


def chain_of(providers: list[ProviderInfo], index: int) -> tuple[int, ...]:
    chain = [index]
    cursor = providers[index].parent
    while cursor >= 0:
        chain.append(cursor)
        cursor = providers[cursor].parent
    return tuple(chain)


def set_depths(providers: list[ProviderInfo], infos: Iterable[ProviderInfo]) -> None:
    for info in infos:
        depth, cursor = 0, info.parent
        while cursor >= 0:
            depth += 1
            cursor = providers[cursor].parent
        info.depth = depth


def build_infos(
    rows: list[ProviderTuple],
    index_of: Mapping[int, int],
    inventories: Iterable[InventoryTuple],
    usages: Iterable[tuple[int, str, int]],
    traits: Iterable[tuple[int, str]],
    aggregates: Iterable[tuple[int, str]],
) -> list[ProviderInfo]:
    """``ProviderInfo`` per row (id order), indices from ``index_of`` (parents and roots are
    among the rows); depths are left at 0 (``set_depths``)."""
    infos = [
        ProviderInfo(
            index=index_of[row[0]],
            id=row[0],
            uuid=row[1],
            parent=index_of[row[2]] if row[2] is not None else -1,
            root=index_of[row[3]] if row[3] is not None else index_of[row[0]],
        )
        for row in rows
    ]
    by_id = {info.id: info for info in infos}
    used: dict[tuple[int, str], int] = {}
    for pid, rc, amount in usages:
        used[(pid, rc)] = used.get((pid, rc), 0) + int(amount)
    # Equal inventories (and trait and aggregate sets) are shared: they are immutable, and a
    # fleet of look-alike hosts holds a few distinct ones per class (memory at 700,000
    # providers), and equality checks of shared objects are identity checks.
    shared_inventories: dict[tuple[object, ...], InventoryUsage] = {}
    for pid, rc, total, reserved, min_unit, max_unit, step, ratio in inventories:
        key = (
            rc,
            int(total),
            int(reserved),
            int(min_unit),
            int(max_unit),
            int(step),
            float(ratio),
            used.get((pid, rc), 0),
        )
        inventory = shared_inventories.get(key)
        if inventory is None:
            inventory = shared_inventories[key] = InventoryUsage(*key[1:])
        by_id[pid].inventories[rc] = inventory
    shared_sets: dict[frozenset[str], frozenset[str]] = {}
    for pid, names in _sets_by_provider(traits, shared_sets).items():
        by_id[pid].traits = names
    for pid, names in _sets_by_provider(aggregates, shared_sets).items():
        by_id[pid].aggregates = names
    return infos


def _sets_by_provider(
    pairs: Iterable[tuple[int, str]], shared: dict[frozenset[str], frozenset[str]]
) -> dict[int, frozenset[str]]:
    """``(provider id, name)`` pairs as one frozen set per provider id, equal sets shared
    (through ``shared``)."""
    found: dict[int, set[str]] = {}
    for pid, name in pairs:
        found.setdefault(pid, set()).add(name)
    return {
        pid: shared.setdefault(frozenset(names), frozenset(names)) for pid, names in found.items()
    }
