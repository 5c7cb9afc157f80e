"""The fleet as the candidate search sees it: an immutable in-memory snapshot.

A ``FleetSnapshot`` holds, per resource provider: its parent and root, depth, traits, aggregates
and per resource class inventory with usage. It is built once from plain rows (the SQL loader lives
in ``placement_numa.db.repositories.fleet``) and tagged with the ``placement_revision`` it reflects;
the engine rebuilds it when the revision moves (design notes: "fleet state in memory, always
fresh"). Nothing here imports SQLAlchemy or FastAPI.

Providers are addressed by a dense index (``0..n-1``, in database id order), so the search works
on small integers; uuids are only used at the edges.

Capacity follows Placement: ``capacity = int((total - reserved) * allocation_ratio)``, free is
``capacity - used``; a request of ``amount`` fits one inventory when ``min_unit <= amount <=
max_unit``, ``amount % step_size == 0`` and ``used + amount <= capacity``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "Inventory",
    "ProviderInfo",
    "FleetSnapshot",
    "ProviderRow",
    "InventoryRow",
    "SHARING_TRAIT",
]

# os-traits' MISC_SHARES_VIA_AGGREGATE (a constant of the Placement protocol, not a list of names).
SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"

# (id, uuid, parent_id | None, root_id)
ProviderRow = tuple[int, str, "int | None", int]
# (provider_id, resource class name, total, reserved, min_unit, max_unit, step_size, ratio)
InventoryRow = tuple[int, str, int, int, int, int, int, float]


@dataclass(frozen=True, slots=True)
class Inventory:
    """One inventory record of a provider with its current usage (integer units of the class)."""

    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float
    used: int = 0

    @property
    def capacity(self) -> int:
        """``int((total - reserved) * allocation_ratio)``, as Placement reports it."""
        return int((self.total - self.reserved) * self.allocation_ratio)

    @property
    def free(self) -> int:
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
    inventories: dict[str, Inventory] = field(default_factory=dict)

    @property
    def sharing(self) -> bool:
        return SHARING_TRAIT in self.traits

    def free(self, resource_class: str) -> int:
        """Free capacity of ``resource_class`` (0 without inventory)."""
        inventory = self.inventories.get(resource_class)
        return inventory.free if inventory is not None else 0


class FleetSnapshot:
    """All providers at one ``revision``, indexed for the candidate search.

    * ``providers[i]``: ``ProviderInfo`` (dense index, database id order);
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

    def __init__(self, revision: int, providers: list[ProviderInfo]) -> None:
        self.revision = revision
        self.providers = providers
        # names known to the database (``None``: not checked), set by the loader
        self.resource_class_names: frozenset[str] | None = None
        self.trait_names: frozenset[str] | None = None
        self.index_by_uuid = {p.uuid: p.index for p in providers}
        self.index_by_id = {p.id: p.index for p in providers}
        self.tree: dict[int, list[int]] = {}
        for p in providers:
            self.tree.setdefault(p.root, []).append(p.index)
        self.roots = [i for i in range(len(providers)) if providers[i].parent < 0]
        self.uuids = [p.uuid for p in providers]
        chains: list[tuple[int, ...]] = []
        for p in providers:
            chain = [p.index]
            cursor = p.parent
            while cursor >= 0:
                chain.append(cursor)
                cursor = providers[cursor].parent
            chains.append(tuple(chain))
        self.chains = chains
        # Look-alike trees: two roots with the same profile have trees that match any query the
        # same way (same shape, traits, aggregates, inventories and usage, member by member).
        profile_ids: dict[tuple[object, ...], int] = {}
        provider_profile = [
            profile_ids.setdefault(
                (p.traits, p.aggregates, tuple(sorted(p.inventories.items()))), len(profile_ids)
            )
            for p in providers
        ]
        root_ids: dict[tuple[object, ...], int] = {}
        self.root_profiles: dict[int, int] = {}
        for root, members in self.tree.items():
            where = {m: k for k, m in enumerate(members)}
            key = (
                tuple(provider_profile[m] for m in members),
                tuple(where.get(providers[m].parent, -1) for m in members),
            )
            self.root_profiles[root] = root_ids.setdefault(key, len(root_ids))
        self.has_trees = any(p.parent >= 0 for p in providers)
        members: dict[str, list[int]] = {}
        for p in providers:
            for agg in p.aggregates:
                members.setdefault(agg, []).append(p.index)
        self.aggregate_members = {agg: frozenset(idx) for agg, idx in members.items()}
        self.sharing_anchors: dict[int, frozenset[int]] = {}
        for p in providers:
            if p.sharing and p.aggregates:
                self.sharing_anchors[p.index] = frozenset(
                    providers[m].root for agg in p.aggregates for m in members[agg]
                )
        # sharing provider indices anchored at each root
        anchored: dict[int, list[int]] = {}
        for sp, anchors in self.sharing_anchors.items():
            for root in anchors:
                anchored.setdefault(root, []).append(sp)
        self.shared_into = {root: sorted(sps) for root, sps in anchored.items()}
        # roots whose candidates may also be found from another anchor (sharing providers)
        self.roots_with_sharing = frozenset(anchored) | {p.root for p in providers if p.sharing}
        # rendering caches (API layer): per response shape, provider index -> summary dict
        self.summary_cache: dict[object, dict[int, object]] = {}

    @classmethod
    def build(
        cls,
        revision: int,
        providers: Iterable[ProviderRow],
        inventories: Iterable[InventoryRow] = (),
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
        index_by_id = {row[0]: i for i, row in enumerate(rows)}
        infos = [
            ProviderInfo(
                index=i,
                id=row[0],
                uuid=row[1],
                parent=index_by_id[row[2]] if row[2] is not None else -1,
                root=index_by_id[row[3]] if row[3] is not None else i,
            )
            for i, row in enumerate(rows)
        ]
        for info in infos:
            depth, cursor = 0, info.parent
            while cursor >= 0:
                depth += 1
                cursor = infos[cursor].parent
            info.depth = depth
        used: dict[tuple[int, str], int] = {}
        for pid, rc, amount in usages:
            used[(pid, rc)] = used.get((pid, rc), 0) + int(amount)
        for pid, rc, total, reserved, min_unit, max_unit, step, ratio in inventories:
            infos[index_by_id[pid]].inventories[rc] = Inventory(
                int(total), int(reserved), int(min_unit), int(max_unit), int(step), float(ratio),
                used.get((pid, rc), 0),
            )
        trait_sets: dict[int, set[str]] = {}
        for pid, name in traits:
            trait_sets.setdefault(pid, set()).add(name)
        for pid, names in trait_sets.items():
            infos[index_by_id[pid]].traits = frozenset(names)
        agg_sets: dict[int, set[str]] = {}
        for pid, agg in aggregates:
            agg_sets.setdefault(pid, set()).add(agg)
        for pid, aggs in agg_sets.items():
            infos[index_by_id[pid]].aggregates = frozenset(aggs)
        return cls(revision, infos)

    def ancestors(self, index: int) -> tuple[int, ...]:
        """``index`` and its ancestors up to the root, nearest first."""
        return self.chains[index]

    def is_ancestor_or_self(self, ancestor: int, index: int) -> bool:
        providers = self.providers
        depth = providers[ancestor].depth
        while providers[index].depth > depth:
            index = providers[index].parent
        return index == ancestor

    def summary_resources(self, index: int) -> Mapping[str, Inventory]:
        return self.providers[index].inventories
